/*
 * The GEMM epilogue, AVX2 + FMA (a tsr_gemm_epilogue_fn, see simd/gemm/gemm.h):
 * y = act(c + bias) + residual over a finished block, 8 columns at a time,
 * the last partial vector of each row with masked loads and stores (masked
 * lanes are neither read nor written, so nothing past the row is touched).
 *
 * The activations need a vector exp (SiLU) and erf (GELU). They are defined
 * here, self-contained, rather than shared, so the GEMM depends on no other
 * file of the set; their polynomials were fitted for this file (weighted
 * least squares iterated towards minimax, coefficients rounded to float and
 * the float evaluation checked on a dense grid):
 *   exp: |relative error| < 2e-9 before rounding, about 1 ulp in float;
 *   erf: |absolute error| < 7e-8 in float over the whole line (1 ulp of 1).
 */
#include <immintrin.h>
#include <stdint.h>

#include "simd/avx2/gemm-avx2.h"

/* ---- exp ------------------------------------------------------------------ */

/* e^x: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two parts so n ln2
 * is exact enough), e^r by a degree-6 polynomial, 2^n put in the exponent.
 * Inputs below -87.3 give e^-87.3 (about 1e-38, no denormals), inputs above
 * 88.72 give +inf; NaN stays NaN (max/min return their second operand, x,
 * when it is NaN). */
static inline __m256 exp_ps(__m256 x)
{
    const __m256 overflow = _mm256_set1_ps(88.7228394f);
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(-87.3f), x);
    xc = _mm256_min_ps(_mm256_set1_ps(88.3f), xc);

    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504089f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);

    __m256 p = _mm256_set1_ps(1.383683993e-03f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.374815807e-03f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166822508e-02f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666641980e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999999106e-01f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));

    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
                                  23);
    __m256 v = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_blendv_ps(v, _mm256_set1_ps(__builtin_inff()),
                            _mm256_cmp_ps(x, overflow, _CMP_GT_OQ));
}

/* ---- erf ------------------------------------------------------------------ */

/* erf(x) = sign(x) erf(|x|), in two pieces evaluated for every lane and
 * blended:
 *   |x| < 1:  erf = |x| + |x| R(x^2), R of degree 6 (erf / x - 1, which is
 *             small, so the rounding of the sum stays within an ulp);
 *   |x| >= 1: erf = 1 - Q(min(|x|, 3.92) - 2.46), Q of degree 14 fitted to
 *             erfc on [1, 3.92]; past 3.92 erfc < 1.1e-8 and erf rounds to 1. */
static inline __m256 erf_ps(__m256 x)
{
    const __m256 sign_bit = _mm256_set1_ps(-0.0f);
    const __m256 ax = _mm256_andnot_ps(sign_bit, x);
    const __m256 u = _mm256_mul_ps(ax, ax);

    __m256 r = _mm256_set1_ps(7.647139137e-05f);
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(-7.942363736e-04f));
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(5.179750267e-03f));
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(-2.684859186e-02f));
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(1.128343046e-01f));
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(-3.761260509e-01f));
    r = _mm256_fmadd_ps(r, u, _mm256_set1_ps(1.283791512e-01f));
    const __m256 small = _mm256_fmadd_ps(ax, r, ax);

    const __m256 t = _mm256_sub_ps(_mm256_min_ps(_mm256_set1_ps(3.92f), ax),
                                   _mm256_set1_ps(2.46f));
    __m256 q = _mm256_set1_ps(-1.090817022e-06f);
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-1.063940829e-07f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.730689291e-05f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-2.462638258e-05f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-7.576050848e-05f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.994048409e-04f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-3.559846955e-04f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-4.590617027e-04f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(2.937226323e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-6.799711846e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(9.914168157e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-9.832412936e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(6.534521934e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-2.656240482e-03f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(5.033535999e-04f));
    const __m256 large = _mm256_sub_ps(_mm256_set1_ps(1.0f), q);

    const __m256 is_large = _mm256_cmp_ps(ax, _mm256_set1_ps(1.0f), _CMP_GE_OQ);
    const __m256 e = _mm256_blendv_ps(small, large, is_large);
    return _mm256_or_ps(e, _mm256_and_ps(x, sign_bit));
}

/* ---- Activations ---------------------------------------------------------- */

/* As tsr_f32_activate_one__scalar, lane by lane. ReLU keeps NaN: max returns
 * its second operand, x, when either is NaN. */
static inline __attribute__((always_inline)) __m256 activate(__m256 x, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        return _mm256_max_ps(_mm256_setzero_ps(), x);
    case TSR_ACT_GELU: {
        const __m256 half_x = _mm256_mul_ps(_mm256_set1_ps(0.5f), x);
        const __m256 e = erf_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752440f)));
        return _mm256_mul_ps(half_x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }
    case TSR_ACT_SILU: {
        const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
        return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    }
    case TSR_ACT_NONE:
        break;
    }
    return x;
}

/* ---- The epilogue ----------------------------------------------------------- */

/* Lanes [0, count) on, count <= 8. */
static inline __m256i lanes(size_t count)
{
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - count));
}

/* One vector of 8 (or `mask`ed fewer) outputs. */
static inline __attribute__((always_inline)) void finish(const float *c, const float *bias,
                                                         const float *residual, float *y,
                                                         tsr_activation act, int partial,
                                                         __m256i mask)
{
    __m256 v = _mm256_loadu_ps(c);
    if (bias)
        v = _mm256_add_ps(v, partial ? _mm256_maskload_ps(bias, mask) : _mm256_loadu_ps(bias));
    v = activate(v, act);
    /* The residual is read before y is written: they may be the same. */
    if (residual)
        v = _mm256_add_ps(partial ? _mm256_maskload_ps(residual, mask) : _mm256_loadu_ps(residual),
                          v);
    if (partial)
        _mm256_maskstore_ps(y, mask, v);
    else
        _mm256_storeu_ps(y, v);
}

static inline __attribute__((always_inline)) void finish_block(
    const float *c, size_t ldc, size_t m, size_t n, const float *bias, tsr_activation act,
    const float *residual, size_t ldr, float *y, size_t ldy)
{
    const size_t full = n / 8 * 8;
    const __m256i mask = lanes(n - full);

    for (size_t i = 0; i < m; i++) {
        const float *c_row = c + i * ldc;
        const float *r_row = residual ? residual + i * ldr : NULL;
        float *y_row = y + i * ldy;
        size_t j = 0;
        for (; j < full; j += 8)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 0,
                   mask);
        if (j < n)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 1,
                   mask);
    }
}

void tsr_f32_gemm_epilogue__avx2(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                                 tsr_activation act, const float *residual, size_t ldr, float *y,
                                 size_t ldy)
{
    /* One copy of the loops per activation, so the switch is not per vector. */
    switch (act) {
    case TSR_ACT_RELU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_RELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_GELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_SILU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_SILU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_NONE:
        finish_block(c, ldc, m, n, bias, TSR_ACT_NONE, residual, ldr, y, ldy);
        break;
    }
}
