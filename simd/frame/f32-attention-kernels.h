/*
 * The inner loops of the attention frame (simd/frame/f32-attention.h, which
 * explains the algorithm and why each row's bits are its own), over the
 * including set's vector vocabulary: the register-tiled scores of 6 rows or
 * one, the softmax of a row's block, and o = alpha o + p V for 6 rows or
 * one. Each loop is inlined into one noinline copy per vector count, so its
 * accumulators stay in registers.
 */
#ifndef TSR_SIMD_FRAME_F32_ATTENTION_KERNELS_H
#define TSR_SIMD_FRAME_F32_ATTENTION_KERNELS_H

#include <math.h>
#include <stdalign.h>

#include "simd/frame/vec-parts.h"
#include "simd/kernels.h"

#define KEY_BLOCK 64   /* keys per softmax block (a multiple of every width) */
#define TILE_ROWS 6    /* query rows per register tile */
#define QUERY_BLOCK 48 /* query rows sharing one transposed K block */
#define KT_DIMS 64     /* dimensions transposed at a time (larger d: chunks) */
#define QP_DIMS 128    /* dimensions of the queries packed at a time */
#define KEY_VECTORS (KEY_BLOCK / VEC_WIDTH)
#define SCORE_KEYS (SCORE_VECTORS * VEC_WIDTH)  /* keys of one 6-row scores pass */
#define VALUE_DIMS (VALUE_VECTORS * VEC_WIDTH)  /* columns of one 6-row values pass */
/* One-row values: 8 independent FMA chains hide the FMA latency on either
 * width; 64 (avx2) or 128 (avx512) columns a pass. */
#define ROW_VECTORS 8
#define ROW_DIMS (ROW_VECTORS * VEC_WIDTH)

/* A tile's per-row scalars (maxima, rescale factors) in whole vectors: one
 * on the x86 widths, two on neon's 4 lanes. */
#define TILE_LANES ((TILE_ROWS + VEC_WIDTH - 1) / VEC_WIDTH * VEC_WIDTH)
_Static_assert(KEY_BLOCK % SCORE_KEYS == 0, "6-row score passes tile the key block");

/* What the set supplies. kt[c][j] = k[j][c] for keys j < nb and dims c < dc,
 * rows of KEY_BLOCK floats, key columns from nb to the next multiple of
 * VEC_WIDTH zero (the kernels read whole vectors up to there, never further). */
static void transpose_keys(const float *k, size_t ldk, size_t nb, size_t dc, float *kt);
#if ATTENTION_DECODE_FROM_K
/* A decoding step's scores (a call of one query row q) straight from K:
 * s[j] = scale * sum_c q[c] k[j][c] for the block's nb keys, each the same FMA
 * chain as the kernels below compute; keys from nb to the next vector are 0. */
static void scores_1xblock(const float *q, const float *k, size_t ldk, size_t nb, size_t d,
                           float scale, float *s);
#endif

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A vector count for a copy of a kernel, capped at what its arrays hold (the
 * copies past the cap are never reached; the cap keeps them in bounds). */
#define UP_TO(n, most) ((n) < (most) ? (n) : (most))

/* ---- Scores ------------------------------------------------------------------ */

/* s[r][0..W nv) (+)= sum_c qp[c][r] kt[c][0..W nv) for c < dc and the 6
 * rows r, s[r] = s + r * KEY_BLOCK; qp is a tile of packed queries. The sums
 * are multiplied by `scale` before they are stored (1 except after the last
 * chunk of dimensions). nv is a constant in each copy (see scores_6xkeys). */
