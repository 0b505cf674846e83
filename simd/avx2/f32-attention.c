/*
 * Attention of one head with a streaming ("online") softmax, AVX2 + FMA.
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
 * kt[dim][key] (KT_DIMS dimensions at a time, zero-padded to KEY_BLOCK
 * keys), and then every tile that sees the block runs:
 *
 *   scores   S[6 rows][16 keys] = scale * sum_c q[r][c] kt[c][16 keys]:
 *            12 ymm accumulators + 2 loads of kt + 1 broadcast of q = 15 of
 *            the 16 registers, 12 FMAs per 2 loads and 6 broadcasts;
 *   softmax  per row, 8 keys per vector: mask, max, exp, sum;
 *   values   o[6 rows][16 dims] = alpha o + sum_j p[r][j] v[j][16 dims]:
 *            the same register budget, V read in place (row-major).
 *
 * The transposition is shared by the query block's 8 tiles, so it costs a
 * few percent; a tile's scores go to softmax and values while they are in
 * L1. A decode step (one query row) runs one-row versions of the loops (up
 * to 8 accumulators: the vectors of scores its keys need, 64 dims of
 * output), and transposes only the 16-key chunks it reads.
 * Row and dimension tails use masked loads and stores, never scalar loops.
 *
 * Determinism: every number a row computes depends only on that row's own
 * data and position, never on the rows it shares a tile or a call with:
 *   - each score is one FMA chain over c = 0 .. d-1 in order, started from
 *     0, whichever kernel (6-row or 1-row) and however d is chunked;
 *   - the block boundaries are absolute key positions, and a row takes
 *     exactly the keys it sees in each block (e of them): its softmax covers
 *     ceil(e / 8) vectors with the keys past e at -inf, which weigh exactly
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

#include "simd/avx2/avx2.h"
#include "simd/avx2/vecmath.h"

#define KEY_BLOCK 64   /* keys per softmax block (a multiple of 16) */
#define TILE_ROWS 6    /* query rows per register tile */
#define QUERY_BLOCK 48 /* query rows sharing one transposed K block */
#define KT_DIMS 64     /* dimensions transposed at a time (larger d: chunks) */
#define QP_DIMS 128    /* dimensions of the queries packed at a time */

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- Transposing a K block ------------------------------------------------- */

/* An 8 x 8 transpose in registers (partial tiles). */
static inline void transpose8(__m256 r[8])
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* Rows a and a + 4 of an 8 x 8 tile, 4 floats from column c, as one vector. */
static inline __m256 two_quarters(const float *src, size_t ldk, size_t a, size_t c)
{
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(src + a * ldk + c)),
                                _mm_loadu_ps(src + (a + 4) * ldk + c), 1);
}

/* A full 8 x 8 tile, transposed into kt (row stride KEY_BLOCK). Loading rows
 * u and u + 4 into the two halves of one register leaves only 4 x 4
 * transposes within the halves: 16 unpack/shuffle operations instead of the
 * 24 of transpose8, and no cross-half permutes. */
static inline void transpose_full_tile(const float *src, size_t ldk, float *kt)
{
#pragma GCC unroll 2
    for (size_t c = 0; c < 8; c += 4) {
        __m256 r0 = two_quarters(src, ldk, 0, c), r1 = two_quarters(src, ldk, 1, c);
        __m256 r2 = two_quarters(src, ldk, 2, c), r3 = two_quarters(src, ldk, 3, c);
        __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
        __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
        _mm256_store_ps(kt + (c + 0) * KEY_BLOCK, _mm256_shuffle_ps(t0, t2, 0x44));
        _mm256_store_ps(kt + (c + 1) * KEY_BLOCK, _mm256_shuffle_ps(t0, t2, 0xee));
        _mm256_store_ps(kt + (c + 2) * KEY_BLOCK, _mm256_shuffle_ps(t1, t3, 0x44));
        _mm256_store_ps(kt + (c + 3) * KEY_BLOCK, _mm256_shuffle_ps(t1, t3, 0xee));
    }
}

/* kt[c][j] = k[j][c] for keys j < nb and dims c < dc, rows of KEY_BLOCK
 * floats; key columns from nb to the next multiple of 16 are zero (the
 * kernels read whole 16-key chunks up to there, never further). Partial
 * 8 x 8 tiles load with masks. */
