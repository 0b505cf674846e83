/*
 * int8 GEMM microkernel, 12 x 32 tile, AVX512-VNNI. The tile loop is the
 * shared one (simd/frame/i8-gemm-vnni.h: exactness, the a_offset of 128,
 * edges); this file gives its vocabulary, shape and prefetch.
 *
 * Tile: 12 rows against one 32-column panel, the f32 kernel's shape. Per
 * group of 4 steps of k: 2 loads of B, 12 broadcasts of A (vpbroadcastd from
 * memory: a load-port uop), 24 vpdpbusd into 24 zmm accumulators, i.e. 768
 * multiply-adds in 12 cycles on two ports, 4x the f32 kernel's. Alone, in
 * L1, it runs at 96 % of the int8 peak loop (Zen 5): the broadcasts do not
 * hold it back.
 */
#include "simd/avx512/gemm-avx512.h"
#include "simd/sets.h"

#define MR 12
#define NR 32

/* B lines this many groups ahead are prefetched: a single row streams the
 * panel at 128 bytes per group, and the hardware prefetcher alone leaves
 * the vpdpbusd chains waiting. 48 groups is 6 KB, the distance of the f32
 * kernel's single rows; 16 (2 KB) was too short for weights that come from
 * L3 or memory: on a Zen 4 (tessera-perf --clock cpu, 2 rounds) 12 x 32768
 * x 512 went 337 -> 365 GOP/s, 16 x 8000 x 512 341 -> 364, 1 x 32768 x 512
 * 46 -> 52, and 16 x 2048 x 512, in L2, stayed at 345; tessera bench int8
 * greedy-batch 1.09x, greedy and beam4 1.05x (4 alternated rounds). */
#define PREFETCH_GROUPS 48
#define PREFETCH_B(bg)                                                                    \
    do {                                                                                  \
        _mm_prefetch((const char *)((bg) + PREFETCH_GROUPS * NR * 4), _MM_HINT_T0);      \
        _mm_prefetch((const char *)((bg) + PREFETCH_GROUPS * NR * 4 + 64), _MM_HINT_T0); \
    } while (0)

typedef __m512i ivec_t;
#define IVEC_LANES 16
#define IVEC_LOADU(p) _mm512_loadu_si512((const void *)(p))
#define IVEC_STOREU(p, v) _mm512_storeu_si512((void *)(p), v)
#define IVEC_ZERO() _mm512_setzero_si512()
#define IVEC_SET1(x) _mm512_set1_epi32(x)
#define IVEC_DPBUSD(acc, a, b) _mm512_dpbusd_epi32(acc, a, b)

#include "simd/frame/i8-gemm-vnni.h"

/* The emulated build (SIMDe) has no instructions of its own to time. */
#ifdef TSR_AVX512_EMULATED
#define PEAK NULL
#else
#define PEAK tsr_i8_peak__avx512vnni
#endif

const tsr_gemm_i8_kernel tsr_i8_gemm_12x32__avx512vnni = {"avx512-vnni 12x32", 12, 32, 128,
                                                         ukernel, PEAK};
