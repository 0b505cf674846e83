/*
 * Attention of one head with a streaming ("online") softmax: the frame every
 * vector set shares, written once over the set's vector vocabulary (VEC_*, see
 * simd/avx2/vec.h). A set's f32-attention.c includes its vocabulary, says how
 * many vectors its register tiles hold (SCORE_VECTORS, VALUE_VECTORS), then
 * includes this file and defines the one kernel that is its own:
 * transpose_keys (and, with ATTENTION_DECODE_FROM_K, scores_1xblock).
 * Everything here is compiled once per set, with that set's flags, so the
 * inner loops are the set's own instructions, never calls through pointers.
 *
 * The algorithm is the scalar kernel's (simd/scalar/f32-attention.c): keys
 * are visited in blocks of KEY_BLOCK at absolute positions 0, 64, 128, ...;
 * for each block a query row takes its scores s_j = scale * q.k_j and the
 * block's maximum, and updates three running quantities,
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
 * kt[dim][key] (KT_DIMS dimensions at a time), and then every tile that sees
 * the block runs:
 *
 *   scores   S[6 rows][SCORE_VECTORS vectors of keys] = scale * sum_c
 *            q[r][c] kt[c][keys], 6 x SCORE_VECTORS accumulators, as many
 *            passes as the block's keys need;
 *   softmax  per row, a vector of keys at a time: mask, max, exp, sum;
 *   values   o[6 rows][VALUE_VECTORS vectors of dims] = alpha o +
 *            sum_j p[r][j] v[j][dims], V read in place (row-major).
 *
 * The transposition is shared by the query block's 8 tiles; a tile's scores
 * go to softmax and values while they are in L1. A tile with one active row
 * (causal diagonal, a decode step) runs one-row loops: up to KEY_BLOCK keys
 * of scores and ROW_VECTORS vectors (independent chains) of output a pass.
 * Key and dimension tails use masked loads and stores, never scalar loops,
 * and never touch memory outside the arguments.
 *
 * Determinism: every number a row computes depends only on that row's own
 * data and position, never on the rows it shares a tile or a call with:
 *   - each score is one FMA chain over c = 0 .. d-1 in order, started from
 *     0, then one multiplication by scale, whichever kernel (6-row, 1-row or
 *     the set's decode) and however d is chunked (a chunk stores its partial
 *     sums times 1, exactly, and the next reloads them);
 *   - the block boundaries are absolute key positions, and a row takes
 *     exactly the keys it sees in each block (e of them): its softmax covers
 *     ceil(e / VEC_WIDTH) vectors with the keys past e at -inf, which weigh
 *     exactly +0 in the sum; the 6-row values loop runs over the keys every
 *     active row of the tile sees, and a row's further keys (causal
 *     diagonal) are added by the one-row loop afterwards, continuing the same
 *     chain in the same order (never adding 0 * v for a key the row does not
 *     see: harmless in value, but it would turn an output that is exactly -0
 *     into +0, in some groupings and not others);
 *   - the per-row scalars (max, alpha, sum) are computed lane by lane.
 * So splitting the queries across calls or threads gives the same bits.
 *
 * Causal: query i is at position q_pos + i and sees keys j <= q_pos + i. A
 * key block is visited only by the rows that see at least one of its keys;
 * blocks above the diagonal of every row of a query block are skipped.
 */
#ifndef TSR_SIMD_FRAME_F32_ATTENTION_H
#define TSR_SIMD_FRAME_F32_ATTENTION_H

#include "simd/frame/f32-attention-kernels.h"

/* ---- One query block ------------------------------------------------------- */

