/* The model's operations over whole row sets, on top of the kernel table.
 * This is where work is split across threads: every function here is an
 * OpenMP worksharing construct. All threads of the current team call it with
 * the same arguments (and it ends with a barrier); called outside a parallel
 * region it simply runs on the calling thread. Partitions never change
 * results: each output element is computed by one kernel call whose
 * reduction order depends only on the shapes. Each takes the call's context
 * (core/runtime/runtime.h): the model, the kernel table, the team size and the
 * weight copy of each thread. */
#ifndef TSR_CORE_NETWORK_OPS_H
#define TSR_CORE_NETWORK_OPS_H

#include <stddef.h>

#include "core/model/model.h"
#include "core/runtime/runtime.h"

/* y = residual + act(x W^T + b) over `rows` rows (residual may be NULL or
 * equal y). Up to a few hundred rows, threads split the weight panels; more
 * rows are split by rows. */
void tsr_op_linear(const tsr_exec *ex, const tsr_packed_linear *w, const float *x, size_t ldx,
                   size_t rows, tsr_activation act, const float *residual, size_t ldr, float *y,
                   size_t ldy);

/* y = residual + FFN(x) over rows of d_model (ld d); scratch holds
 * tsr_op_ffn_scratch_floats() floats, shared by the team. */
void tsr_op_ffn(const tsr_exec *ex, const tsr_packed_linear *w1, const tsr_packed_linear *w2,
                const float *x, size_t rows, const float *residual, float *y, float *scratch);
/* Scratch for a team of ex->threads threads. */
size_t tsr_op_ffn_scratch_floats(const tsr_exec *ex);

/* if delta: x += delta; out = LN(x) for rows of d_model (contiguous, ld d). */
void tsr_op_layernorm(const tsr_exec *ex, const tsr_norm *norm, float *x, const float *delta,
                      size_t rows, float *out);

/* One multi-head attention problem: the queries of one sequence against its
 * keys and values. Rows hold all heads side by side (head h in columns
 * [h*d_head, (h+1)*d_head)), or, for keys and values with a head stride,
 * each head in a block of its own: head h's key j at k + h*k_head + j*ldk. */
typedef struct tsr_attention_job {
    const float *q;
    size_t ldq;
    const float *k;
    size_t ldk;
    const float *v;
    size_t ldv;
    size_t k_head, v_head; /* from one head's keys (values) to the next's; 0: d_head */
    const float *kt;       /* NULL, or the keys transposed (tsr_attention_args): */
    size_t ldkt, kt_head;  /* head h's kt[c][j] at kt + h * kt_head + c * ldkt + j */
    float *out;
    size_t ldo;
    size_t n_q, n_k;
    int causal;
    size_t q_pos;
} tsr_attention_job;

/* Runs every (job, head) pair, spread over the team. */
void tsr_op_attention(const tsr_exec *ex, const tsr_attention_job *jobs, size_t n_jobs);

#endif
