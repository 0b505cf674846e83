/*
 * e^x for the AVX2 kernels, eight floats at a time, branch-free. erf and the
 * activations are written once for every set over its vocabulary
 * (simd/frame/vec-activations.h, with VEC_EXP = tsr_avx2_exp); their
 * polynomials come from the same kind of fit as these.
 *
 * Where the coefficients come from: each polynomial is a minimax fit made
 * with a linear Remez exchange in 50-digit arithmetic (mpmath), then rounded
 * to float. The fitted function, the interval, the weight and the resulting
 * maximum error are given next to each set; the float evaluation adds about
 * one rounding per operation on top.
 *
 * Special values follow C's expf/erff: NaN in, NaN out; exp(-inf) = 0,
 * exp(large) = inf. Clamping uses max_ps(bound, x) and
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

#endif
