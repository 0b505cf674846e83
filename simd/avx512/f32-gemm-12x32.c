/*
 * f32 GEMM microkernel, 12 x 32 tile, AVX-512 F (a tsr_gemm_ukernel_fn, see
 * simd/gemm/gemm.h for the contract).
 *
 * Tile: 12 rows of A against one 32-wide weight panel. Register budget, 26 of
 * the 32 zmm registers: 24 accumulators (12 rows x 2 vectors of 16 columns)
 * and 2 for the panel's 32 weights of step p; A[i][p] is not held in a
 * register but broadcast from memory into the FMA itself ({1to16}). Per
 * step: 2 weight loads, 12 broadcast loads, 24 FMAs, i.e. 12 cycles on two
 * 512-bit FMA pipes with 24 independent chains (the latency, 4 cycles x 2
 * pipes, needs 8), and 14 loads in those 12 cycles, within two load ports.
 *
 * Why 12 x 32 rather than 14 x 32 or 6 x 64: the blocked path computes
 * whole row tiles, so a tile height that leaves little of the last tile
 * empty matters at the sizes a Transformer runs: 128 rows are 10 2/3 tiles of
 * 12 (97 % of the computed rows are real) against 9 1/7 of 14 (91 %);
 * 6 x 64 would need 64-column panels, padding d_model = 512 nowhere but
 * tying 64-wide column units to the threads' split of the outputs, and
 * 8 x 48 pads 512 columns to 528. The decode path balances its row tiles, so
 * 16 rows run as 8 + 8.
 *
 * Each step reads two 64-byte lines of the panel and prefetches the lines
 * PREFETCH_STEPS steps ahead, or, given the frame's `next`, the NR floats of
 * the following weights every `every` steps; up to 4 rows prefetch into
 * L2, further ahead. Prefetching past the end of the weights is
 * harmless: a prefetch never faults.
 *
 * Edges: the frame never passes a partial panel (packing zero-pads n) and the
 * C tile is always a full 12 x 32 buffer, so columns need no masks; partial
 * columns are the epilogue's job. Fewer than 12 rows (x read in place, the
 * decode path) are handled by compiling the same loop for each row count, so
 * rows past m are neither read nor written.
 *
 * The fused final piece (tsr_f32_gemm_ukernel_final_12x32__avx512, a full
 * tile of packed rows): the last k steps of the blocked path's tiles apply
 * the epilogue to the accumulators and write y, masking the columns past the
 * output's end, instead of storing the tile for the epilogue to read back
 * (128 x 2048 x 512, Zen 5, 10 alternated runs: median 81.6 -> 86.5 % of the
 * FMA peak; perf/RESULTS.md).
 *
 * Every accumulator is one FMA chain over p ascending from zero, or from the
 * partial sums in C, whatever the row count or the A layout: the same bits on
 * every path.
 *
 * The bf16 variant (bf16 panels, simd/gemm/gemm.h) is the same loop with each
 * step's 32 weights widened on load (vpmovzxwd + vpslld: two more uops a
 * step, off the FMA pipes), so its chains are the f32 kernel's on the rounded
 * weights; it halves the weight stream of the memory-bound decode path.
 */
#include "simd/avx512/gemm-avx512.h"
#include "simd/avx512/vec.h"
#include "simd/frame/gemm-epilogue-vector.h"

#define MR TSR_AVX512_GEMM_MR
#define NR TSR_AVX512_GEMM_NR

/* Each step prefetches the panel lines this many steps ahead (6 KB: one
 * turn of the decode path's row tiles, DECODE_KC steps, ahead, as the avx2
 * kernel does); up to 4 rows prefetch further (ROW_PREFETCH_BYTES_*). It was
 * 24 (3 KB), which on a Zen 4 left 16 decode rows waiting on the weights:
 * tessera-perf --clock cpu, 2 rounds, 16 x 2048 x 512 80-89 -> 96-97
 * GFLOP/s, 16 x 32768 x 512 (from memory) 78-80 -> 89-93; 32 and 64 steps
 * less; 64 rows (the packed path, L1 pieces) unchanged. */
#define PREFETCH_STEPS 48

