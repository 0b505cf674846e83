/* The output head (core/network/output_head.h). */
#include "core/network/output_head.h"

#include <math.h>

#include "core/model/model.h"
#include "core/network/ops.h"
#include "core/runtime/work.h"

static size_t vocab(const tsr_exec *ex) { return (size_t)ex->m->cfg.tgt_vocab_size; }

/* Whether the model bans anything for a hypothesis of `len` tokens: its
 * banned target ids, and eos while it is shorter than min_target_length. */
static int bans(const tessera_config *c, size_t len)
{
    return c->n_banned_target_ids > 0 || len < (size_t)c->min_target_length;
}

static void ban(const tessera_config *c, size_t len, float *row)
{
    for (int i = 0; i < c->n_banned_target_ids; i++)
        row[c->banned_target_ids[i]] = -INFINITY;
    if (len < (size_t)c->min_target_length)
        row[c->eos_id] = -INFINITY;
}

/* Bans taken before the softmax (banned_target_ids_mode "logits": the
 * others renormalised) or after it ("log_probs"). */
static int bans_before(const tessera_config *c, size_t len)
{
    return c->ban_logits && bans(c, len);
}

static int bans_after(const tessera_config *c, size_t len)
{
    return !c->ban_logits && bans(c, len);
}

void tsr_head_logits(const tsr_exec *ex, const float *hidden, size_t rows, float *logits)
{
    const tessera_model *m = ex->m;
    tsr_op_linear(ex, &m->generator, hidden, m->d, rows, TSR_ACT_NONE, NULL, 0, logits, vocab(ex));
    tsr_work_add(ex, 0.0, 0.0, 4.0 * (double)rows * (double)vocab(ex)); /* the logits written */
}

void tsr_head_log_softmax(const tsr_exec *ex, float *row, long choosing_len)
{
    const tessera_config *c = &ex->m->cfg;
    size_t len = (size_t)choosing_len;
    if (choosing_len >= 0 && bans_before(c, len))
        ban(c, len, row);
    ex->ks->log_softmax(row, vocab(ex), row);
    if (choosing_len >= 0 && bans_after(c, len))
        ban(c, len, row);
}

float tsr_head_logprob(const tsr_exec *ex, const float *row, int32_t tok)
{
    return row[tok] - ex->ks->logsumexp(row, vocab(ex));
}

int32_t tsr_head_best(const tsr_exec *ex, float *row, size_t len, float *logprob)
{
    const tessera_config *c = &ex->m->cfg;
    if (bans_before(c, len))
        ban(c, len, row);
    float lse = ex->ks->logsumexp(row, vocab(ex));
    if (lse == -INFINITY)
        return -1;
    if (bans_after(c, len))
        ban(c, len, row); /* normalised over every id, then chosen among the others */
    int32_t tok = (int32_t)ex->ks->argmax(row, vocab(ex));
    if (row[tok] == -INFINITY) /* banned, or ruled out, every one */
        return -1;
    *logprob = row[tok] - lse;
    return tok;
}
