/*
 * The int8 VNNI GEMM tile both x86 sets share (a tsr_gemm_ukernel_i8_fn, see
 * simd/gemm/gemm.h for the contract and the layouts), written once over the
 * including kernel's integer vocabulary: ivec_t, IVEC_LANES (int32 lanes a
 * vector), IVEC_LOADU, IVEC_STOREU, IVEC_ZERO, IVEC_SET1 (a 32-bit
 * broadcast), IVEC_DPBUSD and PREFETCH_B (a group's lines of B ahead, or
 * nothing), with MR rows and NR = 2 IVEC_LANES columns.
 *
 * vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds
 * the 4 products to an int32 lane, exactly (no saturation: that is
 * vpdpbusds). A holds xq + 128 (kernel a_offset 128), which the frame takes
 * back out with the weights' column sums.
 *
 * Per group of 4 steps of k: 2 loads of B (NR columns x 4 bytes), MR
 * broadcasts of a row's 4 bytes of A (vpbroadcastd: vpdpbusd can broadcast
 * only its signed operand, B here), 2 MR vpdpbusd into 2 MR accumulators.
 * Fewer rows (x of a decode step) compile the same loop for each row count,
 * so nothing past m is read or written.
 */
#ifndef TSR_SIMD_FRAME_I8_GEMM_VNNI_H
#define TSR_SIMD_FRAME_I8_GEMM_VNNI_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

_Static_assert(NR == 2 * IVEC_LANES, "a tile is two vectors wide");

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    ivec_t acc[MR][2];
#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        acc[i][0] = accumulate ? IVEC_LOADU(c + i * NR) : IVEC_ZERO();
        acc[i][1] = accumulate ? IVEC_LOADU(c + i * NR + IVEC_LANES) : IVEC_ZERO();
    }
    for (size_t g = 0; g < k4; g++) {
        const int8_t *bg = b + g * NR * 4;
        PREFETCH_B(bg);
        const ivec_t b0 = IVEC_LOADU(bg);
        const ivec_t b1 = IVEC_LOADU(bg + 4 * IVEC_LANES);
        const uint8_t *ag = a + g * MR * 4;
#pragma GCC unroll 12
        for (size_t i = 0; i < rows; i++) {
            int32_t four;
            memcpy(&four, ag + i * 4, sizeof four);
            const ivec_t x = IVEC_SET1(four);
            acc[i][0] = IVEC_DPBUSD(acc[i][0], x, b0);
            acc[i][1] = IVEC_DPBUSD(acc[i][1], x, b1);
        }
    }
#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        IVEC_STOREU(c + i * NR, acc[i][0]);
        IVEC_STOREU(c + i * NR + IVEC_LANES, acc[i][1]);
    }
}

/* One copy of the loop per row count up to MR (m = 0, which the frame does
 * not pass, runs the full tile as it always has). The counts of the switch
 * past a tile's MR are never reached (m < MR there, and the compiler drops
 * them); the clamp keeps them in bounds. */
static void ukernel(size_t k4, const uint8_t *a, const int8_t *b, int32_t *c, size_t m,
                    int accumulate)
{
#define ROWS(n) ((n) < MR ? (n) : MR)
    if (m >= MR || m == 0) {
        tile(k4, a, b, c, MR, accumulate);
        return;
    }
    switch (m) {
    case 1: tile(k4, a, b, c, 1, accumulate); break;
    case 2: tile(k4, a, b, c, ROWS(2), accumulate); break;
    case 3: tile(k4, a, b, c, ROWS(3), accumulate); break;
    case 4: tile(k4, a, b, c, ROWS(4), accumulate); break;
    case 5: tile(k4, a, b, c, ROWS(5), accumulate); break;
    case 6: tile(k4, a, b, c, ROWS(6), accumulate); break;
    case 7: tile(k4, a, b, c, ROWS(7), accumulate); break;
    case 8: tile(k4, a, b, c, ROWS(8), accumulate); break;
    case 9: tile(k4, a, b, c, ROWS(9), accumulate); break;
    case 10: tile(k4, a, b, c, ROWS(10), accumulate); break;
    case 11: tile(k4, a, b, c, ROWS(11), accumulate); break;
    }
#undef ROWS
}

#endif
