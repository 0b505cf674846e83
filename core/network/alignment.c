/* The alignment of a decoder row, recomputed from the query and the keys.
 *
 * The streaming attention kernels never hold a row's probabilities (they keep
 * a running maximum and sum), so this is a second, separate pass over the
 * keys of the one layer whose weights are wanted; it is run only when
 * alignments are asked for, and it does not change the attention's output.
 * Its order of operations depends only on the row and its keys, so the
 * alignment of a sentence does not depend on the batch or the threads. */
#include "core/network/alignment.h"

#include <math.h>
#include <string.h>

/* Eight partial sums, so that the compiler may keep them in one vector
 * without reordering a sum (the order depends on n alone). */
static float dot(const float *a, const float *b, size_t n)
{
    float part[8] = {0};
    size_t t = 0;
    for (; t + 8 <= n; t += 8)
        for (size_t i = 0; i < 8; i++)
            part[i] += a[t + i] * b[t + i];
    for (; t < n; t++)
        part[t % 8] += a[t] * b[t];
    return ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
}

int32_t tsr_alignment_of_row(const tsr_kernels *ks, const float *q, const float *k, size_t ldk,
                             size_t head_stride, size_t n_k, size_t heads, size_t d_head,
                             float scale, float *work)
{
    float *mean = work, *scores = work + n_k;
    memset(mean, 0, n_k * sizeof *mean);
    for (size_t h = 0; h < heads; h++) {
        const float *qh = q + h * d_head;
        for (size_t j = 0; j < n_k; j++)
            scores[j] = scale * dot(qh, k + h * head_stride + j * ldk, d_head);
        float lse = ks->logsumexp(scores, n_k);
        for (size_t j = 0; j < n_k; j++)
            mean[j] += expf(scores[j] - lse);
    }
    /* The sum over heads ranks positions as the mean does. */
    return (int32_t)ks->argmax(mean, n_k);
}
