/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta:
 * the shared frame (simd/frame/f32-layernorm.h: three passes, and why the
 * mean is a rough float mean plus a correction) over the avx512 vocabulary,
 * 16 lanes a zmm vector, four chains of sums. Tails: opmask loads and
 * stores.
 */
#include "simd/avx512/vec.h"
#include "simd/frame/f32-layernorm.h"

void tsr_f32_add_layernorm__avx512(float *x, size_t ldx, const float *delta, size_t ldd,
                                   size_t rows, size_t n, const float *gamma, const float *beta,
                                   tsr_layernorm_params norm, float *out, size_t ldo)
{
    layernorm_frame(x, ldx, delta, ldd, rows, n, gamma, beta, norm, out, ldo);
}
