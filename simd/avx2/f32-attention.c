/*
 * Attention of one head with a streaming ("online") softmax, AVX2 + FMA: the
 * shared frame (simd/frame/f32-attention.h explains the algorithm, the
 * blocking and why every row's bits are its own) over the set's 8-float
 * vocabulary (simd/avx2/vec.h), and the set's own K transposition.
 *
 * Register budget (16 ymm):
 *   scores   S[6 rows][16 keys]: 12 accumulators + 2 loads of kt + 1
 *            broadcast of q = 15, 12 FMAs per 2 loads and 6 broadcasts;
 *   values   o[6 rows][16 dims]: the same budget, V read in place;
 *   one row  up to 8 accumulators (64 keys of scores, 64 dims of output).
 * A decode step (one query row) runs the one-row loops on kt and transposes
 * only the 16-key chunks it reads. Tails of keys and dimensions use
 * vmaskmovps (the frame's masked loads and stores); K's partial 8 x 8 tiles
 * load with masks, and key columns past the block's end are zeroed up to the
 * next 16.
 */
#include "simd/avx2/vec.h"

#define SCORE_VECTORS 2          /* 6 x 2 accumulators: 15 of 16 registers */
#define VALUE_VECTORS 2          /* the same tile for o = alpha o + p V */
#define ATTENTION_DECODE_FROM_K 0 /* one query row: the one-row loops on kt */
#include "simd/frame/f32-attention.h"

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

void tsr_f32_attention__avx2(const tsr_attention_args *a)
{
    attention_frame(a);
}
