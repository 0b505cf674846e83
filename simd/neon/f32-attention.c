/*
 * Attention of one head with a streaming ("online") softmax, a tile of query
 * rows against a block of keys at a time.
 *
 * For a query row q the result is sum_j p_j v_j with p_j = e^(s_j) / sum e^s,
 * s_j = scale * q.k_j. It is computed in one pass over the keys, without
 * storing all n_k scores, from three running quantities per query row:
 *
 *   max  the largest score seen so far (the shift that keeps exp <= 1),
 *   sum  sum over the keys seen so far of e^(s_j - max),
 *   out  sum over the keys seen so far of e^(s_j - max) v_j, kept
 *        unnormalised in the output row itself.
 *
 * Keys are taken KEY_BLOCK at a time. For each block the tile's scores go to
 * a small stack array and each row's block maximum is taken. The new shift
 * max' = max(max, block max) replaces max, and every term already summed into
 * sum and out was computed with the old shift: multiplying both by
 * e^(max - max') re-expresses them with the new one (on the first block max
 * is -inf, the factor is 0, and sum and out are 0 anyway; when the block
 * brings no larger score the factor is exactly 1). Then the block's terms are
 * added. After the last block out / sum is the softmax-weighted sum.
 *
 * Tiles: QUERY_ROWS = 4 query rows against 4 keys at a time, 16 accumulators
 * over d (4 q vectors and 4 k vectors loaded per 4 columns: 24 registers of
 * 32), reduced to one vector of 4 scores per row with pairwise adds. The
 * P.V product walks d 4 columns at a time with the 4 rows' output vectors in
 * registers, adding p v_j over the block's keys with lane-indexed FMAs. Query
 * rows left over (n_q not a multiple of 4) use the same code with a 1-row
 * tile.
 *
 * Edges without scalar loops: a d that is not a multiple of 4 ends with
 * partial loads (zeros in the missing lanes add nothing to a dot product) and
 * partial stores; keys past the block's end are read at the last key of the
 * block and their scores masked to -inf, so their p is exactly 0.
 *
 * Causal: query i sits at position q_pos + i and sees keys 0..q_pos + i. A
 * tile visits the keys its last row sees; blocks beyond them (above the
 * diagonal) are skipped; inside the diagonal block a row's unseen keys are
 * masked to -inf like the padding keys.
 *
 * A row's result does not depend on which other rows share its tile or call:
 * every score is its own FMA chain over d, the block partition of the keys is
 * fixed (multiples of KEY_BLOCK from key 0), and a block or a key a row does
 * not see leaves its max, sum and out bit for bit unchanged (factor exactly
 * 1, p exactly 0, and out never -0, so adding 0 * v, v finite, is exact).
 */
#include <math.h>

#include "simd/neon/neon.h"
#include "simd/neon/vecmath.h"

#define QUERY_ROWS 4
#define KEY_BLOCK 64

typedef struct query_tile {
    const float *q[QUERY_ROWS];
    float *out[QUERY_ROWS];
    size_t n_seen[QUERY_ROWS]; /* keys row r sees */
    size_t n_keys;             /* keys the tile visits: the largest n_seen */
    float max[QUERY_ROWS];     /* running maximum */
    float sum[QUERY_ROWS];     /* running sum */
} query_tile;

/* Lane l: index + l. */
static inline uint32x4_t indices_from(size_t index)
{
    static const uint32_t step[4] = {0, 1, 2, 3};
    return vaddq_u32(vdupq_n_u32((uint32_t)index), vld1q_u32(step));
}

/* One 4-column step of the rows x 4 dot products: acc[r][l] += q_r * k_l.
 * (The unroll pragmas, here and below, turn the loops over the tile's rows
 * and keys into straight code, so that the small arrays live in registers.) */
static inline __attribute__((always_inline)) void
dot_step(float32x4_t acc[QUERY_ROWS][4], size_t rows, const float32x4_t q[QUERY_ROWS],
         const float32x4_t k[4])
{
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; r++) {
#pragma GCC unroll 4
        for (size_t l = 0; l < 4; l++)
            acc[r][l] = vfmaq_f32(acc[r][l], q[r], k[l]);
    }
}

/*
 * Scores of the tile's rows against keys [j0, j0 + nb), 4 keys per step, into
 * s[r][0 .. round_up(nb, 4)): scale * q.k, or -inf for a key row r does not
 * see (including the padding keys of the last step).
 */
