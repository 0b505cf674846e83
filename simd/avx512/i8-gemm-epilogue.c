/*
 * The int8 GEMM epilogue, AVX-512 (a tsr_gemm_i8_epilogue_fn, see
 * simd/gemm/gemm.h): from a tile's int32 sums straight to y, in one pass,
 *     v = ((float)(acc - offset * sums[c]) * w_scales[c]) * x_scales[i]
 *     y = act(v + bias) + residual
 * the dequantizing of simd/int8.h and the f32 epilogue's vector
 * (simd/frame/gemm-epilogue-vector.h) with v in registers: the same operations in the
 * same order as the frame's two separate passes, so the same bits, without
 * writing and reading back a float tile. An int8 output costs a quarter of an
 * f32 one in the microkernel, so these per-output steps weigh four times as
 * much as in the f32 GEMM.
 *
 * Each vector's offset * column sum and scales are loaded once per tile and
 * serve all its rows; a partial vector goes through opmask loads and stores
 * (nothing past column n is read in the bias, residual or y, nor written).
 */
#include "simd/avx512/gemm-avx512.h"
#include "simd/avx512/vec.h"
#include "simd/frame/gemm-epilogue-vector.h"

/* Columns [j, j + 16) of row i (the `mask`ed fewer when partial). */
static inline __attribute__((always_inline)) void finish_vector(
    const int32_t *acc, __m512i off_sums, __m512 ws, __m512 xs, const float *bias,
    const float *residual, float *y, tsr_activation act, int partial, __mmask16 mask)
{
    const __m512i a = _mm512_loadu_si512((const void *)acc);
    const __m512 v =
        _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(a, off_sums)), ws), xs);
    epilogue_vector(v, bias, residual, y, act, partial, mask);
}

/* Columns in pieces of 32 (the widest panel), rows in order within a piece,
 * so that each row's lines of y are written whole, one after the other (a
 * piece's first 16 columns for every row, then its second 16, came back to
 * lines already half written: 5-7 % slower at 128 x 2048 x 512). */
static inline __attribute__((always_inline)) void finish_tile(
    const int32_t *acc, size_t ldacc, size_t m, size_t n, int32_t offset, const int32_t *sums,
    const float *w_scales, const float *x_scales, const float *bias, tsr_activation act,
    const float *residual, size_t ldr, float *y, size_t ldy)
{
    const __m512i off = _mm512_set1_epi32(offset);
    for (size_t j = 0; j < n; j += 32) {
        const size_t width = n - j < 32 ? n - j : 32;
        const int two = width > 16;
        const __mmask16 mask0 = tsr_avx512_tail_mask(width);
        const __mmask16 mask1 = two ? tsr_avx512_tail_mask(width - 16) : 0;
        /* sums and w_scales are padded to the panel width: whole vectors
         * (the second one only read when the piece has more than 16). */
        const __m512i off_sums0 =
            _mm512_mullo_epi32(off, _mm512_loadu_si512((const void *)(sums + j)));
        const __m512 ws0 = _mm512_loadu_ps(w_scales + j);
        const __m512i off_sums1 =
            two ? _mm512_mullo_epi32(off, _mm512_loadu_si512((const void *)(sums + j + 16)))
                : off_sums0;
        const __m512 ws1 = two ? _mm512_loadu_ps(w_scales + j + 16) : ws0;
        for (size_t i = 0; i < m; i++) {
            const __m512 xs = _mm512_set1_ps(x_scales[i]);
            const float *r_row = residual ? residual + i * ldr + j : NULL;
            finish_vector(acc + i * ldacc + j, off_sums0, ws0, xs, bias ? bias + j : NULL, r_row,
                          y + i * ldy + j, act, width < 16, mask0);
            if (two)
                finish_vector(acc + i * ldacc + j + 16, off_sums1, ws1, xs,
                              bias ? bias + j + 16 : NULL, r_row ? r_row + 16 : NULL,
                              y + i * ldy + j + 16, act, width < 32, mask1);
        }
    }
}

void tsr_i8_gemm_epilogue__avx512(const int32_t *acc, size_t ldacc, size_t m, size_t n,
                                  int32_t offset, const int32_t *sums, const float *w_scales,
                                  const float *x_scales, const float *bias, tsr_activation act,
                                  const float *residual, size_t ldr, float *y, size_t ldy)
{
    /* One copy of the loops per activation, so the switch is not per vector. */
    switch (act) {
    case TSR_ACT_RELU:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_RELU,
                    residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_GELU,
                    residual, ldr, y, ldy);
        break;
    case TSR_ACT_SILU:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_SILU,
                    residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_TANH:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_GELU_TANH,
                    residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_SIGMOID:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_GELU_SIGMOID,
                    residual, ldr, y, ldy);
        break;
    case TSR_ACT_NONE:
        finish_tile(acc, ldacc, m, n, offset, sums, w_scales, x_scales, bias, TSR_ACT_NONE,
                    residual, ldr, y, ldy);
        break;
    }
}
