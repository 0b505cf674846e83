/* Alignments: which source token a target token attends to most. */
#ifndef TSR_CORE_NETWORK_ALIGNMENT_H
#define TSR_CORE_NETWORK_ALIGNMENT_H

#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

/* The source position that one decoder query row q (all heads side by side,
 * head h in columns [h*d_head, (h+1)*d_head)) attends to most: the argmax
 * over the n_k keys of the attention probabilities softmax(scale * q_h.k_h)
 * averaged over the heads, the first on ties. k holds the keys, head h's
 * key j at k + h*head_stride + j*ldk (head_stride d_head when the heads
 * are side by side in a row). work holds 2 * n_k floats. Its cost is that
 * of the scores alone, O(n_k * heads * d_head), and it keeps O(n_k) floats,
 * never a query-by-key matrix. */
int32_t tsr_alignment_of_row(const tsr_kernels *ks, const float *q, const float *k, size_t ldk,
                             size_t head_stride, size_t n_k, size_t heads, size_t d_head,
                             float scale, float *work);

#endif
