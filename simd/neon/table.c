/* The NEON kernel table: the scalar table with the entries this set
 * accelerates overridden. Linear layers and the FFN are the portable GEMM
 * frame (simd/gemm/) driving this set's 8 x 12 microkernel and epilogue, and
 * its int8 microkernel (with the dot product where the CPU has it);
 * token embedding stays scalar (a row copy, bound by memory). */
#include "tessera-config.h"
#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "simd/neon/neon.h"

/* Filled once by tsr_kernels_init_neon (dispatch.c serialises it), only read
 * after. */
static tsr_gemm_config gemm;

void tsr_kernels_init_neon(tsr_kernels *t)
{
    tsr_kernels_init_scalar(t);
    t->name = "neon";

    tsr_gemm_config_init(&gemm, TSR_NEON_GEMM_MR, TSR_NEON_GEMM_NR,
                         tsr_f32_gemm_ukernel_8x12__neon, tsr_f32_gemm_epilogue__neon);
    gemm.ukernel_bf16 = tsr_f32_gemm_ukernel_bf16_8x12__neon;
#ifdef HAVE_KERNELS_NEON_DOT
    if (tsr_cpu_features_get()->neon_dot)
        tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_8x12__neondot);
#endif
    tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_4x12__neon);
    tsr_gemm_bind(t, &gemm);

    t->attention = tsr_f32_attention__neon;
    t->add_layernorm = tsr_f32_add_layernorm__neon;
    t->activate = tsr_f32_activate__neon;
    t->log_softmax = tsr_f32_log_softmax__neon;
    t->logsumexp = tsr_f32_logsumexp__neon;
    t->argmax = tsr_f32_argmax__neon;
    t->f16_to_f32 = tsr_f16_to_f32__neon;
    t->bf16_to_f32 = tsr_bf16_to_f32__neon;
}
