/*
 * int8 GEMM microkernel, 6 x 16 tile, AVX-VNNI (a tsr_gemm_ukernel_i8_fn, see
 * simd/gemm/gemm.h): the VEX form of vpdpbusd on ymm, which Alder Lake and
 * later Intel cores and AMD Zen 5 have (with or without AVX-512). A holds
 * xq + 128 (a_offset 128): vpdpbusd's first operand is unsigned; the frame
 * takes the offset back out with the weights' column sums. Exact: 4 products
 * of at most 255 x 127 summed into int32, no saturation.
 *
 * Tile: the f32 kernel's 6 x 16: 12 accumulators, 2 weight vectors and the
 * broadcast row in 15 of the 16 ymm registers; per group 12 vpdpbusd for 384
 * multiply-adds.
 */
#include <immintrin.h>
#include <string.h>

#include "simd/avx2/gemm-avx2.h"
#include "simd/sets.h"

#define MR 6
#define NR 16

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    __m256i acc[MR][2];
#pragma GCC unroll 6
    for (size_t i = 0; i < rows; i++) {
        if (accumulate) {
            acc[i][0] = _mm256_loadu_si256((const __m256i *)(c + i * NR));
            acc[i][1] = _mm256_loadu_si256((const __m256i *)(c + i * NR + 8));
        } else {
            acc[i][0] = _mm256_setzero_si256();
            acc[i][1] = _mm256_setzero_si256();
        }
    }
    for (size_t g = 0; g < k4; g++) {
        const int8_t *bg = b + g * NR * 4;
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)bg);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bg + 32));
        const uint8_t *ag = a + g * MR * 4;
#pragma GCC unroll 6
        for (size_t i = 0; i < rows; i++) {
            int32_t four;
            memcpy(&four, ag + i * 4, sizeof four);
            const __m256i x = _mm256_set1_epi32(four);
            acc[i][0] = _mm256_dpbusd_avx_epi32(acc[i][0], x, b0);
            acc[i][1] = _mm256_dpbusd_avx_epi32(acc[i][1], x, b1);
        }
    }
#pragma GCC unroll 6
    for (size_t i = 0; i < rows; i++) {
        _mm256_storeu_si256((__m256i *)(c + i * NR), acc[i][0]);
        _mm256_storeu_si256((__m256i *)(c + i * NR + 8), acc[i][1]);
    }
}

static void ukernel(size_t k4, const uint8_t *a, const int8_t *b, int32_t *c, size_t m,
                    int accumulate)
{
    switch (m) {
    case 1: tile(k4, a, b, c, 1, accumulate); break;
    case 2: tile(k4, a, b, c, 2, accumulate); break;
    case 3: tile(k4, a, b, c, 3, accumulate); break;
    case 4: tile(k4, a, b, c, 4, accumulate); break;
    case 5: tile(k4, a, b, c, 5, accumulate); break;
    default: tile(k4, a, b, c, MR, accumulate); break;
    }
}

const tsr_gemm_i8_kernel tsr_i8_gemm_6x16__avxvnni = {"avx-vnni 6x16", 6, 16, 128, ukernel,
                                                   tsr_i8_peak__avxvnni};
