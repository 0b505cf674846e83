/*
 * Attention of one head with a streaming ("online") softmax, AVX-512.
 *
 * The algorithm is the scalar kernel's (simd/scalar/f32-attention.c) and the
 * blocking the avx2 kernel's (simd/avx2/f32-attention.c): keys are visited
 * in blocks of KEY_BLOCK at absolute positions 0, 64, 128, ...; for each
 * block a query row takes its scores s_j = scale * q.k_j and the block's
 * maximum, and updates three running quantities,
 *
 *   m    the largest score so far (the shift that keeps e^(s - m) <= 1),
 *   l    the sum of e^(s_j - m) so far,
 *   o    the sum of e^(s_j - m) v_j so far (kept unnormalised in the output
 *        row itself),
 *
 * multiplying l and o by alpha = e^(m_old - m_new) first, so that what was
 * summed with the old shift is re-expressed with the new one (alpha = 0 on a
 * row's first block, where m_old = -inf). At the end out = o / l. Extra
 * memory is the query_block on the stack (54 KB), whatever n_q, n_k and d.
 *
 * Blocking. Queries are taken QUERY_BLOCK rows at a time and packed per tile
 * of TILE_ROWS rows ([dim][row], so a tile's broadcasts come from one
 * pointer). For each key block the keys are transposed once into
 * kt[dim][key] (16 x 16 tiles in registers, KT_DIMS dimensions at a time,
 * zero-padded to a multiple of 16 keys), and then every tile that sees the
 * block runs:
 *
 *   scores   S[6 rows][64 keys] = scale * sum_c q[r][c] kt[c][64 keys]: the
 *            whole key block in one tile, 24 zmm accumulators + 4 loads of
 *            kt + 1 broadcast of q = 29 of the 32 registers, 24 FMAs per 4
 *            loads and 6 broadcasts (fewer vectors of keys on a block the
 *            tile sees only part of);
 *   softmax  per row, 16 keys per vector: mask, max, exp, sum;
 *   values   o[6 rows][64 dims] = alpha o + sum_j p[r][j] v[j][64 dims]:
 *            the same register budget, V read in place (row-major), so
 *            d = 64 is one pass over V per tile.
 *
 * Why 6 x 64 rather than a taller tile (14 x 32, 12 x 32): 64 keys is the
 * softmax block, so a tile's scores are one pass whatever d, its rows need
 * no second pass over kt, and 64 dims is the common head size, so the values
 * are one pass too; 6 rows keep the waste small on the causal diagonal and
 * on short query blocks, and the 8 tiles of a 48-row query block share each
 * transposed K block.
 *
 * A decode step (a query block of one row) takes its scores straight from
 * K: each 16-key by 16-dim tile is transposed in registers and feeds the
 * row's 1 to 4 accumulators there, with no kt and no packing, so the FMA
 * chains overlap the shuffles; its values run a one-row loop (128 dims of
 * output, 8 chains). A tile with one active row (causal diagonal) uses the
 * same one-row loops on kt. Key and dimension tails use opmask loads and
 * stores, never scalar loops, and never touch memory outside the
 * arguments.
 *
 * Determinism: every number a row computes depends only on that row's own
 * data and position, never on the rows it shares a tile or a call with:
 *   - each score is one FMA chain over c = 0 .. d-1 in order, started from
 *     0, then one multiplication by scale, whichever kernel (6-row, 1-row or
 *     decode) and however d is chunked (a chunk stores its partial sums
 *     times 1, exactly, and the next reloads them);
 *   - the block boundaries are absolute key positions, and a row takes
 *     exactly the keys it sees in each block (e of them): its softmax covers
 *     ceil(e / 16) vectors with the keys past e at -inf, which weigh exactly
 *     +0 in the sum; the 6-row values loop runs over the keys every active
 *     row of the tile sees, and a row's further keys (causal diagonal) are
 *     added by the one-row loop afterwards, continuing the same chain in
 *     the same order (never adding 0 * v for a key the row does not see:
 *     harmless in value, but it would turn an output that is exactly -0
 *     into +0, in some groupings and not others);
 *   - the per-row scalars (max, alpha, sum) are computed lane by lane.
 * So splitting the queries across calls or threads gives the same bits.
 *
 * Causal: query i is at position q_pos + i and sees keys j <= q_pos + i. A
 * key block is visited only by the rows that see at least one of its keys;
 * blocks above the diagonal of every row of a query block are skipped.
 */
