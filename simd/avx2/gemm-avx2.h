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

/* The int8 microkernels (simd/gemm/gemm.h): 4 x 16 with a_offset 0 for AVX2
 * alone (simd/avx2/i8-gemm-4x16.c), and 6 x 16 with a_offset 128 for CPUs
 * with AVX-VNNI (simd/avx2/i8-gemm-6x16-avxvnni.c, built with its flag in a
 * library of its own). */
extern const tsr_gemm_i8_kernel tsr_i8_gemm_4x16__avx2;
extern const tsr_gemm_i8_kernel tsr_i8_gemm_6x16__avxvnni;

/* The int8 frame's steps around the microkernel (simd/avx2/i8-quantize.c),
 * of the types tsr_gemm_i8_abs_max_fn, tsr_gemm_i8_quantize_fn and
 * tsr_gemm_i8_dequantize_fn; the avx512 set uses them too. */
float tsr_i8_abs_max__avx2(const float *x, size_t k);
void tsr_i8_quantize__avx2(const float *x, size_t k, float inv, int offset, uint8_t *q);
void tsr_i8_dequantize__avx2(const int32_t *acc, size_t n, int32_t offset, const int32_t *sums,
                             const float *w_scales, float x_scale, float *out);

#endif
