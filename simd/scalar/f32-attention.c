/*
 * Attention of one head with a streaming ("online") softmax.
 *
 * For a query row q, the result is sum_j p_j v_j with p_j = e^(s_j) / sum e^(s),
 * s_j = scale * q.k_j. Computing it in one pass over the keys, without storing
 * all n_k scores, uses three running quantities per query row:
 *
 *   m    the largest score seen so far (the shift that keeps exp from
 *        overflowing),
 *   l    sum over keys seen so far of e^(s_j - m),
 *   out  sum over keys seen so far of e^(s_j - m) v_j (kept in the output row
 *        itself, unnormalised).
 *
 * Keys are visited KEY_BLOCK at a time. For each block the scores go to a
 * small stack array and their maximum is taken. If it exceeds m, the new
 * shift m' replaces m, and every term already summed into l and out was
 * computed with the old shift: multiplying both by e^(m - m') turns
 * e^(s_j - m) into e^(s_j - m'). (On the first block m is -inf, the factor
 * is 0, and l and out are 0 anyway.) Then the block's terms e^(s_j - m) are
 * added. After the last block out / l is the softmax-weighted sum, the same
 * value the two-pass formula gives, using O(KEY_BLOCK) extra memory.
 *
 * Causal: query i is at position q_pos + i and sees keys 0..q_pos + i, so
 * its key count is min(n_k, q_pos + i + 1). Each query row is independent,
 * so its result does not depend on n_q or on the other rows.
 */
#include <math.h>

#include "simd/scalar/scalar.h"

#define KEY_BLOCK 64

static float dot(const float *a, const float *b, size_t d)
{
    float acc = 0.0f;
    for (size_t t = 0; t < d; t++)
        acc += a[t] * b[t];
    return acc;
}

static void attend_one_query(const tsr_attention_args *a, const float *q, size_t n_seen, float *out)
{
    float score[KEY_BLOCK];
    float running_max = -INFINITY;
    float running_sum = 0.0f;

    for (size_t c = 0; c < a->d; c++)
        out[c] = 0.0f;

    for (size_t j0 = 0; j0 < n_seen; j0 += KEY_BLOCK) {
        size_t nb = n_seen - j0 < KEY_BLOCK ? n_seen - j0 : KEY_BLOCK;

        float block_max = -INFINITY;
        for (size_t jj = 0; jj < nb; jj++) {
            score[jj] = a->scale * dot(q, a->k + (j0 + jj) * a->ldk, a->d);
            if (score[jj] > block_max)
                block_max = score[jj];
        }

        /* A larger maximum: re-express what was summed so far with the new
         * shift, so that no e^(s - m) ever exceeds 1. */
        if (block_max > running_max) {
            float rescale = expf(running_max - block_max);
            running_sum *= rescale;
            for (size_t c = 0; c < a->d; c++)
                out[c] *= rescale;
            running_max = block_max;
        }

        for (size_t jj = 0; jj < nb; jj++) {
            float p = expf(score[jj] - running_max);
            const float *v = a->v + (j0 + jj) * a->ldv;
            running_sum += p;
            for (size_t c = 0; c < a->d; c++)
                out[c] += p * v[c];
        }
    }

    for (size_t c = 0; c < a->d; c++)
        out[c] /= running_sum;
}

void tsr_f32_attention__scalar(const tsr_attention_args *a)
{
    for (size_t i = 0; i < a->n_q; i++) {
        size_t n_seen = a->n_k;
        if (a->causal && a->q_pos + i + 1 < n_seen)
            n_seen = a->q_pos + i + 1;
        attend_one_query(a, a->q + i * a->ldq, n_seen, a->out + i * a->ldo);
    }
}