#include <math.h>
#include <stdalign.h>

#include "simd/avx512/avx512.h"
#include "simd/avx512/vecmath.h"

#define KEY_BLOCK 64   /* keys per softmax block, the tile's width (4 vectors) */
#define TILE_ROWS 6    /* query rows per register tile */
#define QUERY_BLOCK 48 /* query rows sharing one transposed K block */
#define KT_DIMS 64     /* dimensions transposed at a time (larger d: chunks) */
#define QP_DIMS 128    /* dimensions of the queries packed at a time */
#define VALUE_DIMS 64  /* output columns of one pass of the 6-row values */
#define ROW_DIMS 128   /* output columns of one pass of the 1-row values */

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- Transposing a K block ------------------------------------------------- */

/* kt[c][0..16) = src[0..16)[c] for c < dims, rows of KEY_BLOCK floats; keys
 * from `keys` to 16 are zero. */
static inline __attribute__((always_inline)) void
transpose_tile(const float *src, size_t ldk, size_t keys, size_t dims, float *kt)
{
    const __mmask16 mask = tsr_avx512_tail_mask(dims);
    __m512 r[16];
#pragma GCC unroll 16
    for (size_t u = 0; u < 16; u++)
        r[u] = u < keys ? _mm512_maskz_loadu_ps(mask, src + u * ldk) : _mm512_setzero_ps();
    tsr_avx512_transpose16(r);
#pragma GCC unroll 16
    for (size_t c = 0; c < 16; c++)
        if (c < dims)
            _mm512_store_ps(kt + c * KEY_BLOCK, r[c]);
}

/* kt[c][j] = k[j][c] for keys j < nb and dims c < dc; key columns from nb to
 * the next multiple of 16 are zero (the kernels read whole 16-key vectors up
 * to there, never further). */
static __attribute__((noinline)) void transpose_keys(const float *k, size_t ldk, size_t nb,
                                                     size_t dc, float *kt)
{
    for (size_t j16 = 0; j16 < nb; j16 += 16) {
        const size_t keys = min_size(16, nb - j16);
        for (size_t c16 = 0; c16 < dc; c16 += 16) {
            const size_t dims = min_size(16, dc - c16);
            const float *src = k + j16 * ldk + c16;
            float *dst = kt + c16 * KEY_BLOCK + j16;
            if (keys == 16 && dims == 16)
                transpose_tile(src, ldk, 16, 16, dst);
            else
                transpose_tile(src, ldk, keys, dims, dst);
        }
    }
}

/* ---- Scores ------------------------------------------------------------------ */

/* s[r][0..16 nv) (+)= sum_c qp[c][r] kt[c][0..16 nv) for c < dc and the 6
 * rows r, s[r] = s + r * KEY_BLOCK; qp is a tile of packed queries. The sums
 * are multiplied by `scale` before they are stored (1 except after the last
 * chunk of dimensions). nv is a constant in each copy (see scores_6xkeys). */