static __attribute__((noinline)) void transpose_keys(const float *k, size_t ldk, size_t nb,
                                                     size_t dc, float *kt)
{
    const size_t chunked = (nb + 15) / 16 * 16;
    for (size_t j8 = 0; j8 < chunked; j8 += 8) {
        if (j8 >= nb) {
            for (size_t c = 0; c < dc; c++)
                _mm256_store_ps(kt + c * KEY_BLOCK + j8, _mm256_setzero_ps());
            continue;
        }
        const size_t keys = min_size(8, nb - j8);
        for (size_t c8 = 0; c8 < dc; c8 += 8) {
            const size_t dims = min_size(8, dc - c8);
            const float *src = k + j8 * ldk + c8;
            if (keys == 8 && dims == 8) {
                transpose_full_tile(src, ldk, kt + c8 * KEY_BLOCK + j8);
                continue;
            }
            const __m256i mask = tsr_avx2_tail_mask(dims);
            __m256 r[8];
#pragma GCC unroll 8
            for (size_t u = 0; u < 8; u++)
                r[u] = u < keys ? _mm256_maskload_ps(src + u * ldk, mask) : _mm256_setzero_ps();
            transpose8(r);
#pragma GCC unroll 8
            for (size_t v = 0; v < 8; v++)
                if (v < dims)
                    _mm256_store_ps(kt + (c8 + v) * KEY_BLOCK + j8, r[v]);
        }
    }
}

/* ---- Scores ------------------------------------------------------------------ */

/* s[r][0..16) (+)= sum_c qp[c][r] kt[c][0..16) for c < dc and the 6 rows
 * r, s[r] = s + r * KEY_BLOCK; qp is a tile of packed queries. The sums are
 * multiplied by `scale` before they are stored (1 except after the last
 * chunk of dimensions). */
static __attribute__((noinline)) void scores_6x16(size_t dc, const float *qp, const float *kt,
                                                  float *s, int accumulate, float scale)
{
    const __m256 sc = _mm256_set1_ps(scale);
    __m256 acc[TILE_ROWS][2];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        float *sr = s + r * KEY_BLOCK;
        acc[r][0] = accumulate ? _mm256_loadu_ps(sr) : _mm256_setzero_ps();
        acc[r][1] = accumulate ? _mm256_loadu_ps(sr + 8) : _mm256_setzero_ps();
    }
    for (size_t c = 0; c < dc; c++) {
        const __m256 b0 = _mm256_load_ps(kt + c * KEY_BLOCK);
        const __m256 b1 = _mm256_load_ps(kt + c * KEY_BLOCK + 8);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const __m256 a = _mm256_broadcast_ss(qp + c * TILE_ROWS + r);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        float *sr = s + r * KEY_BLOCK;
        _mm256_storeu_ps(sr, _mm256_mul_ps(acc[r][0], sc));
        _mm256_storeu_ps(sr + 8, _mm256_mul_ps(acc[r][1], sc));
    }
}

/* One row against the block's first 8 * nv keys: s[0..8 nv) (+)= sum_c q[c]
 * kt[c][..], q[c] at q + c * TILE_ROWS (one column of a packed tile), times
 * scale. nv accumulators, nv a constant in each copy (see scores_1xkeys). */
static inline __attribute__((always_inline)) void
scores_1xvectors(size_t dc, const float *q, const float *kt, float *s, int accumulate,
                 float scale, const size_t nv)
{
    const __m256 sc = _mm256_set1_ps(scale);
    __m256 acc[KEY_BLOCK / 8];
#pragma GCC unroll 8
    for (size_t v = 0; v < nv; v++)
        acc[v] = accumulate ? _mm256_loadu_ps(s + 8 * v) : _mm256_setzero_ps();
    for (size_t c = 0; c < dc; c++) {
        const __m256 a = _mm256_broadcast_ss(q + c * TILE_ROWS);
#pragma GCC unroll 8
        for (size_t v = 0; v < nv; v++)
            acc[v] = _mm256_fmadd_ps(a, _mm256_load_ps(kt + c * KEY_BLOCK + 8 * v), acc[v]);
    }
#pragma GCC unroll 8
    for (size_t v = 0; v < nv; v++)
        _mm256_storeu_ps(s + 8 * v, _mm256_mul_ps(acc[v], sc));
}

