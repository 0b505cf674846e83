/*
 * The int8 peak of the AVX512-VNNI kernel (simd/avx512/i8-gemm-12x32-vnni.c),
 * compiled with $(CFLAGS_AVX512_VNNI): vpdpbusd on zmm, 16 lanes x 4
 * unsigned-by-signed byte products summed into int32, i.e. 64 multiply-adds
 * per instruction, with no loads. Cascade Lake to Granite Rapids and Zen 4/5
 * issue it on one or two ports with a latency of 4-5 cycles: sixteen chains
 * cover that (18 of the 32 zmm registers with the operands; named variables,
 * which GCC keeps in registers where it would keep an array in memory). The weights'
 * bytes alternate 1, -1, so every sum is 0 and the accumulators stay put;
 * each starts at its own value, or the compiler would see equal chains and
 * compute one.
 */
#include <immintrin.h>

#include "simd/sets.h"

#define CHAINS 16

#define STEP(a) a = _mm512_dpbusd_epi32(a, x, w)

double tsr_i8_peak__avx512vnni(uint64_t iterations)
{
    const __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi16((short)0xff01); /* bytes 1, -1 */
    __m512i a0 = _mm512_set1_epi32(0), a1 = _mm512_set1_epi32(1), a2 = _mm512_set1_epi32(2);
    __m512i a3 = _mm512_set1_epi32(3), a4 = _mm512_set1_epi32(4), a5 = _mm512_set1_epi32(5);
    __m512i a6 = _mm512_set1_epi32(6), a7 = _mm512_set1_epi32(7), a8 = _mm512_set1_epi32(8);
    __m512i a9 = _mm512_set1_epi32(9), a10 = _mm512_set1_epi32(10), a11 = _mm512_set1_epi32(11);
    __m512i a12 = _mm512_set1_epi32(12), a13 = _mm512_set1_epi32(13), a14 = _mm512_set1_epi32(14);
    __m512i a15 = _mm512_set1_epi32(15);
    for (uint64_t it = 0; it < iterations; it++) {
        STEP(a0); STEP(a1); STEP(a2); STEP(a3);
        STEP(a4); STEP(a5); STEP(a6); STEP(a7);
        STEP(a8); STEP(a9); STEP(a10); STEP(a11);
        STEP(a12); STEP(a13); STEP(a14); STEP(a15);
    }
    const __m512i all[CHAINS] = {a0, a1, a2, a3, a4, a5, a6, a7,
                                 a8, a9, a10, a11, a12, a13, a14, a15};
    __m512i s = _mm512_setzero_si512();
    for (int i = 0; i < CHAINS; i++)
        s = _mm512_add_epi32(s, all[i]);
    /* Stored through a volatile so the loop cannot be dropped. */
    volatile int sink = _mm_cvtsi128_si32(_mm512_castsi512_si128(s));
    (void)sink;
    return (double)iterations * CHAINS * 64.0 * 2.0;
}
