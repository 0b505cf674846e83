/*
 * The FMA peak of the avx2 set, for tessera-perf's pct_peak: compiled with
 * $(CFLAGS_AVX2) in the set's library, named by the set's row (simd/sets.c).
 *
 * Zen 3 and the Intel cores since Haswell have two 256-bit FMA pipes with a
 * latency of 4 (Zen 3) or 4-5 (Intel) cycles, so 8-10 independent chains keep
 * both pipes busy; twelve accumulators (plus the two constants: 14 of the 16
 * ymm registers) cover every one of them without spilling. Each chain is
 * acc = acc * m + c, which converges to c / (1 - m): no overflow, no
 * subnormals. One _mm256_fmadd_ps is 8 lanes x 2 flops.
 */
#include <immintrin.h>

#include "simd/sets.h"

double tsr_fma_peak__avx2(uint64_t iterations)
{
    const __m256 m = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
    __m256 a0 = _mm256_set1_ps(0.00f), a1 = _mm256_set1_ps(0.01f), a2 = _mm256_set1_ps(0.02f);
    __m256 a3 = _mm256_set1_ps(0.03f), a4 = _mm256_set1_ps(0.04f), a5 = _mm256_set1_ps(0.05f);
    __m256 a6 = _mm256_set1_ps(0.06f), a7 = _mm256_set1_ps(0.07f), a8 = _mm256_set1_ps(0.08f);
    __m256 a9 = _mm256_set1_ps(0.09f), a10 = _mm256_set1_ps(0.10f), a11 = _mm256_set1_ps(0.11f);

    for (uint64_t i = 0; i < iterations; i++) {
        a0 = _mm256_fmadd_ps(a0, m, c);
        a1 = _mm256_fmadd_ps(a1, m, c);
        a2 = _mm256_fmadd_ps(a2, m, c);
        a3 = _mm256_fmadd_ps(a3, m, c);
        a4 = _mm256_fmadd_ps(a4, m, c);
        a5 = _mm256_fmadd_ps(a5, m, c);
        a6 = _mm256_fmadd_ps(a6, m, c);
        a7 = _mm256_fmadd_ps(a7, m, c);
        a8 = _mm256_fmadd_ps(a8, m, c);
        a9 = _mm256_fmadd_ps(a9, m, c);
        a10 = _mm256_fmadd_ps(a10, m, c);
        a11 = _mm256_fmadd_ps(a11, m, c);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile float sink = _mm256_cvtss_f32(s);
    (void)sink;
    return (double)iterations * 12.0 * 8.0 * 2.0;
}