static inline __attribute__((always_inline)) void
scores_6xvectors(size_t dc, const float *qp, const float *kt, float *s, int accumulate,
                 float scale, const size_t nv)
{
    const __m512 sc = _mm512_set1_ps(scale);
    __m512 acc[TILE_ROWS][KEY_BLOCK / 16];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            acc[r][v] = accumulate ? _mm512_load_ps(s + r * KEY_BLOCK + 16 * v)
                                   : _mm512_setzero_ps();
    for (size_t c = 0; c < dc; c++) {
        __m512 b[KEY_BLOCK / 16];
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            b[v] = _mm512_load_ps(kt + c * KEY_BLOCK + 16 * v);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const __m512 a = _mm512_set1_ps(qp[c * TILE_ROWS + r]);
#pragma GCC unroll 4
            for (size_t v = 0; v < nv; v++)
                acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            _mm512_store_ps(s + r * KEY_BLOCK + 16 * v, _mm512_mul_ps(acc[r][v], sc));
}

/* The 6-row scores of the block's first e keys (and of the rest of their
 * last vector): one copy per number of vectors, so that each keeps its
 * accumulators in registers. */
static __attribute__((noinline)) void scores_6xkeys(size_t dc, const float *qp, const float *kt,
                                                    float *s, int accumulate, float scale,
                                                    size_t e)
{
    switch ((e + 15) / 16) {
    case 1: scores_6xvectors(dc, qp, kt, s, accumulate, scale, 1); break;
    case 2: scores_6xvectors(dc, qp, kt, s, accumulate, scale, 2); break;
    case 3: scores_6xvectors(dc, qp, kt, s, accumulate, scale, 3); break;
    default: scores_6xvectors(dc, qp, kt, s, accumulate, scale, 4); break;
    }
}

/* One row against the block's first 16 * nv keys: s[0..16 nv) (+)= sum_c
 * q[c] kt[c][..], q[c] at q + c * TILE_ROWS (one column of a packed tile),
 * times scale. nv accumulators, nv a constant in each copy. */
static inline __attribute__((always_inline)) void
scores_1xvectors(size_t dc, const float *q, const float *kt, float *s, int accumulate,
                 float scale, const size_t nv)
{
    const __m512 sc = _mm512_set1_ps(scale);
    __m512 acc[KEY_BLOCK / 16];
#pragma GCC unroll 4
    for (size_t v = 0; v < nv; v++)
        acc[v] = accumulate ? _mm512_load_ps(s + 16 * v) : _mm512_setzero_ps();
    for (size_t c = 0; c < dc; c++) {
        const __m512 a = _mm512_set1_ps(q[c * TILE_ROWS]);
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            acc[v] = _mm512_fmadd_ps(a, _mm512_load_ps(kt + c * KEY_BLOCK + 16 * v), acc[v]);
    }
#pragma GCC unroll 4
    for (size_t v = 0; v < nv; v++)
        _mm512_store_ps(s + 16 * v, _mm512_mul_ps(acc[v], sc));
}

/* The scores of one row's first e keys (and of the rest of their last
 * vector): a decoding step sees few keys, so only the vectors it needs. */
static __attribute__((noinline)) void scores_1xkeys(size_t dc, const float *q, const float *kt,
                                                    float *s, int accumulate, float scale,
                                                    size_t e)
{
    switch ((e + 15) / 16) {
    case 1: scores_1xvectors(dc, q, kt, s, accumulate, scale, 1); break;
    case 2: scores_1xvectors(dc, q, kt, s, accumulate, scale, 2); break;
    case 3: scores_1xvectors(dc, q, kt, s, accumulate, scale, 3); break;
    default: scores_1xvectors(dc, q, kt, s, accumulate, scale, 4); break;
    }
}

/* A decoding step's scores (a call of one query row q), straight from K:
 * s[0..16 nv) = scale * sum_c q[c] k[j][c] for the block's nb keys, each
 * 16-key by 16-dim tile transposed in registers and consumed there (no kt,
 * and the FMA chains overlap the shuffles). Each score is the same FMA
 * chain over c = 0 .. d-1, in the same order, as in scores_1xvectors and
 * scores_6xvectors, so the same bits. Keys from nb to 16 nv are 0. */
static inline __attribute__((always_inline)) void
scores_1xdirect(const float *q, const float *k, size_t ldk, size_t nb, size_t d, float scale,
                float *s, const size_t nv, const int full)
{
    __m512 acc[KEY_BLOCK / 16];
#pragma GCC unroll 4
    for (size_t v = 0; v < nv; v++)
        acc[v] = _mm512_setzero_ps();
    for (size_t c16 = 0; c16 < d; c16 += 16) {
        const size_t dims = min_size(16, d - c16);
        const __mmask16 mask = tsr_avx512_tail_mask(dims);
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++) {
            const size_t keys = full ? 16 : min_size(16, nb - 16 * v);
            const float *src = k + 16 * v * ldk + c16;
            __m512 r[16];
#pragma GCC unroll 16
            for (size_t u = 0; u < 16; u++)
                r[u] = u < keys ? _mm512_maskz_loadu_ps(mask, src + u * ldk) : _mm512_setzero_ps();
            tsr_avx512_transpose16(r);
#pragma GCC unroll 16
            for (size_t c = 0; c < 16; c++)
                if (c < dims)
                    acc[v] = _mm512_fmadd_ps(_mm512_set1_ps(q[c16 + c]), r[c], acc[v]);
        }
    }
    const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 4
    for (size_t v = 0; v < nv; v++)
        _mm512_store_ps(s + 16 * v, _mm512_mul_ps(acc[v], sc));
}

