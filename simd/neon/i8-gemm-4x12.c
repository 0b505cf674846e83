/*
 * int8 GEMM microkernel, 4 x 12 tile, NEON without the dot product (a
 * tsr_gemm_ukernel_i8_fn, see simd/gemm/gemm.h; A holds signed xq,
 * a_offset 0). For ARMv8.0 cores (Cortex-A53/A72, Graviton 1).
 *
 * A row's 4 bytes of the group are repeated across a vector; smull / smull2
 * multiply them by 2 columns x 4 bytes of B into 8 int16 products (each at
 * most 127 * 127: no overflow), and sadalp adds adjacent pairs into int32
 * lanes, so each column keeps two partial sums (k0 + k1, k2 + k3), added
 * together (addp) only when the tile is stored. All exact.
 *
 * Tile: 4 rows x 12 columns, 2 accumulators per 4 columns: 24 registers, plus
 * 3 of B, the row and 2 products.
 */
#include <arm_neon.h>
#include <string.h>

#include "simd/neon/neon.h"
#include "simd/sets.h"

#define MR 4
#define NR 12

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    /* Per row and 4 columns: lo holds columns 0-1, hi columns 2-3, as pairs
     * (k0 + k1, k2 + k3) per column. */
    int32x4_t lo[MR][3], hi[MR][3];
#pragma GCC unroll 4
    for (size_t i = 0; i < rows; i++)
#pragma GCC unroll 3
        for (size_t v = 0; v < 3; v++) {
            lo[i][v] = vdupq_n_s32(0);
            hi[i][v] = vdupq_n_s32(0);
        }
    for (size_t g = 0; g < k4; g++) {
        const int8_t *bg = b + g * NR * 4;
        const int8x16_t bv[3] = {vld1q_s8(bg), vld1q_s8(bg + 16), vld1q_s8(bg + 32)};
        const uint8_t *ag = a + g * MR * 4;
#pragma GCC unroll 4
        for (size_t i = 0; i < rows; i++) {
            int32_t four;
            memcpy(&four, ag + i * 4, sizeof four);
            const int8x16_t x = vreinterpretq_s8_s32(vdupq_n_s32(four));
#pragma GCC unroll 3
            for (size_t v = 0; v < 3; v++) {
                lo[i][v] = vpadalq_s16(lo[i][v], vmull_s8(vget_low_s8(bv[v]), vget_low_s8(x)));
                hi[i][v] = vpadalq_s16(hi[i][v], vmull_high_s8(bv[v], x));
            }
        }
    }
#pragma GCC unroll 4
    for (size_t i = 0; i < rows; i++)
#pragma GCC unroll 3
        for (size_t v = 0; v < 3; v++) {
            int32x4_t sums = vpaddq_s32(lo[i][v], hi[i][v]);
            if (accumulate)
                sums = vaddq_s32(sums, vld1q_s32(c + i * NR + 4 * v));
            vst1q_s32(c + i * NR + 4 * v, sums);
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

const tsr_gemm_i8_kernel tsr_i8_gemm_4x12__neon = {"neon 4x12", MR, NR, 0, ukernel, tsr_i8_peak__neon};