/* The scores of one row's first e keys (and of the rest of their last
 * vector): a decoding step sees few keys, so only the vectors it needs. */
static __attribute__((noinline)) void scores_1xkeys(size_t dc, const float *q, const float *kt,
                                                    float *s, int accumulate, float scale,
                                                    size_t e)
{
    switch ((e + 7) / 8) {
    case 1: scores_1xvectors(dc, q, kt, s, accumulate, scale, 1); break;
    case 2: scores_1xvectors(dc, q, kt, s, accumulate, scale, 2); break;
    case 3: scores_1xvectors(dc, q, kt, s, accumulate, scale, 3); break;
    case 4: scores_1xvectors(dc, q, kt, s, accumulate, scale, 4); break;
    case 5: scores_1xvectors(dc, q, kt, s, accumulate, scale, 5); break;
    case 6: scores_1xvectors(dc, q, kt, s, accumulate, scale, 6); break;
    case 7: scores_1xvectors(dc, q, kt, s, accumulate, scale, 7); break;
    default: scores_1xvectors(dc, q, kt, s, accumulate, scale, KEY_BLOCK / 8); break;
    }
}

/* ---- Softmax of one row's block --------------------------------------------- */

/* The maximum of the row's e scores; the rest of the last vector is set to
 * -inf (weight 0). */
static float mask_and_max(float *s, size_t e)
{
    __m256 mx = _mm256_set1_ps(-INFINITY);
    size_t j = 0;
    for (; j + 8 <= e; j += 8)
        mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
    if (j < e) {
        __m256 t = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_loadu_ps(s + j),
                                    _mm256_castsi256_ps(tsr_avx2_tail_mask(e - j)));
        _mm256_storeu_ps(s + j, t);
        mx = _mm256_max_ps(mx, t);
    }
    return tsr_avx2_hmax(mx);
}

/* s[j] = e^(s[j] - m) over the ceil(e / 8) vectors mask_and_max saw;
 * returns their sum: one vector chain, then a fixed horizontal tree. */
static float weights_and_sum(float *s, size_t e, float m)
{
    const __m256 shift = _mm256_set1_ps(m);
    __m256 sum = _mm256_setzero_ps();
    for (size_t j = 0; j < e; j += 8) {
        __m256 p = tsr_avx2_exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(s + j), shift));
        _mm256_storeu_ps(s + j, p);
        sum = _mm256_add_ps(sum, p);
    }
    return tsr_avx2_hsum(sum);
}

/* weights_and_sum for the 6 rows of a tile whose keys all fill the block,
 * vector by vector across the rows, so that the exponentials of different
 * rows are independent work for the out-of-order core. Each row's own
 * operations, and their order, are those of weights_and_sum. */
static void weights_and_sums_6(float *s, const float m[TILE_ROWS], float sums[TILE_ROWS])
{
    __m256 shift[TILE_ROWS], sum[TILE_ROWS];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        shift[r] = _mm256_set1_ps(m[r]);
        sum[r] = _mm256_setzero_ps();
    }
    for (size_t j = 0; j < KEY_BLOCK; j += 8) {
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            float *sj = s + r * KEY_BLOCK + j;
            __m256 p = tsr_avx2_exp_nonpositive(_mm256_sub_ps(_mm256_loadu_ps(sj), shift[r]));
            _mm256_storeu_ps(sj, p);
            sum[r] = _mm256_add_ps(sum[r], p);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++)
        sums[r] = tsr_avx2_hsum(sum[r]);
}

/* ---- Values ------------------------------------------------------------------ */

/* o[r][0..16) = alpha[r] o[r][..] + sum_{j<n} p[r][j] v[j][0..16) for the 6
 * rows, p[r] = p + r * KEY_BLOCK, or over the first dims < 16 columns with
 * masked loads and stores. */
