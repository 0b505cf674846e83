/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta:
 * the shared frame (simd/frame/f32-layernorm.h: three passes, and why the
 * mean is a rough float mean plus a correction) over the avx2 vocabulary, 8
 * lanes a vector, four chains of sums (4 + 2 accumulators and the loads fit
 * the 16 ymm registers). Tails: vmaskmovps.
 */
#include "simd/avx2/vec.h"
#include "simd/frame/f32-layernorm.h"

void tsr_f32_add_layernorm__avx2(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
                                 tsr_layernorm_params norm, float *out, size_t ldo)
{
    layernorm_frame(x, ldx, delta, ldd, rows, n, gamma, beta, norm, out, ldo);
}
