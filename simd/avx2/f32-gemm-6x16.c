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
 *
 * The bf16 variant (bf16 panels, simd/gemm/gemm.h) is the same loop with each
 * step's 16 weights widened on load (vpmovzxwd + vpslld), so its chains are
 * the f32 kernel's on the rounded weights; it halves the weight stream of the
 * memory-bound decode path.
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

/* The 16 weights of step p, as float32: loaded, or, from a bf16 panel,
 * zero-extended to 32 bits and shifted into the top half (exact). */
static inline __attribute__((always_inline)) void load_weights(const void *b, size_t p,
                                                               const int bf16, __m256 *b0,
                                                               __m256 *b1)
{
    if (bf16) {
        const uint16_t *h = (const uint16_t *)b + p * NR;
        *b0 = _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)h)), 16));
        *b1 = _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(h + 8))), 16));
    } else {
        const float *f = (const float *)b + p * NR;
        *b0 = _mm256_load_ps(f);
        *b1 = _mm256_load_ps(f + 8);
    }
}

/* bf16 (a constant after inlining) selects the panel's value type. */
static inline __attribute__((always_inline)) void tile(size_t k, const float *a, size_t a_rs,
                                                       size_t a_cs, const void *b, float *c,
                                                       const size_t rows, int accumulate,
                                                       const void *next, size_t every,
                                                       const int bf16)
{
    const size_t step_bytes = NR * (bf16 ? sizeof(uint16_t) : sizeof(float));
    const char *ahead = (const char *)b + PREFETCH_STEPS * step_bytes;
    const char *next_line = next;
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
        if (next_line) {
            /* A counter, not p % every: a division per step costs more
             * than the prefetch saves. */
            if (--countdown == 0) {
                _mm_prefetch(next_line, _MM_HINT_T0);
                next_line += step_bytes;
                countdown = every;
            }
        } else if (rows > 1) {
            _mm_prefetch(ahead, _MM_HINT_T0);
            ahead += step_bytes;
        }
        __m256 b0, b1;
        load_weights(b, p, bf16, &b0, &b1);
#pragma GCC unroll 6
        for (size_t i = 0; i < rows; i++) {
            const __m256 ai = _mm256_broadcast_ss(a + i * a_rs);
            acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += a_cs;
    }

#pragma GCC unroll 6
    for (size_t i = 0; i < rows; i++) {
        _mm256_store_ps(c + i * NR, acc[i][0]);
        _mm256_store_ps(c + i * NR + 8, acc[i][1]);
    }
}

/* Every row count compiled apart (rows past m are neither read nor written);
 * packed A, the compute-bound case, with constant strides, which frees the
 * registers that would hold them. */
static inline __attribute__((always_inline)) void any_tile(size_t k, const float *a, size_t a_rs,
                                                           size_t a_cs, const void *b, float *c,
                                                           size_t m, int accumulate,
                                                           const void *next, size_t every,
                                                           const int bf16)
{
    if (m == MR && a_rs == 1 && a_cs == MR) {
        tile(k, a, 1, MR, b, c, MR, accumulate, next, every, bf16);
        return;
    }
    switch (m) {
    case 1: tile(k, a, a_rs, a_cs, b, c, 1, accumulate, next, every, bf16); break;
    case 2: tile(k, a, a_rs, a_cs, b, c, 2, accumulate, next, every, bf16); break;
    case 3: tile(k, a, a_rs, a_cs, b, c, 3, accumulate, next, every, bf16); break;
    case 4: tile(k, a, a_rs, a_cs, b, c, 4, accumulate, next, every, bf16); break;
    case 5: tile(k, a, a_rs, a_cs, b, c, 5, accumulate, next, every, bf16); break;
    default: tile(k, a, a_rs, a_cs, b, c, MR, accumulate, next, every, bf16); break;
    }
}

void tsr_f32_gemm_ukernel_6x16__avx2(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                     const float *b, float *c, size_t m, int accumulate,
                                     const float *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 0);
}

void tsr_f32_gemm_ukernel_bf16_6x16__avx2(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                          const uint16_t *b, float *c, size_t m, int accumulate,
                                          const uint16_t *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 1);
}
