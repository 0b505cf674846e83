/*
 * The AArch64 Advanced SIMD (NEON) kernel set: 128-bit vectors of four
 * floats, 32 vector registers, fused multiply-add. Every AArch64 CPU has it,
 * so the set needs no extra compiler flags (CFLAGS_NEON is empty).
 *
 * The set starts from the scalar table and overrides what it accelerates
 * (table.c). Its own vocabulary: the partial loads and stores below, which
 * let a row's last 1..3 elements go through the same vector code as the rest
 * without touching memory past the row, and the vector exp/erf of vecmath.h.
 */
#ifndef TSR_SIMD_NEON_H
#define TSR_SIMD_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>

#include "simd/gemm/gemm.h"
#include "simd/kernels.h"

void tsr_f32_attention__neon(const tsr_attention_args *a);
void tsr_f32_add_layernorm__neon(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
                                 tsr_layernorm_params norm, float *out, size_t ldo);
void tsr_f32_activate__neon(float *x, size_t n, tsr_activation act);
void tsr_f32_log_softmax__neon(const float *x, size_t n, float *y);
float tsr_f32_logsumexp__neon(const float *x, size_t n);
size_t tsr_f32_argmax__neon(const float *x, size_t n);
void tsr_f16_to_f32__neon(const void *src, size_t n, float *dst);
void tsr_bf16_to_f32__neon(const void *src, size_t n, float *dst);

/* The set's pieces of the GEMM frame: an 8 x 12 microkernel and the vector
 * epilogue, of the types tsr_gemm_ukernel_fn and tsr_gemm_epilogue_fn
 * (simd/gemm/gemm.h). */
#define TSR_NEON_GEMM_MR 8
#define TSR_NEON_GEMM_NR 12
void tsr_f32_gemm_ukernel_8x12__neon(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                     const float *b, float *c, size_t m, int accumulate,
                                     const float *next, size_t every);
void tsr_f32_gemm_ukernel_bf16_8x12__neon(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                          const uint16_t *b, float *c, size_t m, int accumulate,
                                          const uint16_t *next, size_t every);
/* The int8 microkernels (simd/gemm/gemm.h), a_offset 0: 8 x 12 with the
 * ARMv8.2 dot product (simd/neon/i8-gemm-8x12-dot.c, built with its flag in a
 * library of its own, run where HWCAP says so), 4 x 12 without
 * (simd/neon/i8-gemm-4x12.c). */
extern const tsr_gemm_i8_kernel tsr_i8_gemm_8x12__neondot;
extern const tsr_gemm_i8_kernel tsr_i8_gemm_4x12__neon;

void tsr_f32_gemm_epilogue__neon(const float *c, size_t ldc, size_t m, size_t n,
                                 const float *bias, tsr_activation act, const float *residual,
                                 size_t ldr, float *y, size_t ldy);

/* The first n (0..4) floats at p in lanes 0..n-1, zeros above; nothing past
 * p[n - 1] is read. */
static inline float32x4_t tsr_neon_load_partial(const float *p, size_t n)
{
    float32x4_t v = vdupq_n_f32(0.0f);
    switch (n) {
    case 4:
        return vld1q_f32(p);
    case 3:
        v = vld1q_lane_f32(p + 2, v, 2);
        /* fall through */
    case 2:
        v = vld1q_lane_f32(p + 1, v, 1);
        /* fall through */
    case 1:
        v = vld1q_lane_f32(p, v, 0);
        break;
    default:
        break;
    }
    return v;
}

/* Lanes 0..n-1 of v to p[0..n-1] (n is 0..4); nothing past p[n - 1] is
 * written. */
static inline void tsr_neon_store_partial(float *p, float32x4_t v, size_t n)
{
    switch (n) {
    case 4:
        vst1q_f32(p, v);
        break;
    case 3:
        vst1q_lane_f32(p + 2, v, 2);
        /* fall through */
    case 2:
        vst1q_lane_f32(p + 1, v, 1);
        /* fall through */
    case 1:
        vst1q_lane_f32(p, v, 0);
        break;
    default:
        break;
    }
}

/* All-ones in lanes 0..n-1 (n may exceed 4), zeros above: selects the valid
 * lanes of a partial vector. */
static inline uint32x4_t tsr_neon_lanes_below(size_t n)
{
    static const uint32_t lane_index[4] = {0, 1, 2, 3};
    uint32_t count = n < 4 ? (uint32_t)n : 4u;
    return vcltq_u32(vld1q_u32(lane_index), vdupq_n_u32(count));
}

#endif
