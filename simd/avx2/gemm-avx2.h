/*
 * The AVX2 + FMA pieces of the GEMM (simd/gemm/gemm.h): one microkernel, one
 * vector epilogue, and the function that puts the frame's entry points, bound
 * to their config, into the avx2 table. Everything declared here is compiled
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

/* A tsr_gemm_pack_fn for mr = 6 (simd/avx2/f32-gemm-pack-6.c). */
void tsr_f32_gemm_pack_rows_6__avx2(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                    float *packed);

/* A tsr_gemm_epilogue_fn (simd/avx2/f32-gemm-epilogue.c). */
void tsr_f32_gemm_epilogue__avx2(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                                 tsr_activation act, const float *residual, size_t ldr, float *y,
                                 size_t ldy);

/* Sets the GEMM entries of the avx2 table: linear_n_align, pack_floats,
 * pack_linear, linear, ffn_block_rows and ffn (simd/avx2/gemm-avx2.c). Reads
 * the cache sizes once; call from the table's init, after the scalar init. */
void tsr_avx2_gemm_fill(tsr_kernels *t);

#endif