static inline __attribute__((always_inline)) void
block_scores(const tsr_attention_args *a, const query_tile *t, size_t rows, size_t j0, size_t nb,
             float s[QUERY_ROWS][KEY_BLOCK])
{
    const size_t d = a->d, d_vec = d & ~(size_t)3;
    const size_t last_key = j0 + nb - 1;

    for (size_t jj = 0; jj < nb; jj += 4) {
        const float *key[4];
#pragma GCC unroll 4
        for (size_t l = 0; l < 4; l++) {
            size_t j = j0 + jj + l < last_key ? j0 + jj + l : last_key;
            key[l] = a->k + j * a->ldk;
        }

        float32x4_t acc[QUERY_ROWS][4], qv[QUERY_ROWS], kv[4];
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; r++) {
#pragma GCC unroll 4
            for (size_t l = 0; l < 4; l++)
                acc[r][l] = vdupq_n_f32(0.0f);
        }
        for (size_t c = 0; c < d_vec; c += 4) {
#pragma GCC unroll 4
            for (size_t r = 0; r < rows; r++)
                qv[r] = vld1q_f32(t->q[r] + c);
#pragma GCC unroll 4
            for (size_t l = 0; l < 4; l++)
                kv[l] = vld1q_f32(key[l] + c);
            dot_step(acc, rows, qv, kv);
        }
        if (d_vec < d) {
#pragma GCC unroll 4
            for (size_t r = 0; r < rows; r++)
                qv[r] = tsr_neon_load_partial(t->q[r] + d_vec, d - d_vec);
#pragma GCC unroll 4
            for (size_t l = 0; l < 4; l++)
                kv[l] = tsr_neon_load_partial(key[l] + d_vec, d - d_vec);
            dot_step(acc, rows, qv, kv);
        }

        const uint32x4_t key_index = indices_from(j0 + jj);
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; r++) {
            float32x4_t dots = vpaddq_f32(vpaddq_f32(acc[r][0], acc[r][1]),
                                          vpaddq_f32(acc[r][2], acc[r][3]));
            float32x4_t score = vmulq_n_f32(dots, a->scale);
            uint32x4_t seen = vcltq_u32(key_index, vdupq_n_u32((uint32_t)t->n_seen[r]));
            vst1q_f32(&s[r][jj], vbslq_f32(seen, score, vdupq_n_f32(-INFINITY)));
        }
    }
}

/*
 * Turns each row's scores into p = e^(s - max') in place, updates max and sum,
 * and writes the factor e^(max - max') that out must be multiplied by.
 */
static inline void block_probabilities(query_tile *t, size_t rows, size_t nb,
                                       float s[QUERY_ROWS][KEY_BLOCK], float factor[QUERY_ROWS])
{
    float block_max[QUERY_ROWS] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (size_t r = 0; r < rows; r++) {
        float32x4_t m = vdupq_n_f32(-INFINITY);
        for (size_t jj = 0; jj < nb; jj += 4)
            m = vmaxq_f32(m, vld1q_f32(&s[r][jj]));
        block_max[r] = vmaxvq_f32(m);
    }

    /* The rows side by side in one vector; lanes past `rows` hold harmless
     * values (max 0, block max -inf) and are never used. */
    float32x4_t old_max = vld1q_f32(t->max);
    float32x4_t new_max = vmaxq_f32(old_max, vld1q_f32(block_max));
    vst1q_f32(factor, tsr_neon_exp(vsubq_f32(old_max, new_max)));
    vst1q_f32(t->max, new_max);

    for (size_t r = 0; r < rows; r++) {
        const float32x4_t shift = vdupq_n_f32(t->max[r]);
        float32x4_t total = vdupq_n_f32(0.0f);
        for (size_t jj = 0; jj < nb; jj += 4) {
            float32x4_t p = tsr_neon_exp(vsubq_f32(vld1q_f32(&s[r][jj]), shift));
            vst1q_f32(&s[r][jj], p);
            total = vaddq_f32(total, p);
        }
        /* fmaf, not a * b + c: the same rounding in every tile shape,
         * whatever the compiler's contraction choices. */
        t->sum[r] = fmaf(t->sum[r], factor[r], vaddvq_f32(total));
    }
}

/* out[r][c..c+4) = out * factor[r] + sum_j p[r][j] v_j[c..c+4), or the first
 * `width` (1..3) columns of it. */
