/*
 * Vector exp, erf and the activations built on them, four floats at a time.
 *
 * The polynomial coefficients were fitted for this file with a Remez exchange
 * (40-digit arithmetic, minimax of the weighted error on a dense grid), then
 * rounded to float. The bounds of the fits, and the errors measured in float
 * against double-precision libm on 10^6 (exp) and 4 * 10^6 (erf) random
 * points, coefficient and evaluation rounding included:
 *
 *   exp:  fit 1.9e-9 relative; measured at most 1.02 ulp on [-87.3, 88.7].
 *   erf:  fits 1.9e-8 (|t| < 1.5) and 1.3e-8 (1.5 <= |t| < 3.92) absolute;
 *         measured at most 1.5e-7 absolute, the largest just below |t| = 1.5
 *         where erf is near 1 and its float ulp is 6e-8.
 *
 * NaN goes through as NaN; exp(-inf) is 0 and exp(+inf) is +inf.
 */
#ifndef TSR_SIMD_NEON_VECMATH_H
#define TSR_SIMD_NEON_VECMATH_H

#include <arm_neon.h>

#include "simd/kernels.h"

/*
 * exp(x) = 2^n e^r with n = round(x / ln 2) and r = x - n ln 2, |r| <= ln2/2.
 * r is formed with ln 2 split into a float and the float of its remainder, so
 * r keeps its relative precision. e^r is a degree 6 polynomial (minimax for
 * relative error on [-ln2/2, ln2/2], constant and linear coefficients 1
 * after rounding, so exp(0) is exactly 1). 2^n is applied as 2^(n/2) 2^(n -
 * n/2), two exact powers of two, so the results that overflow become +inf
 * and those below FLT_MIN become subnormal, then 0, through the rounding of
 * the products themselves; x is first clamped to [-104, 89], where both are
 * already reached, to keep n in range.
 */
static inline float32x4_t tsr_neon_exp(float32x4_t x)
{
    const float32x4_t log2e = vdupq_n_f32(1.44269504088896341f);
    const float32x4_t ln2_hi = vdupq_n_f32(0.693147182464599609375f);
    const float32x4_t ln2_lo = vdupq_n_f32(-1.904654323148236017e-9f);

    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-104.0f)), vdupq_n_f32(89.0f));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, log2e));
    float32x4_t r = vfmsq_f32(x, n, ln2_hi);
    r = vfmsq_f32(r, n, ln2_lo);

    float32x4_t p = vdupq_n_f32(0.0013836815487593412f);
    p = vfmaq_f32(vdupq_n_f32(0.008374840021133423f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.041668228805065155f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.16666419804096222f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.49999991059303284f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);

    int32x4_t ni = vcvtq_s32_f32(n);
    int32x4_t half = vshrq_n_s32(ni, 1);
    int32x4_t rest = vsubq_s32(ni, half);
    float32x4_t scale1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, vdupq_n_s32(127)), 23));
    float32x4_t scale2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(rest, vdupq_n_s32(127)), 23));
    return vmulq_f32(vmulq_f32(p, scale1), scale2);
}

/* Below this |t|, erf(t) = t P(t^2); from it on, erfc(t) = e^(-t^2) R(t). */
#define TSR_NEON_ERF_SPLIT 1.5f
/* erfc(t) < 2^-24 past this: erf(t) is 1 in float, and R is not fitted. */
#define TSR_NEON_ERF_SATURATE 3.92f

/* erf(t) / t as a polynomial in u = t^2, minimax for the absolute error of
 * erf on |t| < 1.5 (degree 7 in u). */
static inline float32x4_t tsr_neon_erf_small_(float32x4_t u)
{
    float32x4_t p = vdupq_n_f32(-5.062825948698446e-06f);
    p = vfmaq_f32(vdupq_n_f32(8.692129631526768e-05f), p, u);
    p = vfmaq_f32(vdupq_n_f32(-0.0007871222915127873f), p, u);
    p = vfmaq_f32(vdupq_n_f32(0.005142380483448505f), p, u);
    p = vfmaq_f32(vdupq_n_f32(-0.02680870331823826f), p, u);
    p = vfmaq_f32(vdupq_n_f32(0.1128159761428833f), p, u);
    p = vfmaq_f32(vdupq_n_f32(-0.3761225640773773f), p, u);
    p = vfmaq_f32(vdupq_n_f32(1.128378987312317f), p, u);
    return p;
}

/* erfc(a) for 1.5 <= a: e^(-a^2) R(a), with R(a) = erfc(a) e^(a^2) a smooth,
 * slowly falling function (from 0.34 to 0.14) fitted in powers of
 * (a - 2.71), the middle of [1.5, 3.92], where the terms fall off fast
 * (degree 7, minimax for the absolute error of erfc). R is evaluated at a
 * clamped to 3.92; past it e^(-a^2) < 2e-7 and erfc is out of float's reach
 * beside 1. */
