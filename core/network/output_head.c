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

size_t tsr_head_position(const int32_t *ids, size_t n, int32_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* What the model bans for a hypothesis of `len` tokens made -inf in a row
 * over ids[0, n) (ascending), or over the vocabulary when ids is NULL. */
static void ban(const tessera_config *c, size_t len, const int32_t *ids, size_t n, float *row)
{
    for (int i = -1; i < c->n_banned_target_ids; i++) {
        int32_t id = i < 0 ? c->eos_id : c->banned_target_ids[i];
        if (i < 0 && len >= (size_t)c->min_target_length)
            continue;
        size_t at = ids ? tsr_head_position(ids, n, id) : (size_t)id;
        if (at < n && (!ids || ids[at] == id))
            row[at] = -INFINITY;
    }
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

void tsr_head_log_softmax_among(const tsr_exec *ex, float *row, const int32_t *ids, size_t n,
                                long choosing_len)
{
    const tessera_config *c = &ex->m->cfg;
    size_t len = (size_t)choosing_len;
    if (choosing_len >= 0 && bans_before(c, len))
        ban(c, len, ids, n, row);
    ex->ks->log_softmax(row, n, row);
    if (choosing_len >= 0 && bans_after(c, len))
        ban(c, len, ids, n, row);
}

void tsr_head_log_softmax(const tsr_exec *ex, float *row, long choosing_len)
{
    tsr_head_log_softmax_among(ex, row, NULL, vocab(ex), choosing_len);
}

float tsr_head_logprob(const tsr_exec *ex, const float *row, int32_t tok)
{
    return row[tok] - ex->ks->logsumexp(row, vocab(ex));
}

int32_t tsr_head_best_among(const tsr_exec *ex, float *row, const int32_t *ids, size_t n,
                            size_t len, float *logprob)
{
    const tessera_config *c = &ex->m->cfg;
    if (n == 0)
        return -1;
    if (bans_before(c, len))
        ban(c, len, ids, n, row);
    float lse = ex->ks->logsumexp(row, n);
    if (lse == -INFINITY)
        return -1;
    if (bans_after(c, len))
        ban(c, len, ids, n, row); /* normalised over every id, then chosen among the others */
    size_t best = ex->ks->argmax(row, n);
    /* Banned, or ruled out, every one; over candidates also every one NaN
     * (argmax's 0 then, where the vocabulary's row would give a -inf id). */
    if (row[best] == -INFINITY || (ids && isnan(row[best])))
        return -1;
    *logprob = row[best] - lse;
    return ids ? ids[best] : (int32_t)best;
}

int32_t tsr_head_best(const tsr_exec *ex, float *row, size_t len, float *logprob)
{
    return tsr_head_best_among(ex, row, NULL, vocab(ex), len, logprob);
}
