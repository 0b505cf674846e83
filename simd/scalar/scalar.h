/*
 * The portable kernel set: plain C loops, no intrinsics. It is the set every
 * machine can run, the starting point of every other set's table (simd/
 * dispatch.h), and the order of operations the other sets are measured
 * against: dot products accumulate in float, one accumulator, k ascending.
 *
 * Packed layout of a linear layer: W kept as given, [n][k] row-major, so a
 * dot product reads two contiguous rows.
 */
#ifndef TSR_SIMD_SCALAR_H
#define TSR_SIMD_SCALAR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

/* Rows of the FFN intermediate held in the scratch buffer at a time. The
 * FFN (tsr_ffn_in_blocks) sizes its blocks from the table's ffn_block_rows. */
#define TSR_SCALAR_FFN_BLOCK_ROWS 32

/* The linear entries (simd/kernels.h); they read nothing of the table. */
size_t tsr_pack_bytes__scalar(const tsr_kernels *ks, tsr_weight_type type, size_t n, size_t k);
void tsr_pack_linear__scalar(const tsr_kernels *ks, tsr_weight_type type, const float *w,
                             size_t n, size_t k, void *panels);
void tsr_embed_packed__scalar(const tsr_kernels *ks, const tsr_packed_linear *w,
                              const int32_t *ids, size_t count, float scale, const float *pos,
                              float *out, size_t ldo);
void tsr_f32_linear__scalar(const tsr_kernels *ks, const tsr_linear_args *a);

/* The portable int8 linear layer (simd/scalar/i8-linear.c, simd/int8.h): the
 * packing and the layer every set uses for int8 weights until it has its own. */
size_t tsr_i8_pack_bytes__scalar(size_t n, size_t k);
void tsr_i8_pack_linear__scalar(const float *w, size_t n, size_t k, void *panels);
/* The same layout from weights already quantized (q in -127..127, scales
 * > 0), taken as they are: rows [r0, r0 + rows) of the n x k weight. */
void tsr_i8_pack_quantized__scalar(const int8_t *q, const float *scales, size_t n, size_t k,
                                   size_t r0, size_t rows, void *panels);
/* Row j < n of those packed weights as floats: out[p] = (float)q[j][p] *
 * scale[j], p < k. */
void tsr_i8_row__scalar(const void *panels, size_t n, size_t k, size_t j, float *out);
void tsr_i8_row_quantized__scalar(const void *panels, size_t n, size_t k, size_t j, int8_t *q,
                                  float *scale);
void tsr_weight_rows__scalar(const tsr_kernels *ks, const tsr_packed_linear *w,
                             const int32_t *ids, size_t count, float *out, int8_t *q,
                             float *scales);
/* Sets t->pack_linear_i8 to the portable layer's (the scalar table's). */
void tsr_i8_bind__scalar(tsr_kernels *t);
void tsr_i8_linear__scalar(const tsr_linear_args *a);
void tsr_f32_attention__scalar(const tsr_attention_args *a);
void tsr_f32_add_layernorm__scalar(float *x, size_t ldx, const float *delta, size_t ldd,
                                   size_t rows, size_t n, const float *gamma, const float *beta,
                                   tsr_layernorm_params norm, float *out, size_t ldo);
void tsr_f32_activate__scalar(float *x, size_t n, tsr_activation act);
void tsr_f32_log_softmax__scalar(const float *x, size_t n, float *y);
float tsr_f32_logsumexp__scalar(const float *x, size_t n);
size_t tsr_f32_argmax__scalar(const float *x, size_t n);
void tsr_f32_embed__scalar(const int32_t *ids, size_t count, const float *table, size_t d,
                           float scale, const float *pos, float *out, size_t ldo);
void tsr_f16_to_f32__scalar(const void *src, size_t n, float *dst);
void tsr_bf16_to_f32__scalar(const void *src, size_t n, float *dst);

/* One element of an activation, in float as PyTorch computes it. Shared by
 * activate() and by linear(), which applies it before adding the residual,
 * and by other sets for their tails. ReLU keeps NaN (x < 0 is false). */
static inline float tsr_f32_activate_one__scalar(float x, tsr_activation act)
{
    const float sqrt_half = 0.70710678118654752440f;
    switch (act) {
    case TSR_ACT_RELU:
        return x < 0.0f ? 0.0f : x;
    case TSR_ACT_GELU:
        return 0.5f * x * (1.0f + erff(x * sqrt_half));
    case TSR_ACT_SILU:
        return x / (1.0f + expf(-x));
    case TSR_ACT_GELU_TANH: /* x sigmoid(2u) = x/2 (1 + tanh u) */
        return x / (1.0f + expf(-1.5957691216f * x * (1.0f + 0.044715f * x * x)));
    case TSR_ACT_GELU_SIGMOID:
        return x / (1.0f + expf(-1.702f * x));
    case TSR_ACT_NONE:
        break;
    }
    return x;
}

#endif
