/*
 * Attention of one head with a streaming ("online") softmax, NEON: the shared
 * frame (simd/frame/f32-attention.h explains the algorithm, the blocking and
 * why every row's bits are its own) over the set's 4-float vocabulary
 * (simd/neon/vec.h), and the set's own K transposition.
 *
 * Register budget (32 q registers):
 *   scores   S[6 rows][16 keys]: 24 accumulators + 4 loads of kt + 1
 *            broadcast of q = 29;
 *   values   o[6 rows][16 dims]: the same budget, V read in place;
 *   one row  up to 8 accumulators (32 keys of scores, 32 dims of output).
 * Tails of keys and dimensions use partial loads and stores (the
 * vocabulary's tails); K's partial 4 x 4 tiles load the same way, and key
 * columns past the block's end are zeroed up to the next 16.
 */
#include "simd/neon/vec.h"

#define SCORE_VECTORS 4          /* 6 x 4 accumulators: 29 of 32 registers */
#define VALUE_VECTORS 4          /* the same tile for o = alpha o + p V */
#define ATTENTION_DECODE_FROM_K 0 /* one query row: the one-row loops on kt */
#include "simd/frame/f32-attention.h"

/* kt[c][j] = k[j][c] for keys j < nb and dims c < dc, rows of KEY_BLOCK
 * floats; key columns from nb to the next multiple of 16 are zero (the
 * 6-row kernels read whole 16-key chunks up to there, never further). Each
 * 4 x 4 tile is transposed in registers: vtrn pairs the rows, vcombine
 * takes the halves. */
static __attribute__((noinline)) void transpose_keys(const float *k, size_t ldk, size_t nb,
                                                     size_t dc, float *kt)
{
    const size_t chunked = (nb + 15) / 16 * 16;
    for (size_t j4 = 0; j4 < chunked; j4 += 4) {
        if (j4 >= nb) {
            for (size_t c = 0; c < dc; c++)
                vst1q_f32(kt + c * KEY_BLOCK + j4, vdupq_n_f32(0.0f));
            continue;
        }
        const size_t keys = min_size(4, nb - j4);
        for (size_t c4 = 0; c4 < dc; c4 += 4) {
            const size_t dims = min_size(4, dc - c4);
            const float *src = k + j4 * ldk + c4;
            float32x4_t r[4];
#pragma GCC unroll 4
            for (size_t u = 0; u < 4; u++)
                r[u] = u < keys ? tsr_neon_load_partial(src + u * ldk, dims) : vdupq_n_f32(0.0f);
            const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]), t23 = vtrnq_f32(r[2], r[3]);
            const float32x4_t col[4] = {
                vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0])),
                vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1])),
                vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0])),
                vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1])),
            };
#pragma GCC unroll 4
            for (size_t v = 0; v < 4; v++)
                if (v < dims)
                    vst1q_f32(kt + (c4 + v) * KEY_BLOCK + j4, col[v]);
        }
    }
}

void tsr_f32_attention__neon(const tsr_attention_args *a)
{
    attention_frame(a);
}
