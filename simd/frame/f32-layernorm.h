/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta,
 * row by row: the frame every vector set shares, written once over the set's
 * vector vocabulary (VEC_*, simd/avx2/vec.h) and compiled into each set with
 * its own flags. Three passes over the row:
 *
 *   1. x += delta, stored, and summed: a rough mean m0;
 *   2. the sums of x - m0 and of (x - m0)^2: the mean is m0 plus the mean
 *      of x - m0, and the biased variance is that of x - m0 minus the square
 *      of this correction;
 *   3. out = ((x - m0) - correction) * rstd * gamma + beta.
 *
 * The sums run in float over several chains of VEC_WIDTH lanes, in an order
 * that depends only on n. A float sum of values with a large common offset
 * (a residual stream with mean 100, say) gets the mean wrong by many ulp,
 * and that error would shift every x - mean alike; the sum of the small
 * differences x - m0 has no such offset, so the correction makes the mean
 * good to about an ulp of the spread of x (it is applied as a second
 * subtraction, never rounded into a float mean near x), and the variance,
 * taken about a point that close to the mean, has no cancellation to speak
 * of (unlike E[x^2] - mean^2). Against the scalar kernel (statistics in
 * double) the outputs differ by a few units of 2^-23 (at most 12, for 4096
 * elements around 1e4).
 *
 * The last partial vector of a row goes through masked loads and stores
 * (masked-off lanes are neither read nor written and load as 0; pass 2
 * zeroes them again after centring). out may equal x: pass 3 reads each
 * element before writing it.
 */
#ifndef TSR_SIMD_FRAME_F32_LAYERNORM_H
#define TSR_SIMD_FRAME_F32_LAYERNORM_H

#include "simd/frame/vec-parts.h"
#include "simd/kernels.h"
#include "simd/layernorm_scale.h"

/* The row after x += delta (when given), a vector at c; masked-off lanes
 * are 0. */
static inline __attribute__((always_inline)) vec_t updated(float *x, const float *delta,
                                                           size_t c, vec_mask_t mask, int tail)
{
    vec_t v = load_part(x + c, tail, mask);
    if (!delta)
        return v;
    v = VEC_ADD(v, load_part(delta + c, tail, mask));
    store_part(x + c, tail, mask, v);
    return v;
}

/* x += delta (when given) over the row, and the sum of the updated row, in
 * four independent chains. */
static float add_and_sum(float *x, const float *delta, size_t n)
{
    const size_t w = VEC_WIDTH;
    const vec_mask_t whole = VEC_TAIL_MASK(w); /* read by no access: tail = 0 */
    vec_t s0 = VEC_ZERO(), s1 = s0, s2 = s0, s3 = s0;
    size_t c = 0;
    for (; c + 4 * w <= n; c += 4 * w) {
        s0 = VEC_ADD(s0, updated(x, delta, c, whole, 0));
        s1 = VEC_ADD(s1, updated(x, delta, c + w, whole, 0));
        s2 = VEC_ADD(s2, updated(x, delta, c + 2 * w, whole, 0));
        s3 = VEC_ADD(s3, updated(x, delta, c + 3 * w, whole, 0));
    }
    for (; c + w <= n; c += w)
        s0 = VEC_ADD(s0, updated(x, delta, c, whole, 0));
    if (c < n)
        s1 = VEC_ADD(s1, updated(x, delta, c, VEC_TAIL_MASK(n - c), 1));
    return VEC_HSUM(VEC_ADD(VEC_ADD(s0, s1), VEC_ADD(s2, s3)));
}

