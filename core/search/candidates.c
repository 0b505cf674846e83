/* A batch's vocabulary shortlist (core/search/candidates.h). */
#include "core/search/candidates.h"

#include <math.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/network/ops.h"
#include "core/network/output_head.h"
#include "core/runtime/work.h"
#include "core/shortlist/shortlist.h"

/* The ids every sentence keeps whatever the shortlist says: what the
 * decoder is fed or may have to end with. */
static size_t specials(const tessera_config *cfg, const tsr_decode_batch *in,
                       const tessera_translate_options *o, int32_t *out)
{
    const int32_t all[] = {cfg->bos_id, cfg->eos_id, cfg->unk_id, cfg->pad_id, in->target_lang,
                           o->end_token};
    size_t n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] >= 0 && all[i] < cfg->tgt_vocab_size)
            out[n++] = all[i];
    return n;
}

/* Each sentence's candidates and the ids it keeps whatever the shortlist
 * says (specials, its prefix), ascending and distinct, one after the other
 * in c->cols (as ids, made columns later), and their union marked. */
static int sentence_candidates(tsr_candidates *c, const tessera_config *cfg,
                               const tsr_decode_batch *in, const tessera_translate_options *o,
                               unsigned char *marked)
{
    int32_t fixed[6];
    tessera_tokens also[2] = {{fixed, specials(cfg, in, o, fixed)}, {NULL, 0}};
    size_t pool_cap = 0, at = 0;
    for (size_t s = 0; s < in->n; s++) {
        if (in->prefix)
            also[1] = in->prefix[s];
        c->cols_at[s] = at;
        TSR_TRY(tsr_shortlist_candidates(o->shortlist, in->src[s].ids, in->src[s].len, also, 2,
                                         &c->cols, &pool_cap, &at));
        for (size_t i = c->cols_at[s]; i < at; i++)
            marked[c->cols[i]] = 1;
    }
    c->cols_at[in->n] = at;
    return 0;
}

int tsr_candidates_init(tsr_candidates *c, const tsr_exec *ex, const tsr_decode_batch *in,
                        const tessera_translate_options *o, size_t rows, char *err,
                        size_t err_len)
{
    memset(c, 0, sizeof *c);
    if (!o->shortlist)
        return 0;
    const tessera_model *m = ex->m;
    size_t V = (size_t)m->cfg.tgt_vocab_size;
    unsigned char *marked = tsr_calloc(V, 1);
    int32_t *col_of = tsr_malloc(V * sizeof *col_of);
    c->cols_at = tsr_malloc((in->n + 1) * sizeof *c->cols_at);
    int rc = marked && col_of && c->cols_at ? sentence_candidates(c, &m->cfg, in, o, marked)
                                            : TESSERA_ERR_NOMEM;
    if (rc == 0) {
        for (size_t v = 0; v < V; v++)
            c->width += marked[v];
        c->ids = tsr_malloc(c->width * sizeof *c->ids);
        rc = c->ids ? 0 : TESSERA_ERR_NOMEM;
    }
    if (rc == 0) {
        size_t j = 0;
        for (size_t v = 0; v < V; v++)
            if (marked[v]) {
                col_of[v] = (int32_t)j;
                c->ids[j++] = (int32_t)v;
            }
        const size_t listed = c->cols_at[in->n];
        c->col_ids = tsr_malloc((listed ? listed : 1) * sizeof *c->col_ids);
        rc = c->col_ids ? 0 : TESSERA_ERR_NOMEM;
        for (size_t i = 0; rc == 0 && i < listed; i++) {
            c->col_ids[i] = c->cols[i];
            c->cols[i] = col_of[c->cols[i]];
        }
    }
    if (rc == 0)
        rc = tsr_gathered_linear_pack(m->kernels, &m->generator, c->ids, c->width, ex->threads,
                                      &c->generator);
    if (rc == 0 && !(c->compact = tsr_alloc_floats(rows * c->width)))
        rc = TESSERA_ERR_NOMEM;
    tsr_free(marked);
    tsr_free(col_of);
    if (rc != 0) {
        tsr_candidates_free(c);
        return tsr_fail_oom(err, err_len, "out of memory for the shortlist's candidates of %zu "
                            "sentences", in->n);
    }
    c->on = 1;
    return 0;
}

