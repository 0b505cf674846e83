/*
 * The emulated avx512 build (simd/avx512/intrinsics.h) compiles the set's
 * sources a second time; its external symbols get these names so that the
 * native and the emulated set can be linked into one test program. One line
 * per function the set exports: a new kernel adds its line here.
 */
#ifndef TSR_SIMD_AVX512_EMULATED_NAMES_H
#define TSR_SIMD_AVX512_EMULATED_NAMES_H

#define tsr_kernels_init_avx512 tsr_kernels_init_avx512_emulated
#define tsr_f32_gemm_ukernel_12x32__avx512 tsr_f32_gemm_ukernel_12x32__avx512_emulated
#define tsr_f32_gemm_ukernel_bf16_12x32__avx512 tsr_f32_gemm_ukernel_bf16_12x32__avx512_emulated
#define tsr_f32_gemm_pack_rows_12__avx512 tsr_f32_gemm_pack_rows_12__avx512_emulated
#define tsr_f32_gemm_epilogue__avx512 tsr_f32_gemm_epilogue__avx512_emulated
#define tsr_f32_attention__avx512 tsr_f32_attention__avx512_emulated
#define tsr_f32_add_layernorm__avx512 tsr_f32_add_layernorm__avx512_emulated
#define tsr_f32_activate__avx512 tsr_f32_activate__avx512_emulated
#define tsr_f32_log_softmax__avx512 tsr_f32_log_softmax__avx512_emulated
#define tsr_f32_logsumexp__avx512 tsr_f32_logsumexp__avx512_emulated
#define tsr_f32_argmax__avx512 tsr_f32_argmax__avx512_emulated
#define tsr_f32_embed__avx512 tsr_f32_embed__avx512_emulated
#define tsr_f16_to_f32__avx512 tsr_f16_to_f32__avx512_emulated
#define tsr_bf16_to_f32__avx512 tsr_bf16_to_f32__avx512_emulated

#endif
