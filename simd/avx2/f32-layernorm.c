/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta,
 * row by row, in three passes over the row:
 *
 *   1. x += delta, stored, and summed: a rough mean m0;
 *   2. the sums of x - m0 and of (x - m0)^2: the mean is m0 plus the mean
 *      of x - m0, and the biased variance is that of x - m0 minus the square
 *      of this correction;
 *   3. out = ((x - m0) - correction) * rstd * gamma + beta.
 *
 * The sums run in float over several chains of 8 lanes. A float sum of
 * values with a large common offset (a residual stream with mean 100, say)
 * gets the mean wrong by many ulp, and that error would shift every x - mean
 * alike; the sum of the small differences x - m0 has no such offset, so the
 * correction makes the mean good to about an ulp of the spread of x (it is
 * applied as a second subtraction, never rounded into a float mean near
 * x), and the variance, taken about a point that close to the mean, has no
 * cancellation to speak of (unlike E[x^2] - mean^2). Against the scalar
 * kernel (statistics in double) the outputs differ by a few units of 2^-23
 * (at most 12, for 4096 elements around 1e4). out may equal x: pass 3 reads
 * each element before writing it.
 */
#include <math.h>

#include "simd/avx2/avx2.h"
#include "simd/layernorm_scale.h"

/* The row after x += delta (when given), 8 floats at c; the tail lanes of
 * a masked load are 0. */
static inline __m256 updated(float *x, const float *delta, size_t c, __m256i mask, int tail)
{
    __m256 v = tail ? _mm256_maskload_ps(x + c, mask) : _mm256_loadu_ps(x + c);
    if (!delta)
        return v;
    v = _mm256_add_ps(v, tail ? _mm256_maskload_ps(delta + c, mask) : _mm256_loadu_ps(delta + c));
    if (tail)
        _mm256_maskstore_ps(x + c, mask, v);
    else
        _mm256_storeu_ps(x + c, v);
    return v;
}

/* x += delta (when given) over the row, and the sum of the updated row, in
 * four independent chains of 8 lanes. */
static float add_and_sum(float *x, const float *delta, size_t n)
{
    const __m256i all = _mm256_set1_epi32(-1);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t c = 0;
    for (; c + 32 <= n; c += 32) {
        s0 = _mm256_add_ps(s0, updated(x, delta, c, all, 0));
        s1 = _mm256_add_ps(s1, updated(x, delta, c + 8, all, 0));
        s2 = _mm256_add_ps(s2, updated(x, delta, c + 16, all, 0));
        s3 = _mm256_add_ps(s3, updated(x, delta, c + 24, all, 0));
    }
    for (; c + 8 <= n; c += 8)
        s0 = _mm256_add_ps(s0, updated(x, delta, c, all, 0));
    if (c < n)
        s1 = _mm256_add_ps(s1, updated(x, delta, c, tsr_avx2_tail_mask(n - c), 1));
    return tsr_avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* Sums of (x - shift) and of (x - shift)^2 over the row, four chains each. */
static void centred_sums(const float *x, size_t n, float shift, float *sum, float *squares)
{
    const __m256 m = _mm256_set1_ps(shift);
    __m256 d0 = _mm256_setzero_ps(), d1 = d0, q0 = d0, q1 = d0, q2 = d0, q3 = d0;
    size_t c = 0;
    for (; c + 32 <= n; c += 32) {
        __m256 t0 = _mm256_sub_ps(_mm256_loadu_ps(x + c), m);
        __m256 t1 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 8), m);
        __m256 t2 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 16), m);
        __m256 t3 = _mm256_sub_ps(_mm256_loadu_ps(x + c + 24), m);
        d0 = _mm256_add_ps(d0, _mm256_add_ps(t0, t1));
        d1 = _mm256_add_ps(d1, _mm256_add_ps(t2, t3));
        q0 = _mm256_fmadd_ps(t0, t0, q0);
        q1 = _mm256_fmadd_ps(t1, t1, q1);
        q2 = _mm256_fmadd_ps(t2, t2, q2);
        q3 = _mm256_fmadd_ps(t3, t3, q3);
    }
    for (; c + 8 <= n; c += 8) {
        __m256 t = _mm256_sub_ps(_mm256_loadu_ps(x + c), m);
        d0 = _mm256_add_ps(d0, t);
        q0 = _mm256_fmadd_ps(t, t, q0);
    }
    if (c < n) {
        __m256i mask = tsr_avx2_tail_mask(n - c);
        /* Masked-off lanes load 0, which centring turns into -shift: clear them. */
        __m256 t = _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + c, mask), m),
                                 _mm256_castsi256_ps(mask));
        d1 = _mm256_add_ps(d1, t);
        q1 = _mm256_fmadd_ps(t, t, q1);
    }
    *sum = tsr_avx2_hsum(_mm256_add_ps(d0, d1));
    *squares = tsr_avx2_hsum(_mm256_add_ps(_mm256_add_ps(q0, q1), _mm256_add_ps(q2, q3)));
}

/* out = ((x - rough) - correction) * rstd * gamma + beta: centring in two
 * steps keeps the mean's full precision (rough alone is a float ~ x). */
static void normalise(const float *x, size_t n, float rough, float correction, float rstd,
                      const float *gamma, const float *beta, float *out)
{
    const __m256 m = _mm256_set1_ps(rough), dm = _mm256_set1_ps(correction);
    const __m256 r = _mm256_set1_ps(rstd);
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256 t = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + c), m), dm);
        __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(t, r), _mm256_loadu_ps(gamma + c),
                                   _mm256_loadu_ps(beta + c));
        _mm256_storeu_ps(out + c, y);
    }
    if (c < n) {
        __m256i mask = tsr_avx2_tail_mask(n - c);
        __m256 t = _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + c, mask), m), dm);
        __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(t, r), _mm256_maskload_ps(gamma + c, mask),
                                   _mm256_maskload_ps(beta + c, mask));
        _mm256_maskstore_ps(out + c, mask, y);
    }
}

void tsr_f32_add_layernorm__avx2(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
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