static __attribute__((noinline)) void scores_1xblock(const float *q, const float *k, size_t ldk,
                                                     size_t nb, size_t d, float scale, float *s)
{
    switch ((nb + 15) / 16) {
    case 1: scores_1xdirect(q, k, ldk, nb, d, scale, s, 1, 0); break;
    case 2: scores_1xdirect(q, k, ldk, nb, d, scale, s, 2, 0); break;
    case 3: scores_1xdirect(q, k, ldk, nb, d, scale, s, 3, 0); break;
    default:
        if (nb == KEY_BLOCK)
            scores_1xdirect(q, k, ldk, nb, d, scale, s, 4, 1);
        else
            scores_1xdirect(q, k, ldk, nb, d, scale, s, 4, 0);
        break;
    }
}

/* ---- Softmax of one row's block --------------------------------------------- */

/* The maximum of the row's e scores; the rest of the last vector is set to
 * -inf (weight 0). */
static float mask_and_max(float *s, size_t e)
{
    __m512 mx = _mm512_set1_ps(-INFINITY);
    size_t j = 0;
    for (; j + 16 <= e; j += 16)
        mx = _mm512_max_ps(mx, _mm512_load_ps(s + j));
    if (j < e) {
        __m512 t = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), tsr_avx512_tail_mask(e - j),
                                      _mm512_load_ps(s + j));
        _mm512_store_ps(s + j, t);
        mx = _mm512_max_ps(mx, t);
    }
    return tsr_avx512_hmax(mx);
}

/* s[j] = e^(s[j] - m) over the ceil(e / 16) vectors mask_and_max saw;
 * returns their sum: one vector chain, then a fixed horizontal tree. */
static float weights_and_sum(float *s, size_t e, float m)
{
    const __m512 shift = _mm512_set1_ps(m);
    __m512 sum = _mm512_setzero_ps();
    for (size_t j = 0; j < e; j += 16) {
        __m512 p = tsr_avx512_exp(_mm512_sub_ps(_mm512_load_ps(s + j), shift));
        _mm512_store_ps(s + j, p);
        sum = _mm512_add_ps(sum, p);
    }
    return tsr_avx512_hsum(sum);
}

/* weights_and_sum for the 6 rows of a tile whose keys all fill the block,
 * vector by vector across the rows, so that the exponentials of different
 * rows are independent work for the out-of-order core. Each row's own
 * operations, and their order, are those of weights_and_sum. */
static void weights_and_sums_6(float *s, const float m[TILE_ROWS], float sums[TILE_ROWS])
{
    __m512 shift[TILE_ROWS], sum[TILE_ROWS];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        shift[r] = _mm512_set1_ps(m[r]);
        sum[r] = _mm512_setzero_ps();
    }
    for (size_t j = 0; j < KEY_BLOCK; j += 16) {
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            float *sj = s + r * KEY_BLOCK + j;
            __m512 p = tsr_avx512_exp(_mm512_sub_ps(_mm512_load_ps(sj), shift[r]));
            _mm512_store_ps(sj, p);
            sum[r] = _mm512_add_ps(sum[r], p);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
        sums[r] = tsr_avx512_hsum(sum[r]);
}

