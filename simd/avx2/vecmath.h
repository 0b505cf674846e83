/*
 * Vector elementary functions for the AVX2 kernels: exp, erf and the erf
 * GELU, eight floats at a time, branch-free. The other activations are
 * written once for every set over its vocabulary
 * (simd/frame/vec-activations.h, with VEC_EXP = tsr_avx2_exp).
 *
 * Where the coefficients come from: each polynomial is a minimax fit made
 * with a linear Remez exchange in 50-digit arithmetic (mpmath), then rounded
 * to float. The fitted function, the interval, the weight and the resulting
 * maximum error are given next to each set; the float evaluation adds about
 * one rounding per operation on top.
 *
 * Special values follow C's expf/erff: NaN in, NaN out; exp(-inf) = 0,
 * exp(large) = inf; erf(+-inf) = +-1. Clamping uses max_ps(bound, x) and
 * min_ps(bound, x): when x is NaN these return x (the second operand), so a
 * NaN is never clamped into a number.
 *
 * Needs -mavx2 -mfma.
 */
#ifndef TSR_SIMD_AVX2_VECMATH_H
#define TSR_SIMD_AVX2_VECMATH_H

#include <immintrin.h>

#include "simd/kernels.h"

/*
 * e^x = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln2/2.
 *
 * r is formed in two FMA steps with ln 2 split Cody-Waite style: LN2_HI =
 * 355/512 has 9 significant bits, so n * LN2_HI is exact for |n| < 2^15 and
 * x - n * LN2_HI cancels exactly; LN2_LO = ln 2 - LN2_HI carries the rest.
 *
 * e^r = 1 + r + r^2 (c2 + c3 r + c4 r^2 + c5 r^3 + c6 r^4): minimax for the
 * relative error of e^r on [-ln2/2, ln2/2], max 3.1e-9 (0.05 ulp). With the
 * roundings of the evaluation the result is within 0.91 ulp of e^x for
 * every float x (checked exhaustively against double exp).
 *
 * 2^n is applied as 2^(n - n/2) * 2^(n/2), two factors that are normal
 * floats for every n in range: results that overflow become inf and results
 * in the subnormal range are rounded once, by the second product. x is
 * clamped to [-110, 100] first, where n stays within [-159, 145]: e^-110
 * rounds to 0 and e^100 to inf, as the exact values do.
 */
static inline __m256 tsr_avx2_exp(__m256 x)
{
    const __m256 log2e = _mm256_set1_ps(1.44269502f);
    const __m256 ln2_hi = _mm256_set1_ps(0.693359375f);
    const __m256 ln2_lo = _mm256_set1_ps(-2.12194440e-4f);
    const __m256 one = _mm256_set1_ps(1.0f);

    x = _mm256_max_ps(_mm256_set1_ps(-110.0f), x);
    x = _mm256_min_ps(_mm256_set1_ps(100.0f), x);

    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT |
                                                            _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, ln2_hi, x);
    r = _mm256_fnmadd_ps(n, ln2_lo, r);

    __m256 p = _mm256_set1_ps(1.3814613e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.36871e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166839e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666521e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999994e-1f));
    p = _mm256_fmadd_ps(p, r, one);
    p = _mm256_fmadd_ps(p, r, one);

    const __m256i bias = _mm256_set1_epi32(127);
    __m256i ni = _mm256_cvtps_epi32(n);
    __m256i half = _mm256_srai_epi32(ni, 1);
    __m256i rest = _mm256_sub_epi32(ni, half);
    __m256 scale_a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
    __m256 scale_b = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(rest, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, scale_a), scale_b);
}

/*
 * e^x for x <= 0, the softmax case (x = s - max), cheaper than
 * tsr_avx2_exp: the same polynomial, with n = round(x / ln 2) read from the
 * low bits of x * log2e + MAGIC (MAGIC = 1.5 * 2^23 + 127, so the float's
 * mantissa holds n + 127 and shifting it up by 23 gives 2^n directly). x is
 * clamped to -87.33 (n >= -126, a normal 2^n), and results below that, whose
 * exact values are under FLT_MIN = 1.2e-38, are set to 0, so -inf gives 0.
 * Against a sum of weights >= 1 the flushed terms are invisible. NaN stays
 * NaN; x > 0 is not supported (use tsr_avx2_exp). Within 0.88 ulp of e^x
 * for every float in [-87.33, 0] (checked exhaustively).
 */
static inline __m256 tsr_avx2_exp_nonpositive(__m256 x)
{
    const __m256 lowest = _mm256_set1_ps(-87.33f);
    const __m256 magic = _mm256_set1_ps(12582912.0f + 127.0f);
    const __m256 one = _mm256_set1_ps(1.0f);

    __m256 xc = _mm256_max_ps(lowest, x);
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269502f), magic);
    __m256 n = _mm256_sub_ps(t, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);

    __m256 p = _mm256_set1_ps(1.3814613e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.36871e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166839e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666521e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.9999994e-1f));
    p = _mm256_fmadd_ps(p, r, one);
    p = _mm256_fmadd_ps(p, r, one);

    __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
    /* Not below -87.33, or NaN (unordered compares true). */
    __m256 keep = _mm256_cmp_ps(x, lowest, _CMP_NLT_UQ);
    return _mm256_and_ps(keep, _mm256_mul_ps(p, scale));
}