/* A single row (greedy decoding of one sentence) is bound by the weight
 * stream. Of bf16 weights it reads one line a step and did not keep memory
 * busy: 24-28 GB/s where a single f32 row streams 27-33 (Zen 5, 1 thread).
 * Each step asks for its lines this far ahead into L2 (T1: into L1 the
 * prefetches wait on L1's few miss buffers, and a 24-step T0 prefetch made
 * it slower): 1 x 512 x 2048 23.8 -> 29.5 GB/s, 1 x 8000 x 512 26.1 ->
 * 28.8, 1 x 2048 x 512 27.3 -> 28.8 (8 and 16 KB measured alike; past a
 * panel's end it reaches into the next panel, which is contiguous, or
 * harmlessly past the weights: a prefetch never faults). f32 rows, left to
 * the hardware prefetcher before, gained too: 1 x (1536, 2048, 8000) x 512
 * +5.3 to +6.7 % (medians of 8-16 alternated pairs, Zen 5), from 0.6-4.6 %
 * slower than the avx2 set at 1 x 8000 x 512 (4 of 5 full runs) to 1.02 and
 * 1.05x its speed (medians of 10 and 12 alternated pairs). That was
 * 12 KB; on a Zen 4 (1 thread, 3 alternated rounds of tessera-perf, weights
 * from memory) 12 KB held a row to 25 GB/s of the 42 the machine streams,
 * and 6 KB reads 35 (1 x 32768 x 512 f32; 1 x 8000 x 512 f32 25 -> 34, bf16
 * 26 -> 28, 4 rows 23 -> 27); 2 to 6 KB measured alike there, 8 KB 30,
 * 12 KB and more 25. So f32 rows take 6 KB, near the 8 KB that Zen 5
 * measured alike with 12 and 16. bf16 rows keep 12 KB: in tessera bench
 * greedy bf16 (Zen 4, 8 alternated rounds) 6 KB took 64.2 ms where 12 KB
 * took 55.5, while f32 went 143.6 -> 107.7 with 6 KB. */
#define ROW_PREFETCH_BYTES_F32 6144
#define ROW_PREFETCH_BYTES_BF16 12288

/* More rows prefetch PREFETCH_STEPS ahead into L1 (T0), or, for f32
 * panels under a tuning that says so (simd/tuning.h;
 * tsr_avx512_prefetch_to_l2), into L2 (T1). On an Intel (a Sapphire
 * Rapids-class guest, 1 thread, tessera-perf --clock cpu, weights from
 * memory) T1 took 16 x 2048 x 512 from 73-76 to 82-85 GFLOP/s, 16 x 8000 x
 * 512 from 73 to 80-81 and 8 x 2048 x 512 from 41-45 to 52 (24 to 384 steps
 * alike; no software prefetch 63); tessera bench base f32 greedy-batch 520-530
 * -> 476-486 ms at 1 thread, 258-280 -> 237-254 at 2 (3 alternated rounds),
 * beam4 within noise. bf16 greedy-batch, and the int8 kernel with T1, ran
 * alike or slower there: their weights a step (50 and 25 MB) come from L3,
 * where T0 keeps up.
 *
 * Up to this many rows take the far L2 prefetch instead of the PREFETCH_STEPS
 * one (24 steps when this was measured): with few rows a step is a few
 * cycles, and 24 of them are far too short
 * for memory. 2 and 4 rows of 2048 x 512 (and 4 of 8000 x 512) gained
 * +4.3, +1.4 (+0.8) % (12 alternated pairs, Zen 5), and 4 rows went from
 * 1.016-1.085x avx2's time at 8000 x 512 in 3 full runs to 1.014x its speed
 * (10 pairs). */
#define ROW_PREFETCH_MAX_ROWS 4

/* The 32 weights of step p, as float32: loaded, or, from a bf16 panel,
 * zero-extended to 32 bits and shifted into the top half (exact). */
static inline __attribute__((always_inline)) void load_weights(const void *b, size_t p,
                                                               const int bf16, __m512 *b0,
                                                               __m512 *b1)
{
    if (bf16) {
        const uint16_t *h = (const uint16_t *)b + p * NR;
        *b0 = _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)h)), 16));
        *b1 = _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(h + 16))), 16));
    } else {
        const float *f = (const float *)b + p * NR;
        *b0 = _mm512_loadu_ps(f);
        *b1 = _mm512_loadu_ps(f + 16);
    }
}

/* A finished row's 32 sums to y through the epilogue's vector
 * (simd/frame/gemm-epilogue-vector.h): the operations
 * tsr_f32_gemm_epilogue__avx512 applies to the same sums read back from C,
 * so the same bits; columns past out->n are not touched. */