/* ---- Values ------------------------------------------------------------------ */

/* o[r][0..16 nv) = alpha[r] o[r][..] + sum_{j<n} p[r][j] v[j][0..16 nv) for
 * the 6 rows, p[r] = p + r * KEY_BLOCK; the last vector only over the lanes
 * of `last` (opmask loads and stores). nv a constant in each copy. */
static inline __attribute__((always_inline)) void
values_6xvectors(size_t n, const float *p, const float *v, size_t ldv,
                 float *const o[TILE_ROWS], const float alpha[TILE_ROWS], const size_t nv,
                 __mmask16 last)
{
    __mmask16 mask[VALUE_DIMS / 16];
    __m512 acc[TILE_ROWS][VALUE_DIMS / 16];
#pragma GCC unroll 4
    for (size_t u = 0; u < nv; u++)
        mask[u] = u + 1 < nv ? (__mmask16)0xffff : last;
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        const __m512 a = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            acc[r][u] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask[u], o[r] + 16 * u), a);
    }
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        __m512 b[VALUE_DIMS / 16];
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            b[u] = _mm512_maskz_loadu_ps(mask[u], vj + 16 * u);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const __m512 a = _mm512_set1_ps(p[r * KEY_BLOCK + j]);
#pragma GCC unroll 4
            for (size_t u = 0; u < nv; u++)
                acc[r][u] = _mm512_fmadd_ps(a, b[u], acc[r][u]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
#pragma GCC unroll 4
        for (size_t u = 0; u < nv; u++)
            _mm512_mask_storeu_ps(o[r] + 16 * u, mask[u], acc[r][u]);
}

/* One copy per number of vectors, so that the register allocator sees each
 * loop alone (24 accumulators + 4 loads + 1 broadcast = 29 registers). */
static __attribute__((noinline)) void
values_6xdims(size_t n, const float *p, const float *v, size_t ldv, float *const o[TILE_ROWS],
              const float alpha[TILE_ROWS], size_t dims)
{
    const __mmask16 last = tsr_avx512_tail_mask(dims - (dims - 1) / 16 * 16);
    switch ((dims + 15) / 16) {
    case 1: values_6xvectors(n, p, v, ldv, o, alpha, 1, last); break;
    case 2: values_6xvectors(n, p, v, ldv, o, alpha, 2, last); break;
    case 3: values_6xvectors(n, p, v, ldv, o, alpha, 3, last); break;
    default: values_6xvectors(n, p, v, ldv, o, alpha, 4, last); break;
    }
}

static void values_6(size_t n, const float *p, const float *v, size_t ldv,
                     float *const o[TILE_ROWS], const float alpha[TILE_ROWS], size_t d)
{
    float *oc[TILE_ROWS];
    for (size_t c = 0; c < d; c += VALUE_DIMS) {
        for (size_t r = 0; r < TILE_ROWS; r++)
            oc[r] = o[r] + c;
        values_6xdims(n, p, v + c, ldv, oc, alpha, min_size(VALUE_DIMS, d - c));
    }
}

/* One row, up to 128 columns (8 vectors, 8 independent chains) at a time,
 * the last vector over the lanes of `last`. */
static inline __attribute__((always_inline)) void
values_1xvectors(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                 const size_t nv, __mmask16 last)
{
    __mmask16 mask[ROW_DIMS / 16];
    __m512 acc[ROW_DIMS / 16];
    const __m512 a = _mm512_set1_ps(alpha);
#pragma GCC unroll 8
    for (size_t u = 0; u < nv; u++) {
        mask[u] = u + 1 < nv ? (__mmask16)0xffff : last;
        acc[u] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask[u], o + 16 * u), a);
    }
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        const __m512 w = _mm512_set1_ps(p[j]);
#pragma GCC unroll 8
        for (size_t u = 0; u < nv; u++)
            acc[u] = _mm512_fmadd_ps(w, _mm512_maskz_loadu_ps(mask[u], vj + 16 * u), acc[u]);
    }
