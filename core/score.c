/* Teacher-forced scoring: the decoder is fed [bos] + tgt for all positions at
 * once (causal self-attention makes that equal to feeding them one at a time)
 * and each position's log-probability of the next target token, then of eos,
 * is read off the generator. */
#include <stdlib.h>
#include <string.h>

#include "core/decode.h"
#include "core/errors.h"
#include "core/memory.h"
#include "core/ops.h"

/* Rows of generator output held at once: bounds memory for long targets. */
#define GENERATOR_ROWS 64

/* Log-probabilities of targets[r] for each row of hidden, written in row
 * order to flat[r]. One parallel region: each block of rows goes through the
 * generator (threads split its weights), then the threads split the rows'
 * log-sum-exps; the worksharing barriers keep `logits` from being refilled
 * while a row is still read. */
static void generator_logprobs(const tsr_exec *ex, const float *hidden, size_t rows,
                               const int32_t *targets, float *logits, float *flat)
{
    const tessera_model *m = ex->m;
    size_t V = (size_t)m->cfg.tgt_vocab_size;
#pragma omp parallel num_threads(ex->threads)
    for (size_t r0 = 0; r0 < rows; r0 += GENERATOR_ROWS) {
        size_t count = rows - r0 < GENERATOR_ROWS ? rows - r0 : GENERATOR_ROWS;
        tsr_op_linear(ex, &m->generator, hidden + r0 * m->d, m->d, count, TSR_ACT_NONE, NULL, 0,
                      logits, V);
#pragma omp for schedule(static)
        for (long j = 0; j < (long)count; j++) {
            const float *row = logits + (size_t)j * V;
            flat[r0 + (size_t)j] = row[targets[r0 + (size_t)j]] - ex->ks->logsumexp(row, V);
        }
    }
}

static int score_batch(const tsr_exec *ex, const tessera_tokens *src,
                       const tessera_tokens *tgt, size_t n, float **out, char *err,
                       size_t err_len)
{
    const tessera_model *m = ex->m;
    size_t V = (size_t)m->cfg.tgt_vocab_size, rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += tgt[i].len + 1;
    int32_t *tokens = tsr_malloc(rows * sizeof *tokens);
    int32_t *targets = tsr_malloc(rows * sizeof *targets);
    float *flat = tsr_malloc(rows * sizeof *flat);
    tsr_decode_seq *seqs = tsr_malloc(n * sizeof *seqs);
    float *logits = tsr_alloc_floats(GENERATOR_ROWS * V);
    int rc;
    if (!tokens || !targets || !flat || !seqs || !logits) {
        rc = tsr_fail_oom(err, err_len, "out of memory scoring %zu target tokens", rows);
        goto done;
    }
    size_t r = 0;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = (tsr_decode_seq){.slot = i, .sentence = i, .n_new = tgt[i].len + 1};
        tokens[r] = m->cfg.bos_id;
        if (tgt[i].len > 0) { /* an empty target may come with no array at all */
            memcpy(tokens + r + 1, tgt[i].ids, tgt[i].len * sizeof(int32_t));
            memcpy(targets + r, tgt[i].ids, tgt[i].len * sizeof(int32_t));
        }
        targets[r + tgt[i].len] = m->cfg.eos_id;
        r += tgt[i].len + 1;
    }

    tsr_source_batch sb;
    tsr_decoder dec;
    const float *hidden;
    rc = tsr_source_batch_encode(ex, src, n, &sb, err, err_len);
    if (rc != 0)
        goto done;
    rc = tsr_decoder_init(&dec, ex, &sb.cross, n, err, err_len);
    if (rc == 0) {
        rc = tsr_decoder_forward(&dec, tokens, seqs, n, &hidden, err, err_len);
        if (rc == 0)
            generator_logprobs(ex, hidden, rows, targets, logits, flat);
        tsr_decoder_free(&dec);
    }
    tsr_source_batch_free(m, &sb);
    for (size_t i = 0, r0 = 0; rc == 0 && i < n; r0 += tgt[i].len + 1, i++)
        memcpy(out[i], flat + r0, (tgt[i].len + 1) * sizeof(float));
done:
    tsr_free(tokens);
    tsr_free(targets);
    tsr_free(flat);
    tsr_free(seqs);
    tsr_free(logits);
    return rc;
}

void tessera_scores_free(float **scores, size_t n)
{
    if (!scores)
        return;
    for (size_t i = 0; i < n; i++)
        tsr_free(scores[i]);
    tsr_free(scores);
}

void tessera_score_options_init(tessera_score_options *o)
{
    o->batch = 1;
}

typedef struct score_job {
    const tessera_tokens *src, *tgt;
    size_t n, batch;
    float **scores;
} score_job;

/* On the runtime's threads: every batch of pairs in turn. */
static int score_all(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    const score_job *j = arg;
    for (size_t first = 0; first < j->n; first += j->batch) {
        size_t count = j->n - first < j->batch ? j->n - first : j->batch;
        TSR_TRY(score_batch(ex, j->src + first, j->tgt + first, count, j->scores + first, err,
                            err_len));
    }
    return 0;
}

int tessera_score_with(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src,
                       const tessera_tokens *tgt, size_t n, const tessera_score_options *o,
                       float ***out, char *err, size_t err_len)
{
    *out = NULL;
    if (!rt || !m || !o)
        return tsr_fail(err, err_len, "score: %s is NULL",
                        !rt ? "the runtime" : !m ? "the model" : "the options");
    TSR_TRY(tsr_check_has_decoder(m, "score", err, err_len));
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch size %d: must be at least 1", o->batch);
    TSR_TRY(tsr_check_tokens(src, n, m->cfg.src_vocab_size, m->cfg.max_positions, "source", 1, 0,
                             err, err_len));
    TSR_TRY(tsr_check_tokens(tgt, n, m->cfg.tgt_vocab_size, m->cfg.max_positions, "target", 1, 1,
                             err, err_len));
    for (size_t i = 0; i < n; i++)
        if (tgt[i].len + 1 > (size_t)m->cfg.max_positions)
            return tsr_fail(err, err_len,
                            "target %zu: %zu tokens: BOS + target is longer than max_positions (%d)",
                            i + 1, tgt[i].len, m->cfg.max_positions);
    float **scores = tsr_calloc(n + 1, sizeof *scores);
    if (!scores)
        return tsr_fail_oom(err, err_len, "out of memory for %zu score lists", n);
    for (size_t i = 0; i < n; i++)
        if (!(scores[i] = tsr_malloc((tgt[i].len + 1) * sizeof(float)))) {
            tessera_scores_free(scores, n);
            return tsr_fail_oom(err, err_len, "out of memory for %zu score lists", n);
        }
    score_job job = {src, tgt, n, (size_t)o->batch, scores};
    int rc = tsr_runtime_run(rt, m, score_all, &job, err, err_len);
    if (rc != 0) {
        tessera_scores_free(scores, n);
        return rc;
    }
    *out = scores;
    return 0;
}

int tessera_score(const tessera_model *m, const tessera_tokens *src, const tessera_tokens *tgt,
                  size_t n, int batch, float ***out, char *err, size_t err_len)
{
    *out = NULL;
    tessera_runtime *rt = tsr_default_runtime(err, err_len);
    if (!rt)
        return -1;
    tessera_score_options o;
    tessera_score_options_init(&o);
    o.batch = batch;
    /* The status codes are newer than this function: any error is -1. */
    return tessera_score_with(rt, m, src, tgt, n, &o, out, err, err_len) != 0 ? -1 : 0;
}