static inline __attribute__((always_inline)) void finish_row(const tsr_gemm_tile_out *out,
                                                             size_t i, __m512 lo, __m512 hi)
{
    const size_t n = out->n;
    const float *r = out->residual ? out->residual + i * out->ldr : NULL;
    float *y = out->y + i * out->ldy;
    const __mmask16 lo_mask = tsr_avx512_tail_mask(n < 16 ? n : 16);
    epilogue_vector(lo, out->bias, r, y, out->act, n < 16, lo_mask);
    if (n > 16)
        epilogue_vector(hi, out->bias ? out->bias + 16 : NULL, r ? r + 16 : NULL, y + 16, out->act,
                        n < 32, tsr_avx512_tail_mask(n - 16));
}

/* A full-width tile (out->n == NR) to y with `act` a constant: the bias
 * vectors loaded once and no per-row tests, each vector through the
 * epilogue's own epilogue_value, so the same bits as finish_row. */
static inline __attribute__((always_inline)) void finish_full_tile(const tsr_gemm_tile_out *o,
                                                                   __m512 acc[MR][2],
                                                                   const tsr_activation act)
{
    const __m512 b0 = o->bias ? _mm512_loadu_ps(o->bias) : _mm512_setzero_ps();
    const __m512 b1 = o->bias ? _mm512_loadu_ps(o->bias + 16) : _mm512_setzero_ps();
    const __m512 *bias0 = o->bias ? &b0 : NULL, *bias1 = o->bias ? &b1 : NULL;
#pragma GCC unroll 12
    for (size_t i = 0; i < MR; i++) {
        float *y = o->y + i * o->ldy;
        __m512 r0 = _mm512_setzero_ps(), r1 = r0;
        if (o->residual) {
            r0 = _mm512_loadu_ps(o->residual + i * o->ldr);
            r1 = _mm512_loadu_ps(o->residual + i * o->ldr + 16);
        }
        const __m512 lo = epilogue_value(acc[i][0], bias0, act, o->residual ? &r0 : NULL);
        const __m512 hi = epilogue_value(acc[i][1], bias1, act, o->residual ? &r1 : NULL);
        _mm512_storeu_ps(y, lo);
        _mm512_storeu_ps(y + 16, hi);
    }
}

/* A finished tile to y. `out` is copied first: the compiler cannot tell
 * that the stores to y leave it alone, and reloaded its fields, and tested
 * them again, for every row. With that and the full-width case apart, the
 * fused kernel's time outside its loop went from 11 % to 3 % of its
 * samples, and the GEMM gained 1.6-3.0 % (median of 30 alternated pairs,
 * Zen 5: 512 x 2048 x 512 +1.6 and +2.4, 128 x 512 x 512 +3.0, 512 x 1536 x
 * 512 +2.2; k = 2048, where the epilogue is a quarter as much, +0.5). */
static inline __attribute__((always_inline)) void finish_tile(const tsr_gemm_tile_out *out,
                                                              __m512 acc[MR][2])
{
    const tsr_gemm_tile_out o = *out;
    if (o.n == NR) {
        switch (o.act) {
        case TSR_ACT_NONE: finish_full_tile(&o, acc, TSR_ACT_NONE); return;
        case TSR_ACT_RELU: finish_full_tile(&o, acc, TSR_ACT_RELU); return;
        case TSR_ACT_GELU: finish_full_tile(&o, acc, TSR_ACT_GELU); return;
        case TSR_ACT_SILU: finish_full_tile(&o, acc, TSR_ACT_SILU); return;
        case TSR_ACT_GELU_TANH: finish_full_tile(&o, acc, TSR_ACT_GELU_TANH); return;
        case TSR_ACT_GELU_SIGMOID: finish_full_tile(&o, acc, TSR_ACT_GELU_SIGMOID); return;
        }
    }
#pragma GCC unroll 12
    for (size_t i = 0; i < MR; i++)
        finish_row(&o, i, acc[i][0], acc[i][1]);
}

/* bf16 (a constant after inlining) selects the panel's value type; a bf16
 * step is one 64-byte line, a float32 step two. With `final` (a constant: the
 * fused final piece) the sums go to y through `out`, not back to C. */