#pragma GCC unroll 8
    for (size_t u = 0; u < nv; u++)
        _mm512_mask_storeu_ps(o + 16 * u, mask[u], acc[u]);
}

static __attribute__((noinline)) void values_1xdims(size_t n, const float *p, const float *v,
                                                    size_t ldv, float *o, float alpha,
                                                    size_t dims)
{
    const __mmask16 last = tsr_avx512_tail_mask(dims - (dims - 1) / 16 * 16);
    switch ((dims + 15) / 16) {
    case 1: values_1xvectors(n, p, v, ldv, o, alpha, 1, last); break;
    case 2: values_1xvectors(n, p, v, ldv, o, alpha, 2, last); break;
    case 3: values_1xvectors(n, p, v, ldv, o, alpha, 3, last); break;
    case 4: values_1xvectors(n, p, v, ldv, o, alpha, 4, last); break;
    case 5: values_1xvectors(n, p, v, ldv, o, alpha, 5, last); break;
    case 6: values_1xvectors(n, p, v, ldv, o, alpha, 6, last); break;
    case 7: values_1xvectors(n, p, v, ldv, o, alpha, 7, last); break;
    default: values_1xvectors(n, p, v, ldv, o, alpha, 8, last); break;
    }
}

static void values_1(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                     size_t d)
{
    for (size_t c = 0; c < d; c += ROW_DIMS)
        values_1xdims(n, p, v + c, ldv, o + c, alpha, min_size(ROW_DIMS, d - c));
}

/* ---- Rows: start and finish ------------------------------------------------- */

static void zero_row(float *o, size_t d)
{
    for (size_t c = 0; c < d; c += 16)
        _mm512_mask_storeu_ps(o + c, tsr_avx512_tail_mask(d - c), _mm512_setzero_ps());
}

static void divide_row(float *o, size_t d, float l)
{
    const __m512 den = _mm512_set1_ps(l);
    for (size_t c = 0; c < d; c += 16) {
        const __mmask16 mask = tsr_avx512_tail_mask(d - c);
        _mm512_mask_storeu_ps(o + c, mask, _mm512_div_ps(_mm512_maskz_loadu_ps(mask, o + c), den));
    }
}

/* ---- One query block ------------------------------------------------------- */

typedef struct query_block {
    const tsr_attention_args *a;
    size_t first; /* index of its first query row */
    size_t rows;
    size_t seen[QUERY_BLOCK]; /* keys each row sees */
    float max[QUERY_BLOCK], sum[QUERY_BLOCK];
    size_t packed_c0, packed_end; /* the dimensions in qp */
    /* Scores, then weights, of the current key block, one row per query. */
    alignas(64) float scores[QUERY_BLOCK][KEY_BLOCK];
    /* The queries of each tile packed [dim][row], so a tile's broadcasts
     * come from one pointer; rows past `rows` are zero. */
    float qp[QUERY_BLOCK / TILE_ROWS][QP_DIMS][TILE_ROWS];
    alignas(64) float kt[KT_DIMS][KEY_BLOCK];
} query_block;

/* Packs dimensions c0 .. c0 + QP_DIMS - 1 (or to d) of the block's rows. */
static void pack_queries(query_block *b, size_t c0)
{
    const tsr_attention_args *a = b->a;
    const size_t dc = min_size(QP_DIMS, a->d - c0);
    /* A lone row only ever runs the one-row kernels, which read its own
     * column: no padding rows to zero (most of a decoding step's packing). */
    const size_t padded = b->rows == 1 ? 1 : (b->rows + TILE_ROWS - 1) / TILE_ROWS * TILE_ROWS;
    for (size_t r = 0; r < padded; r++) {
        float *dst = &b->qp[r / TILE_ROWS][0][r % TILE_ROWS];
        if (r < b->rows) {
            const float *q = a->q + (b->first + r) * a->ldq + c0;
            for (size_t c = 0; c < dc; c++)
                dst[c * TILE_ROWS] = q[c];
        } else {
            for (size_t c = 0; c < dc; c++)
                dst[c * TILE_ROWS] = 0.0f;
        }
    }
    b->packed_c0 = c0;
    b->packed_end = c0 + dc;
}

