/*
 * The FMA peak of the avx512 set, for tessera-perf's pct_peak: compiled with
 * $(CFLAGS_AVX512) in the set's library, named by the set's row (simd/sets.c).
 *
 * The AVX-512 server cores (Skylake-SP to Granite Rapids with two 512-bit FMA
 * ports, Zen 4 with one double-pumped 512-bit pipe pair, Zen 5 with two
 * full-width pipes) have an FMA latency of 4 cycles, so 8 independent chains
 * fill two pipes; sixteen accumulators (plus the two constants: 18 of the 32
 * zmm registers) leave margin for a longer latency without spilling. Each
 * chain is acc = acc * m + c, which converges to c / (1 - m): no overflow,
 * no subnormals. One _mm512_fmadd_ps is 16 lanes x 2 flops.
 */
#include <immintrin.h>

#include "simd/sets.h"

#define CHAINS 16

double tsr_fma_peak__avx512(uint64_t iterations)
{
    const __m512 m = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
    __m512 acc[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_set1_ps(0.01f * (float)i);

    for (uint64_t it = 0; it < iterations; it++) {
#pragma GCC unroll 16
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], m, c);
    }
    __m512 s = _mm512_setzero_ps();
    for (int i = 0; i < CHAINS; i++)
        s = _mm512_add_ps(s, acc[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile float sink = _mm512_cvtss_f32(s);
    (void)sink;
    return (double)iterations * CHAINS * 16.0 * 2.0;
}
