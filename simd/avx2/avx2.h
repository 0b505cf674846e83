/*
 * The AVX2 kernel set (AVX2 + FMA + F16C, 8 floats per vector): the kernels
 * other than the GEMM (which is declared in simd/avx2/gemm-avx2.h), and the
 * small helpers they share. Every file of the set is compiled with
 * -mavx2 -mfma -mf16c; nothing here may be called before the CPU check in
 * simd/dispatch.c has chosen the set.
 *
 * Row tails are handled with masked loads and stores (vmaskmovps), which
 * neither read nor write past the last element, so the kernels never touch
 * memory outside their arguments.
 */
#ifndef TSR_SIMD_AVX2_H
#define TSR_SIMD_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

void tsr_f32_attention__avx2(const tsr_attention_args *a);
void tsr_f32_add_layernorm__avx2(float *x, size_t ldx, const float *delta, size_t ldd,
                                 size_t rows, size_t n, const float *gamma, const float *beta,
                                 tsr_layernorm_params norm, float *out, size_t ldo);
void tsr_f32_activate__avx2(float *x, size_t n, tsr_activation act);
void tsr_f32_log_softmax__avx2(const float *x, size_t n, float *y);
float tsr_f32_logsumexp__avx2(const float *x, size_t n);
size_t tsr_f32_argmax__avx2(const float *x, size_t n);
void tsr_f32_embed__avx2(const int32_t *ids, size_t count, const float *table, size_t d,
                         float scale, const float *pos, float *out, size_t ldo);
void tsr_f16_to_f32__avx2(const void *src, size_t n, float *dst);
void tsr_bf16_to_f32__avx2(const void *src, size_t n, float *dst);

/* Lane mask for the first n lanes, 1 <= n <= 8 (all lanes for n >= 8). */
static inline __m256i tsr_avx2_tail_mask(size_t n)
{
    const int lanes = n < 8 ? (int)n : 8;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Horizontal sum, always in the same order: the two halves, then pairs. */
static inline float tsr_avx2_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Horizontal maximum (of numbers; NaN lanes are not expected). */
static inline float tsr_avx2_hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
