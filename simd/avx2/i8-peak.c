/*
 * The int8 peak of the avx2 set's int8 kernel without VNNI (simd/avx2/
 * i8-gemm-4x16.c), compiled with $(CFLAGS_AVX2): the same four instructions
 * per 32 multiply-adds, with no loads, so the ceiling that kernel can reach.
 *
 * vpsignb moves the sign of x onto w, vpmaddubsw multiplies |x| by it and
 * adds pairs into int16, vpmaddwd against ones adds those into int32 lanes,
 * vpaddd accumulates. Six chains, each with its own weights (6 accumulators,
 * 6 weights, x, |x| and the ones: 15 of the 16 ymm registers, as named
 * variables, which GCC keeps in registers where it would keep an array in
 * memory), keep the two ports busy; only vpaddd is on a chain's critical
 * path. The weights' bytes alternate 1, -1, so every pair sums to 0 and the
 * accumulators stay put; an empty asm makes each weight opaque every round,
 * or the compiler would compute the products once, outside the loop, since
 * only vpaddd depends on the accumulator.
 */
#include <immintrin.h>

#include "simd/sets.h"

#define CHAINS 6

#define STEP(a, w)                                                                      \
    do {                                                                                \
        __asm__("" : "+x"(w));                                                          \
        const __m256i pairs = _mm256_maddubs_epi16(x_abs, _mm256_sign_epi8(w, x));      \
        a = _mm256_add_epi32(a, _mm256_madd_epi16(pairs, ones));                        \
    } while (0)

double tsr_i8_peak__avx2(uint64_t iterations)
{
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i x = _mm256_set1_epi8(-2), x_abs = _mm256_abs_epi8(x);
    __m256i w0 = _mm256_set1_epi16((short)0xff01), w1 = w0, w2 = w0, w3 = w0, w4 = w0, w5 = w0;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    for (uint64_t it = 0; it < iterations; it++) {
        STEP(a0, w0); STEP(a1, w1); STEP(a2, w2);
        STEP(a3, w3); STEP(a4, w4); STEP(a5, w5);
    }
    const __m256i all[CHAINS] = {a0, a1, a2, a3, a4, a5};
    __m256i s = _mm256_setzero_si256();
    for (int i = 0; i < CHAINS; i++)
        s = _mm256_add_epi32(s, all[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile int sink = _mm256_extract_epi32(s, 0);
    (void)sink;
    return (double)iterations * CHAINS * 32.0 * 2.0;
}