/* Sums of (x - shift) and of (x - shift)^2 over the row, several chains each. */
static void centred_sums(const float *x, size_t n, float shift, float *sum, float *squares)
{
    const size_t w = VEC_WIDTH;
    const vec_t m = VEC_SET1(shift);
    vec_t d0 = VEC_ZERO(), d1 = d0, q0 = d0, q1 = d0, q2 = d0, q3 = d0;
    size_t c = 0;
    for (; c + 4 * w <= n; c += 4 * w) {
        vec_t t0 = VEC_SUB(VEC_LOADU(x + c), m);
        vec_t t1 = VEC_SUB(VEC_LOADU(x + c + w), m);
        vec_t t2 = VEC_SUB(VEC_LOADU(x + c + 2 * w), m);
        vec_t t3 = VEC_SUB(VEC_LOADU(x + c + 3 * w), m);
        d0 = VEC_ADD(d0, VEC_ADD(t0, t1));
        d1 = VEC_ADD(d1, VEC_ADD(t2, t3));
        q0 = VEC_FMA(t0, t0, q0);
        q1 = VEC_FMA(t1, t1, q1);
        q2 = VEC_FMA(t2, t2, q2);
        q3 = VEC_FMA(t3, t3, q3);
    }
    for (; c + w <= n; c += w) {
        vec_t t = VEC_SUB(VEC_LOADU(x + c), m);
        d0 = VEC_ADD(d0, t);
        q0 = VEC_FMA(t, t, q0);
    }
    if (c < n) {
        /* Masked-off lanes load 0, which centring turns into -shift: clear them. */
        const vec_mask_t mask = VEC_TAIL_MASK(n - c);
        vec_t t = VEC_KEEP_TAIL(mask, VEC_SUB(VEC_LOAD_TAIL(x + c, mask), m));
        d1 = VEC_ADD(d1, t);
        q1 = VEC_FMA(t, t, q1);
    }
    *sum = VEC_HSUM(VEC_ADD(d0, d1));
    *squares = VEC_HSUM(VEC_ADD(VEC_ADD(q0, q1), VEC_ADD(q2, q3)));
}

/* out = ((x - rough) - correction) * rstd * gamma + beta: centring in two
 * steps keeps the mean's full precision (rough alone is a float ~ x). */
static inline __attribute__((always_inline)) void
normalise_vector(const float *x, size_t c, vec_t m, vec_t dm, vec_t r, const float *gamma,
                 const float *beta, float *out, vec_mask_t mask, int tail)
{
    vec_t t = VEC_SUB(VEC_SUB(load_part(x + c, tail, mask), m), dm);
    vec_t y = VEC_FMA(VEC_MUL(t, r), load_part(gamma + c, tail, mask),
                      load_part(beta + c, tail, mask));
    store_part(out + c, tail, mask, y);
}

static void normalise(const float *x, size_t n, float rough, float correction, float rstd,
                      const float *gamma, const float *beta, float *out)
{
    const vec_t m = VEC_SET1(rough), dm = VEC_SET1(correction), r = VEC_SET1(rstd);
    size_t c = 0;
    for (; c + VEC_WIDTH <= n; c += VEC_WIDTH)
        normalise_vector(x, c, m, dm, r, gamma, beta, out, VEC_TAIL_MASK(VEC_WIDTH), 0);
    if (c < n)
        normalise_vector(x, c, m, dm, r, gamma, beta, out, VEC_TAIL_MASK(n - c), 1);
}

/* The set's add_layernorm kernel, tsr_f32_add_layernorm__<set>, is this. */
static void layernorm_frame(float *x, size_t ldx, const float *delta, size_t ldd, size_t rows,
                            size_t n, const float *gamma, const float *beta,
                            tsr_layernorm_params norm, float *out, size_t ldo)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ldx;
        float rough_mean = add_and_sum(row, delta ? delta + r * ldd : NULL, n) / (float)n;
        float sum, squares;
        centred_sums(row, n, rough_mean, &sum, &squares);
        /* mean = rough + correction; the variance about the rough mean
         * minus the correction squared is the variance about the mean. */
        double correction = (double)sum / (double)n;
        double var = (double)squares / (double)n - correction * correction;
        float rstd = (float)tsr_layernorm_scale(var, n, norm);
        normalise(row, n, rough_mean, (float)correction, rstd, gamma, beta, out + r * ldo);
    }
}

#endif
