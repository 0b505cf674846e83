/*
 * log_softmax, logsumexp and argmax over one row (the generator's logits),
 * with the scalar set's semantics (simd/scalar/f32-softmax.c):
 * logsumexp(x) = m + log(sum e^(x_i - m)) with m = max x, the sum in double,
 * and log_softmax(x)_i = (x_i - m) - log(sum), formed in double and rounded
 * once, so the likeliest tokens keep their relative precision.
 *
 * The exponentials are vector exps (vecmath.h), widened to double as they
 * are summed: two float64x2 accumulators per four floats, which costs little
 * beside the exp and keeps a 32k-token vocabulary's sum to a few ulp.
 * Partial last vectors are filled with a value that cannot change the
 * result (-inf for a maximum, whose exp adds 0 to a sum).
 */
#include <math.h>

#include "simd/neon/neon.h"
#include "simd/neon/vecmath.h"

/* The first n (0..3) floats at p, `fill` in the other lanes. */
static inline float32x4_t load_partial_or(const float *p, size_t n, float fill)
{
    return vbslq_f32(tsr_neon_lanes_below(n), tsr_neon_load_partial(p, n), vdupq_n_f32(fill));
}

/* max x, NaN if any element is NaN (FMAX propagates NaN), -inf if n == 0. */
static float max_or_nan(const float *x, size_t n)
{
    float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = vmaxq_f32(m0, vld1q_f32(x + i));
        m1 = vmaxq_f32(m1, vld1q_f32(x + i + 4));
        m2 = vmaxq_f32(m2, vld1q_f32(x + i + 8));
        m3 = vmaxq_f32(m3, vld1q_f32(x + i + 12));
    }
    for (; i + 4 <= n; i += 4)
        m0 = vmaxq_f32(m0, vld1q_f32(x + i));
    if (i < n)
        m1 = vmaxq_f32(m1, load_partial_or(x + i, n - i, -INFINITY));
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(m0, m1), vmaxq_f32(m2, m3)));
}

static inline void add_widened(float64x2_t *lo, float64x2_t *hi, float32x4_t v)
{
    *lo = vaddq_f64(*lo, vcvt_f64_f32(vget_low_f32(v)));
    *hi = vaddq_f64(*hi, vcvt_high_f64_f32(v));
}

/* log(sum e^(x_i - m)) for a finite m. */
static double log_sum_shifted(const float *x, size_t n, float m)
{
    const float32x4_t shift = vdupq_n_f32(m);
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        add_widened(&s0, &s1, tsr_neon_exp(vsubq_f32(vld1q_f32(x + i), shift)));
        add_widened(&s2, &s3, tsr_neon_exp(vsubq_f32(vld1q_f32(x + i + 4), shift)));
    }
    for (; i + 4 <= n; i += 4)
        add_widened(&s0, &s1, tsr_neon_exp(vsubq_f32(vld1q_f32(x + i), shift)));
    if (i < n)
        add_widened(&s2, &s3,
                    tsr_neon_exp(vsubq_f32(load_partial_or(x + i, n - i, -INFINITY), shift)));
    float64x2_t s = vaddq_f64(vaddq_f64(s0, s1), vaddq_f64(s2, s3));
    return log(vaddvq_f64(s));
}

float tsr_f32_logsumexp__neon(const float *x, size_t n)
{
    float m = max_or_nan(x, n);
    /* NaN stays NaN; all -inf (or no element) gives -inf; any +inf gives
     * +inf. Shifting by an infinite m would turn these into NaN. */
    if (!isfinite(m))
        return m;
    return (float)(m + log_sum_shifted(x, n, m));
}

/* (x - m) - log_sum for four floats: in double, m subtracted first, then
 * log_sum, and rounded once, exactly as the scalar set forms it. */
static inline float32x4_t log_prob(float32x4_t x, float64x2_t m, float64x2_t log_sum)
{
    float64x2_t lo = vsubq_f64(vsubq_f64(vcvt_f64_f32(vget_low_f32(x)), m), log_sum);
    float64x2_t hi = vsubq_f64(vsubq_f64(vcvt_high_f64_f32(x), m), log_sum);
    return vcvt_high_f32_f64(vcvt_f32_f64(lo), hi);
}

void tsr_f32_log_softmax__neon(const float *x, size_t n, float *y)
{
    float m = max_or_nan(x, n);
    double log_sum = isfinite(m) ? log_sum_shifted(x, n, m) : (double)NAN;
    const float64x2_t vm = vdupq_n_f64((double)m), vl = vdupq_n_f64(log_sum);
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, log_prob(vld1q_f32(x + i), vm, vl));
    if (i < n)
        tsr_neon_store_partial(y + i, log_prob(tsr_neon_load_partial(x + i, n - i), vm, vl), n - i);
}

/*
 * Two passes: the largest non-NaN value (FMAXNM ignores a NaN operand), then
 * the first index holding it, which is the first of equal maxima. All NaN
 * gives 0, as the scalar set; a NaN is never chosen otherwise.
 */
size_t tsr_f32_argmax__neon(const float *x, size_t n)
{
    float32x4_t m0 = vdupq_n_f32(NAN), m1 = m0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        m0 = vmaxnmq_f32(m0, vld1q_f32(x + i));
        m1 = vmaxnmq_f32(m1, vld1q_f32(x + i + 4));
    }
    for (; i + 4 <= n; i += 4)
        m0 = vmaxnmq_f32(m0, vld1q_f32(x + i));
    if (i < n)
        m1 = vmaxnmq_f32(m1, load_partial_or(x + i, n - i, NAN));
    const float best = vmaxnmvq_f32(vmaxnmq_f32(m0, m1));
    if (isnan(best))
        return 0;

    const float32x4_t target = vdupq_n_f32(best);
    for (i = 0; i + 4 <= n; i += 4) {
        uint32x4_t hit = vceqq_f32(vld1q_f32(x + i), target);
        if (vmaxvq_u32(hit))
            break;
    }
    /* The first hit is in the vector at i (or in the tail): scan its lanes. */
    while (x[i] != best)
        i++;
    return i;
}