static inline __m256 tsr_avx2_abs(__m256 x)
{
    return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

/* Where erf switches from the series-like fit to the erfc tail fit. */
#define TSR_AVX2_ERF_SPLIT 1.25f
/* From 3.9192 on, erf(x) rounds to 1 in float (erfc(x) < 2^-25). */
#define TSR_AVX2_ERF_ONE 3.92f

/*
 * erf(z) = z * P(z^2) for |z| < 1.25, P of degree 7 in z^2: minimax for the
 * relative error of erf on [0, 1.25], max 6.5e-9. (Split at 1.25 rather
 * than higher because P's terms alternate in sign and grow with z^2, so the
 * float evaluation loses more bits the wider the interval.) The constant
 * term 1.12837917 is applied as z + z * 0.12837917: rounded to float, the
 * smaller number keeps 3 more bits of the coefficient.
 */
static inline __m256 tsr_avx2_erf_near_zero(__m256 z)
{
    __m256 s = _mm256_mul_ps(z, z);
    __m256 p = _mm256_set1_ps(-8.315454e-6f);
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.07936045e-4f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-8.4230566e-4f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(5.21751e-3f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-2.6864571e-2f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.1283776e-1f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-3.7612638e-1f));
    p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.2837917e-1f));
    return _mm256_fmadd_ps(z, p, z);
}

/*
 * erfc(a) for a >= 1.25 as e^(-a^2) Q(a - 1.25), Q of degree 8: minimax on
 * [1.25, 3.92] for the absolute error of e^(-a^2) Q, which is the absolute
 * error of erf: max 1.6e-8. Past 3.92 the result is 0 (erf is 1 in float
 * there). NaN stays NaN. Lanes with a < 1.25 hold meaningless values.
 */
static inline __m256 tsr_avx2_erfc_tail(__m256 a)
{
    __m256 ac = _mm256_min_ps(_mm256_set1_ps(TSR_AVX2_ERF_ONE), a);
    __m256 u = _mm256_sub_ps(ac, _mm256_set1_ps(TSR_AVX2_ERF_SPLIT));
    __m256 q = _mm256_set1_ps(2.4094044e-5f);
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(-3.1933765e-4f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(1.9321039e-3f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(-7.3554832e-3f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(2.0884847e-2f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(-4.9811505e-2f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(1.0672799e-1f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(-2.0881855e-1f));
    q = _mm256_fmadd_ps(q, u, _mm256_set1_ps(3.6782292e-1f));
    __m256 e = tsr_avx2_exp(_mm256_mul_ps(_mm256_xor_ps(ac, _mm256_set1_ps(-0.0f)), ac));
    __m256 beyond = _mm256_cmp_ps(a, _mm256_set1_ps(TSR_AVX2_ERF_ONE), _CMP_GT_OQ);
    return _mm256_andnot_ps(beyond, _mm256_mul_ps(e, q));
}

/* erf(z): absolute error at most 1.1e-7 (relative near 0), measured on a
 * 1e-5 grid over [-12, 12] against double erf. */
static inline __m256 tsr_avx2_erf(__m256 z)
{
    __m256 a = tsr_avx2_abs(z);
    __m256 sign = _mm256_and_ps(z, _mm256_set1_ps(-0.0f));
    __m256 tail = _mm256_or_ps(sign, _mm256_sub_ps(_mm256_set1_ps(1.0f), tsr_avx2_erfc_tail(a)));
    __m256 near = _mm256_cmp_ps(a, _mm256_set1_ps(TSR_AVX2_ERF_SPLIT), _CMP_LT_OQ);
    return _mm256_blendv_ps(tail, tsr_avx2_erf_near_zero(z), near);
}

/*
 * GELU, erf form: x/2 (1 + erf(x / sqrt 2)). For x < 0 the factor
 * 1 + erf(z) is taken as erfc(|z|) itself rather than 1 - (1 - erfc), so
 * the small negative outputs keep their relative precision down to z = -3.92.
 */
static inline __m256 tsr_avx2_gelu(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678f));
    __m256 a = tsr_avx2_abs(z);
    __m256 tail = tsr_avx2_erfc_tail(a);
    __m256 positive = _mm256_cmp_ps(z, _mm256_setzero_ps(), _CMP_GT_OQ);
    __m256 one_plus_tail = _mm256_blendv_ps(tail, _mm256_sub_ps(_mm256_set1_ps(2.0f), tail),
                                            positive);
    __m256 one_plus_near = _mm256_add_ps(one, tsr_avx2_erf_near_zero(z));
    __m256 near = _mm256_cmp_ps(a, _mm256_set1_ps(TSR_AVX2_ERF_SPLIT), _CMP_LT_OQ);
    __m256 one_plus_erf = _mm256_blendv_ps(one_plus_tail, one_plus_near, near);
    return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), one_plus_erf);
}

#endif
