/* The avx2 kernel table: the scalar table; linear layers and the FFN by the
 * portable GEMM frame (simd/gemm/) with this set's 6 x 16 microkernel, packer
 * and epilogue, and its int8 microkernel (AVX-VNNI where the CPU has it, the
 * AVX2 one otherwise); then every other kernel this set vectorises. */
#include "tessera-config.h"
#include "simd/avx2/avx2.h"
#include "simd/avx2/gemm-avx2.h"
#include "simd/cpu.h"
#include "simd/dispatch.h"

/* Filled once by tsr_kernels_init_avx2 (dispatch.c serialises it), only read
 * after. */
static tsr_gemm_config gemm;

void tsr_kernels_init_avx2(tsr_kernels *t)
{
    tsr_kernels_init_scalar(t);
    t->name = "avx2";

    tsr_gemm_config_init(&gemm, 6, 16, tsr_f32_gemm_ukernel_6x16__avx2,
                         tsr_f32_gemm_epilogue__avx2);
    gemm.ukernel_bf16 = tsr_f32_gemm_ukernel_bf16_6x16__avx2;
    gemm.pack_rows = tsr_f32_gemm_pack_rows_6__avx2;
#ifdef HAVE_KERNELS_AVX_VNNI
    if (tsr_cpu_features_get()->avxvnni)
        tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_6x16__avxvnni);
#endif
    tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_4x16__avx2);
    gemm.i8_abs_max = tsr_i8_abs_max__avx2;
    gemm.i8_quantize = tsr_i8_quantize__avx2;
    gemm.i8_dequantize = tsr_i8_dequantize__avx2;
    tsr_gemm_bind(t, &gemm);

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
