/*
 * The int8 peak of the dot-product kernel (simd/neon/i8-gemm-8x12-dot.c),
 * compiled with $(CFLAGS_NEON_DOT): sdot, 4 lanes x 4 signed byte products
 * summed into int32, i.e. 16 multiply-adds per instruction, with no loads.
 * Neoverse N1 to V2 issue it on two to four pipes with a latency of 2-3
 * cycles: sixteen chains cover that (18 of the 32 registers with the
 * operands; named variables, which GCC keeps in registers where it would
 * keep an array in memory). The weights' bytes alternate 1, -1, so every
 * sum is 0 and the accumulators stay put; each starts at its own value, or
 * the compiler would see equal chains and compute one.
 */
#include <arm_neon.h>

#include "simd/sets.h"

#define CHAINS 16

#define STEP(a) a = vdotq_s32(a, x, w)

double tsr_i8_peak__neondot(uint64_t iterations)
{
    const int8x16_t x = vdupq_n_s8(3);
    const int8x16_t w = vreinterpretq_s8_s16(vdupq_n_s16((int16_t)0xff01)); /* bytes 1, -1 */
    int32x4_t a0 = vdupq_n_s32(0), a1 = vdupq_n_s32(1), a2 = vdupq_n_s32(2), a3 = vdupq_n_s32(3);
    int32x4_t a4 = vdupq_n_s32(4), a5 = vdupq_n_s32(5), a6 = vdupq_n_s32(6), a7 = vdupq_n_s32(7);
    int32x4_t a8 = vdupq_n_s32(8), a9 = vdupq_n_s32(9), a10 = vdupq_n_s32(10);
    int32x4_t a11 = vdupq_n_s32(11), a12 = vdupq_n_s32(12), a13 = vdupq_n_s32(13);
    int32x4_t a14 = vdupq_n_s32(14), a15 = vdupq_n_s32(15);
    for (uint64_t it = 0; it < iterations; it++) {
        STEP(a0); STEP(a1); STEP(a2); STEP(a3);
        STEP(a4); STEP(a5); STEP(a6); STEP(a7);
        STEP(a8); STEP(a9); STEP(a10); STEP(a11);
        STEP(a12); STEP(a13); STEP(a14); STEP(a15);
    }
    const int32x4_t all[CHAINS] = {a0, a1, a2, a3, a4, a5, a6, a7,
                                   a8, a9, a10, a11, a12, a13, a14, a15};
    int32x4_t s = vdupq_n_s32(0);
    for (int i = 0; i < CHAINS; i++)
        s = vaddq_s32(s, all[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile int32_t sink = vgetq_lane_s32(s, 0);
    (void)sink;
    return (double)iterations * CHAINS * 16.0 * 2.0;
}
