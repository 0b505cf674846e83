/*
 * The AVX2 + FMA pieces of the GEMM (simd/gemm/gemm.h): one microkernel, its
 * packer of 6-row panels and one vector epilogue, which the set's table hands
 * to the portable frame. Everything declared here is compiled
 * with -mavx2 -mfma -mf16c and must only run once the CPU check has passed.
 */
#ifndef TSR_SIMD_AVX2_GEMM_AVX2_H
#define TSR_SIMD_AVX2_GEMM_AVX2_H

#include <stddef.h>

#include "simd/gemm/gemm.h"
#include "simd/kernels.h"

/* A tsr_gemm_ukernel_fn with MR = 6, NR = 16 (simd/avx2/f32-gemm-6x16.c). */
void tsr_f32_gemm_ukernel_6x16__avx2(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                     const float *b, float *c, size_t m, int accumulate,
                                     const float *next, size_t every);

/* Its tsr_gemm_ukernel_bf16_fn twin, for bf16 panels. */
void tsr_f32_gemm_ukernel_bf16_6x16__avx2(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                          const uint16_t *b, float *c, size_t m, int accumulate,
                                          const uint16_t *next, size_t every);

/* A tsr_gemm_pack_fn for mr = 6 (simd/avx2/f32-gemm-pack-6.c). */
void tsr_f32_gemm_pack_rows_6__avx2(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                    float *packed);

/* A tsr_gemm_epilogue_fn (simd/avx2/f32-gemm-epilogue.c). */
void tsr_f32_gemm_epilogue__avx2(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                                 tsr_activation act, const float *residual, size_t ldr, float *y,
                                 size_t ldy);

#endif