/*
 * Tile t holds rows t0 = 6t .. t0 + 5 of the block; for a key block, its
 * active rows [lo, hi) are those that exist and see the block's first key.
 * The 6-row kernels always run all 6 rows: an inactive row's scores land in
 * its own row of `scores` (unused), and for the values it mirrors the last
 * active row (same weights, alpha and output row), so it computes exactly
 * what that row computes and stores the same bits.
 */
typedef struct tile {
    size_t t0, lo, hi;
    size_t e[TILE_ROWS]; /* keys of the block each active row sees */
} tile;

static tile tile_of(const query_block *b, size_t t0, size_t first_row, size_t j0)
{
    tile t = {.t0 = t0, .lo = t0 > first_row ? t0 : first_row,
              .hi = min_size(t0 + TILE_ROWS, b->rows)};
    for (size_t r = t.lo; r < t.hi; r++)
        t.e[r - t0] = min_size(KEY_BLOCK, b->seen[r] - j0);
    return t;
}

static void tile_scores(query_block *b, const tile *t, size_t c0, size_t dc, float scale)
{
    const int accumulate = c0 > 0;
    const float *qp = &b->qp[t->t0 / TILE_ROWS][c0 - b->packed_c0][0];
    if (t->hi - t->lo == 1) {
        scores_1xkeys(dc, qp + (t->lo - t->t0), &b->kt[0][0], b->scores[t->lo], accumulate, scale,
                      t->e[t->lo - t->t0]);
        return;
    }
    const size_t e_max = t->e[t->hi - 1 - t->t0]; /* rows are in position order */
    scores_6xkeys(dc, qp, &b->kt[0][0], b->scores[t->t0], accumulate, scale, e_max);
}

/* Softmax update of the tile's active rows for the key block at j0, then
 * o = alpha o + p V. */
static void tile_softmax_values(query_block *b, const tile *t, size_t j0)
{
    const tsr_attention_args *a = b->a;
    alignas(64) float old_max[16] = {0}, new_max[16] = {0}, alpha[16];
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t u = r - t->t0;
        float block_max = mask_and_max(b->scores[r], t->e[u]);
        old_max[u] = b->max[r];
        new_max[u] = block_max > b->max[r] ? block_max : b->max[r];
    }
    /* alpha = e^(m_old - m_new) for all rows at once (0 on a row's first
     * block, where m_old = -inf). */
    __m512 shift_change = _mm512_sub_ps(_mm512_load_ps(old_max), _mm512_load_ps(new_max));
    _mm512_store_ps(alpha, tsr_avx512_exp(shift_change));
    float block_sum[TILE_ROWS];
    if (t->hi - t->lo == TILE_ROWS && t->e[0] == KEY_BLOCK) {
        weights_and_sums_6(b->scores[t->t0], new_max, block_sum);
    } else {
        for (size_t r = t->lo; r < t->hi; r++) {
            size_t u = r - t->t0;
            block_sum[u] = weights_and_sum(b->scores[r], t->e[u], new_max[u]);
        }
    }
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t u = r - t->t0;
        b->sum[r] = fmaf(b->sum[r], alpha[u], block_sum[u]);
        b->max[r] = new_max[u];
    }

    const float *v = a->v + j0 * a->ldv;
    float *out = a->out + b->first * a->ldo;
    if (t->hi - t->lo == 1) {
        size_t u = t->lo - t->t0;
        values_1(t->e[u], b->scores[t->lo], v, a->ldv, out + t->lo * a->ldo, alpha[u], a->d);
        return;
    }
    /* The keys every active row sees, 6 rows at once; then each row's own
     * further keys (on causal diagonal blocks), continuing its chain. */
    const size_t last = t->hi - 1, e_min = t->e[t->lo - t->t0];
    float *o[TILE_ROWS];
    float alpha6[TILE_ROWS];
    for (size_t u = 0; u < TILE_ROWS; u++) {
        size_t r = t->t0 + u;
        if (r < t->lo || r >= t->hi) {
            r = last;
            for (size_t j = 0; j < e_min; j++)
                b->scores[t->t0 + u][j] = b->scores[last][j];
        }
        o[u] = out + r * a->ldo;
        alpha6[u] = alpha[r - t->t0];
    }
    values_6(e_min, b->scores[t->t0], v, a->ldv, o, alpha6, a->d);
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t e = t->e[r - t->t0];
        if (e > e_min)
            values_1(e - e_min, b->scores[r] + e_min, v + e_min * a->ldv, a->ldv,
                     out + r * a->ldo, 1.0f, a->d);
    }
}

