/*
 * e^x for the AVX-512 kernels, sixteen floats at a time, branch-free (erf
 * and the activations: simd/frame/vec-activations.h, over
 * simd/avx512/vec.h).
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

#endif
