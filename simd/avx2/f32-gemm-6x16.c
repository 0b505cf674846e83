/*
 * f32 GEMM microkernel, 6 x 16 tile, AVX2 + FMA (a tsr_gemm_ukernel_fn, see
 * simd/gemm/gemm.h for the contract).
 *
 * Tile: 6 rows of A against one 16-wide weight panel. Register budget, all 16
 * ymm registers but one: 12 accumulators (6 rows x 2 vectors of 8 columns),
 * 2 for the panel's 16 weights of step p, 1 for the broadcast A[i][p]. Per
 * step: 2 loads, 6 broadcasts, 12 FMAs, i.e. 6 cycles on two FMA pipes, with
 * 12 independent chains to cover the FMA latency (4 cycles x 2 pipes = 8).
 * Each step reads one 64-byte line of the panel and prefetches the line 48
 * steps ahead, which matters when the panel streams from memory (decode) or
 * from L2/L3 (the first row tile of a block); or, given the frame's `next`,
 * a line of the weights that follow, every `every` steps. Prefetching past
 * the end of the weights is harmless: a prefetch never faults.
 *
 * Edges: the frame never passes a partial panel (packing zero-pads n) and the
 * C tile is always a full 6 x 16 buffer, so columns need no masks; partial
 * columns are the epilogue's job. Fewer than 6 rows (x read in place, last
 * row tile) are handled by compiling the same loop for each row count 1..6,
 * so rows past m are neither read nor written.
 *
 * Every accumulator is one FMA chain over p ascending from zero, or from the
 * partial sums in C, whatever the row count or the A layout: the same bits on
 * every path.
 */
#include <immintrin.h>

#include "simd/avx2/gemm-avx2.h"

#define MR 6
#define NR 16

/* Each step prefetches the panel line this many steps ahead (3 KB): far
 * enough to cover the memory latency at the rate a 6-row tile consumes the
 * panel, and one decode turn of the row tiles (simd/gemm/driver.c) ahead;
 * measured best for decode among 16, 32, 48 and 64, the same for the rest.
 * A single row is the exception: its loop is so short that the hardware
 * prefetcher alone streams faster (measured), so it issues none. */
#define PREFETCH_STEPS 48

static inline __attribute__((always_inline)) void tile(size_t k, const float *a, size_t a_rs,
                                                       size_t a_cs, const float *b, float *c,
                                                       const size_t rows, int accumulate,
                                                       const float *next, size_t every)
{
    __m256 acc[MR][2];

#pragma GCC unroll 6
    for (size_t i = 0; i < rows; i++) {
        if (accumulate) {
            acc[i][0] = _mm256_load_ps(c + i * NR);
            acc[i][1] = _mm256_load_ps(c + i * NR + 8);
        } else {
            acc[i][0] = _mm256_setzero_ps();
            acc[i][1] = _mm256_setzero_ps();
        }
    }

    size_t countdown = 1; /* steps to the next prefetch of `next` */
#pragma GCC unroll 2
    for (size_t p = 0; p < k; p++) {
        if (next) {
            /* A counter, not p % every: a division per step costs more
             * than the prefetch saves. */
            if (--countdown == 0) {
                _mm_prefetch((const char *)next, _MM_HINT_T0);
                next += NR;
                countdown = every;
            }
        } else if (rows > 1) {
            _mm_prefetch((const char *)(b + PREFETCH_STEPS * NR), _MM_HINT_T0);
        }
        const __m256 b0 = _mm256_load_ps(b);
        const __m256 b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
        for (size_t i = 0; i < rows; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i * a_rs);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += a_cs;
        b += NR;
    }

#pragma GCC unroll 6
    for (size_t i = 0; i < rows; i++) {
        _mm256_store_ps(c + i * NR, acc[i][0]);
        _mm256_store_ps(c + i * NR + 8, acc[i][1]);
    }
}

void tsr_f32_gemm_ukernel_6x16__avx2(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                     const float *b, float *c, size_t m, int accumulate,
                                     const float *next, size_t every)
{
    /* Packed A, the compute-bound case: constant strides free the registers
     * that would hold them. */
    if (m == MR && a_rs == 1 && a_cs == MR) {
        tile(k, a, 1, MR, b, c, MR, accumulate, next, every);
        return;
    }
    switch (m) {
    case 1:
        tile(k, a, a_rs, a_cs, b, c, 1, accumulate, next, every);
        break;
    case 2:
        tile(k, a, a_rs, a_cs, b, c, 2, accumulate, next, every);
        break;
    case 3:
        tile(k, a, a_rs, a_cs, b, c, 3, accumulate, next, every);
        break;
    case 4:
        tile(k, a, a_rs, a_cs, b, c, 4, accumulate, next, every);
        break;
    case 5:
        tile(k, a, a_rs, a_cs, b, c, 5, accumulate, next, every);
        break;
    default:
        tile(k, a, a_rs, a_cs, b, c, MR, accumulate, next, every);
        break;
    }
}
