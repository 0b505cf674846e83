/*
 * log_softmax, logsumexp and argmax over one row (the generator's logits),
 * with the scalar set's semantics:
 *
 *   logsumexp(x) = m + log(sum e^(x_i - m)), m = max x, so no exponential
 *   exceeds 1; the sum is accumulated in double (a vocabulary has tens of
 *   thousands of terms), widening each vector of e^(x_i - m) to two of
 *   doubles. The term of the maximum is 1, so terms below FLT_MIN are
 *   dropped (tsr_avx2_exp_nonpositive). A NaN anywhere gives NaN; all -inf
 *   gives -inf; any +inf, +inf.
 *
 *   log_softmax(x)_i = (x_i - m) - log(sum), formed in double and rounded
 *   once, so the likeliest tokens keep their relative precision. NaN
 *   everywhere when m is not finite (as the scalar set: its log(sum) is NaN).
 *
 *   argmax: the first index of the largest non-NaN element, 0 when all are
 *   NaN; +0 and -0 count as equal.
 */
#include <math.h>

#include "simd/avx2/avx2.h"
#include "simd/avx2/vecmath.h"

/* max over x ignoring NaN (-inf if there is no number), and whether any
 * element is NaN. max_ps(x, m) returns m when x is NaN, so a NaN never
 * enters the running maximum. */
static float max_of_numbers(const float *x, size_t n, int *saw_nan)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    __m256 nan = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
        __m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
        m0 = _mm256_max_ps(v0, m0);
        m1 = _mm256_max_ps(v1, m1);
        m2 = _mm256_max_ps(v2, m2);
        m3 = _mm256_max_ps(v3, m3);
        nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
                                             _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        m0 = _mm256_max_ps(v, m0);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    if (i < n) {
        /* Masked-off lanes read as 0: replace them with -inf. */
        __m256i mask = tsr_avx2_tail_mask(n - i);
        __m256 v = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, mask),
                                    _mm256_castsi256_ps(mask));
        m1 = _mm256_max_ps(v, m1);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    }
    *saw_nan = _mm256_movemask_ps(nan) != 0;
    return tsr_avx2_hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
}

/* The maximum the scalar set shifts by: NaN when any element is NaN. */
static float shift_of(const float *x, size_t n)
{
    int saw_nan;
    float m = max_of_numbers(x, n, &saw_nan);
    return saw_nan ? NAN : m;
}

static __m256d widen_sum(__m256d acc, __m256 v)
{
    acc = _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    return _mm256_add_pd(acc, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}

/* e^(x - m) for 8 elements at x; x - m <= 0, and terms below FLT_MIN,
 * which cannot move a sum >= 1, come out as 0. */
static __m256 shifted_exp(__m256 x, __m256 m)
{
    return tsr_avx2_exp_nonpositive(_mm256_sub_ps(x, m));
}

/* log(sum e^(x_i - m)) for a finite m. */
static double log_sum_shifted(const float *x, size_t n, float m)
{
    const __m256 shift = _mm256_set1_ps(m);
    __m256d s0 = _mm256_setzero_pd(), s1 = s0;
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = widen_sum(s0, shifted_exp(_mm256_loadu_ps(x + i), shift));
        s1 = widen_sum(s1, shifted_exp(_mm256_loadu_ps(x + i + 8), shift));
    }
    for (; i + 8 <= n; i += 8)
        s0 = widen_sum(s0, shifted_exp(_mm256_loadu_ps(x + i), shift));
    if (i < n) {
        __m256i mask = tsr_avx2_tail_mask(n - i);
        __m256 e = shifted_exp(_mm256_maskload_ps(x + i, mask), shift);
        s1 = widen_sum(s1, _mm256_and_ps(e, _mm256_castsi256_ps(mask)));
    }
    __m256d s = _mm256_add_pd(s0, s1);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return log(_mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h))));
}

float tsr_f32_logsumexp__avx2(const float *x, size_t n)
{
    float m = shift_of(x, n);
    /* NaN stays NaN; all -inf (or no element) gives -inf; any +inf gives
     * +inf. Shifting by an infinite m would turn these into NaN. */
    if (!isfinite(m))
        return m;
    return (float)(m + log_sum_shifted(x, n, m));
}

/* (x - m) - log_sum for 4 elements, in double, rounded once. */
static __m128 shifted_log4(__m128 x, __m256d m, __m256d log_sum)
{
    return _mm256_cvtpd_ps(_mm256_sub_pd(_mm256_sub_pd(_mm256_cvtps_pd(x), m), log_sum));
}

static __m256 shifted_log8(__m256 x, __m256d m, __m256d log_sum)
{
    __m128 lo = shifted_log4(_mm256_castps256_ps128(x), m, log_sum);
    __m128 hi = shifted_log4(_mm256_extractf128_ps(x, 1), m, log_sum);
    return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

void tsr_f32_log_softmax__avx2(const float *x, size_t n, float *y)
{
    float m = shift_of(x, n);
    if (!isfinite(m)) {
        const __m256 nan = _mm256_set1_ps(NAN);
        size_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(y + i, nan);
        if (i < n)
            _mm256_maskstore_ps(y + i, tsr_avx2_tail_mask(n - i), nan);
        return;
    }
    const __m256d md = _mm256_set1_pd(m), ls = _mm256_set1_pd(log_sum_shifted(x, n, m));
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, shifted_log8(_mm256_loadu_ps(x + i), md, ls));
    if (i < n) {
        __m256i mask = tsr_avx2_tail_mask(n - i);
        _mm256_maskstore_ps(y + i, mask, shifted_log8(_mm256_maskload_ps(x + i, mask), md, ls));
    }
}

/* First index of an element equal to target, or n. */
static size_t first_equal(const float *x, size_t n, float target)
{
    const __m256 t = _mm256_set1_ps(target);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), t, _CMP_EQ_OQ));
        if (hits)
            return i + (size_t)__builtin_ctz((unsigned)hits);
    }
    if (i < n) {
        /* Masked-off lanes read as 0, which may equal target: drop them. */
        __m256i mask = tsr_avx2_tail_mask(n - i);
        __m256 eq = _mm256_cmp_ps(_mm256_maskload_ps(x + i, mask), t, _CMP_EQ_OQ);
        int hits = _mm256_movemask_ps(_mm256_and_ps(eq, _mm256_castsi256_ps(mask)));
        if (hits)
            return i + (size_t)__builtin_ctz((unsigned)hits);
    }
    return n;
}

/* Two passes: the largest number, then where it first occurs. All NaN:
 * the maximum is -inf and nothing equals it, so the answer is 0. */
size_t tsr_f32_argmax__avx2(const float *x, size_t n)
{
    int saw_nan;
    float m = max_of_numbers(x, n, &saw_nan);
    size_t at = first_equal(x, n, m);
    return at < n ? at : 0;
}