static inline __attribute__((always_inline)) void
accumulate_columns(const tsr_attention_args *a, query_tile *t, size_t rows, size_t j0, size_t nb,
                   const float p[QUERY_ROWS][KEY_BLOCK], const float factor[QUERY_ROWS], size_t c,
                   size_t width)
{
    const size_t last_key = j0 + nb - 1;
    float32x4_t acc[QUERY_ROWS];
#pragma GCC unroll 4
    for (size_t r = 0; r < rows; r++) {
        float32x4_t o = width == 4 ? vld1q_f32(t->out[r] + c)
                                   : tsr_neon_load_partial(t->out[r] + c, width);
        acc[r] = vmulq_n_f32(o, factor[r]);
    }

    for (size_t jj = 0; jj < nb; jj += 4) {
        float32x4_t pv[QUERY_ROWS];
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; r++)
            pv[r] = vld1q_f32(&p[r][jj]);
        float32x4_t v[4];
#pragma GCC unroll 4
        for (size_t l = 0; l < 4; l++) {
            size_t j = j0 + jj + l < last_key ? j0 + jj + l : last_key;
            const float *vj = a->v + j * a->ldv + c;
            v[l] = width == 4 ? vld1q_f32(vj) : tsr_neon_load_partial(vj, width);
        }
#pragma GCC unroll 4
        for (size_t r = 0; r < rows; r++) {
            acc[r] = vfmaq_laneq_f32(acc[r], v[0], pv[r], 0);
            acc[r] = vfmaq_laneq_f32(acc[r], v[1], pv[r], 1);
            acc[r] = vfmaq_laneq_f32(acc[r], v[2], pv[r], 2);
            acc[r] = vfmaq_laneq_f32(acc[r], v[3], pv[r], 3);
        }
    }

#pragma GCC unroll 4
    for (size_t r = 0; r < rows; r++) {
        if (width == 4)
            vst1q_f32(t->out[r] + c, acc[r]);
        else
            tsr_neon_store_partial(t->out[r] + c, acc[r], width);
    }
}

/* The whole tile against all the keys it sees, then out /= sum. */
static inline __attribute__((always_inline)) void
attend_tile(const tsr_attention_args *a, query_tile *t, size_t rows)
{
    const size_t d = a->d, d_vec = d & ~(size_t)3;
    float s[QUERY_ROWS][KEY_BLOCK];

    for (size_t r = 0; r < rows; r++) {
        t->max[r] = -INFINITY;
        t->sum[r] = 0.0f;
        for (size_t c = 0; c < d_vec; c += 4)
            vst1q_f32(t->out[r] + c, vdupq_n_f32(0.0f));
        tsr_neon_store_partial(t->out[r] + d_vec, vdupq_n_f32(0.0f), d - d_vec);
    }

    for (size_t j0 = 0; j0 < t->n_keys; j0 += KEY_BLOCK) {
        size_t nb = t->n_keys - j0 < KEY_BLOCK ? t->n_keys - j0 : KEY_BLOCK;
        block_scores(a, t, rows, j0, nb, s);
        float factor[QUERY_ROWS];
        block_probabilities(t, rows, nb, s, factor);
        for (size_t c = 0; c < d_vec; c += 4)
            accumulate_columns(a, t, rows, j0, nb, (const float(*)[KEY_BLOCK])s, factor, c, 4);
        if (d_vec < d)
            accumulate_columns(a, t, rows, j0, nb, (const float(*)[KEY_BLOCK])s, factor, d_vec,
                               d - d_vec);
    }

    for (size_t r = 0; r < rows; r++) {
        const float32x4_t total = vdupq_n_f32(t->sum[r]);
        for (size_t c = 0; c < d_vec; c += 4)
            vst1q_f32(t->out[r] + c, vdivq_f32(vld1q_f32(t->out[r] + c), total));
        if (d_vec < d)
            tsr_neon_store_partial(t->out[r] + d_vec,
                                   vdivq_f32(tsr_neon_load_partial(t->out[r] + d_vec, d - d_vec),
                                             total),
                                   d - d_vec);
    }
}

static void attend_four(const tsr_attention_args *a, query_tile *t)
{
    attend_tile(a, t, 4);
}

static void attend_one(const tsr_attention_args *a, query_tile *t)
{
    attend_tile(a, t, 1);
}

static size_t keys_seen(const tsr_attention_args *a, size_t i)
{
    if (a->causal && a->q_pos + i + 1 < a->n_k)
        return a->q_pos + i + 1;
    return a->n_k;
}

static void tile_add_row(const tsr_attention_args *a, query_tile *t, size_t r, size_t i)
{
    t->q[r] = a->q + i * a->ldq;
    t->out[r] = a->out + i * a->ldo;
    t->n_seen[r] = keys_seen(a, i);
    if (t->n_seen[r] > t->n_keys)
        t->n_keys = t->n_seen[r];
}

void tsr_f32_attention__neon(const tsr_attention_args *a)
{
    size_t i = 0;
    for (; i + QUERY_ROWS <= a->n_q; i += QUERY_ROWS) {
        query_tile t = {.n_keys = 0};
        for (size_t r = 0; r < QUERY_ROWS; r++)
            tile_add_row(a, &t, r, i + r);
        attend_four(a, &t);
    }
    for (; i < a->n_q; i++) {
        query_tile t = {.n_keys = 0};
        tile_add_row(a, &t, 0, i);
        attend_one(a, &t);
    }
}
