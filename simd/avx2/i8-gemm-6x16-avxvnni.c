/*
 * int8 GEMM microkernel, 6 x 16 tile, AVX-VNNI: the VEX form of vpdpbusd on
 * ymm, which Alder Lake and later Intel cores and AMD Zen 5 have (with or
 * without AVX-512). The tile loop is the shared one (simd/frame/
 * i8-gemm-vnni.h: exactness, the a_offset of 128, edges); this file gives
 * its vocabulary and shape.
 *
 * Tile: the f32 kernel's 6 x 16: 12 accumulators, 2 weight vectors and the
 * broadcast row in 15 of the 16 ymm registers; per group 12 vpdpbusd for 384
 * multiply-adds. No software prefetch (PREFETCH_B is empty), as this
 * kernel has always run.
 */
#include <immintrin.h>

#include "simd/avx2/gemm-avx2.h"
#include "simd/sets.h"

#define MR 6
#define NR 16

typedef __m256i ivec_t;
#define IVEC_LANES 8
#define IVEC_LOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#define IVEC_STOREU(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define IVEC_ZERO() _mm256_setzero_si256()
#define IVEC_SET1(x) _mm256_set1_epi32(x)
#define IVEC_DPBUSD(acc, a, b) _mm256_dpbusd_avx_epi32(acc, a, b)
#define PREFETCH_B(bg) ((void)(bg))

#include "simd/frame/i8-gemm-vnni.h"

const tsr_gemm_i8_kernel tsr_i8_gemm_6x16__avxvnni = {"avx-vnni 6x16", 6, 16, 128, ukernel,
                                                   tsr_i8_peak__avxvnni};