void tsr_candidates_free(tsr_candidates *c)
{
    tsr_gathered_linear_free(&c->generator);
    tsr_free(c->ids);
    tsr_free(c->cols_at);
    tsr_free(c->cols);
    tsr_free(c->col_ids);
    tsr_free(c->compact);
    memset(c, 0, sizeof *c);
}

size_t tsr_candidates_plan(const tsr_exec *ex, const tessera_translate_options *o,
                           const tsr_batch_shape *b, size_t rows)
{
    if (!o->shortlist)
        return 0;
    const tessera_model *m = ex->m;
    /* The union is at most the vocabulary, and so is each sentence's list;
     * the lists' pool grows by doubling (the old block held with the new);
     * the marks, the columns of ids, the union; the gathered generator; the
     * logits over the union. */
    size_t V = (size_t)m->cfg.tgt_vocab_size;
    size_t held = tsr_plan_add(tsr_plan_block(V), tsr_plan_block(V * sizeof(int32_t)));
    held = tsr_plan_add(held, tsr_plan_block(tsr_plan_mul(b->n + 1, sizeof(size_t))));
    size_t lists = tsr_plan_block(tsr_plan_mul(tsr_plan_mul(b->n, V), sizeof(int32_t)));
    held = tsr_plan_add(held, tsr_plan_mul(3, lists));
    held = tsr_plan_add(held, tsr_plan_block(V * sizeof(int32_t)));
    held = tsr_plan_add(held, lists); /* col_ids, as long as the lists */
    held = tsr_plan_add(held, tsr_gathered_linear_plan(m->kernels, &m->generator, V,
                                                       ex->threads));
    return tsr_plan_add(held, tsr_plan_floats(tsr_plan_mul(rows, V)));
}

void tsr_candidates_logits(const tsr_exec *ex, const tsr_candidates *c, const float *hidden,
                           const tsr_decode_seq *seqs, size_t rows, float *logits)
{
    if (!c->on) {
        tsr_head_logits(ex, hidden, rows, logits);
        return;
    }
    const size_t V = (size_t)ex->m->cfg.tgt_vocab_size, width = c->width;
    tsr_op_linear(ex, &c->generator.w, hidden, ex->m->d, rows, TSR_ACT_NONE, NULL, 0, c->compact,
                  width);
    double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
    for (long lr = 0; lr < (long)rows; lr++) {
        size_t r = (size_t)lr, s = seqs[r].sentence;
        float *row = logits + r * V;
        const float *z = c->compact + r * width;
        for (size_t v = 0; v < V; v++)
            row[v] = -INFINITY;
        for (size_t i = c->cols_at[s]; i < c->cols_at[s + 1]; i++)
            row[c->ids[c->cols[i]]] = z[c->cols[i]];
    }
    tsr_work_end(ex, began);
    tsr_work_add(ex, 0.0, 0.0, 4.0 * (double)rows * (double)(V + width));
}

void tsr_candidates_compact_logits(const tsr_exec *ex, const tsr_candidates *c,
                                   const float *hidden, size_t rows)
{
    tsr_op_linear(ex, &c->generator.w, hidden, ex->m->d, rows, TSR_ACT_NONE, NULL, 0, c->compact,
                  c->width);
}

size_t tsr_candidates_row(const tsr_candidates *c, size_t r, size_t s, float *row,
                          const int32_t **ids)
{
    const float *z = c->compact + r * c->width;
    const size_t at = c->cols_at[s], n = c->cols_at[s + 1] - at;
    for (size_t i = 0; i < n; i++)
        row[i] = z[c->cols[at + i]];
    *ids = c->col_ids + at;
    return n;
}

int32_t tsr_candidates_best(const tsr_exec *ex, const tsr_candidates *c, size_t r, size_t s,
                            size_t len, float *scratch, float *logprob)
{
    const int32_t *ids;
    size_t n = tsr_candidates_row(c, r, s, scratch, &ids);
    return tsr_head_best_among(ex, scratch, ids, n, len, logprob);
}
