/*
 * int8 GEMM microkernel, 8 x 12 tile, NEON with the ARMv8.2 dot product (a
 * tsr_gemm_ukernel_i8_fn, see simd/gemm/gemm.h). sdot multiplies signed bytes
 * by signed bytes, 4 at a time into an int32 lane, exactly: A holds signed
 * xq (a_offset 0) and no correction is needed.
 *
 * Tile: the f32 kernel's 8 x 12. Per group of 4 steps of k, B is 3 vectors
 * of 4 columns x 4 bytes and A's 8 rows x 4 bytes are 2 vectors; each
 * accumulator takes `sdot acc, b, a[lane]` (the row's 4 bytes by lane). 24
 * accumulators + 3 + 2 of the 32 registers. Fewer rows (x of a decode step)
 * compile the same code for each row count, so nothing past m is used.
 */
#include <arm_neon.h>

#include "simd/neon/neon.h"
#include "simd/sets.h"

#define MR 8
#define NR 12

/* Row i (a constant after inlining) of the group: its 3 accumulators. */
#define ROW(i, a_vec, lane)                                                         \
    do {                                                                            \
        if (rows > (i)) {                                                           \
            acc[i][0] = vdotq_laneq_s32(acc[i][0], b0, a_vec, lane);                 \
            acc[i][1] = vdotq_laneq_s32(acc[i][1], b1, a_vec, lane);                 \
            acc[i][2] = vdotq_laneq_s32(acc[i][2], b2, a_vec, lane);                 \
        }                                                                           \
    } while (0)

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    int32x4_t acc[MR][3];
#pragma GCC unroll 8
    for (size_t i = 0; i < rows; i++)
#pragma GCC unroll 3
        for (size_t v = 0; v < 3; v++)
            acc[i][v] = accumulate ? vld1q_s32(c + i * NR + 4 * v) : vdupq_n_s32(0);
    for (size_t g = 0; g < k4; g++) {
        const int8_t *bg = b + g * NR * 4;
        const int8x16_t b0 = vld1q_s8(bg), b1 = vld1q_s8(bg + 16), b2 = vld1q_s8(bg + 32);
        const int8_t *ag = (const int8_t *)a + g * MR * 4;
        const int8x16_t a_lo = vld1q_s8(ag);
        const int8x16_t a_hi = rows > 4 ? vld1q_s8(ag + 16) : vdupq_n_s8(0);
        ROW(0, a_lo, 0);
        ROW(1, a_lo, 1);
        ROW(2, a_lo, 2);
        ROW(3, a_lo, 3);
        ROW(4, a_hi, 0);
        ROW(5, a_hi, 1);
        ROW(6, a_hi, 2);
        ROW(7, a_hi, 3);
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < rows; i++)
#pragma GCC unroll 3
        for (size_t v = 0; v < 3; v++)
            vst1q_s32(c + i * NR + 4 * v, acc[i][v]);
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
    case 6: tile(k4, a, b, c, 6, accumulate); break;
    case 7: tile(k4, a, b, c, 7, accumulate); break;
    default: tile(k4, a, b, c, MR, accumulate); break;
    }
}

const tsr_gemm_i8_kernel tsr_i8_gemm_8x12__neondot = {"neon-dotprod 8x12", MR, NR, 0, ukernel,
                                                   tsr_i8_peak__neondot};
