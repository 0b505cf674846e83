/*
 * log_softmax, logsumexp and argmax over one row (the generator's logits),
 * with the scalar set's semantics, as the avx2 set (simd/avx2/f32-softmax.c)
 * computes them, 16 lanes at a time:
 *
 *   logsumexp(x) = m + log(sum e^(x_i - m)), m = max x, so no exponential
 *   exceeds 1; the sum is accumulated in double (a vocabulary has tens of
 *   thousands of terms), widening each vector of e^(x_i - m) to two of
 *   doubles. A NaN anywhere gives NaN; all -inf gives -inf; any +inf, +inf.
 *
 *   log_softmax(x)_i = (x_i - m) - log(sum), formed in double and rounded
 *   once, so the likeliest tokens keep their relative precision. NaN
 *   everywhere when m is not finite (as the scalar set: its log(sum) is NaN).
 *
 *   argmax: the first index of the largest non-NaN element, 0 when all are
 *   NaN; +0 and -0 count as equal.
 *
 * The last partial vector of the row goes through opmask loads (masked-off
 * lanes are not read and load as 0) and, for log_softmax, an opmask store;
 * every pass then keeps those lanes out of its result explicitly. Sums run
 * in a fixed order of chains and lanes that depends only on n.
 */
#include <math.h>

#include "simd/avx512/avx512.h"
#include "simd/avx512/vecmath.h"

/* max over x ignoring NaN (-inf if there is no number), and whether any
 * element is NaN. max_ps(x, m) returns m when x is NaN, so a NaN never
 * enters the running maximum. */
static float max_of_numbers(const float *x, size_t n, int *saw_nan)
{
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    __mmask16 nan = 0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
        __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
        m0 = _mm512_max_ps(v0, m0);
        m1 = _mm512_max_ps(v1, m1);
        m2 = _mm512_max_ps(v2, m2);
        m3 = _mm512_max_ps(v3, m3);
        nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        m0 = _mm512_max_ps(v, m0);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    if (i < n) {
        /* Masked-off lanes load as 0, a number: keep them out of the max. */
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
        m1 = _mm512_mask_max_ps(m1, mask, v, m1);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
    *saw_nan = nan != 0;
    return tsr_avx512_hmax(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
}

/* The maximum the scalar set shifts by: NaN when any element is NaN. */
static float shift_of(const float *x, size_t n)
{
    int saw_nan;
    float m = max_of_numbers(x, n, &saw_nan);
    return saw_nan ? NAN : m;
}

/* e^(x - m) for 16 elements: x - m <= 0, and -inf gives 0. */
static inline __m512 shifted_exp(__m512 x, __m512 m)
{
    return tsr_avx512_exp(_mm512_sub_ps(x, m));
}

/* acc + the 16 floats of v, widened to double: low 8 lanes into lo, high
 * 8 into hi. */
static inline void widen_sum(__m512d *lo, __m512d *hi, __m512 v)
{
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}

/* Horizontal sum of 8 doubles in a fixed order: halves, quarters, pairs. */
static double hsum_pd(__m512d v)
{
    __m256d h = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
    __m128d q = _mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
    return _mm_cvtsd_f64(_mm_add_sd(q, _mm_unpackhi_pd(q, q)));
}

/* log(sum e^(x_i - m)) for a finite m, in four chains of 8 doubles. */
static double log_sum_shifted(const float *x, size_t n, float m)
{
    const __m512 shift = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        widen_sum(&s0, &s1, shifted_exp(_mm512_loadu_ps(x + i), shift));
        widen_sum(&s2, &s3, shifted_exp(_mm512_loadu_ps(x + i + 16), shift));
    }
    for (; i + 16 <= n; i += 16)
        widen_sum(&s0, &s1, shifted_exp(_mm512_loadu_ps(x + i), shift));
    if (i < n) {
        /* Masked-off lanes would add e^(0 - m): zero them. */
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        __m512 e = shifted_exp(_mm512_maskz_loadu_ps(mask, x + i), shift);
        widen_sum(&s2, &s3, _mm512_maskz_mov_ps(mask, e));
    }
    __m512d s = _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3));
    return log(hsum_pd(s));
}

float tsr_f32_logsumexp__avx512(const float *x, size_t n)
{
    float m = shift_of(x, n);
    /* NaN stays NaN; all -inf (or no element) gives -inf; any +inf gives
     * +inf. Shifting by an infinite m would turn these into NaN. */
    if (!isfinite(m))
        return m;
    return (float)(m + log_sum_shifted(x, n, m));
}

/* (x - m) - log_sum for 8 elements, in double, rounded once. */
static inline __m256 shifted_log8(__m256 x, __m512d m, __m512d log_sum)
{
    return _mm512_cvtpd_ps(_mm512_sub_pd(_mm512_sub_pd(_mm512_cvtps_pd(x), m), log_sum));
}

static inline __m512 shifted_log16(__m512 x, __m512d m, __m512d log_sum)
{
    __m256 lo = shifted_log8(_mm512_castps512_ps256(x), m, log_sum);
    __m256 hi = shifted_log8(_mm512_extractf32x8_ps(x, 1), m, log_sum);
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

void tsr_f32_log_softmax__avx512(const float *x, size_t n, float *y)
{
    float m = shift_of(x, n);
    if (!isfinite(m)) {
        const __m512 nan = _mm512_set1_ps(NAN);
        size_t i = 0;
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(y + i, nan);
        if (i < n)
            _mm512_mask_storeu_ps(y + i, tsr_avx512_tail_mask(n - i), nan);
        return;
    }
    const __m512d md = _mm512_set1_pd(m), ls = _mm512_set1_pd(log_sum_shifted(x, n, m));
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, shifted_log16(_mm512_loadu_ps(x + i), md, ls));
    if (i < n) {
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        _mm512_mask_storeu_ps(y + i, mask,
                              shifted_log16(_mm512_maskz_loadu_ps(mask, x + i), md, ls));
    }
}

/* First index of an element equal to target, or n. */
static size_t first_equal(const float *x, size_t n, float target)
{
    const __m512 t = _mm512_set1_ps(target);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __mmask16 hits = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), t, _CMP_EQ_OQ);
        if (hits)
            return i + (size_t)__builtin_ctz((unsigned)hits);
    }
    if (i < n) {
        /* Masked-off lanes load as 0, which may equal target: drop them. */
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        __mmask16 hits =
            mask & _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(mask, x + i), t, _CMP_EQ_OQ);
        if (hits)
            return i + (size_t)__builtin_ctz((unsigned)hits);
    }
    return n;
}

/* Two passes: the largest number, then where it first occurs. All NaN:
 * the maximum is -inf and nothing equals it, so the answer is 0. */
size_t tsr_f32_argmax__avx512(const float *x, size_t n)
{
    int saw_nan;
    float m = max_of_numbers(x, n, &saw_nan);
    size_t at = first_equal(x, n, m);
    return at < n ? at : 0;
}
