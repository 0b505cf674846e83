/*
 * The int8 peak of the neon set's int8 kernel without the dot product
 * (simd/neon/i8-gemm-4x12.c), compiled with $(CFLAGS_NEON): smull / smull2
 * multiply 8 byte pairs each into int16, sadalp adds adjacent int16 pairs
 * into int32 accumulators, i.e. 16 multiply-adds per four instructions, with
 * no loads. Eight chains of two accumulators (lo and hi halves, as the
 * kernel keeps them), each with its own weights, cover the latency: 25 of the
 * 32 registers, as named variables, which GCC keeps in registers where it
 * would keep an array in memory. The weights' bytes alternate 1, -1, so every
 * pair sums to 0 and the accumulators stay put; an empty asm makes each
 * weight opaque every round, or the compiler would compute the products once,
 * outside the loop, since only sadalp depends on the accumulator.
 */
#include <arm_neon.h>

#include "simd/sets.h"

#define CHAINS 8

#define STEP(lo, hi, w)                                                 \
    do {                                                                \
        __asm__("" : "+w"(w));                                          \
        lo = vpadalq_s16(lo, vmull_s8(vget_low_s8(w), vget_low_s8(x))); \
        hi = vpadalq_s16(hi, vmull_high_s8(w, x));                      \
    } while (0)

double tsr_i8_peak__neon(uint64_t iterations)
{
    const int8x16_t x = vdupq_n_s8(3);
    int8x16_t w0 = vreinterpretq_s8_s16(vdupq_n_s16((int16_t)0xff01)); /* bytes 1, -1 */
    int8x16_t w1 = w0, w2 = w0, w3 = w0, w4 = w0, w5 = w0, w6 = w0, w7 = w0;
    int32x4_t l0 = vdupq_n_s32(0), l1 = l0, l2 = l0, l3 = l0, l4 = l0, l5 = l0, l6 = l0, l7 = l0;
    int32x4_t h0 = l0, h1 = l0, h2 = l0, h3 = l0, h4 = l0, h5 = l0, h6 = l0, h7 = l0;
    for (uint64_t it = 0; it < iterations; it++) {
        STEP(l0, h0, w0); STEP(l1, h1, w1); STEP(l2, h2, w2); STEP(l3, h3, w3);
        STEP(l4, h4, w4); STEP(l5, h5, w5); STEP(l6, h6, w6); STEP(l7, h7, w7);
    }
    const int32x4_t all[2 * CHAINS] = {l0, l1, l2, l3, l4, l5, l6, l7,
                                       h0, h1, h2, h3, h4, h5, h6, h7};
    int32x4_t s = vdupq_n_s32(0);
    for (int i = 0; i < 2 * CHAINS; i++)
        s = vaddq_s32(s, all[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile int32_t sink = vgetq_lane_s32(s, 0);
    (void)sink;
    return (double)iterations * CHAINS * 16.0 * 2.0;
}
