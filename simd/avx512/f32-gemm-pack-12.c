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

/* In-register transpose of a 16 x 16 tile: r[i] holds row i on entry and
 * column i on return. Within 128-bit lanes first (unpack, then shuffle:
 * u[4g + c] holds, in lane L, rows 4g..4g+3 of column 4L + c), then across
 * lanes with two rounds of shuffle_f32x4. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16])
{
    __m512 t[16], u[16], v[16];
    /* Unrolled, so that the four arrays are registers, not stack. */
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g + 0], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        v[c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
        v[4 + c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
        v[8 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
        v[12 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) {
        r[c] = _mm512_shuffle_f32x4(v[c], v[8 + c], 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(v[4 + c], v[12 + c], 0x88);
        r[8 + c] = _mm512_shuffle_f32x4(v[c], v[8 + c], 0xdd);
        r[12 + c] = _mm512_shuffle_f32x4(v[4 + c], v[12 + c], 0xdd);
    }
}

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
    transpose16(r);
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