static inline __attribute__((always_inline)) void tile(size_t k, const float *a, size_t a_rs,
                                                       size_t a_cs, const void *b,
                                                       const float *c_in, float *c,
                                                       const size_t rows, int accumulate,
                                                       const void *next, size_t every,
                                                       const int bf16, const int final,
                                                       const tsr_gemm_tile_out *out)
{
    const size_t step_bytes = NR * (bf16 ? sizeof(uint16_t) : sizeof(float));
    const char *ahead = (const char *)b + PREFETCH_STEPS * step_bytes;
    const char *next_line = next;
    /* f32 panels only: bf16 ones (half the bytes, more of them in L3) ran
     * alike or slower with T1. The same every step: a predicted branch. */
    const int to_l2 = !bf16 && tsr_avx512_prefetch_to_l2;
    __m512 acc[MR][2];

#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        if (accumulate) {
            acc[i][0] = _mm512_loadu_ps(c_in + i * NR);
            acc[i][1] = _mm512_loadu_ps(c_in + i * NR + 16);
        } else {
            acc[i][0] = _mm512_setzero_ps();
            acc[i][1] = _mm512_setzero_ps();
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
                if (!bf16)
                    _mm_prefetch(next_line + 64, _MM_HINT_T0);
                next_line += step_bytes;
                countdown = every;
            }
        } else if (rows > ROW_PREFETCH_MAX_ROWS) {
            if (to_l2) { /* f32: two lines a step */
                _mm_prefetch(ahead, _MM_HINT_T1);
                _mm_prefetch(ahead + 64, _MM_HINT_T1);
            } else {
                _mm_prefetch(ahead, _MM_HINT_T0);
                if (!bf16)
                    _mm_prefetch(ahead + 64, _MM_HINT_T0);
            }
            ahead += step_bytes;
        } else {
            const char *row_ahead = (const char *)b + p * step_bytes +
                                    (bf16 ? ROW_PREFETCH_BYTES_BF16 : ROW_PREFETCH_BYTES_F32);
            _mm_prefetch(row_ahead, _MM_HINT_T1);
            if (!bf16)
                _mm_prefetch(row_ahead + 64, _MM_HINT_T1);
        }
        __m512 b0, b1;
        load_weights(b, p, bf16, &b0, &b1);
#pragma GCC unroll 12
        for (size_t i = 0; i < rows; i++) {
            const __m512 ai = _mm512_set1_ps(a[i * a_rs]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
        a += a_cs;
    }

    if (final) {
        finish_tile(out, acc);
        return;
    }
#pragma GCC unroll 12
    for (size_t i = 0; i < rows; i++) {
        _mm512_storeu_ps(c + i * NR, acc[i][0]);
        _mm512_storeu_ps(c + i * NR + 16, acc[i][1]);
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
        tile(k, a, 1, MR, b, c, c, MR, accumulate, next, every, bf16, 0, NULL);
        return;
    }
    switch (m) {
    case 1: tile(k, a, a_rs, a_cs, b, c, c, 1, accumulate, next, every, bf16, 0, NULL); break;
    case 2: tile(k, a, a_rs, a_cs, b, c, c, 2, accumulate, next, every, bf16, 0, NULL); break;
    case 3: tile(k, a, a_rs, a_cs, b, c, c, 3, accumulate, next, every, bf16, 0, NULL); break;
    case 4: tile(k, a, a_rs, a_cs, b, c, c, 4, accumulate, next, every, bf16, 0, NULL); break;
    case 5: tile(k, a, a_rs, a_cs, b, c, c, 5, accumulate, next, every, bf16, 0, NULL); break;
    case 6: tile(k, a, a_rs, a_cs, b, c, c, 6, accumulate, next, every, bf16, 0, NULL); break;
    case 7: tile(k, a, a_rs, a_cs, b, c, c, 7, accumulate, next, every, bf16, 0, NULL); break;
    case 8: tile(k, a, a_rs, a_cs, b, c, c, 8, accumulate, next, every, bf16, 0, NULL); break;
    case 9: tile(k, a, a_rs, a_cs, b, c, c, 9, accumulate, next, every, bf16, 0, NULL); break;
    case 10: tile(k, a, a_rs, a_cs, b, c, c, 10, accumulate, next, every, bf16, 0, NULL); break;
    case 11: tile(k, a, a_rs, a_cs, b, c, c, 11, accumulate, next, every, bf16, 0, NULL); break;
    default: tile(k, a, a_rs, a_cs, b, c, c, MR, accumulate, next, every, bf16, 0, NULL); break;
    }
}

void tsr_f32_gemm_ukernel_12x32__avx512(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                        const float *b, float *c, size_t m, int accumulate,
                                        const float *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 0);
}

void tsr_f32_gemm_ukernel_bf16_12x32__avx512(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                             const uint16_t *b, float *c, size_t m,
                                             int accumulate, const uint16_t *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 1);
}

void tsr_f32_gemm_ukernel_final_12x32__avx512(size_t k, const float *a, const float *b,
                                              const float *c, int accumulate, const void *next,
                                              size_t every, const tsr_gemm_tile_out *out)
{
    tile(k, a, 1, MR, b, c, NULL, MR, accumulate, next, every, 0, 1, out);
}
