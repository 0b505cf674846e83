/*
 * int8 weights and activations: the definitions every kernel set's int8 path
 * follows, so that all of them give the same bits (int8 products summed in
 * int32 are exact; only these roundings exist).
 *
 *   weights, at packing, per output row j:
 *       s_w[j] = max_p |W[j][p]| / 127   (1 for an all-zero row: every scale > 0)
 *       Wq[j][p] = round(W[j][p] / s_w[j]), ties to even, within [-127, 127]
 *   activations, on every call, per row i of x (a token, so batch-invariant):
 *       amax = max_p |x[i][p]|;  inv = 127 / amax (0 when amax is 0)
 *       xq[i][p] = round(x[i][p] * inv), ties to even, within [-127, 127]
 *       s_x[i] = amax / 127
 *   output:
 *       acc = sum_p xq[i][p] * Wq[j][p]          (int32, exact: |acc| < 2^31
 *                                                  for k < 133 000)
 *       y = ((float)acc * s_w[j]) * s_x[i], then + bias, activation, residual
 *         as for float32
 *
 * -127..127 and never -128: a product is at most 127 * 127, so the pairwise
 * sums of vpmaddubsw-style instructions cannot saturate (2 * 127 * 127 =
 * 32258 < 32767) with the |x| / sign trick, and the +128 shift of
 * vpdpbusd (u8 x s8) stays exact with the column-sum correction.
 */
#ifndef TSR_SIMD_INT8_H
#define TSR_SIMD_INT8_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* v rounded to nearest even and held within [-127, 127] (NaN gives -127:
 * fmaxf returns the number when one operand is NaN). */
static inline int8_t tsr_i8_round(float v)
{
    return (int8_t)nearbyintf(fminf(fmaxf(v, -127.0f), 127.0f));
}

static inline float tsr_i8_weight_scale(float amax)
{
    return amax > 0.0f ? amax / 127.0f : 1.0f;
}

/* The scale of weight row w[0, k): max |w| / 127 (tsr_i8_weight_scale). */
static inline float tsr_i8_row_scale(const float *w, size_t k)
{
    float amax = 0.0f;
    for (size_t p = 0; p < k; p++)
        amax = fmaxf(amax, fabsf(w[p]));
    return tsr_i8_weight_scale(amax);
}

/* q[p] = round(w[p] / scale) for p < n: a weight row's values (or a piece
 * of them) at its row's scale. */
static inline void tsr_i8_quantize_weights(const float *w, size_t n, float scale, int8_t *q)
{
    for (size_t p = 0; p < n; p++)
        q[p] = tsr_i8_round(w[p] / scale);
}

/* 127 / amax, or 0 for an all-zero row (whose quantized values are all 0). */
static inline float tsr_i8_activation_inverse(float amax)
{
    return amax > 0.0f ? 127.0f / amax : 0.0f;
}

/* Whether any of q[0, n) is -128, which int8 weights may not hold (above):
 * a file's int8 values are checked before they are taken as they are.
 * Blocks of a fixed length, which GCC vectorizes at -O2, then the tail. */
static inline int tsr_i8_holds_min(const int8_t *q, size_t n)
{
    enum { BLOCK = 64 };
    int found = 0;
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        int block = 0;
        for (size_t j = 0; j < BLOCK; j++)
            block |= q[i + j] == INT8_MIN;
        found |= block;
    }
    for (; i < n; i++)
        found |= q[i] == INT8_MIN;
    return found;
}

#endif