static inline float32x4_t tsr_neon_erfc_large_(float32x4_t a)
{
    float32x4_t s = vsubq_f32(vminq_f32(a, vdupq_n_f32(TSR_NEON_ERF_SATURATE)),
                              vdupq_n_f32(2.71f));
    float32x4_t p = vdupq_n_f32(-6.236803892534226e-05f);
    p = vfmaq_f32(vdupq_n_f32(0.00016703373694326729f), p, s);
    p = vfmaq_f32(vdupq_n_f32(-0.0004682024591602385f), p, s);
    p = vfmaq_f32(vdupq_n_f32(0.0018020957941189408f), p, s);
    p = vfmaq_f32(vdupq_n_f32(-0.006245031487196684f), p, s);
    p = vfmaq_f32(vdupq_n_f32(0.020490173250436783f), p, s);
    p = vfmaq_f32(vdupq_n_f32(-0.06484321504831314f), p, s);
    p = vfmaq_f32(vdupq_n_f32(0.19622360169887543f), p, s);
    float32x4_t minus_a2 = vnegq_f32(vmulq_f32(a, a));
    return vmulq_f32(tsr_neon_exp(minus_a2), p);
}

/* 1 + erf(t), without the cancellation of 1 + erf for negative t: there it
 * is erfc(|t|) itself, so GELU keeps its relative precision for x < 0. */
static inline float32x4_t tsr_neon_one_plus_erf_(float32x4_t t)
{
    float32x4_t a = vabsq_f32(t);
    float32x4_t small = vfmaq_f32(vdupq_n_f32(1.0f), t, tsr_neon_erf_small_(vmulq_f32(t, t)));
    float32x4_t tail = tsr_neon_erfc_large_(a);
    float32x4_t large = vbslq_f32(vcltq_f32(t, vdupq_n_f32(0.0f)), tail,
                                  vsubq_f32(vdupq_n_f32(2.0f), tail));
    return vbslq_f32(vcgeq_f32(a, vdupq_n_f32(TSR_NEON_ERF_SPLIT)), large, small);
}

static inline float32x4_t tsr_neon_erf(float32x4_t t)
{
    float32x4_t a = vabsq_f32(t);
    float32x4_t small = vmulq_f32(t, tsr_neon_erf_small_(vmulq_f32(t, t)));
    float32x4_t large_abs = vsubq_f32(vdupq_n_f32(1.0f), tsr_neon_erfc_large_(a));
    /* copy the sign of t onto 1 - erfc(|t|) */
    uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(t), vdupq_n_u32(0x80000000u));
    float32x4_t large = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(large_abs), sign));
    return vbslq_f32(vcgeq_f32(a, vdupq_n_f32(TSR_NEON_ERF_SPLIT)), large, small);
}

/* x/2 (1 + erf(x / sqrt 2)), as PyTorch's exact GELU. */
static inline float32x4_t tsr_neon_gelu(float32x4_t x)
{
    const float32x4_t sqrt_half = vdupq_n_f32(0.70710678118654752440f);
    float32x4_t half_x = vmulq_n_f32(x, 0.5f);
    return vmulq_f32(half_x, tsr_neon_one_plus_erf_(vmulq_f32(x, sqrt_half)));
}

/* 1 / (1 + e^-x): e^-x overflows to +inf for x < -88.7, giving 0. */
static inline float32x4_t tsr_neon_sigmoid(float32x4_t x)
{
    float32x4_t one = vdupq_n_f32(1.0f);
    return vdivq_f32(one, vaddq_f32(one, tsr_neon_exp(vnegq_f32(x))));
}

/* x sigmoid(x), as x / (1 + e^-x): one rounding fewer than the product. */
static inline float32x4_t tsr_neon_silu(float32x4_t x)
{
    return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), tsr_neon_exp(vnegq_f32(x))));
}

/* x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh GELU as the
 * scalar set computes it, x / (1 + e^(-2u)). */
static inline float32x4_t tsr_neon_gelu_tanh(float32x4_t x)
{
    float32x4_t inner = vfmaq_f32(vdupq_n_f32(1.0f), vmulq_f32(x, x), vdupq_n_f32(0.044715f));
    float32x4_t e = tsr_neon_exp(vmulq_f32(vmulq_f32(x, vdupq_n_f32(-1.5957691216f)), inner));
    return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e));
}

/* x sigmoid(1.702 x), as x / (1 + e^(-1.702 x)). */
static inline float32x4_t tsr_neon_gelu_sigmoid(float32x4_t x)
{
    float32x4_t e = tsr_neon_exp(vmulq_f32(x, vdupq_n_f32(-1.702f)));
    return vdivq_f32(x, vaddq_f32(vdupq_n_f32(1.0f), e));
}

/* x < 0 ? 0 : x, as the scalar set: NaN and -0 pass unchanged. */
static inline float32x4_t tsr_neon_relu(float32x4_t x)
{
    return vbslq_f32(vcltq_f32(x, vdupq_n_f32(0.0f)), vdupq_n_f32(0.0f), x);
}

static inline float32x4_t tsr_neon_activate(float32x4_t x, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        return tsr_neon_relu(x);
    case TSR_ACT_GELU:
        return tsr_neon_gelu(x);
    case TSR_ACT_SILU:
        return tsr_neon_silu(x);
    case TSR_ACT_GELU_TANH:
        return tsr_neon_gelu_tanh(x);
    case TSR_ACT_GELU_SIGMOID:
        return tsr_neon_gelu_sigmoid(x);
    case TSR_ACT_NONE:
        break;
    }
    return x;
}

#endif
