/*
 * The FMA peak of plain C: twelve independent multiply-add chains on single
 * floats, compiled at the baseline flags like the scalar kernel set, for
 * tessera-perf's pct_peak (named by the set's row, simd/sets.c).
 *
 * Each chain is a = a * m + c; without FMA in the baseline (x86-64) that is a
 * multiply and an add, six cycles of latency on Zen 3, whose two multiply and
 * two add pipes then need twelve chains in flight to stay busy. With an FMA
 * in the baseline (AArch64) the compiler fuses them and twelve chains still
 * cover its latency. a converges to c / (1 - m), so no value overflows or
 * goes subnormal. Separate variables, not an array: the compiler keeps them
 * in registers and finds nothing to vectorise, which is the point (this is
 * the ceiling of one-lane code).
 */
#include "simd/sets.h"

double tsr_fma_peak__scalar(uint64_t iterations)
{
    const float m = 0.999f, c = 0.001f;
    float a0 = 0.00f, a1 = 0.01f, a2 = 0.02f, a3 = 0.03f, a4 = 0.04f, a5 = 0.05f;
    float a6 = 0.06f, a7 = 0.07f, a8 = 0.08f, a9 = 0.09f, a10 = 0.10f, a11 = 0.11f;

    for (uint64_t i = 0; i < iterations; i++) {
        a0 = a0 * m + c;
        a1 = a1 * m + c;
        a2 = a2 * m + c;
        a3 = a3 * m + c;
        a4 = a4 * m + c;
        a5 = a5 * m + c;
        a6 = a6 * m + c;
        a7 = a7 * m + c;
        a8 = a8 * m + c;
        a9 = a9 * m + c;
        a10 = a10 * m + c;
        a11 = a11 * m + c;
    }
    /* The sum is returned through a volatile so the loop cannot be dropped. */
    volatile float sink = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
    (void)sink;
    return (double)iterations * 12.0 * 2.0;
}