static inline __attribute__((always_inline)) void
values_6x16(size_t n, const float *p, const float *v, size_t ldv,
            float *const o[TILE_ROWS], const float alpha[TILE_ROWS], int masked, size_t dims)
{
    const __m256i m0 = masked ? tsr_avx2_tail_mask(dims) : _mm256_set1_epi32(-1);
    const __m256i m1 = masked && dims > 8 ? tsr_avx2_tail_mask(dims - 8) : _mm256_setzero_si256();
    /* A vector with an all-zero mask still addresses the row's start, not
     * past its end: the CPU would not fault, but qemu's vmaskmovps does. */
    const size_t at1 = masked && dims <= 8 ? 0 : 8;
    __m256 acc[TILE_ROWS][2];
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        const __m256 a = _mm256_set1_ps(alpha[r]);
        acc[r][0] = _mm256_mul_ps(masked ? _mm256_maskload_ps(o[r], m0) : _mm256_loadu_ps(o[r]), a);
        acc[r][1] = _mm256_mul_ps(masked ? _mm256_maskload_ps(o[r] + at1, m1)
                                         : _mm256_loadu_ps(o[r] + 8), a);
    }
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        const __m256 b0 = masked ? _mm256_maskload_ps(vj, m0) : _mm256_loadu_ps(vj);
        const __m256 b1 = masked ? _mm256_maskload_ps(vj + at1, m1) : _mm256_loadu_ps(vj + 8);
#pragma GCC unroll 6
        for (size_t r = 0; r < TILE_ROWS; r++) {
            const __m256 a = _mm256_broadcast_ss(p + r * KEY_BLOCK + j);
            acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < TILE_ROWS; r++) {
        if (masked) {
            _mm256_maskstore_ps(o[r], m0, acc[r][0]);
            _mm256_maskstore_ps(o[r] + at1, m1, acc[r][1]);
        } else {
            _mm256_storeu_ps(o[r], acc[r][0]);
            _mm256_storeu_ps(o[r] + 8, acc[r][1]);
        }
    }
}

/* The two forms as separate functions, so the register allocator sees each
 * loop alone (12 accumulators + 2 loads + 1 broadcast = 15 registers). */
static __attribute__((noinline)) void
values_6x16_full(size_t n, const float *p, const float *v, size_t ldv, float *const o[TILE_ROWS],
                 const float alpha[TILE_ROWS])
{
    values_6x16(n, p, v, ldv, o, alpha, 0, 16);
}

static __attribute__((noinline)) void
values_6x16_masked(size_t n, const float *p, const float *v, size_t ldv,
                   float *const o[TILE_ROWS], const float alpha[TILE_ROWS], size_t dims)
{
    values_6x16(n, p, v, ldv, o, alpha, 1, dims);
}

static void values_6(size_t n, const float *p, const float *v, size_t ldv,
                     float *const o[TILE_ROWS], const float alpha[TILE_ROWS], size_t d)
{
    float *oc[TILE_ROWS];
    size_t c = 0;
    for (; c + 16 <= d; c += 16) {
        for (size_t r = 0; r < TILE_ROWS; r++)
            oc[r] = o[r] + c;
        values_6x16_full(n, p, v + c, ldv, oc, alpha);
    }
    if (c < d) {
        for (size_t r = 0; r < TILE_ROWS; r++)
            oc[r] = o[r] + c;
        values_6x16_masked(n, p, v + c, ldv, oc, alpha, d - c);
    }
}

/* One row, 64 columns (8 vectors, 8 independent chains) at a time. */
static inline __attribute__((always_inline)) void
values_1x64(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
            int masked, size_t dims)
{
    __m256i mask[8];
    size_t at[8]; /* vector u's column; 0 for an all-zero mask (see values_6x16) */
    __m256 acc[8];
    const __m256 a = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
    for (size_t u = 0; u < 8; u++) {
        at[u] = 8 * u;
        if (!masked)
            mask[u] = _mm256_set1_epi32(-1);
        else if (dims > 8 * u)
            mask[u] = tsr_avx2_tail_mask(dims - 8 * u);
        else {
            mask[u] = _mm256_setzero_si256();
            at[u] = 0;
        }
        acc[u] = _mm256_mul_ps(masked ? _mm256_maskload_ps(o + at[u], mask[u])
                                      : _mm256_loadu_ps(o + 8 * u), a);
    }
    for (size_t j = 0; j < n; j++) {
        const float *vj = v + j * ldv;
        const __m256 w = _mm256_broadcast_ss(p + j);
#pragma GCC unroll 8
        for (size_t u = 0; u < 8; u++) {
            const __m256 b = masked ? _mm256_maskload_ps(vj + at[u], mask[u])
                                    : _mm256_loadu_ps(vj + 8 * u);
            acc[u] = _mm256_fmadd_ps(w, b, acc[u]);
        }
    }
#pragma GCC unroll 8
    for (size_t u = 0; u < 8; u++) {
        if (masked)
            _mm256_maskstore_ps(o + at[u], mask[u], acc[u]);
        else
            _mm256_storeu_ps(o + 8 * u, acc[u]);
    }
}

