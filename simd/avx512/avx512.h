/*
 * The AVX-512 kernel set (AVX-512 F + BW + DQ + VL with FMA and F16C, 16
 * floats per zmm vector, 32 vector registers, 8 opmask registers): the
 * kernels other than the GEMM (declared in simd/avx512/gemm-avx512.h), and
 * the small helpers they share. Every file of the set is compiled with the
 * set's flags, or emulated (simd/avx512/intrinsics.h); nothing here may be
 * called before the CPU check in simd/dispatch.c has chosen the set.
 *
 * Row tails use opmask loads and stores (a masked-off lane is neither read
 * nor written, and never faults), so no kernel has a scalar tail loop or
 * touches memory outside its arguments.
 */
#ifndef TSR_SIMD_AVX512_H
#define TSR_SIMD_AVX512_H

#include <stddef.h>
#include <stdint.h>

#include "simd/avx512/intrinsics.h"
#include "simd/kernels.h"

void tsr_f32_attention__avx512(const tsr_attention_args *a);
void tsr_f32_add_layernorm__avx512(float *x, size_t ldx, const float *delta, size_t ldd,
                                   size_t rows, size_t n, const float *gamma, const float *beta,
                                   tsr_layernorm_params norm, float *out, size_t ldo);
void tsr_f32_activate__avx512(float *x, size_t n, tsr_activation act);
void tsr_f32_log_softmax__avx512(const float *x, size_t n, float *y);
float tsr_f32_logsumexp__avx512(const float *x, size_t n);
size_t tsr_f32_argmax__avx512(const float *x, size_t n);
void tsr_f32_embed__avx512(const int32_t *ids, size_t count, const float *table, size_t d,
                           float scale, const float *pos, float *out, size_t ldo);
void tsr_f16_to_f32__avx512(const void *src, size_t n, float *dst);
void tsr_bf16_to_f32__avx512(const void *src, size_t n, float *dst);

/* Opmask of the first n lanes (all 16 for n >= 16). */
static inline __mmask16 tsr_avx512_tail_mask(size_t n)
{
    return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1u);
}

/* Horizontal sum, always in the same order: the two 256-bit halves, the two
 * 128-bit quarters, then pairs (not _mm512_reduce_add_ps, whose order is the
 * compiler's or the emulator's choice). */
static inline float tsr_avx512_hsum(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Horizontal maximum (of numbers; NaN lanes are not expected), in the same
 * order as tsr_avx512_hsum. */
static inline float tsr_avx512_hmax(__m512 v)
{
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* A 16 x 16 transpose in registers (the attention's K tiles, the GEMM's
 * packer): r[i] holds row i on entry and column i on return. Pairs of rows
 * interleaved, then groups of four within each 128-bit lane, then the 4 x 4
 * lanes across registers (64 shuffles); unrolled and inlined, so that the
 * arrays live in registers. */
static inline __attribute__((always_inline)) void tsr_avx512_transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + k], lane L: rows 4i .. 4i + 3 at column 4L + k. */
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    /* Column 4L + k takes lane L of u[k], u[4 + k], u[8 + k], u[12 + k]. */
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44);
        __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xee);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xee);
        r[k] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + k] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
        r[8 + k] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
    }
}

#endif
