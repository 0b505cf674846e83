/*
 * Vector elementary functions for the AVX-512 kernels: exp, erf and the erf
 * GELU, sixteen floats at a time, branch-free (the other activations:
 * simd/frame/vec-activations.h, over simd/avx512/vec.h).
 *
 * The approximations are the avx2 set's (simd/avx2/vecmath.h says where each
 * polynomial comes from, its interval and its error): the same argument
 * reductions and the same float coefficients. What AVX-512 changes is the
 * mechanics: 2^n is applied with vscalefps (one instruction, one rounding,
 * inf on overflow and a correctly rounded subnormal or 0 on underflow) instead
 * of building exponent bits, and lane selections use opmasks.
 *
 * Special values follow C's expf/erff: NaN in, NaN out; exp(-inf) = 0,
 * exp(large) = inf; erf(+-inf) = +-1. Clamping uses max_ps(bound, x) and
 * min_ps(bound, x): when x is NaN these return x (the second operand), so a
 * NaN is never clamped into a number.
 */
#ifndef TSR_SIMD_AVX512_VECMATH_H
#define TSR_SIMD_AVX512_VECMATH_H

#include "simd/avx512/intrinsics.h"
#include "simd/kernels.h"

/*
 * e^x = 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2 (ln 2 split
 * Cody-Waite style, so x - n * LN2_HI is exact), e^r from the avx2 set's
 * degree-6 minimax polynomial (relative error 3.1e-9 on [-ln2/2, ln2/2]).
 * Within 0.91 ulp of e^x wherever the result is a normal float, as the avx2
 * set's (the two differ only in how 2^n is applied). x is clamped to
 * [-110, 100] first: e^-110 rounds to 0 and e^100 to inf, as the exact values
 * do, so the clamp changes no result. This one function also serves softmax
 * (x <= 0): with vscalefps the general case costs what the avx2 set's
 * special x <= 0 version does.
 */
static inline __m512 tsr_avx512_exp(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);

    x = _mm512_max_ps(_mm512_set1_ps(-110.0f), x);
    x = _mm512_min_ps(_mm512_set1_ps(100.0f), x);

    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269502f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);

    __m512 p = _mm512_set1_ps(1.3814613e-3f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.36871e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166839e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666521e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999994e-1f));
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_fmadd_ps(p, r, one);
    return _mm512_scalef_ps(p, n);
}

static inline __m512 tsr_avx512_negate(__m512 x)
{
    return _mm512_xor_ps(x, _mm512_set1_ps(-0.0f));
}

/* Where erf switches from the near-zero fit to the erfc tail fit, and from
 * where erf rounds to 1 in float (the avx2 set's TSR_AVX2_ERF_SPLIT and
 * TSR_AVX2_ERF_ONE). */
#define TSR_AVX512_ERF_SPLIT 1.25f
#define TSR_AVX512_ERF_ONE 3.92f

/* erf(z) = z * P(z^2) for |z| < 1.25: tsr_avx2_erf_near_zero's polynomial,
 * with its constant term applied as z + z * 0.12837917 in the same way. */
static inline __m512 tsr_avx512_erf_near_zero(__m512 z)
{
    __m512 s = _mm512_mul_ps(z, z);
    __m512 p = _mm512_set1_ps(-8.315454e-6f);
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.07936045e-4f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-8.4230566e-4f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(5.21751e-3f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-2.6864571e-2f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.1283776e-1f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-3.7612638e-1f));
    p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.2837917e-1f));
    return _mm512_fmadd_ps(z, p, z);
}

/* erfc(a) for a >= 1.25 as e^(-a^2) Q(a - 1.25): tsr_avx2_erfc_tail's
 * polynomial. 0 past 3.92; NaN stays NaN (the compare is false for NaN, and
 * min_ps passes it through). Lanes with a < 1.25 hold meaningless values. */
static inline __m512 tsr_avx512_erfc_tail(__m512 a)
{
    __m512 ac = _mm512_min_ps(_mm512_set1_ps(TSR_AVX512_ERF_ONE), a);
    __m512 u = _mm512_sub_ps(ac, _mm512_set1_ps(TSR_AVX512_ERF_SPLIT));
    __m512 q = _mm512_set1_ps(2.4094044e-5f);
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-3.1933765e-4f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(1.9321039e-3f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-7.3554832e-3f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(2.0884847e-2f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-4.9811505e-2f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(1.0672799e-1f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(-2.0881855e-1f));
    q = _mm512_fmadd_ps(q, u, _mm512_set1_ps(3.6782292e-1f));
    __m512 e = tsr_avx512_exp(_mm512_mul_ps(tsr_avx512_negate(ac), ac));
    __mmask16 beyond = _mm512_cmp_ps_mask(a, _mm512_set1_ps(TSR_AVX512_ERF_ONE), _CMP_GT_OQ);
    return _mm512_maskz_mov_ps((__mmask16)~beyond, _mm512_mul_ps(e, q));
}

/* erf(z), sign restored on the tail: absolute error at most 1.1e-7
 * (relative near 0), as the avx2 set's. */
static inline __m512 tsr_avx512_erf(__m512 z)
{
    __m512 a = _mm512_abs_ps(z);
    __m512 sign = _mm512_and_ps(z, _mm512_set1_ps(-0.0f));
    __m512 tail = _mm512_or_ps(sign, _mm512_sub_ps(_mm512_set1_ps(1.0f), tsr_avx512_erfc_tail(a)));
    __mmask16 near = _mm512_cmp_ps_mask(a, _mm512_set1_ps(TSR_AVX512_ERF_SPLIT), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(near, tail, tsr_avx512_erf_near_zero(z));
}

/* GELU, erf form: x/2 (1 + erf(x / sqrt 2)). As in tsr_avx2_gelu, for x < 0
 * the factor 1 + erf(z) is erfc(|z|) itself, so small negative outputs keep
 * their relative precision. */
static inline __m512 tsr_avx512_gelu(__m512 x)
{
    __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678f));
    __m512 a = _mm512_abs_ps(z);
    __m512 tail = tsr_avx512_erfc_tail(a);
    __mmask16 positive = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_GT_OQ);
    __m512 one_plus_tail = _mm512_mask_sub_ps(tail, positive, _mm512_set1_ps(2.0f), tail);
    __m512 one_plus_near = _mm512_add_ps(_mm512_set1_ps(1.0f), tsr_avx512_erf_near_zero(z));
    __mmask16 near = _mm512_cmp_ps_mask(a, _mm512_set1_ps(TSR_AVX512_ERF_SPLIT), _CMP_LT_OQ);
    __m512 one_plus_erf = _mm512_mask_blend_ps(near, one_plus_tail, one_plus_near);
    return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), one_plus_erf);
}

#endif