static __attribute__((noinline)) void
values_1x64_full(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha)
{
    values_1x64(n, p, v, ldv, o, alpha, 0, 64);
}

static __attribute__((noinline)) void
values_1x64_masked(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                   size_t dims)
{
    values_1x64(n, p, v, ldv, o, alpha, 1, dims);
}

static void values_1(size_t n, const float *p, const float *v, size_t ldv, float *o, float alpha,
                     size_t d)
{
    size_t c = 0;
    for (; c + 64 <= d; c += 64)
        values_1x64_full(n, p, v + c, ldv, o + c, alpha);
    if (c < d)
        values_1x64_masked(n, p, v + c, ldv, o + c, alpha, d - c);
}

/* ---- Rows: start and finish ------------------------------------------------- */

static void zero_row(float *o, size_t d)
{
    size_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(o + c, _mm256_setzero_ps());
    if (c < d)
        _mm256_maskstore_ps(o + c, tsr_avx2_tail_mask(d - c), _mm256_setzero_ps());
}

static void divide_row(float *o, size_t d, float l)
{
    const __m256 den = _mm256_set1_ps(l);
    size_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(o + c, _mm256_div_ps(_mm256_loadu_ps(o + c), den));
    if (c < d) {
        __m256i mask = tsr_avx2_tail_mask(d - c);
        _mm256_maskstore_ps(o + c, mask, _mm256_div_ps(_mm256_maskload_ps(o + c, mask), den));
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
    alignas(32) float scores[QUERY_BLOCK][KEY_BLOCK];
    /* The queries of each tile packed [dim][row], so a tile's broadcasts
     * come from one pointer; rows past `rows` are zero. */
    float qp[QUERY_BLOCK / TILE_ROWS][QP_DIMS][TILE_ROWS];
    alignas(32) float kt[KT_DIMS][KEY_BLOCK];
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
    size_t e_max = t->e[t->hi - 1 - t->t0]; /* rows are in position order */
    for (size_t k0 = 0; k0 < e_max; k0 += 16)
        scores_6x16(dc, qp, &b->kt[0][k0], &b->scores[t->t0][k0], accumulate, scale);
}

/* Softmax update of the tile's active rows for the key block at j0, then
 * o = alpha o + p V. */
static void tile_softmax_values(query_block *b, const tile *t, size_t j0)
{
    const tsr_attention_args *a = b->a;
    alignas(32) float old_max[8] = {0}, new_max[8] = {0}, alpha[8];
    for (size_t r = t->lo; r < t->hi; r++) {
        size_t u = r - t->t0;
        float block_max = mask_and_max(b->scores[r], t->e[u]);
        old_max[u] = b->max[r];
        new_max[u] = block_max > b->max[r] ? block_max : b->max[r];
    }
    /* alpha = e^(m_old - m_new) for all rows at once (0 on a row's first
     * block, where m_old = -inf). */
    __m256 shift_change = _mm256_sub_ps(_mm256_load_ps(old_max), _mm256_load_ps(new_max));
    _mm256_store_ps(alpha, tsr_avx2_exp_nonpositive(shift_change));
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

void tsr_f32_attention__avx2(const tsr_attention_args *a)
{
    query_block b;
    b.a = a;
    for (size_t i0 = 0; i0 < a->n_q; i0 += QUERY_BLOCK) {
        b.first = i0;
        b.rows = min_size(QUERY_BLOCK, a->n_q - i0);
        attend_query_block(&b);
    }
}
