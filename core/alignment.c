/* The alignment of a decoder row, recomputed from the query and the keys.
 *
 * The streaming attention kernels never hold a row's probabilities (they keep
 * a running maximum and sum), so this is a second, separate pass over the
 * keys of the one layer whose weights are wanted; it is run only when
 * alignments are asked for, and it does not change the attention's output.
 * Its order of operations depends only on the row and its keys, so the
 * alignment of a sentence does not depend on the batch or the threads. */
#include "core/alignment.h"

#include <math.h>
#include <string.h>

int32_t tsr_alignment_of_row(const tsr_kernels *ks, const float *q, const float *k, size_t ldk,
                             size_t n_k, size_t heads, size_t d_head, float scale, float *work)
{
    float *mean = work, *scores = work + n_k;
    memset(mean, 0, n_k * sizeof *mean);
    for (size_t h = 0; h < heads; h++) {
        const float *qh = q + h * d_head;
        for (size_t j = 0; j < n_k; j++) {
            const float *kh = k + j * ldk + h * d_head;
            float dot = 0.0f;
            for (size_t t = 0; t < d_head; t++)
                dot += qh[t] * kh[t];
            scores[j] = scale * dot;
        }
        float lse = ks->logsumexp(scores, n_k);
        for (size_t j = 0; j < n_k; j++)
            mean[j] += expf(scores[j] - lse);
    }
    /* The sum over heads ranks positions as the mean does. */
    return (int32_t)ks->argmax(mean, n_k);
}
