/*
 * Packing rows of x for the 6 x 16 microkernel, AVX2 (a tsr_gemm_pack_fn, see
 * simd/gemm/gemm.h): panels of 6 rows, [k][6] each. It is the portable
 * tsr_gemm_pack_rows with the full panels done 8 columns at a time, 6 loads
 * and a register transpose instead of 48 scalar copies; partial panels and the
 * k % 8 tail take the portable loops. Copies only, so the packed values, and
 * every result, are those of the portable packer.
 */
#include <immintrin.h>

#include "simd/avx2/gemm-avx2.h"

#define MR 6

/* Columns [p, p + 8) of 6 rows into out[p * 6 ...]: after the unpacks, rows
 * 0-3 of column q sit in one 128-bit half of s_q and rows 4-5 in one 64-bit
 * quarter of u, stored as 4 + 2 floats per column. */
static inline void pack_8_columns(const float *x, size_t ldx, float *out)
{
    const __m256 r0 = _mm256_loadu_ps(x), r1 = _mm256_loadu_ps(x + ldx);
    const __m256 r2 = _mm256_loadu_ps(x + 2 * ldx), r3 = _mm256_loadu_ps(x + 3 * ldx);
    const __m256 r4 = _mm256_loadu_ps(x + 4 * ldx), r5 = _mm256_loadu_ps(x + 5 * ldx);

    /* Pairs: t01a = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5], ... */
    const __m256 t01a = _mm256_unpacklo_ps(r0, r1), t01b = _mm256_unpackhi_ps(r0, r1);
    const __m256 t23a = _mm256_unpacklo_ps(r2, r3), t23b = _mm256_unpackhi_ps(r2, r3);
    const __m256 u45a = _mm256_unpacklo_ps(r4, r5), u45b = _mm256_unpackhi_ps(r4, r5);

    /* Rows 0-3 of columns (0 | 4), (1 | 5), (2 | 6), (3 | 7). */
    const __m256 s04 = _mm256_shuffle_ps(t01a, t23a, 0x44);
    const __m256 s15 = _mm256_shuffle_ps(t01a, t23a, 0xee);
    const __m256 s26 = _mm256_shuffle_ps(t01b, t23b, 0x44);
    const __m256 s37 = _mm256_shuffle_ps(t01b, t23b, 0xee);
    _mm_storeu_ps(out + 0 * MR, _mm256_castps256_ps128(s04));
    _mm_storeu_ps(out + 1 * MR, _mm256_castps256_ps128(s15));
    _mm_storeu_ps(out + 2 * MR, _mm256_castps256_ps128(s26));
    _mm_storeu_ps(out + 3 * MR, _mm256_castps256_ps128(s37));
    _mm_storeu_ps(out + 4 * MR, _mm256_extractf128_ps(s04, 1));
    _mm_storeu_ps(out + 5 * MR, _mm256_extractf128_ps(s15, 1));
    _mm_storeu_ps(out + 6 * MR, _mm256_extractf128_ps(s26, 1));
    _mm_storeu_ps(out + 7 * MR, _mm256_extractf128_ps(s37, 1));

    /* Rows 4-5: columns 0 1 | 4 5 in u45a, 2 3 | 6 7 in u45b. */
    const __m128 u01 = _mm256_castps256_ps128(u45a), u45 = _mm256_extractf128_ps(u45a, 1);
    const __m128 u23 = _mm256_castps256_ps128(u45b), u67 = _mm256_extractf128_ps(u45b, 1);
    _mm_storel_pi((__m64 *)(out + 0 * MR + 4), u01);
    _mm_storeh_pi((__m64 *)(out + 1 * MR + 4), u01);
    _mm_storel_pi((__m64 *)(out + 2 * MR + 4), u23);
    _mm_storeh_pi((__m64 *)(out + 3 * MR + 4), u23);
    _mm_storel_pi((__m64 *)(out + 4 * MR + 4), u45);
    _mm_storeh_pi((__m64 *)(out + 5 * MR + 4), u45);
    _mm_storel_pi((__m64 *)(out + 6 * MR + 4), u67);
    _mm_storeh_pi((__m64 *)(out + 7 * MR + 4), u67);
}

void tsr_f32_gemm_pack_rows_6__avx2(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                    float *packed)
{
    const size_t full_rows = mr == MR ? m / MR * MR : 0;

    for (size_t i0 = 0; i0 < full_rows; i0 += MR) {
        const float *rows = x + i0 * ldx;
        float *panel = packed + i0 * k;
        size_t p = 0;
        for (; p + 8 <= k; p += 8)
            pack_8_columns(rows + p, ldx, panel + p * MR);
        for (; p < k; p++)
            for (size_t i = 0; i < MR; i++)
                panel[p * MR + i] = rows[i * ldx + p];
    }
    if (full_rows < m)
        tsr_gemm_pack_rows(x + full_rows * ldx, ldx, m - full_rows, k, mr,
                           packed + full_rows * k);
}
