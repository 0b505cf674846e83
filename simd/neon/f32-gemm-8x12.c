/*
 * The NEON GEMM microkernel for the portable frame (simd/gemm/gemm.h): an
 * 8 x 12 tile of C = A B, B a packed panel of 12 columns.
 *
 * Register budget (32 vector registers of 4 floats):
 *   24  accumulators, 8 rows x 3 vectors of 4 columns (v8-v31 in spirit;
 *       the allocator picks the numbers);
 *    3  the panel's 12 values at step p (three 16-byte loads);
 *    2  the 8 values of A at step p, packed A (two loads), each used through
 *       lane-indexed FMAs (FMLA v.4s, v.4s, v.s[l]), or one broadcast (LD1R)
 *       at a time when the rows of x are read in place.
 * That is 24 FMAs per 5 loads at a step, with no spill. 8 x 12 is the largest
 * tile that leaves room for the operands: 24 accumulators is what hides the
 * FMA latency (4 cycles) on two pipes (8 independent chains needed) several
 * times over, and 12 columns keep the panel's rows 16-byte multiples.
 *
 * Every C element is one FMA chain over p ascending, started from zero or
 * from the value in C (accumulate): the lane-indexed FMA and the broadcast
 * one compute the same fused a*b + c, so the packed and the in-place paths
 * give the same bits, as the frame requires.
 *
 * Edges: the frame never gives a partial panel (B is zero-padded to 12
 * columns and C always has 12). A tile of fewer than 8 rows (m < 8, rows of x
 * read in place) computes 1, 2, 4 or 8 rows, the smallest that covers m,
 * reading any row past m - 1 at row m - 1, and neither loads nor stores the
 * rows of C past m.
 *
 * The bf16 variant (bf16 panels, simd/gemm/gemm.h) is the same loops with
 * each step's 12 weights widened on load, so its chains are the f32
 * kernel's on the rounded weights.
 */
#include "simd/neon/neon.h"

#define MR TSR_NEON_GEMM_MR
#define NR TSR_NEON_GEMM_NR

/* Panel steps the prefetch runs ahead: 32 steps of 48 bytes, far enough for
 * a memory-bound decode step to have the lines arrive in time. */
#define PREFETCH_STEPS 32

typedef struct tile {
    float32x4_t c[MR][3];
} tile;

/* The chains' starting values: C's rows below m, or zeros. */
static inline __attribute__((always_inline)) tile load_tile(const float *c, size_t m,
                                                            int accumulate)
{
    tile t;
#pragma GCC unroll 8
    for (size_t i = 0; i < MR; i++) {
#pragma GCC unroll 3
        for (size_t v = 0; v < 3; v++)
            t.c[i][v] = accumulate && i < m ? vld1q_f32(c + i * NR + 4 * v) : vdupq_n_f32(0.0f);
    }
    return t;
}

static inline __attribute__((always_inline)) void store_tile(tile t, float *c, size_t m)
{
#pragma GCC unroll 8
    for (size_t i = 0; i < MR; i++) {
        if (i < m) {
#pragma GCC unroll 3
            for (size_t v = 0; v < 3; v++)
                vst1q_f32(c + i * NR + 4 * v, t.c[i][v]);
        }
    }
}

/* One row of the tile: acc += b * a_i, three vectors of columns. */
static inline void fma_row(float32x4_t acc[3], float32x4_t b0, float32x4_t b1, float32x4_t b2,
                           float32x4_t a_i)
{
    acc[0] = vfmaq_f32(acc[0], b0, a_i);
    acc[1] = vfmaq_f32(acc[1], b1, a_i);
    acc[2] = vfmaq_f32(acc[2], b2, a_i);
}

/* The 12 weights of step p, as float32: loaded, or, from a bf16 panel,
 * widened by a shift into the top half (USHLL #16, exact). */
static inline __attribute__((always_inline)) void load_weights(const void *b, size_t p,
                                                               const int bf16, float32x4_t *b0,
                                                               float32x4_t *b1, float32x4_t *b2)
{
    if (bf16) {
        const uint16_t *h = (const uint16_t *)b + p * NR;
        const uint16x8_t lo = vld1q_u16(h);
        const uint16x4_t hi = vld1_u16(h + 8);
        *b0 = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(lo), 16));
        *b1 = vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(lo), 16));
        *b2 = vreinterpretq_f32_u32(vshll_n_u16(hi, 16));
    } else {
        const float *f = (const float *)b + p * NR;
        *b0 = vld1q_f32(f);
        *b1 = vld1q_f32(f + 4);
        *b2 = vld1q_f32(f + 8);
    }
}

/* Bytes of one step of a panel: 12 values of 4 or 2 bytes. */
#define STEP_BYTES(bf16) (NR * ((bf16) ? sizeof(uint16_t) : sizeof(float)))

