/*
 * The one line in which the LayerNorm forms differ (config key
 * layer_norm_form, tsr_layernorm_form): how a row's spread becomes the
 * factor 1 / denominator that x - mean is multiplied by. Every kernel set
 * computes the mean and the biased variance its own way and then calls this,
 * so a form is added in one place and the sets cannot drift apart on it.
 */
#ifndef TSR_SIMD_LAYERNORM_SCALE_H
#define TSR_SIMD_LAYERNORM_SCALE_H

#include <math.h>
#include <stddef.h>

#include "simd/kernels.h"

/* biased_var: the mean of (x - mean)^2 over the n elements of the row (a
 * value computed as slightly negative by cancellation counts as 0). The
 * unbiased form needs n >= 2, which the config check guarantees. */
static inline double tsr_layernorm_scale(double biased_var, size_t n, tsr_layernorm_params p)
{
    double var = biased_var > 0 ? biased_var : 0;
    switch (p.form) {
    case TSR_LAYERNORM_STD:
        return 1.0 / (sqrt(var) + p.eps);
    case TSR_LAYERNORM_STD_UNBIASED:
        return 1.0 / (sqrt(var * (double)n / (double)(n - 1)) + p.eps);
    case TSR_LAYERNORM_VARIANCE:
    default:
        return 1.0 / sqrt(var + p.eps);
    }
}

#endif
