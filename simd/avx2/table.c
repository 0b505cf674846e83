/* The avx2 kernel table: the scalar table, the GEMM entries of the avx2
 * GEMM, then every other kernel this set vectorises. */
#include "simd/avx2/avx2.h"
#include "simd/avx2/gemm-avx2.h"
#include "simd/dispatch.h"

void tsr_kernels_init_avx2(tsr_kernels *t)
{
    tsr_kernels_init_scalar(t);
    t->name = "avx2";
    tsr_avx2_gemm_fill(t);

    t->attention = tsr_f32_attention__avx2;
    t->add_layernorm = tsr_f32_add_layernorm__avx2;
    t->activate = tsr_f32_activate__avx2;
    t->log_softmax = tsr_f32_log_softmax__avx2;
    t->logsumexp = tsr_f32_logsumexp__avx2;
    t->argmax = tsr_f32_argmax__avx2;
    t->embed = tsr_f32_embed__avx2;
    t->f16_to_f32 = tsr_f16_to_f32__avx2;
    t->bf16_to_f32 = tsr_bf16_to_f32__avx2;
}