typedef struct query_block {
    const tsr_attention_args *a;
    size_t first; /* index of its first query row */
    size_t rows;
    size_t seen[QUERY_BLOCK]; /* keys each row sees */
    float max[QUERY_BLOCK], sum[QUERY_BLOCK];
    size_t packed_c0, packed_end; /* the dimensions in qp */
    /* Scores, then weights, of the current key block, one row per query. */
    alignas(VEC_ALIGN) float scores[QUERY_BLOCK][KEY_BLOCK];
    /* The queries of each tile packed [dim][row], so a tile's broadcasts
     * come from one pointer; rows past `rows` are zero. */
    float qp[QUERY_BLOCK / TILE_ROWS][QP_DIMS][TILE_ROWS];
    alignas(VEC_ALIGN) float kt[KT_DIMS][KEY_BLOCK];
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
        scores_1xkeys(dc, qp + (t->lo - t->t0), TILE_ROWS, &b->kt[0][0], KEY_BLOCK,
                      b->scores[t->lo], accumulate, scale, t->e[t->lo - t->t0]);
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
    alignas(VEC_ALIGN) float old_max[TILE_LANES] = {0}, new_max[TILE_LANES] = {0},
                             alpha[TILE_LANES];
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t u = r - t->t0;
        float block_max = mask_and_max(b->scores[r], t->e[u]);
        old_max[u] = b->max[r];
        new_max[u] = block_max > b->max[r] ? block_max : b->max[r];
    }
    /* alpha = e^(m_old - m_new) for all rows at once (0 on a row's first
     * block, where m_old = -inf). */
    for (size_t l = 0; l < TILE_LANES; l += VEC_WIDTH)
        VEC_STORE(alpha + l,
                  VEC_EXP_NONPOSITIVE(VEC_SUB(VEC_LOAD(old_max + l), VEC_LOAD(new_max + l))));
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
    /* Every row sees key 0, so the block at j0 = 0 is every row's first: o
     * starts there from +0, what alpha (+0) times a zeroed o would give, and
     * out needs no zeroing beforehand. */
    const int fresh = j0 == 0;
    if (t->hi - t->lo == 1) {
        size_t u = t->lo - t->t0;
        values_1(t->e[u], b->scores[t->lo], v, a->ldv, out + t->lo * a->ldo, alpha[u], fresh, a->d);
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
    values_6(e_min, b->scores[t->t0], v, a->ldv, o, alpha6, fresh, a->d);
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t e = t->e[r - t->t0];
        if (e > e_min)
            values_1(e - e_min, b->scores[r] + e_min, v + e_min * a->ldv, a->ldv,
                     out + r * a->ldo, 1.0f, 0, a->d);
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
    }
    b->packed_c0 = b->packed_end = 0;
    const size_t key_end = b->seen[b->rows - 1]; /* rows are in position order */

    for (size_t j0 = 0; j0 < key_end; j0 += KEY_BLOCK) {
        const size_t nb = min_size(KEY_BLOCK, key_end - j0);
        /* Rows that see key j0: all, or (causal) those at positions >= j0. */
        size_t first_row = 0;
        if (a->causal && a->q_pos + b->first < j0)
            first_row = j0 - a->q_pos - b->first;
        if (b->rows == 1 && a->kt) {
            const tile t = tile_of(b, 0, 0, j0);
            scores_1xgiven(a->d, a->q + b->first * a->ldq, 1, a->kt + j0, a->ldkt, b->scores[0],
                           0, a->scale, nb);
            tile_softmax_values(b, &t, j0);
            continue;
        }
#if ATTENTION_DECODE_FROM_K
        if (b->rows == 1) {
            const tile t = tile_of(b, 0, 0, j0);
            scores_1xblock(a->q + b->first * a->ldq, a->k + j0 * a->ldk, a->ldk, nb, a->d,
                           a->scale, b->scores[0]);
            tile_softmax_values(b, &t, j0);
            continue;
        }
#endif
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

/* The set's attention kernel, tsr_f32_attention__<set>, is this. */
static void attention_frame(const tsr_attention_args *a)
{
    query_block b;
    b.a = a;
    for (size_t i0 = 0; i0 < a->n_q; i0 += QUERY_BLOCK) {
        b.first = i0;
        b.rows = min_size(QUERY_BLOCK, a->n_q - i0);
        attend_query_block(&b);
    }
}

#endif
