/* The output head (core/output_head.h). */
#include "core/output_head.h"

#include <math.h>

#include "core/model.h"
#include "core/ops.h"

static size_t vocab(const tsr_exec *ex) { return (size_t)ex->m->cfg.tgt_vocab_size; }

void tsr_head_logits(const tsr_exec *ex, const float *hidden, size_t rows, float *logits)
{
    const tessera_model *m = ex->m;
    tsr_op_linear(ex, &m->generator, hidden, m->d, rows, TSR_ACT_NONE, NULL, 0, logits, vocab(ex));
}

void tsr_head_log_softmax(const tsr_exec *ex, float *row)
{
    ex->ks->log_softmax(row, vocab(ex), row);
}

float tsr_head_logprob(const tsr_exec *ex, const float *row, int32_t tok)
{
    return row[tok] - ex->ks->logsumexp(row, vocab(ex));
}

int32_t tsr_head_best(const tsr_exec *ex, const float *row, float *logprob)
{
    float lse = ex->ks->logsumexp(row, vocab(ex));
    if (lse == -INFINITY)
        return -1;
    int32_t tok = (int32_t)ex->ks->argmax(row, vocab(ex));
    *logprob = row[tok] - lse;
    return tok;
}
