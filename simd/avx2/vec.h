/*
 * The avx2 set's vector vocabulary (ggml's simd-mappings, in small): what the
 * width-generic kernels of simd/frame/ need from a set, 8 floats a vector.
 * A set's kernel file includes its vocabulary, then the frame; the frame is
 * compiled with the set's own flags, once per set.
 *
 * Tails: VEC_TAIL_MASK(n) selects the first n lanes (1 <= n <= width). A
 * masked load reads, and a masked store writes, nothing outside those lanes
 * (vmaskmovps); masked-off lanes load as 0. The frame never issues a masked
 * access with an empty mask: qemu's vmaskmovps faults on one that points past
 * the row, though the CPU does not.
 */
#ifndef TSR_SIMD_AVX2_VEC_H
#define TSR_SIMD_AVX2_VEC_H

#include "simd/avx2/avx2.h"
#include "simd/avx2/vecmath.h"

typedef __m256 vec_t;
typedef __m256i vec_mask_t;
#define VEC_WIDTH 8
#define VEC_ALIGN 32

#define VEC_ZERO() _mm256_setzero_ps()
#define VEC_SET1(x) _mm256_set1_ps(x)
#define VEC_LOAD(p) _mm256_load_ps(p)
#define VEC_LOADU(p) _mm256_loadu_ps(p)
#define VEC_STORE(p, v) _mm256_store_ps(p, v)
#define VEC_STOREU(p, v) _mm256_storeu_ps(p, v)
#define VEC_ADD(a, b) _mm256_add_ps(a, b)
#define VEC_SUB(a, b) _mm256_sub_ps(a, b)
#define VEC_MUL(a, b) _mm256_mul_ps(a, b)
#define VEC_DIV(a, b) _mm256_div_ps(a, b)
#define VEC_MAX(a, b) _mm256_max_ps(a, b)
/* a * b + c, one rounding. */
#define VEC_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
/* Fixed-order horizontal reductions (the same bits whatever the caller). */
#define VEC_HSUM(v) tsr_avx2_hsum(v)
#define VEC_HMAX(v) tsr_avx2_hmax(v)
/* e^x for x <= 0 (softmax weights, rescale factors): the cheaper form. */
#define VEC_EXP_NONPOSITIVE(x) tsr_avx2_exp_nonpositive(x)
#define VEC_EXP(x) tsr_avx2_exp(x)
#define VEC_NEGATE(x) _mm256_xor_ps(x, _mm256_set1_ps(-0.0f))
#define VEC_ABS(x) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x)
#define VEC_MIN(a, b) _mm256_min_ps(a, b)
/* x in the lanes where a < b (a > b), y elsewhere and where either is NaN. */
#define VEC_SELECT_LT(a, b, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ))
#define VEC_SELECT_GT(a, b, x, y) _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_GT_OQ))

#define VEC_TAIL_MASK(n) tsr_avx2_tail_mask(n)
#define VEC_LOAD_TAIL(p, m) _mm256_maskload_ps(p, m)
#define VEC_STORE_TAIL(p, m, v) _mm256_maskstore_ps(p, m, v)
/* The lanes of m from v, the others from fill. */
#define VEC_SELECT_TAIL(m, v, fill) _mm256_blendv_ps(fill, v, _mm256_castsi256_ps(m))
/* The lanes of m from v, the others 0. */
#define VEC_KEEP_TAIL(m, v) _mm256_and_ps(v, _mm256_castsi256_ps(m))

#endif