/* Packed A: the 8 values of step p are contiguous; a lane broadcast feeding
 * an FMA compiles to one lane-indexed FMLA. */
static inline __attribute__((always_inline)) void
full_tile_packed(size_t k, const float *a, size_t a_cs, const void *b, float *c, int accumulate,
                 const void *next, size_t every, const int bf16)
{
    const char *next_line = next;
    tile t = load_tile(c, MR, accumulate);
    size_t countdown = 1; /* steps to the next prefetch of `next` */
    for (size_t p = 0; p < k; p++) {
        if (!next_line) {
            __builtin_prefetch((const char *)b + (p + PREFETCH_STEPS) * STEP_BYTES(bf16));
        } else if (--countdown == 0) {
            __builtin_prefetch(next_line);
            next_line += STEP_BYTES(bf16);
            countdown = every;
        }
        float32x4_t b0, b1, b2;
        load_weights(b, p, bf16, &b0, &b1, &b2);
        const float32x4_t a_lo = vld1q_f32(a + p * a_cs), a_hi = vld1q_f32(a + p * a_cs + 4);
        fma_row(t.c[0], b0, b1, b2, vdupq_laneq_f32(a_lo, 0));
        fma_row(t.c[1], b0, b1, b2, vdupq_laneq_f32(a_lo, 1));
        fma_row(t.c[2], b0, b1, b2, vdupq_laneq_f32(a_lo, 2));
        fma_row(t.c[3], b0, b1, b2, vdupq_laneq_f32(a_lo, 3));
        fma_row(t.c[4], b0, b1, b2, vdupq_laneq_f32(a_hi, 0));
        fma_row(t.c[5], b0, b1, b2, vdupq_laneq_f32(a_hi, 1));
        fma_row(t.c[6], b0, b1, b2, vdupq_laneq_f32(a_hi, 2));
        fma_row(t.c[7], b0, b1, b2, vdupq_laneq_f32(a_hi, 3));
    }
    store_tile(t, c, MR);
}

/* Any strides, m <= rows <= 8 rows computed: row i of A read at
 * a + min(i, m - 1) * a_rs. Called with a constant `rows`, so that a decode
 * step (m = 1 or 2) runs 3 or 6 chains rather than 24 on duplicated rows;
 * every chain is the same whatever `rows` is. */
static inline __attribute__((always_inline)) void
strided_rows(size_t k, const float *a, size_t a_rs, size_t a_cs, const void *b, float *c,
             size_t m, int accumulate, size_t rows, const int bf16)
{
    const float *row[MR];
    for (size_t i = 0; i < rows; i++)
        row[i] = a + (i < m ? i : m - 1) * a_rs;

    tile t = load_tile(c, m < rows ? m : rows, accumulate);
    for (size_t p = 0; p < k; p++) {
        __builtin_prefetch((const char *)b + (p + PREFETCH_STEPS) * STEP_BYTES(bf16));
        float32x4_t b0, b1, b2;
        load_weights(b, p, bf16, &b0, &b1, &b2);
#pragma GCC unroll 8
        for (size_t i = 0; i < rows; i++)
            fma_row(t.c[i], b0, b1, b2, vld1q_dup_f32(row[i] + p * a_cs));
    }
    store_tile(t, c, m);
}

/* The frame's prefetch hint (`next`, see simd/gemm/gemm.h) is followed on
 * the packed path, the only one it is given on; x read in place (decode)
 * streams its panel with the look-ahead alone. */
static inline __attribute__((always_inline)) void
any_tile(size_t k, const float *a, size_t a_rs, size_t a_cs, const void *b, float *c, size_t m,
         int accumulate, const void *next, size_t every, const int bf16)
{
    if (m == 0)
        return;
    if (a_rs == 1 && m == MR)
        full_tile_packed(k, a, a_cs, b, c, accumulate, next, every, bf16);
    else if (m == 1)
        strided_rows(k, a, a_rs, a_cs, b, c, m, accumulate, 1, bf16);
    else if (m == 2)
        strided_rows(k, a, a_rs, a_cs, b, c, m, accumulate, 2, bf16);
    else if (m <= 4)
        strided_rows(k, a, a_rs, a_cs, b, c, m, accumulate, 4, bf16);
    else
        strided_rows(k, a, a_rs, a_cs, b, c, m, accumulate, MR, bf16);
}

void tsr_f32_gemm_ukernel_8x12__neon(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                     const float *b, float *c, size_t m, int accumulate,
                                     const float *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 0);
}

void tsr_f32_gemm_ukernel_bf16_8x12__neon(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                          const uint16_t *b, float *c, size_t m, int accumulate,
                                          const uint16_t *next, size_t every)
{
    any_tile(k, a, a_rs, a_cs, b, c, m, accumulate, next, every, 1);
}
