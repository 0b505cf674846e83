#include "core/ops.h"

#include <math.h>

void tsr_op_linear(const tessera_model *m, const tsr_packed_linear *w, const float *x, size_t ldx,
                   size_t rows, tsr_activation act, const float *residual, size_t ldr, float *y,
                   size_t ldy)
{
    tsr_linear_args a = {
        .x = x, .ldx = ldx, .m = rows, .w = w, .n_begin = 0, .n_end = w->n, .act = act,
        .residual = residual, .ldr = ldr, .y = y, .ldy = ldy,
    };
    if (rows > 0)
        m->kernels->linear(&a);
}

size_t tsr_op_ffn_scratch_floats(const tessera_model *m)
{
    return m->kernels->ffn_block_rows * (size_t)m->cfg.d_ff;
}

void tsr_op_ffn(const tessera_model *m, const tsr_packed_linear *w1, const tsr_packed_linear *w2,
                const float *x, size_t rows, const float *residual, float *y, float *scratch)
{
    tsr_ffn_args a = {
        .x = x, .ldx = m->d, .m = rows, .w1 = w1, .w2 = w2, .act = m->act,
        .residual = residual, .ldr = m->d, .y = y, .ldy = m->d, .scratch = scratch,
    };
    if (rows > 0)
        m->kernels->ffn(&a);
}

void tsr_op_layernorm(const tessera_model *m, const tsr_norm *norm, float *x, const float *delta,
                      size_t rows, float *out)
{
    size_t d = m->d;
    if (rows > 0)
        m->kernels->add_layernorm(x, d, delta, d, rows, d, norm->gamma, norm->beta,
                                  m->cfg.layer_norm_eps, out, d);
}

void tsr_op_attention(const tessera_model *m, const tsr_attention_job *jobs, size_t n_jobs)
{
    size_t H = m->n_heads, dh = m->d_head;
    float scale = 1.0f / sqrtf((float)dh);
    long total = (long)(n_jobs * H);
#pragma omp parallel for schedule(dynamic, 1)
    for (long t = 0; t < total; t++) {
        const tsr_attention_job *j = &jobs[(size_t)t / H];
        size_t off = ((size_t)t % H) * dh;
        tsr_attention_args a = {
            .q = j->q + off, .ldq = j->ldq, .k = j->k + off, .ldk = j->ldk,
            .v = j->v + off, .ldv = j->ldv, .out = j->out + off, .ldo = j->ldo,
            .n_q = j->n_q, .n_k = j->n_k, .d = dh, .scale = scale,
            .causal = j->causal, .q_pos = j->q_pos,
        };
        m->kernels->attention(&a);
    }
}
