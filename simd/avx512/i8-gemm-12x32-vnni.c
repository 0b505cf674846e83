/*
 * int8 GEMM microkernel, 12 x 32 tile, AVX512-VNNI (a tsr_gemm_ukernel_i8_fn,
 * see simd/gemm/gemm.h for the contract and the layouts).
 *
 * vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds
 * the 4 products to an int32 lane, exactly (no saturation: that is
 * vpdpbusds). A holds xq + 128 (kernel a_offset 128), which the frame takes
 * back out with the weights' column sums.
 *
 * Tile: 12 rows against one 32-column panel, the f32 kernel's shape. Per
 * group of 4 steps of k: 2 loads of 16 columns x 4 bytes of B, 12
 * broadcasts of a row's 4 bytes of A (vpbroadcastd from memory: a load-port
 * uop; vpdpbusd can broadcast only its signed operand, B here), 24 vpdpbusd
 * into 24 zmm accumulators, i.e. 768 multiply-adds in 12 cycles on two
 * ports, 4x the f32 kernel's. Alone, in L1, it runs at 96 % of the int8
 * peak loop (Zen 5): the broadcasts do not hold it back. Fewer rows (x of a decode step)
 * compile the same loop for each row count, so nothing past m is read.
 */
#include <string.h>

#include "simd/avx512/gemm-avx512.h"
#include "simd/sets.h"

#define MR 12
#define NR 32

/* B lines this many groups ahead are prefetched: a single row streams the
 * panel at 128 bytes per group, and the hardware prefetcher alone leaves
 * the vpdpbusd chains waiting. */
#define PREFETCH_GROUPS 16

static inline __attribute__((always_inline)) void tile(size_t k4, const uint8_t *a,
                                                       const int8_t *b, int32_t *c,
                                                       const size_t rows, int accumulate)
{
    __m512i acc[MR][2];
#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        if (accumulate) {
            acc[i][0] = _mm512_loadu_si512((const void *)(c + i * NR));
            acc[i][1] = _mm512_loadu_si512((const void *)(c + i * NR + 16));
        } else {
            acc[i][0] = _mm512_setzero_si512();
            acc[i][1] = _mm512_setzero_si512();
        }
    }
    for (size_t g = 0; g < k4; g++) {
        const int8_t *bg = b + g * NR * 4;
        _mm_prefetch((const char *)(bg + PREFETCH_GROUPS * NR * 4), _MM_HINT_T0);
        _mm_prefetch((const char *)(bg + PREFETCH_GROUPS * NR * 4 + 64), _MM_HINT_T0);
        const __m512i b0 = _mm512_loadu_si512((const void *)bg);
        const __m512i b1 = _mm512_loadu_si512((const void *)(bg + 64));
        const uint8_t *ag = a + g * MR * 4;
#pragma GCC unroll 12
        for (size_t i = 0; i < rows; i++) {
            int32_t four;
            memcpy(&four, ag + i * 4, sizeof four);
            const __m512i ai = _mm512_set1_epi32(four);
            acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], ai, b1);
        }
    }
#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        _mm512_storeu_si512((void *)(c + i * NR), acc[i][0]);
        _mm512_storeu_si512((void *)(c + i * NR + 16), acc[i][1]);
    }
}

static void ukernel(size_t k4, const uint8_t *a, const int8_t *b, int32_t *c, size_t m,
                    int accumulate)
{
    switch (m) {
    case 1: tile(k4, a, b, c, 1, accumulate); break;
    case 2: tile(k4, a, b, c, 2, accumulate); break;
    case 3: tile(k4, a, b, c, 3, accumulate); break;
    case 4: tile(k4, a, b, c, 4, accumulate); break;
    case 5: tile(k4, a, b, c, 5, accumulate); break;
    case 6: tile(k4, a, b, c, 6, accumulate); break;
    case 7: tile(k4, a, b, c, 7, accumulate); break;
    case 8: tile(k4, a, b, c, 8, accumulate); break;
    case 9: tile(k4, a, b, c, 9, accumulate); break;
    case 10: tile(k4, a, b, c, 10, accumulate); break;
    case 11: tile(k4, a, b, c, 11, accumulate); break;
    default: tile(k4, a, b, c, MR, accumulate); break;
    }
}

/* The emulated build (SIMDe) has no instructions of its own to time. */
#ifdef TSR_AVX512_EMULATED
#define PEAK NULL
#else
#define PEAK tsr_i8_peak__avx512vnni
#endif

const tsr_gemm_i8_kernel tsr_i8_gemm_12x32__avx512vnni = {"avx512-vnni 12x32", 12, 32, 128,
                                                         ukernel, PEAK};
