/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta,
 * row by row: mean, then the biased variance (divide by n) in a second pass
 * over x - mean, turned into the scale by the model's LayerNorm form
 * (simd/layernorm_scale.h; PyTorch's, eps inside the square root, by default).
 *
 * The statistics are accumulated in double: the result is then the correctly
 * rounded value to within an ulp or so, which is as close to PyTorch's float
 * kernel as PyTorch is to the exact value. out may equal x: each element is
 * read for the statistics before the final pass writes it.
 */
#include <math.h>

#include "simd/layernorm_scale.h"
#include "simd/scalar/scalar.h"

static void add_delta(float *x, const float *delta, size_t n)
{
    for (size_t c = 0; c < n; c++)
        x[c] += delta[c];
}

static void layernorm_row(const float *x, size_t n, const float *gamma, const float *beta,
                          tsr_layernorm_params norm, float *out)
{
    double sum = 0.0;
    for (size_t c = 0; c < n; c++)
        sum += x[c];
    const double mean = sum / (double)n;

    double squares = 0.0;
    for (size_t c = 0; c < n; c++) {
        double centred = x[c] - mean;
        squares += centred * centred;
    }
    const double rstd = tsr_layernorm_scale(squares / (double)n, n, norm);

    for (size_t c = 0; c < n; c++)
        out[c] = (float)((x[c] - mean) * rstd * gamma[c] + beta[c]);
}

void tsr_f32_add_layernorm__scalar(float *x, size_t ldx, const float *delta, size_t ldd,
                                   size_t rows, size_t n, const float *gamma, const float *beta,
                                   tsr_layernorm_params norm, float *out, size_t ldo)
{
    for (size_t r = 0; r < rows; r++) {
        float *row = x + r * ldx;
        if (delta)
            add_delta(row, delta + r * ldd, n);
        layernorm_row(row, n, gamma, beta, norm, out + r * ldo);
    }
}
