/* Encoder layer, as nn.TransformerEncoderLayer:
 *   post-norm: x = LN1(x + SA(x));      x = LN2(x + FFN(x))
 *   pre-norm:  x = x + SA(LN1(x));      x = x + FFN(LN2(x))
 * All sentences of the batch go through each linear layer together; only
 * attention is per sentence. */
#include "core/network/encoder.h"

#include "base/errors.h"
#include "base/memory.h"
#include "core/network/embedding.h"
#include "core/network/ops.h"
#include "core/runtime/plan.h"
#include "core/runtime/work.h"

typedef struct encoder_work {
    float *h;       /* [rows][d]: normed input of a sublayer (pre-norm) or sublayer output */
    float *qkv;     /* [rows][3d] */
    float *attn;    /* [rows][d] */
    float *scratch; /* FFN block */
    tsr_attention_job *jobs;
} encoder_work;

/* Every layer attends over the same rows of the same buffers: the jobs are
 * set up once. */
static void prepare_jobs(const tessera_model *m, const tsr_packing *p, encoder_work *wk)
{
    size_t d = m->d;
    for (size_t s = 0; s < p->n; s++) {
        const float *base = wk->qkv + p->row0[s] * 3 * d;
        wk->jobs[s] = (tsr_attention_job){
            .q = base, .ldq = 3 * d, .k = base + d, .ldk = 3 * d, .v = base + 2 * d,
            .ldv = 3 * d, .out = wk->attn + p->row0[s] * d, .ldo = d,
            .n_q = p->len[s], .n_k = p->len[s], .causal = 0, .q_pos = 0,
        };
    }
}

static void self_attention(const tsr_exec *ex, const tsr_self_attention *w,
                           const tsr_packing *p, const float *in, float *residual_out,
                           encoder_work *wk)
{
    size_t d = ex->m->d;
    tsr_op_linear(ex, &w->qkv, in, d, p->rows, TSR_ACT_NONE, NULL, 0, wk->qkv, 3 * d);
    tsr_op_attention(ex, wk->jobs, p->n);
    /* residual_out += out_proj(attn) */
    tsr_op_linear(ex, &w->out, wk->attn, d, p->rows, TSR_ACT_NONE, residual_out, d,
                  residual_out, d);
}

static void encoder_layer(const tsr_exec *ex, const tsr_encoder_layer *l,
                          const tsr_packing *p, float *x, encoder_work *wk)
{
    const tessera_model *m = ex->m;
    size_t rows = p->rows;
    if (m->cfg.norm_first) {
        tsr_op_layernorm(ex, &l->norm1, x, NULL, rows, wk->h);
        self_attention(ex, &l->attn, p, wk->h, x, wk);
        tsr_op_layernorm(ex, &l->norm2, x, NULL, rows, wk->h);
        tsr_op_ffn(ex, &l->ff1, &l->ff2, wk->h, rows, x, x, wk->scratch);
    } else {
        self_attention(ex, &l->attn, p, x, x, wk);
        tsr_op_layernorm(ex, &l->norm1, x, NULL, rows, x);
        tsr_op_ffn(ex, &l->ff1, &l->ff2, x, rows, x, wk->h, wk->scratch);
        tsr_op_layernorm(ex, &l->norm2, wk->h, NULL, rows, x);
    }
}

int tsr_encode(const tsr_exec *ex, const tessera_tokens *src, const tsr_packing *p,
               float *memory, char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    size_t d = m->d, rows = p->rows;
    encoder_work wk = {
        .h = tsr_alloc_floats(rows * d),
        .qkv = tsr_alloc_floats(rows * 3 * d),
        .attn = tsr_alloc_floats(rows * d),
        .scratch = tsr_alloc_floats(tsr_op_ffn_scratch_floats(ex)),
        .jobs = tsr_alloc(p->n, sizeof(tsr_attention_job)),
    };
    int rc = 0;
    if (!wk.h || !wk.qkv || !wk.attn || !wk.scratch || !wk.jobs) {
        rc = tsr_fail_oom(err, err_len, "out of memory encoding %zu source tokens", rows);
        goto done;
    }
    prepare_jobs(m, p, &wk);
    /* One parallel region for the whole stack: the ops inside share out
     * their work and meet at barriers, with no fork/join per op. */
#pragma omp parallel num_threads(ex->threads)
    {
        double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
        for (long s = 0; s < (long)p->n; s++)
            tsr_embed_tokens(m, ex->ks, TSR_SOURCE, src[s].ids, src[s].len, 0,
                             memory + p->row0[s] * d, d);
        tsr_work_end(ex, began);
        if (m->enc_emb_norm.gamma)
            tsr_op_layernorm(ex, &m->enc_emb_norm, memory, NULL, rows, memory);
        for (int i = 0; i < m->cfg.n_encoder_layers; i++)
            encoder_layer(ex, &m->enc[i], p, memory, &wk);
        if (m->enc_norm.gamma)
            tsr_op_layernorm(ex, &m->enc_norm, memory, NULL, rows, memory);
    }
done:
    tsr_free(wk.h);
    tsr_free(wk.qkv);
    tsr_free(wk.attn);
    tsr_free(wk.scratch);
    tsr_free(wk.jobs);
    return rc;
}

size_t tsr_encoder_work_plan(const tsr_exec *ex, size_t n, size_t rows)
{
    size_t row_floats = tsr_plan_mul(rows, ex->m->d);
    size_t total = tsr_plan_mul(2, tsr_plan_floats(row_floats));      /* h, attn */
    total = tsr_plan_add(total, tsr_plan_floats(tsr_plan_mul(row_floats, 3))); /* qkv */
    total = tsr_plan_add(total, tsr_plan_floats(tsr_op_ffn_scratch_floats(ex)));
    return tsr_plan_add(total, tsr_plan_aligned(tsr_plan_mul(n, sizeof(tsr_attention_job))));
}
