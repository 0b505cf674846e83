/*
 * x += delta (optional, stored back), then out = LayerNorm(x) * gamma + beta:
 * the shared frame (simd/frame/f32-layernorm.h: three passes, and why the
 * mean is a rough float mean plus a correction) over the neon vocabulary, 4
 * lanes a vector. Tails: partial loads and stores.
 */
#include "simd/neon/vec.h"
#include "simd/frame/f32-layernorm.h"

void tsr_f32_add_layernorm__neon(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
                                 tsr_layernorm_params norm, float *out, size_t ldo)
{
    layernorm_frame(x, ldx, delta, ldd, rows, n, gamma, beta, norm, out, ldo);
}
