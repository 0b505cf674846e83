/*
 * int8 GEMM microkernel, 4 x 16 tile, AVX2 without VNNI (a
 * tsr_gemm_ukernel_i8_fn, see simd/gemm/gemm.h; A holds signed xq, a_offset
 * 0).
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds adjacent pairs into
 * int16 with saturation: with x + 128 (up to 255) against weights up to 127
 * a pair reaches 64 770 and saturates. So the sign of x moves onto the
 * weight instead: |x| (vpabsb, at most 127) times sign(x) * w (vpsignb; w is
 * never -128, so its negation fits), whose pairs are at most 2 * 127 * 127 =
 * 32 258 < 32 767: never saturated, exact. vpmaddwd against ones then adds
 * the pairs into int32 lanes, which vpaddd accumulates.
 *
 * Tile: 4 rows x 16 columns (2 ymm of 8 columns x 4 bytes): 8 accumulators,
 * 2 weight vectors, the ones and 4 temporaries fit the 16 ymm registers,
 * where 6 rows would spill. Per group: 4 uops per 32 multiply-adds.
 */
#include <immintrin.h>
#include <string.h>

#include "simd/avx2/gemm-avx2.h"
#include "simd/sets.h"

#define MR 4
#define NR 16

static inline __attribute__((always_inline)) __m256i dot4(__m256i acc, __m256i x_abs,
                                                          __m256i x, __m256i w, __m256i ones)
{
    const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(w, x));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
}

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[MR][2];
#pragma GCC unroll 4
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
#pragma GCC unroll 4
        for (size_t i = 0; i < rows; i++) {
            int32_t four;
            memcpy(&four, ag + i * 4, sizeof four);
            const __m256i x = _mm256_set1_epi32(four);
            const __m256i x_abs = _mm256_abs_epi8(x);
            acc[i][0] = dot4(acc[i][0], x_abs, x, b0, ones);
            acc[i][1] = dot4(acc[i][1], x_abs, x, b1, ones);
        }
    }
#pragma GCC unroll 4
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
    default: tile(k4, a, b, c, MR, accumulate); break;
    }
}

const tsr_gemm_i8_kernel tsr_i8_gemm_4x16__avx2 = {"avx2 4x16", 4, 16, 0, ukernel, tsr_i8_peak__avx2};
