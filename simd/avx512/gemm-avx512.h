/*
 * The AVX-512 pieces of the GEMM (simd/gemm/gemm.h): one microkernel, its
 * packer of 12-row panels and one vector epilogue, which the set's table
 * hands to the portable frame. Compiled with the set's flags (or emulated,
 * simd/avx512/intrinsics.h); must only run once the CPU check has passed.
 */
#ifndef TSR_SIMD_AVX512_GEMM_AVX512_H
#define TSR_SIMD_AVX512_GEMM_AVX512_H

#include <stddef.h>

#include "simd/avx512/intrinsics.h"
#include "simd/gemm/gemm.h"
#include "simd/kernels.h"

#define TSR_AVX512_GEMM_MR 12
#define TSR_AVX512_GEMM_NR 32

/* Whether the microkernels prefetch weights ahead into L2 rather than L1:
 * the tuning's prefetch_to_l2 (simd/tuning.h), set by the set's table init
 * before any kernel runs, only read after. */
extern int tsr_avx512_prefetch_to_l2;

/* A tsr_gemm_ukernel_fn with MR = 12, NR = 32 (simd/avx512/f32-gemm-12x32.c). */
void tsr_f32_gemm_ukernel_12x32__avx512(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                        const float *b, float *c, size_t m, int accumulate,
                                        const float *next, size_t every);

/* Its tsr_gemm_ukernel_bf16_fn twin, for bf16 panels. */
void tsr_f32_gemm_ukernel_bf16_12x32__avx512(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                             const uint16_t *b, float *c, size_t m,
                                             int accumulate, const uint16_t *next, size_t every);

/* A tsr_gemm_ukernel_final_fn: the 12 x 32 tile's last piece, fused with the
 * epilogue. */
void tsr_f32_gemm_ukernel_final_12x32__avx512(size_t k, const float *a, const float *b,
                                              const float *c, int accumulate, const void *next,
                                              size_t every, const tsr_gemm_tile_out *out);

/* A tsr_gemm_pack_fn for mr = 12 (simd/avx512/f32-gemm-pack-12.c). */
void tsr_f32_gemm_pack_rows_12__avx512(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                       float *packed);

/* The int8 microkernel for CPUs with AVX512-VNNI: 12 x 32, a_offset 128
 * (simd/avx512/i8-gemm-12x32-vnni.c: built with the VNNI flag in a library
 * of its own, or emulated). */
extern const tsr_gemm_i8_kernel tsr_i8_gemm_12x32__avx512vnni;

/* A tsr_gemm_i8_epilogue_fn (simd/avx512/i8-gemm-epilogue.c). */
void tsr_i8_gemm_epilogue__avx512(const int32_t *acc, size_t ldacc, size_t m, size_t n,
                                  int32_t offset, const int32_t *sums, const float *w_scales,
                                  const float *x_scales, const float *bias, tsr_activation act,
                                  const float *residual, size_t ldr, float *y, size_t ldy);

/* A tsr_gemm_epilogue_fn (simd/avx512/f32-gemm-epilogue.c). */
void tsr_f32_gemm_epilogue__avx512(const float *c, size_t ldc, size_t m, size_t n,
                                   const float *bias, tsr_activation act, const float *residual,
                                   size_t ldr, float *y, size_t ldy);

#endif