static void attend_query_block(query_block *b)
{
    const tsr_attention_args *a = b->a;
    for (size_t r = 0; r < b->rows; r++) {
        size_t seen = a->n_k;
        if (a->causal && a->q_pos + b->first + r + 1 < seen)
            seen = a->q_pos + b->first + r + 1;
        b->seen[r] = seen;
        b->max[r] = -INFINITY;
        b->sum[r] = 0.0f;
        zero_row(a->out + (b->first + r) * a->ldo, a->d);
    }
    b->packed_c0 = b->packed_end = 0;
    const size_t key_end = b->seen[b->rows - 1]; /* rows are in position order */

    for (size_t j0 = 0; j0 < key_end; j0 += KEY_BLOCK) {
        const size_t nb = min_size(KEY_BLOCK, key_end - j0);
        /* Rows that see key j0: all, or (causal) those at positions >= j0. */
        size_t first_row = 0;
        if (a->causal && a->q_pos + b->first < j0)
            first_row = j0 - a->q_pos - b->first;
        if (b->rows == 1) {
            const tile t = tile_of(b, 0, 0, j0);
            scores_1xblock(a->q + b->first * a->ldq, a->k + j0 * a->ldk, a->ldk, nb, a->d,
                           a->scale, b->scores[0]);
            tile_softmax_values(b, &t, j0);
            continue;
        }
        tile tiles[QUERY_BLOCK / TILE_ROWS];
        size_t n_tiles = 0;
        for (size_t t0 = first_row / TILE_ROWS * TILE_ROWS; t0 < b->rows; t0 += TILE_ROWS)
            tiles[n_tiles++] = tile_of(b, t0, first_row, j0);

        for (size_t c0 = 0; c0 < a->d; c0 += KT_DIMS) {
            const size_t dc = min_size(KT_DIMS, a->d - c0);
            const float scale = c0 + dc == a->d ? a->scale : 1.0f;
            if (c0 < b->packed_c0 || c0 + dc > b->packed_end)
                pack_queries(b, c0);
            transpose_keys(a->k + j0 * a->ldk + c0, a->ldk, nb, dc, &b->kt[0][0]);
            /* After the last chunk, each tile goes on to its softmax and
             * values while its scores are still in L1. */
            const int last_chunk = c0 + dc == a->d;
            for (size_t i = 0; i < n_tiles; i++) {
                tile_scores(b, &tiles[i], c0, dc, scale);
                if (last_chunk)
                    tile_softmax_values(b, &tiles[i], j0);
            }
        }
    }

    for (size_t r = 0; r < b->rows; r++)
        divide_row(a->out + (b->first + r) * a->ldo, a->d, b->sum[r]);
}

void tsr_f32_attention__avx512(const tsr_attention_args *a)
{
    query_block b;
    b.a = a;
    for (size_t i0 = 0; i0 < a->n_q; i0 += QUERY_BLOCK) {
        b.first = i0;
        b.rows = min_size(QUERY_BLOCK, a->n_q - i0);
        attend_query_block(&b);
    }
}
