/* Teacher-forced scoring: the decoder is fed its start tokens ([bos], and a
 * forced target language) + tgt for all positions at once (causal
 * self-attention makes that equal to feeding them one at a time) and each
 * position's log-probability of the next target token, then of eos, is read
 * off the generator; the start tokens themselves are not scored. */
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/call_languages.h"
#include "core/network/output_head.h"
#include "core/runtime/batching.h"
#include "core/runtime/plan.h"
#include "core/runtime/work.h"
#include "core/search/decode.h"
#include "core/search/sources.h"

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
        tsr_head_logits(ex, hidden + r0 * m->d, count, logits);
        double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
        for (long j = 0; j < (long)count; j++)
            flat[r0 + (size_t)j] =
                tsr_head_logprob(ex, logits + (size_t)j * V, targets[r0 + (size_t)j]);
        tsr_work_end(ex, began);
    }
}

static int score_batch(const tsr_exec *ex, const tessera_tokens *src,
                       const tessera_tokens *tgt, size_t n, int32_t target_lang, float **out,
                       char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    int32_t start[2];
    size_t k = tsr_start_tokens(&m->cfg, target_lang, start);
    size_t V = (size_t)m->cfg.tgt_vocab_size, rows = 0;
    for (size_t i = 0; i < n; i++)
        rows += tgt[i].len + k;
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
    /* tokens: each pair's start tokens and target, one decoder row each;
     * targets: what the rows that are scored predict (the last start row
     * on), packed. */
    size_t r = 0, scored = 0;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = (tsr_decode_seq){.slot = i, .sentence = i, .n_new = tgt[i].len + k};
        memcpy(tokens + r, start, k * sizeof(int32_t));
        if (tgt[i].len > 0) { /* an empty target may come with no array at all */
            memcpy(tokens + r + k, tgt[i].ids, tgt[i].len * sizeof(int32_t));
            memcpy(targets + scored, tgt[i].ids, tgt[i].len * sizeof(int32_t));
        }
        targets[scored + tgt[i].len] = m->cfg.eos_id;
        r += tgt[i].len + k;
        scored += tgt[i].len + 1;
    }

    tsr_source_batch sb;
    tsr_decoder dec;
    const float *hidden;
    rc = tsr_source_batch_encode(ex, src, n, 0, &sb, err, err_len);
    if (rc != 0)
        goto done;
    rc = tsr_decoder_init(&dec, ex, &sb.cross, n, err, err_len);
    if (rc == 0) {
        rc = tsr_decoder_forward(&dec, tokens, seqs, n, &hidden, err, err_len);
        if (rc == 0 && k > 1) /* the rows before the last start token predict nothing scored */
            hidden = tsr_decoder_drop_leading_rows(&dec, seqs, n, k - 1);
        if (rc == 0)
            generator_logprobs(ex, hidden, scored, targets, logits, flat);
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

static size_t score_plan(const tsr_exec *ex, const tsr_batch_shape *b)
{
    size_t V = (size_t)ex->m->cfg.tgt_vocab_size;
    /* score_batch(): tokens, targets, flat; seqs; the logits of a block of rows. */
    size_t state = tsr_plan_mul(3, tsr_plan_block(tsr_plan_mul(b->tgt_rows, sizeof(int32_t))));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(b->n, sizeof(tsr_decode_seq))));
    state = tsr_plan_add(state, tsr_plan_floats(tsr_plan_mul(GENERATOR_ROWS, V)));
    /* One decoder call feeds every row: one slot per pair, each cache as
     * long as its BOS + target. */
    size_t decoder = tsr_decoder_plan(ex, b->n, b->n, b->tgt_rows, b->longest_tgt, 0, 0);
    return tsr_plan_add(state, tsr_source_batch_plan(ex, b, 0, decoder));
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
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->batch = 1;
}

typedef struct score_job {
    const tessera_tokens *src, *tgt;
    size_t n;
    const tessera_score_options *o;
    float **scores;
    int32_t target_lang; /* the target language's token, -1: none */
} score_job;

/* A batch's pairs gathered from the call's input (the batcher's order) and
 * where their scores go. */
static size_t gathered_plan(size_t n)
{
    return tsr_plan_add(tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(n, sizeof(tessera_tokens)))),
                        tsr_plan_block(tsr_plan_mul(n, sizeof(float *))));
}

static size_t batch_plan(const tsr_exec *ex, const void *ctx, const tsr_batch_shape *b)
{
    (void)ctx;
    return tsr_plan_add(score_plan(ex, b), gathered_plan(b->n));
}

