/* The scalar kernel table: every entry filled, so other sets can start from
 * it and override only what they accelerate. */
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "simd/scalar/scalar.h"

void tsr_kernels_init_scalar(tsr_kernels *t)
{
    t->name = "scalar";

    t->gemm = NULL; /* its own linear layers, not the frame */
    t->linear_n_align = 1;
    t->pack_bytes = tsr_pack_bytes__scalar;
    t->pack_linear = tsr_pack_linear__scalar;
    t->embed_packed = tsr_embed_packed__scalar;
    t->weight_rows = tsr_weight_rows__scalar;
    tsr_i8_bind__scalar(t);
    t->linear = tsr_f32_linear__scalar;
    t->ffn_block_rows = TSR_SCALAR_FFN_BLOCK_ROWS;
    t->ffn = tsr_ffn_in_blocks;

    t->attention = tsr_f32_attention__scalar;
    t->add_layernorm = tsr_f32_add_layernorm__scalar;
    t->activate = tsr_f32_activate__scalar;
    t->log_softmax = tsr_f32_log_softmax__scalar;
    t->logsumexp = tsr_f32_logsumexp__scalar;
    t->argmax = tsr_f32_argmax__scalar;
    t->embed = tsr_f32_embed__scalar;
    t->f16_to_f32 = tsr_f16_to_f32__scalar;
    t->bf16_to_f32 = tsr_bf16_to_f32__scalar;
}
