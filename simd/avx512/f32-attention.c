/*
 * Attention of one head with a streaming ("online") softmax, AVX-512: the
 * shared frame (simd/frame/f32-attention.h explains the algorithm, the
 * blocking and why every row's bits are its own) over the set's 16-float
 * vocabulary (simd/avx512/vec.h), the set's K transposition (16 x 16 tiles
 * in registers) and its decode scores.
 *
 * Register budget (32 zmm):
 *   scores   S[6 rows][64 keys]: the whole key block in one tile, 24
 *            accumulators + 4 loads of kt + 1 broadcast of q = 29, 24 FMAs
 *            per 4 loads and 6 broadcasts (fewer vectors of keys on a block
 *            the tile sees only part of);
 *   values   o[6 rows][64 dims]: the same budget, V read in place, so d = 64
 *            is one pass over V per tile;
 *   one row  up to 4 accumulators of scores, 8 chains (128 dims) of output.
 * Why 6 x 64 rather than a taller tile (14 x 32, 12 x 32): 64 keys is the
 * softmax block, so a tile's scores are one pass whatever d, and 64 dims is
 * the common head size, so the values are one pass too; 6 rows keep the
 * waste small on the causal diagonal and on short query blocks, and the 8
 * tiles of a 48-row query block share each transposed K block.
 *
 * A decode step (a query block of one row) takes its scores straight from
 * K: each 16-key by 16-dim tile is transposed in registers and feeds the
 * row's 1 to 4 accumulators there, with no kt and no packing, so the FMA
 * chains overlap the shuffles. Tails use opmask loads and stores.
 */
#include "simd/avx512/vec.h"

#define SCORE_VECTORS 4           /* 6 x 4 accumulators: 29 of 32 registers */
#define VALUE_VECTORS 4           /* the same tile for o = alpha o + p V */
#define ATTENTION_DECODE_FROM_K 1 /* one query row: scores_1xblock below */
#include "simd/frame/f32-attention.h"

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

void tsr_f32_attention__avx512(const tsr_attention_args *a)
{
    attention_frame(a);
}
