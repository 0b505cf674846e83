/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta,
 * row by row: the avx2 set's three passes (simd/avx2/f32-layernorm.c explains
 * why the mean is taken as a rough float mean plus a correction from the
 * centred sum), 16 lanes at a time:
 *
 *   1. x += delta, stored, and summed: a rough mean m0;
 *   2. the sums of x - m0 and of (x - m0)^2;
 *   3. out = ((x - m0) - correction) * rstd * gamma + beta.
 *
 * The sums run in float over several chains of 16 lanes, in an order that
 * depends only on n. The last partial vector of a row goes through opmask
 * loads and stores (masked-off lanes are neither read nor written and load
 * as 0; pass 2 zeroes them again after centring). out may equal x: pass 3
 * reads each element before writing it.
 */
#include <math.h>

#include "simd/avx512/avx512.h"
#include "simd/layernorm_scale.h"

/* The row after x += delta (when given), 16 floats at c; masked-off lanes
 * are 0 (mask is all ones for a full vector). */
static inline __attribute__((always_inline)) __m512 updated(float *x, const float *delta,
                                                            size_t c, __mmask16 mask, int tail)
{
    __m512 v = tail ? _mm512_maskz_loadu_ps(mask, x + c) : _mm512_loadu_ps(x + c);
    if (!delta)
        return v;
    v = _mm512_add_ps(v, tail ? _mm512_maskz_loadu_ps(mask, delta + c)
                              : _mm512_loadu_ps(delta + c));
    if (tail)
        _mm512_mask_storeu_ps(x + c, mask, v);
    else
        _mm512_storeu_ps(x + c, v);
    return v;
}

/* x += delta (when given) over the row, and the sum of the updated row, in
 * four independent chains of 16 lanes. */
static float add_and_sum(float *x, const float *delta, size_t n)
{
    const __mmask16 all = (__mmask16)0xffff;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        s0 = _mm512_add_ps(s0, updated(x, delta, c, all, 0));
        s1 = _mm512_add_ps(s1, updated(x, delta, c + 16, all, 0));
        s2 = _mm512_add_ps(s2, updated(x, delta, c + 32, all, 0));
        s3 = _mm512_add_ps(s3, updated(x, delta, c + 48, all, 0));
    }
    for (; c + 16 <= n; c += 16)
        s0 = _mm512_add_ps(s0, updated(x, delta, c, all, 0));
    if (c < n)
        s1 = _mm512_add_ps(s1, updated(x, delta, c, tsr_avx512_tail_mask(n - c), 1));
    return tsr_avx512_hsum(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* Sums of (x - shift) and of (x - shift)^2 over the row, several chains each. */
static void centred_sums(const float *x, size_t n, float shift, float *sum, float *squares)
{
    const __m512 m = _mm512_set1_ps(shift);
    __m512 d0 = _mm512_setzero_ps(), d1 = d0, q0 = d0, q1 = d0, q2 = d0, q3 = d0;
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        __m512 t0 = _mm512_sub_ps(_mm512_loadu_ps(x + c), m);
        __m512 t1 = _mm512_sub_ps(_mm512_loadu_ps(x + c + 16), m);
        __m512 t2 = _mm512_sub_ps(_mm512_loadu_ps(x + c + 32), m);
        __m512 t3 = _mm512_sub_ps(_mm512_loadu_ps(x + c + 48), m);
        d0 = _mm512_add_ps(d0, _mm512_add_ps(t0, t1));
        d1 = _mm512_add_ps(d1, _mm512_add_ps(t2, t3));
        q0 = _mm512_fmadd_ps(t0, t0, q0);
        q1 = _mm512_fmadd_ps(t1, t1, q1);
        q2 = _mm512_fmadd_ps(t2, t2, q2);
        q3 = _mm512_fmadd_ps(t3, t3, q3);
    }
    for (; c + 16 <= n; c += 16) {
        __m512 t = _mm512_sub_ps(_mm512_loadu_ps(x + c), m);
        d0 = _mm512_add_ps(d0, t);
        q0 = _mm512_fmadd_ps(t, t, q0);
    }
    if (c < n) {
        /* Masked-off lanes load 0, which centring would turn into -shift. */
        __mmask16 mask = tsr_avx512_tail_mask(n - c);
        __m512 t = _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, x + c), m);
        d1 = _mm512_add_ps(d1, t);
        q1 = _mm512_fmadd_ps(t, t, q1);
    }
    *sum = tsr_avx512_hsum(_mm512_add_ps(d0, d1));
    *squares = tsr_avx512_hsum(_mm512_add_ps(_mm512_add_ps(q0, q1), _mm512_add_ps(q2, q3)));
}

/* out = ((x - rough) - correction) * rstd * gamma + beta: centring in two
 * steps keeps the mean's full precision (rough alone is a float ~ x). */
static void normalise(const float *x, size_t n, float rough, float correction, float rstd,
                      const float *gamma, const float *beta, float *out)
{
    const __m512 m = _mm512_set1_ps(rough), dm = _mm512_set1_ps(correction);
    const __m512 r = _mm512_set1_ps(rstd);
    size_t c = 0;
    for (; c + 16 <= n; c += 16) {
        __m512 t = _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + c), m), dm);
        __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(t, r), _mm512_loadu_ps(gamma + c),
                                   _mm512_loadu_ps(beta + c));
        _mm512_storeu_ps(out + c, y);
    }
    if (c < n) {
        __mmask16 mask = tsr_avx512_tail_mask(n - c);
        __m512 t = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, x + c), m), dm);
        __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(t, r), _mm512_maskz_loadu_ps(mask, gamma + c),
                                   _mm512_maskz_loadu_ps(mask, beta + c));
        _mm512_mask_storeu_ps(out + c, mask, y);
    }
}

void tsr_f32_add_layernorm__avx512(float *x, size_t ldx, const float *delta, size_t ldd,
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
