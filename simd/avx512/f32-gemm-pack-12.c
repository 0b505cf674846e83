/*
 * Packing rows of x for the 12 x 32 microkernel, AVX-512 (a tsr_gemm_pack_fn,
 * see simd/gemm/gemm.h): panels of 12 rows, [k][12] each. Sixteen columns
 * at a time: 12 row loads (rows past m, and the 4 lanes of the 16 x 16
 * transpose beyond row 12, are zero vectors), a register transpose, and an
 * 8-lane and a 4-lane store per column. The k % 16 tail loads its columns with
 * an opmask and stores only those, so nothing is read past a row nor written
 * past the panel; rows past m are written as zeros, as the contract asks.
 * Copies only, so the packed values, and every result, are those of the
 * portable packer.
 */
#include "simd/avx512/avx512.h"
#include "simd/avx512/gemm-avx512.h"

#define MR TSR_AVX512_GEMM_MR

/* Columns [p, p + cols) (cols <= 16) of `rows` rows into out[p * 12 ...].
 * Inlined with constant rows and cols for the full panels' full column
 * groups, so that the transpose lives in registers. */
static inline __attribute__((always_inline)) void pack_columns(const float *x, size_t ldx,
                                                               size_t rows, size_t cols,
                                                               float *out)
{
    const __mmask16 in = tsr_avx512_tail_mask(cols);
    __m512 r[16];
#pragma GCC unroll 16
    for (size_t i = 0; i < 16; i++)
        r[i] = i < rows ? _mm512_maskz_loadu_ps(in, x + i * ldx) : _mm512_setzero_ps();
    tsr_avx512_transpose16(r);
    /* A column's 12 rows as one 8-lane and one 4-lane store: cheaper than a
     * masked 16-lane store (measured: the packer took 10 % of a
     * 512 x 512 x 2048 GEMM with masked stores on Zen 5). */
#pragma GCC unroll 16
    for (size_t q = 0; q < cols; q++) {
        _mm256_storeu_ps(out + q * MR, _mm512_castps512_ps256(r[q]));
        _mm_storeu_ps(out + q * MR + 8, _mm512_extractf32x4_ps(r[q], 2));
    }
}

/* One panel's columns: full groups of 16 with constant shapes, then the
 * tail. */
static inline __attribute__((always_inline)) void pack_panel(const float *x, size_t ldx,
                                                             size_t rows, size_t k,
                                                             float *panel)
{
    size_t p = 0;
    for (; p + 16 <= k; p += 16)
        pack_columns(x + p, ldx, rows, 16, panel + p * MR);
    if (p < k)
        pack_columns(x + p, ldx, rows, k - p, panel + p * MR);
}

void tsr_f32_gemm_pack_rows_12__avx512(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                       float *packed)
{
    if (mr != MR) {
        tsr_gemm_pack_rows(x, ldx, m, k, mr, packed);
        return;
    }
    size_t i0 = 0;
    for (; i0 + MR <= m; i0 += MR)
        pack_panel(x + i0 * ldx, ldx, MR, k, packed + i0 * k);
    if (i0 < m)
        pack_panel(x + i0 * ldx, ldx, m - i0, k, packed + i0 * k);
}
