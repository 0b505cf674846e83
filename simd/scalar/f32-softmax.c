/*
 * log_softmax, logsumexp and argmax over one row (the generator's logits).
 *
 * logsumexp(x) = m + log(sum e^(x_i - m)) with m = max x, so no exponential
 * exceeds 1. The sum is accumulated in double: a vocabulary has tens of
 * thousands of terms and the log-probabilities are printed to 6 digits.
 * log_softmax is formed as (x_i - m) - log(sum), not x_i - logsumexp(x):
 * for the likeliest tokens x_i - m is small and exact, so their
 * log-probabilities keep their relative precision.
 */
#include <math.h>

#include "simd/scalar/scalar.h"

/* max x, NaN if any element is NaN, -inf if n == 0. */
static float max_or_nan(const float *x, size_t n)
{
    float m = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]))
            return x[i];
        if (x[i] > m)
            m = x[i];
    }
    return m;
}

/* log(sum e^(x_i - m)) for a finite m. */
static double log_sum_shifted(const float *x, size_t n, float m)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += expf(x[i] - m);
    return log(sum);
}

float tsr_f32_logsumexp__scalar(const float *x, size_t n)
{
    float m = max_or_nan(x, n);
    /* NaN stays NaN; all -inf (or no element) gives -inf; any +inf gives
     * +inf. Shifting by an infinite m would turn these into NaN. */
    if (!isfinite(m))
        return m;
    return (float)(m + log_sum_shifted(x, n, m));
}

void tsr_f32_log_softmax__scalar(const float *x, size_t n, float *y)
{
    float m = max_or_nan(x, n);
    double log_sum = isfinite(m) ? log_sum_shifted(x, n, m) : (double)NAN;
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((double)x[i] - m - log_sum);
}

size_t tsr_f32_argmax__scalar(const float *x, size_t n)
{
    /* Strictly greater keeps the first of equal maxima. NaN is never
     * greater, so it is never chosen, except that a NaN best so far (only
     * when x[0] is NaN) yields to the first number. All NaN gives 0. */
    size_t best = 0;
    for (size_t i = 1; i < n; i++) {
        if (x[i] > x[best] || (isnan(x[best]) && !isnan(x[i])))
            best = i;
    }
    return best;
}
