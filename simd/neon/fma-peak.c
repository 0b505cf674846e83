/*
 * The FMA peak of the neon set (AArch64 Advanced SIMD), compiled with
 * $(CFLAGS_NEON) in the set's library, for tessera-perf's pct_peak; named
 * by the set's row (simd/sets.c).
 *
 * Cores from Cortex-A76 / Neoverse N1 up to Neoverse V2 have two to four
 * 128-bit FMA pipes with a latency of 4 cycles: up to 16 chains in flight.
 * Sixteen accumulators of the 32 vector registers cover that; they are named
 * variables, not an array, so that the compiler keeps them in registers
 * without having to unroll a loop. Each chain is acc = c + acc * m, which
 * converges to c / (1 - m). One vfmaq_f32 is 4 lanes x 2 flops.
 */
#include <arm_neon.h>

#include "simd/sets.h"

double tsr_fma_peak__neon(uint64_t iterations)
{
    const float32x4_t m = vdupq_n_f32(0.999f), c = vdupq_n_f32(0.001f);
    float32x4_t a0 = vdupq_n_f32(0.00f), a1 = vdupq_n_f32(0.01f), a2 = vdupq_n_f32(0.02f);
    float32x4_t a3 = vdupq_n_f32(0.03f), a4 = vdupq_n_f32(0.04f), a5 = vdupq_n_f32(0.05f);
    float32x4_t a6 = vdupq_n_f32(0.06f), a7 = vdupq_n_f32(0.07f), a8 = vdupq_n_f32(0.08f);
    float32x4_t a9 = vdupq_n_f32(0.09f), a10 = vdupq_n_f32(0.10f), a11 = vdupq_n_f32(0.11f);
    float32x4_t a12 = vdupq_n_f32(0.12f), a13 = vdupq_n_f32(0.13f), a14 = vdupq_n_f32(0.14f);
    float32x4_t a15 = vdupq_n_f32(0.15f);

    for (uint64_t i = 0; i < iterations; i++) {
        a0 = vfmaq_f32(c, a0, m);
        a1 = vfmaq_f32(c, a1, m);
        a2 = vfmaq_f32(c, a2, m);
        a3 = vfmaq_f32(c, a3, m);
        a4 = vfmaq_f32(c, a4, m);
        a5 = vfmaq_f32(c, a5, m);
        a6 = vfmaq_f32(c, a6, m);
        a7 = vfmaq_f32(c, a7, m);
        a8 = vfmaq_f32(c, a8, m);
        a9 = vfmaq_f32(c, a9, m);
        a10 = vfmaq_f32(c, a10, m);
        a11 = vfmaq_f32(c, a11, m);
        a12 = vfmaq_f32(c, a12, m);
        a13 = vfmaq_f32(c, a13, m);
        a14 = vfmaq_f32(c, a14, m);
        a15 = vfmaq_f32(c, a15, m);
    }
    float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)),
                              vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
    s = vaddq_f32(s, vaddq_f32(vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)),
                               vaddq_f32(vaddq_f32(a12, a13), vaddq_f32(a14, a15))));
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile float sink = vaddvq_f32(s);
    (void)sink;
    return (double)iterations * 16.0 * 4.0 * 2.0;
}
