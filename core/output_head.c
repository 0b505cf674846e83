/* The output head (core/output_head.h). */
#include "core/output_head.h"

#include <math.h>

#include "core/model.h"
#include "core/ops.h"

static size_t vocab(const tsr_exec *ex) { return (size_t)ex->m->cfg.tgt_vocab_size; }

/* The model's banned target ids (config banned_target_ids) made -inf. */
static void ban(const tessera_config *c, float *row)
{
    for (int i = 0; i < c->n_banned_target_ids; i++)
        row[c->banned_target_ids[i]] = -INFINITY;
}

/* Bans taken before the softmax (banned_target_ids_mode "logits": the
 * others renormalised) or after it ("log_probs"). */
static int bans_before(const tessera_config *c)
{
    return c->n_banned_target_ids > 0 && c->ban_logits;
}

static int bans_after(const tessera_config *c)
{
    return c->n_banned_target_ids > 0 && !c->ban_logits;
}

void tsr_head_logits(const tsr_exec *ex, const float *hidden, size_t rows, float *logits)
{
    const tessera_model *m = ex->m;
    tsr_op_linear(ex, &m->generator, hidden, m->d, rows, TSR_ACT_NONE, NULL, 0, logits, vocab(ex));
}

void tsr_head_log_softmax(const tsr_exec *ex, float *row, int choosing)
{
    if (choosing && bans_before(&ex->m->cfg))
        ban(&ex->m->cfg, row);
    ex->ks->log_softmax(row, vocab(ex), row);
    if (choosing && bans_after(&ex->m->cfg))
        ban(&ex->m->cfg, row);
}

float tsr_head_logprob(const tsr_exec *ex, const float *row, int32_t tok)
{
    return row[tok] - ex->ks->logsumexp(row, vocab(ex));
}

int32_t tsr_head_best(const tsr_exec *ex, float *row, float *logprob)
{
    if (bans_before(&ex->m->cfg))
        ban(&ex->m->cfg, row);
    float lse = ex->ks->logsumexp(row, vocab(ex));
    if (lse == -INFINITY)
        return -1;
    if (bans_after(&ex->m->cfg))
        ban(&ex->m->cfg, row); /* normalised over every id, then chosen among the others */
    int32_t tok = (int32_t)ex->ks->argmax(row, vocab(ex));
    if (row[tok] == -INFINITY) /* banned, or ruled out, every one */
        return -1;
    *logprob = row[tok] - lse;
    return tok;
}