/* On the runtime's threads: every batch of pairs in turn. */
static int score_all(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    const score_job *j = arg;
    tsr_batcher batches;
    TSR_TRY(tsr_batcher_init(&batches, ex, j->src, j->tgt, j->n, j->o->batch, j->o->batch_tokens,
                             batch_plan, NULL, "pair", err, err_len));
    batches.cancel = j->o->cancel;
    batches.cancel_arg = j->o->cancel_arg;
    size_t first, count;
    int rc;
    while ((rc = tsr_batcher_next(&batches, &first, &count, err, err_len)) == 0) {
        const size_t *order = batches.order + first;
        tessera_tokens *src = tsr_malloc(count * sizeof *src), *tgt = tsr_malloc(count * sizeof *tgt);
        float **scores = tsr_malloc(count * sizeof *scores);
        if (!src || !tgt || !scores) {
            rc = tsr_fail_oom(err, err_len, "out of memory for a batch of %zu pairs", count);
        } else {
            for (size_t i = 0; i < count; i++) {
                src[i] = j->src[order[i]];
                tgt[i] = j->tgt[order[i]];
                scores[i] = j->scores[order[i]];
            }
            rc = score_batch(ex, src, tgt, count, j->target_lang, scores, err, err_len);
        }
        tsr_free(src);
        tsr_free(tgt);
        tsr_free(scores);
        if (rc != 0)
            break;
    }
    tsr_batcher_free(&batches);
    return rc == 1 ? 0 : rc;
}

size_t tessera_score_memory(const tessera_runtime *rt, const tessera_model *m, size_t n,
                            size_t src_len, size_t tgt_len)
{
    if (!rt || !m) /* nothing to plan: it cannot run */
        return SIZE_MAX;
    tsr_kernels table;
    tsr_gemm_config gemm;
    tsr_exec ex;
    tsr_runtime_exec(rt, m, &table, &gemm, &ex);
    src_len = tsr_plan_add(src_len, tsr_source_extra(&m->cfg)); /* what the encoder reads */
    tgt_len = tsr_plan_add(tgt_len, tsr_start_length(&m->cfg)); /* what the decoder reads */
    tsr_batch_shape b = {.n = n, .src_rows = tsr_plan_mul(n, src_len), .longest_src = src_len,
                         .tgt_rows = tsr_plan_mul(n, tgt_len), .longest_tgt = tgt_len};
    size_t own = tsr_plan_add(tsr_plan_thread_scratch(&ex), tsr_batcher_plan(n, 1));
    return tsr_plan_add(own, batch_plan(&ex, NULL, &b));
}

int tessera_score_with(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src,
                       const tessera_tokens *tgt, size_t n, const tessera_score_options *o,
                       float ***out, char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "score: the result pointer is NULL");
    *out = NULL;
    if (!rt || !m || !o || (n > 0 && (!src || !tgt)))
        return tsr_fail(err, err_len, "score: %s is NULL",
                        !rt ? "the runtime" : !m ? "the model" : !o ? "the options"
                                                   : !src ? "src" : "tgt");
    TSR_TRY(tsr_check_has_decoder(m, "score", err, err_len));
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch size %d: must be at least 1", o->batch);
    if (o->batch_tokens < 0)
        return tsr_fail(err, err_len, "batch tokens %d: must not be negative", o->batch_tokens);
    int32_t source_lang, target_lang;
    TSR_TRY(tsr_languages_for_call(m, o->source_lang, o->target_lang, 1, &source_lang,
                                   &target_lang, err, err_len));
    TSR_TRY(tsr_check_sources(m, src, n, 0, "source", err, err_len));
    TSR_TRY(tsr_check_tokens(tgt, n, m->cfg.tgt_vocab_size, m->cfg.max_positions, "target", 1, 1,
                             err, err_len));
    size_t start = tsr_start_length(&m->cfg);
    for (size_t i = 0; i < n; i++)
        if (tgt[i].len + start > (size_t)m->cfg.max_positions)
            return tsr_fail(err, err_len,
                            "target %zu: %zu tokens: %s + target is longer than max_positions (%d)",
                            i + 1, tgt[i].len, start > 1 ? "BOS, the target language" : "BOS",
                            m->cfg.max_positions);
    const tessera_tokens *view;
    tessera_tokens *owned;
    TSR_TRY(tsr_sources_arranged(m, src, n, source_lang, &view, &owned, err, err_len));
    float **scores = tsr_calloc(n + 1, sizeof *scores);
    for (size_t i = 0; scores && i < n; i++)
        if (!(scores[i] = tsr_malloc((tgt[i].len + 1) * sizeof(float)))) {
            tessera_scores_free(scores, n);
            scores = NULL;
        }
    if (!scores) {
        tsr_free(owned);
        return tsr_fail_oom(err, err_len, "out of memory for %zu score lists", n);
    }
    score_job job = {view, tgt, n, o, scores, target_lang};
    int rc = tsr_runtime_run(rt, m, score_all, &job, err, err_len);
    tsr_free(owned);
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
    if (!out) /* refused, with its message, before a runtime is made */
        return tessera_score_with(NULL, m, src, tgt, n, NULL, out, err, err_len) != 0 ? -1 : 0;
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
