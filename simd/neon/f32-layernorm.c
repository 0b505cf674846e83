/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta,
 * row by row: mean, then the biased variance (divide by n) in a second pass
 * over x - mean, turned into the scale by the model's LayerNorm form
 * (simd/layernorm_scale.h; PyTorch's, eps inside the square root, by default).
 *
 * Statistics in float, sixteen partial sums per pass. The first pass (which
 * also adds delta) sums x - x[0] rather than x: a row whose values share a
 * large offset (a residual stream drifting away from zero) then sums small
 * numbers, and the mean keeps the precision of the spread rather than of the
 * offset. The second pass sums the squares of x - mean with FMA.
 *
 * out may equal x: the last pass reads each element before writing it.
 */
#include <math.h>

#include "simd/neon/neon.h"
#include "simd/layernorm_scale.h"

/* v with the lanes at and past n (n < 4) set to zero. */
static inline float32x4_t keep_lanes(float32x4_t v, size_t n)
{
    return vbslq_f32(tsr_neon_lanes_below(n), v, vdupq_n_f32(0.0f));
}

/* x += delta when delta is given; returns sum of (x - shift). */
static float add_and_sum(float *x, const float *delta, size_t n, float shift)
{
    const float32x4_t s = vdupq_n_f32(shift);
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t c = 0;
    if (delta) {
        for (; c + 8 <= n; c += 8) {
            float32x4_t v0 = vaddq_f32(vld1q_f32(x + c), vld1q_f32(delta + c));
            float32x4_t v1 = vaddq_f32(vld1q_f32(x + c + 4), vld1q_f32(delta + c + 4));
            vst1q_f32(x + c, v0);
            vst1q_f32(x + c + 4, v1);
            a0 = vaddq_f32(a0, vsubq_f32(v0, s));
            a1 = vaddq_f32(a1, vsubq_f32(v1, s));
        }
        for (; c + 4 <= n; c += 4) {
            float32x4_t v = vaddq_f32(vld1q_f32(x + c), vld1q_f32(delta + c));
            vst1q_f32(x + c, v);
            a2 = vaddq_f32(a2, vsubq_f32(v, s));
        }
        if (c < n) {
            float32x4_t v = vaddq_f32(tsr_neon_load_partial(x + c, n - c),
                                      tsr_neon_load_partial(delta + c, n - c));
            tsr_neon_store_partial(x + c, v, n - c);
            a3 = vaddq_f32(a3, keep_lanes(vsubq_f32(v, s), n - c));
        }
    } else {
        for (; c + 16 <= n; c += 16) {
            a0 = vaddq_f32(a0, vsubq_f32(vld1q_f32(x + c), s));
            a1 = vaddq_f32(a1, vsubq_f32(vld1q_f32(x + c + 4), s));
            a2 = vaddq_f32(a2, vsubq_f32(vld1q_f32(x + c + 8), s));
            a3 = vaddq_f32(a3, vsubq_f32(vld1q_f32(x + c + 12), s));
        }
        for (; c + 4 <= n; c += 4)
            a0 = vaddq_f32(a0, vsubq_f32(vld1q_f32(x + c), s));
        if (c < n)
            a1 = vaddq_f32(a1, keep_lanes(vsubq_f32(tsr_neon_load_partial(x + c, n - c), s),
                                          n - c));
    }
    return vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
}

/* sum of (x - mean)^2. */
static float centred_squares(const float *x, size_t n, float mean)
{
    const float32x4_t m = vdupq_n_f32(mean);
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
    size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        float32x4_t d0 = vsubq_f32(vld1q_f32(x + c), m);
        float32x4_t d1 = vsubq_f32(vld1q_f32(x + c + 4), m);
        float32x4_t d2 = vsubq_f32(vld1q_f32(x + c + 8), m);
        float32x4_t d3 = vsubq_f32(vld1q_f32(x + c + 12), m);
        a0 = vfmaq_f32(a0, d0, d0);
        a1 = vfmaq_f32(a1, d1, d1);
        a2 = vfmaq_f32(a2, d2, d2);
        a3 = vfmaq_f32(a3, d3, d3);
    }
    for (; c + 4 <= n; c += 4) {
        float32x4_t d = vsubq_f32(vld1q_f32(x + c), m);
        a0 = vfmaq_f32(a0, d, d);
    }
    if (c < n) {
        float32x4_t d = keep_lanes(vsubq_f32(tsr_neon_load_partial(x + c, n - c), m), n - c);
        a1 = vfmaq_f32(a1, d, d);
    }
    return vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
}

/* out = (x - mean) * rstd * gamma + beta. */
static void normalise(const float *x, size_t n, float mean, float rstd, const float *gamma,
                      const float *beta, float *out)
{
    const float32x4_t m = vdupq_n_f32(mean);
    const float32x4_t r = vdupq_n_f32(rstd);
    size_t c = 0;
    for (; c + 4 <= n; c += 4) {
        float32x4_t x_hat = vmulq_f32(vsubq_f32(vld1q_f32(x + c), m), r);
        vst1q_f32(out + c, vfmaq_f32(vld1q_f32(beta + c), x_hat, vld1q_f32(gamma + c)));
    }
    if (c < n) {
        size_t t = n - c;
        float32x4_t x_hat = vmulq_f32(vsubq_f32(tsr_neon_load_partial(x + c, t), m), r);
        float32x4_t y = vfmaq_f32(tsr_neon_load_partial(beta + c, t), x_hat,
                                  tsr_neon_load_partial(gamma + c, t));
        tsr_neon_store_partial(out + c, y, t);
    }
}

void tsr_f32_add_layernorm__neon(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
                                 tsr_layernorm_params norm, float *out, size_t ldo)
{
    if (n == 0)
        return;
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ldx;
        const float *d = delta ? delta + r * ldd : NULL;
        const float shift = d ? row[0] + d[0] : row[0];
        const float mean = shift + add_and_sum(row, d, n, shift) / (float)n;
        const float var = centred_squares(row, n, mean) / (float)n;
        const float rstd = (float)tsr_layernorm_scale(var, n, norm);
        normalise(row, n, mean, rstd, gamma, beta, out + r * ldo);
    }
}