static inline __attribute__((always_inline)) void
scores_6xvectors(size_t dc, const float *qp, const float *kt, float *s, int accumulate,
                 float scale, const size_t nv)
{
    const vec_t sc = VEC_SET1(scale);
    vec_t acc[TILE_ROWS][SCORE_VECTORS];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            acc[r][v] = accumulate ? VEC_LOAD(s + r * KEY_BLOCK + VEC_WIDTH * v) : VEC_ZERO();
    for (size_t c = 0; c < dc; c++) {
        vec_t b[SCORE_VECTORS];
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            b[v] = VEC_LOAD(kt + c * KEY_BLOCK + VEC_WIDTH * v);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const vec_t a = VEC_SET1(qp[c * TILE_ROWS + r]);
#pragma GCC unroll 4
            for (size_t v = 0; v < nv; v++)
                acc[r][v] = VEC_FMA(a, b[v], acc[r][v]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            VEC_STORE(s + r * KEY_BLOCK + VEC_WIDTH * v, VEC_MUL(acc[r][v], sc));
}

/* The 6-row scores of the block's first e keys (and of the rest of their
 * last vector), SCORE_KEYS at a time: one copy per number of vectors, so
 * that each keeps its accumulators in registers. */
static __attribute__((noinline)) void scores_6xkeys(size_t dc, const float *qp, const float *kt,
                                                    float *s, int accumulate, float scale,
                                                    size_t e)
{
    for (size_t k0 = 0; k0 < e; k0 += SCORE_KEYS) {
        const float *kk = kt + k0;
        float *sk = s + k0;
        switch ((e - k0 + VEC_WIDTH - 1) / VEC_WIDTH) {
        case 1: scores_6xvectors(dc, qp, kk, sk, accumulate, scale, 1); break;
        case 2: scores_6xvectors(dc, qp, kk, sk, accumulate, scale, UP_TO(2, SCORE_VECTORS)); break;
        case 3: scores_6xvectors(dc, qp, kk, sk, accumulate, scale, UP_TO(3, SCORE_VECTORS)); break;
        default: scores_6xvectors(dc, qp, kk, sk, accumulate, scale, SCORE_VECTORS); break;
        }
    }
}

/* One row against the first W nv keys: s[0..W nv) (+)= sum_c q[c] kt[c][..],
 * times scale, q[c] at q + c * q_step (a column of a packed tile, or the
 * query itself), kt[c] at kt + c * ldkt (the frame's transposed block, whose
 * key columns are zero up to the next vector, aligned, or keys the caller
 * gives transposed, anywhere, where the last vector is a masked load of its
 * `last` lanes: nothing past the keys is read). nv accumulators; nv and
 * masked constants per copy. */
static inline __attribute__((always_inline)) void
scores_1xvectors(size_t dc, const float *q, size_t q_step, const float *kt, size_t ldkt, float *s,
                 int accumulate, float scale, const size_t nv, const int masked, vec_mask_t last)
{
    const vec_t sc = VEC_SET1(scale);
    vec_t acc[KEY_VECTORS];
#pragma GCC unroll 8
    for (size_t v = 0; v < nv; v++)
        acc[v] = accumulate ? VEC_LOAD(s + VEC_WIDTH * v) : VEC_ZERO();
    for (size_t c = 0; c < dc; c++) {
        const vec_t a = VEC_SET1(q[c * q_step]);
        const float *row = kt + c * ldkt;
#pragma GCC unroll 8
        for (size_t v = 0; v + 1 < nv; v++) {
            const float *p = row + VEC_WIDTH * v;
            acc[v] = VEC_FMA(a, masked ? VEC_LOADU(p) : VEC_LOAD(p), acc[v]);
        }
        const float *end = row + VEC_WIDTH * (nv - 1);
        acc[nv - 1] = VEC_FMA(a, masked ? VEC_LOAD_TAIL(end, last) : VEC_LOAD(end), acc[nv - 1]);
    }
#pragma GCC unroll 8
    for (size_t v = 0; v < nv; v++)
        VEC_STORE(s + VEC_WIDTH * v, VEC_MUL(acc[v], sc));
}

/* One copy of scores_1xvectors per vector count, as a switch on nv. */
#define SCORES_1X_COPIES(masked)                                                          \
    do {                                                                                  \
        const size_t nv = (e + VEC_WIDTH - 1) / VEC_WIDTH;                                \
        const vec_mask_t last = VEC_TAIL_MASK(e - VEC_WIDTH * (nv - 1));                  \
        switch (nv) {                                                                     \
        case 1: SCORES_1X(1, masked); break;                                              \
        case 2: SCORES_1X(2, masked); break;                                              \
        case 3: SCORES_1X(3, masked); break;                                              \
        case 4: SCORES_1X(UP_TO(4, KEY_VECTORS), masked); break;                          \
        case 5: SCORES_1X(UP_TO(5, KEY_VECTORS), masked); break;                          \
        case 6: SCORES_1X(UP_TO(6, KEY_VECTORS), masked); break;                          \
        case 7: SCORES_1X(UP_TO(7, KEY_VECTORS), masked); break;                          \
        default: SCORES_1X(KEY_VECTORS, masked); break;                                   \
        }                                                                                 \
    } while (0)
#define SCORES_1X(n, m) scores_1xvectors(dc, q, q_step, kt, ldkt, s, accumulate, scale, n, m, last)

/* The scores of one row's first e keys (and of the rest of their last
 * vector) from the frame's transposed block: a decoding step sees few keys,
 * so only the vectors it needs. */
static __attribute__((noinline)) void scores_1xkeys(size_t dc, const float *q, size_t q_step,
                                                    const float *kt, size_t ldkt, float *s,
                                                    int accumulate, float scale, size_t e)
{
    SCORES_1X_COPIES(0);
}

/* The same from keys the caller gives transposed (tsr_attention_args kt),
 * read up to key e and no further; the rest of the last vector scores 0. A
 * function of its own so that the frame's copies stay as they were (one
 * function for both measured 12 % slower on avx512 7 x 7 x 64). */
static __attribute__((noinline)) void scores_1xgiven(size_t dc, const float *q, size_t q_step,
                                                     const float *kt, size_t ldkt, float *s,
                                                     int accumulate, float scale, size_t e)
{
    SCORES_1X_COPIES(1);
}
#undef SCORES_1X
#undef SCORES_1X_COPIES

/* ---- Softmax of one row's block --------------------------------------------- */

/* The maximum of the row's e scores; the rest of the last vector is set to
 * -inf (weight 0). */
static float mask_and_max(float *s, size_t e)
{
    const vec_t minus_inf = VEC_SET1(-INFINITY);
    vec_t mx = minus_inf;
    size_t j = 0;
    for (; j + VEC_WIDTH <= e; j += VEC_WIDTH)
        mx = VEC_MAX(mx, VEC_LOAD(s + j));
    if (j < e) {
        vec_t t = VEC_SELECT_TAIL(VEC_TAIL_MASK(e - j), VEC_LOAD(s + j), minus_inf);
        VEC_STORE(s + j, t);
        mx = VEC_MAX(mx, t);
    }
    return VEC_HMAX(mx);
}

/* s[j] = e^(s[j] - m) over the vectors mask_and_max saw; returns their sum:
 * one vector chain, then a fixed horizontal tree. */
static float weights_and_sum(float *s, size_t e, float m)
{
    const vec_t shift = VEC_SET1(m);
    vec_t sum = VEC_ZERO();
    for (size_t j = 0; j < e; j += VEC_WIDTH) {
        vec_t p = VEC_EXP_NONPOSITIVE(VEC_SUB(VEC_LOAD(s + j), shift));
        VEC_STORE(s + j, p);
        sum = VEC_ADD(sum, p);
    }
    return VEC_HSUM(sum);
}

/* weights_and_sum for the 6 rows of a tile whose keys all fill the block,
 * vector by vector across the rows, so that the exponentials of different
 * rows are independent work for the out-of-order core. Each row's own
 * operations, and their order, are those of weights_and_sum. */
static void weights_and_sums_6(float *s, const float m[TILE_ROWS], float sums[TILE_ROWS])
{
    vec_t shift[TILE_ROWS], sum[TILE_ROWS];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        shift[r] = VEC_SET1(m[r]);
        sum[r] = VEC_ZERO();
    }
    for (size_t j = 0; j < KEY_BLOCK; j += VEC_WIDTH) {
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            float *sj = s + r * KEY_BLOCK + j;
            vec_t p = VEC_EXP_NONPOSITIVE(VEC_SUB(VEC_LOAD(sj), shift[r]));
            VEC_STORE(sj, p);
            sum[r] = VEC_ADD(sum[r], p);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
        sums[r] = VEC_HSUM(sum[r]);
}

/* ---- Values ------------------------------------------------------------------ */

/* o[r][0..W nv) = alpha[r] o[r][..] + sum_{j<n} p[r][j] v[j][0..W nv) for
 * the 6 rows, p[r] = p + r * KEY_BLOCK, or with `fresh` (a row's first
 * block) the sum alone, o not read; with `tail`, the last vector only over
 * the lanes of `last`. nv and tail are constants in each copy. */
static inline __attribute__((always_inline)) void
values_6xvectors(size_t n, const float *p, const float *v, size_t ldv,
                 float *const o[TILE_ROWS], const float alpha[TILE_ROWS], int fresh,
                 const size_t nv, const int tail, vec_mask_t last)
{
    vec_t acc[TILE_ROWS][VALUE_VECTORS];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        const vec_t a = VEC_SET1(alpha[r]);
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            acc[r][u] = fresh ? VEC_ZERO()
                              : VEC_MUL(load_part(o[r] + VEC_WIDTH * u, tail && u + 1 == nv, last),
                                        a);
    }
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        vec_t b[VALUE_VECTORS];
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            b[u] = load_part(vj + VEC_WIDTH * u, tail && u + 1 == nv, last);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const vec_t a = VEC_SET1(p[r * KEY_BLOCK + j]);
#pragma GCC unroll 4
            for (size_t u = 0; u < nv; u++)
                acc[r][u] = VEC_FMA(a, b[u], acc[r][u]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            store_part(o[r] + VEC_WIDTH * u, tail && u + 1 == nv, last, acc[r][u]);
}

/* A full pass and one copy per number of vectors of a partial one, so that
 * the register allocator sees each loop alone. */
static __attribute__((noinline)) void
values_6xdims(size_t n, const float *p, const float *v, size_t ldv, float *const o[TILE_ROWS],
              const float alpha[TILE_ROWS], int fresh, size_t dims)
{
    const vec_mask_t last = VEC_TAIL_MASK(dims - (dims - 1) / VEC_WIDTH * VEC_WIDTH);
    if (dims == VALUE_DIMS) {
        values_6xvectors(n, p, v, ldv, o, alpha, fresh, VALUE_VECTORS, 0, last);
        return;
    }
    switch ((dims + VEC_WIDTH - 1) / VEC_WIDTH) {
    case 1: values_6xvectors(n, p, v, ldv, o, alpha, fresh, 1, 1, last); break;
    case 2: values_6xvectors(n, p, v, ldv, o, alpha, fresh, UP_TO(2, VALUE_VECTORS), 1, last);
            break;
    case 3: values_6xvectors(n, p, v, ldv, o, alpha, fresh, UP_TO(3, VALUE_VECTORS), 1, last);
            break;
    default: values_6xvectors(n, p, v, ldv, o, alpha, fresh, VALUE_VECTORS, 1, last); break;
    }
}

static void values_6(size_t n, const float *p, const float *v, size_t ldv,
                     float *const o[TILE_ROWS], const float alpha[TILE_ROWS], int fresh, size_t d)
{
    float *oc[TILE_ROWS];
    for (size_t c = 0; c < d; c += VALUE_DIMS) {
        for (size_t r = 0; r < TILE_ROWS; r++)
            oc[r] = o[r] + c;
        values_6xdims(n, p, v + c, ldv, oc, alpha, fresh, min_size(VALUE_DIMS, d - c));
    }
}

/* One row, nv vectors (independent chains) of output at a time, with `tail`
 * the last over the lanes of `last`. */
static inline __attribute__((always_inline)) void
values_1xvectors(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                 int fresh, const size_t nv, const int tail, vec_mask_t last)
{
    vec_t acc[ROW_VECTORS];
    const vec_t a = VEC_SET1(alpha);
#pragma GCC unroll 8
    for (size_t u = 0; u < nv; u++)
        acc[u] = fresh ? VEC_ZERO()
                       : VEC_MUL(load_part(o + VEC_WIDTH * u, tail && u + 1 == nv, last), a);
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        const vec_t w = VEC_SET1(p[j]);
#pragma GCC unroll 8
        for (size_t u = 0; u < nv; u++)
            acc[u] = VEC_FMA(w, load_part(vj + VEC_WIDTH * u, tail && u + 1 == nv, last), acc[u]);
    }
#pragma GCC unroll 8
    for (size_t u = 0; u < nv; u++)
        store_part(o + VEC_WIDTH * u, tail && u + 1 == nv, last, acc[u]);
}

static __attribute__((noinline)) void values_1xdims(size_t n, const float *p, const float *v,
                                                    size_t ldv, float *o, float alpha,
                                                    int fresh, size_t dims)
{
    const vec_mask_t last = VEC_TAIL_MASK(dims - (dims - 1) / VEC_WIDTH * VEC_WIDTH);
    if (dims == ROW_DIMS) {
        values_1xvectors(n, p, v, ldv, o, alpha, fresh, ROW_VECTORS, 0, last);
        return;
    }
    switch ((dims + VEC_WIDTH - 1) / VEC_WIDTH) {
    case 1: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 1, 1, last); break;
    case 2: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 2, 1, last); break;
    case 3: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 3, 1, last); break;
    case 4: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 4, 1, last); break;
    case 5: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 5, 1, last); break;
    case 6: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 6, 1, last); break;
    case 7: values_1xvectors(n, p, v, ldv, o, alpha, fresh, 7, 1, last); break;
    default: values_1xvectors(n, p, v, ldv, o, alpha, fresh, ROW_VECTORS, 1, last); break;
    }
}

static void values_1(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                     int fresh, size_t d)
{
    for (size_t c = 0; c < d; c += ROW_DIMS)
        values_1xdims(n, p, v + c, ldv, o + c, alpha, fresh, min_size(ROW_DIMS, d - c));
}

/* ---- Rows: start and finish ------------------------------------------------- */

static void divide_row(float *o, size_t d, float l)
{
    const vec_t den = VEC_SET1(l);
    size_t c = 0;
    for (; c + VEC_WIDTH <= d; c += VEC_WIDTH)
        VEC_STOREU(o + c, VEC_DIV(VEC_LOADU(o + c), den));
    if (c < d) {
        const vec_mask_t mask = VEC_TAIL_MASK(d - c);
        VEC_STORE_TAIL(o + c, mask, VEC_DIV(VEC_LOAD_TAIL(o + c, mask), den));
    }
}

#endif
