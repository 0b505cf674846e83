/*
 * The avx512 set's vector vocabulary for the width-generic kernels of
 * simd/frame/ (see simd/avx2/vec.h for the contract), 16 floats a zmm
 * vector. Masks are opmasks: a masked-off lane is neither read nor written
 * and never faults, and selecting lanes costs no extra instruction.
 */
#ifndef TSR_SIMD_AVX512_VEC_H
#define TSR_SIMD_AVX512_VEC_H

#include "simd/avx512/avx512.h"
#include "simd/avx512/vecmath.h"

typedef __m512 vec_t;
typedef __mmask16 vec_mask_t;
#define VEC_WIDTH 16
#define VEC_ALIGN 64

#define VEC_TAIL_MASK(n) tsr_avx512_tail_mask(n)
#define VEC_LOAD_TAIL(p, m) _mm512_maskz_loadu_ps(m, p)
#define VEC_STORE_TAIL(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define VEC_SELECT_TAIL(m, v, fill) _mm512_mask_mov_ps(fill, m, v)
#define VEC_KEEP_TAIL(m, v) _mm512_maskz_mov_ps(m, v)

#define VEC_ZERO() _mm512_setzero_ps()
#define VEC_SET1(x) _mm512_set1_ps(x)
#define VEC_LOAD(p) _mm512_load_ps(p)
#define VEC_LOADU(p) _mm512_loadu_ps(p)
#define VEC_STORE(p, v) _mm512_store_ps(p, v)
#define VEC_STOREU(p, v) _mm512_storeu_ps(p, v)
#define VEC_ADD(a, b) _mm512_add_ps(a, b)
#define VEC_SUB(a, b) _mm512_sub_ps(a, b)
#define VEC_MUL(a, b) _mm512_mul_ps(a, b)
#define VEC_DIV(a, b) _mm512_div_ps(a, b)
#define VEC_MAX(a, b) _mm512_max_ps(a, b)
#define VEC_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VEC_HSUM(v) tsr_avx512_hsum(v)
#define VEC_HMAX(v) tsr_avx512_hmax(v)
/* One exp serves every x: with vscalefps the general form costs what the
 * avx2 set's x <= 0 form does (simd/avx512/vecmath.h). */
#define VEC_EXP_NONPOSITIVE(x) tsr_avx512_exp(x)
#define VEC_EXP(x) tsr_avx512_exp(x)
#define VEC_NEGATE(x) tsr_avx512_negate(x)
#define VEC_ABS(x) _mm512_abs_ps(x)
#define VEC_MIN(a, b) _mm512_min_ps(a, b)
#define VEC_SELECT_LT(a, b, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x)
#define VEC_SELECT_GT(a, b, x, y) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), y, x)

#endif
