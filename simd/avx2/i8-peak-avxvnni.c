/*
 * The int8 peak of the AVX-VNNI kernel (simd/avx2/i8-gemm-6x16-avxvnni.c),
 * compiled with $(CFLAGS_AVX_VNNI): VEX vpdpbusd on ymm, 8 lanes x 4
 * unsigned-by-signed byte products summed into int32, i.e. 32 multiply-adds
 * per instruction, with no loads. Alder Lake / Zen 5 run it on two ports
 * with a latency of up to 5 cycles: twelve chains cover that, and with the
 * two operands use 14 of the 16 ymm registers (named variables, which GCC
 * keeps in registers where it would keep an array in memory). The weights' bytes alternate
 * 1, -1, so every sum is 0 and the accumulators stay put; each starts at
 * its own value, or the compiler would see equal chains and compute one.
 */
#include <immintrin.h>

#include "simd/sets.h"

#define CHAINS 12

#define STEP(a) a = _mm256_dpbusd_avx_epi32(a, x, w)

double tsr_i8_peak__avxvnni(uint64_t iterations)
{
    const __m256i x = _mm256_set1_epi8(3), w = _mm256_set1_epi16((short)0xff01); /* bytes 1, -1 */
    __m256i a0 = _mm256_set1_epi32(0), a1 = _mm256_set1_epi32(1), a2 = _mm256_set1_epi32(2);
    __m256i a3 = _mm256_set1_epi32(3), a4 = _mm256_set1_epi32(4), a5 = _mm256_set1_epi32(5);
    __m256i a6 = _mm256_set1_epi32(6), a7 = _mm256_set1_epi32(7), a8 = _mm256_set1_epi32(8);
    __m256i a9 = _mm256_set1_epi32(9), a10 = _mm256_set1_epi32(10), a11 = _mm256_set1_epi32(11);
    for (uint64_t it = 0; it < iterations; it++) {
        STEP(a0); STEP(a1); STEP(a2); STEP(a3);
        STEP(a4); STEP(a5); STEP(a6); STEP(a7);
        STEP(a8); STEP(a9); STEP(a10); STEP(a11);
    }
    const __m256i all[CHAINS] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
    __m256i s = _mm256_setzero_si256();
    for (int i = 0; i < CHAINS; i++)
        s = _mm256_add_epi32(s, all[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile int sink = _mm256_extract_epi32(s, 0);
    (void)sink;
    return (double)iterations * CHAINS * 32.0 * 2.0;
}
