/*
 * The neon set's vector vocabulary: what the width-generic kernels of
 * simd/frame/ need from a set (simd/avx2/vec.h says what each name means),
 * 4 floats a vector.
 *
 * Tails: NEON has no masked loads or stores, so a tail "mask" is its lane
 * count (1..4): a tail load reads its lanes one by one (the others are 0), a
 * tail store writes its lanes one by one, and nothing outside them is
 * touched (tsr_neon_load_partial, _store_partial). Selecting by a tail uses
 * the all-ones lanes of tsr_neon_lanes_below.
 */
#ifndef TSR_SIMD_NEON_VEC_H
#define TSR_SIMD_NEON_VEC_H

#include "simd/neon/neon.h"
#include "simd/neon/vecmath.h"

typedef float32x4_t vec_t;
typedef size_t vec_mask_t;
#define VEC_WIDTH 4
#define VEC_ALIGN 16

#define VEC_ZERO() vdupq_n_f32(0.0f)
#define VEC_SET1(x) vdupq_n_f32(x)
#define VEC_LOAD(p) vld1q_f32(p)
#define VEC_LOADU(p) vld1q_f32(p)
#define VEC_STORE(p, v) vst1q_f32(p, v)
#define VEC_STOREU(p, v) vst1q_f32(p, v)
#define VEC_ADD(a, b) vaddq_f32(a, b)
#define VEC_SUB(a, b) vsubq_f32(a, b)
#define VEC_MUL(a, b) vmulq_f32(a, b)
#define VEC_DIV(a, b) vdivq_f32(a, b)
/* NaN in either operand gives NaN, as x86's max and min do when the NaN is
 * the second operand, the one the frame puts it in (ReLU's x, erf's |z|). */
#define VEC_MAX(a, b) vmaxq_f32(a, b)
#define VEC_MIN(a, b) vminq_f32(a, b)
#define VEC_FMA(a, b, c) vfmaq_f32(c, a, b)
#define VEC_HSUM(v) vaddvq_f32(v)
#define VEC_HMAX(v) vmaxvq_f32(v)
#define VEC_EXP_NONPOSITIVE(x) tsr_neon_exp(x)
#define VEC_EXP(x) tsr_neon_exp(x)
#define VEC_NEGATE(x) vnegq_f32(x)
#define VEC_ABS(x) vabsq_f32(x)
/* x in the lanes where a < b (a > b), y elsewhere and where either is NaN. */
#define VEC_SELECT_LT(a, b, x, y) vbslq_f32(vcltq_f32(a, b), x, y)
#define VEC_SELECT_GT(a, b, x, y) vbslq_f32(vcgtq_f32(a, b), x, y)

#define VEC_TAIL_MASK(n) ((size_t)(n))
#define VEC_LOAD_TAIL(p, m) tsr_neon_load_partial(p, m)
#define VEC_STORE_TAIL(p, m, v) tsr_neon_store_partial(p, v, m)
#define VEC_SELECT_TAIL(m, v, fill) vbslq_f32(tsr_neon_lanes_below(m), v, fill)
#define VEC_KEEP_TAIL(m, v)                                                                    \
    vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), tsr_neon_lanes_below(m)))

#endif
