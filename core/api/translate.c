/* tessera_translate: validation, batching, and the shared pieces of the
 * decoding strategies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/call_languages.h"
#include "core/network/encoder.h"
#include "core/runtime/batching.h"
#include "core/runtime/plan.h"
#include "core/search/decode.h"
#include "core/search/sources.h"

/* Each target prefix (tessera_target_prefix_check), the error naming its
 * sentence. */
static int check_prefixes(const tessera_model *m, const tessera_translate_options *o, size_t n,
                          char *err, size_t err_len)
{
    for (size_t i = 0; i < n; i++) {
        int rc = tessera_target_prefix_check(&m->cfg, o, &o->target_prefix[i], err, err_len);
        if (rc != 0) {
            char where[64];
            snprintf(where, sizeof where, "sentence %zu: target prefix", i + 1);
            return tsr_fail_prefix(rc, err, err_len, where);
        }
    }
    return 0;
}

void tessera_hypotheses_free(tessera_hypothesis *h, size_t count)
{
    if (!h)
        return;
    for (size_t i = 0; i < count; i++) {
        tsr_free(h[i].ids);
        tsr_free(h[i].alignment);
    }
    tsr_free(h);
}

typedef struct translate_job {
    const tessera_tokens *src;
    size_t n;
    const tessera_translate_options *o;
    tessera_hypothesis *h;
    const tessera_tokens *given; /* src as the caller gave it, before the suffix */
    int32_t target_lang;         /* the target language's token, -1: none */
} translate_job;

/* A batch's sentences gathered from the call's input (the batcher's order),
 * and its hypotheses before they go to their sentences' places. */
typedef struct gathered {
    tessera_tokens *src, *prefix;
    tessera_hypothesis *h;
} gathered;

/* One batch's decoding, greedy or sampling or beam search, as o says. */
static size_t plan_translate(const tsr_exec *ex, const tessera_translate_options *o,
                             const tsr_batch_shape *b)
{
    return o->beam == 1 ? tsr_greedy_plan(ex, o, b) : tsr_beam_plan(ex, o, b);
}

static size_t gathered_plan(size_t n, size_t per)
{
    size_t tokens = tsr_plan_block(tsr_plan_mul(n, sizeof(tessera_tokens)));
    return tsr_plan_add(tsr_plan_mul(2, tokens),
                        tsr_plan_block(tsr_plan_mul(tsr_plan_mul(n, per), sizeof(tessera_hypothesis))));
}

static size_t batch_plan(const tsr_exec *ex, const void *ctx, const tsr_batch_shape *b)
{
    const tessera_translate_options *o = ctx;
    return tsr_plan_add(plan_translate(ex, o, b), gathered_plan(b->n, (size_t)o->n_best));
}

/* On the runtime's threads: every batch of sentences in turn, each into its
 * sentences' places of j->h. */
static int translate_all(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    const translate_job *j = arg;
    const tessera_translate_options *o = j->o;
    const size_t per = (size_t)o->n_best;
    tsr_batcher batches;
    TSR_TRY(tsr_batcher_init(&batches, ex, j->src, NULL, j->n, o->batch, o->batch_tokens,
                             batch_plan, o, "sentence", err, err_len));
    if (o->allow_empty) /* their hypotheses stay empty, score 0 */
        tsr_batcher_leave_out_empty(&batches, j->given);
    batches.cancel = o->cancel;
    batches.cancel_arg = o->cancel_arg;
    size_t first, count;
    int rc;
    while ((rc = tsr_batcher_next(&batches, &first, &count, err, err_len)) == 0) {
        const size_t *order = batches.order + first;
        gathered g = {tsr_malloc(count * sizeof *g.src),
                      o->target_prefix ? tsr_malloc(count * sizeof *g.prefix) : NULL,
                      tsr_calloc(count * per, sizeof *g.h)};
        if (!g.src || (o->target_prefix && !g.prefix) || !g.h) {
            rc = tsr_fail_oom(err, err_len, "out of memory for a batch of %zu sentences", count);
        } else {
            for (size_t i = 0; i < count; i++) {
                g.src[i] = j->src[order[i]];
                if (g.prefix)
                    g.prefix[i] = o->target_prefix[order[i]];
            }
            tsr_decode_batch in = {g.src,  g.prefix, count, o->first_sentence_index,
                                   order, j->target_lang};
            rc = o->beam == 1 ? tsr_greedy(ex, &in, o, g.h, err, err_len)
                              : tsr_beam_search(ex, &in, o, g.h, err, err_len);
            /* Each hypothesis to its sentence's place (what a failed batch
             * made is freed with the call's). */
            for (size_t i = 0; i < count; i++)
                memcpy(j->h + order[i] * per, g.h + i * per, per * sizeof *g.h);
        }
        tsr_free(g.src);
        tsr_free(g.prefix);
        tsr_free(g.h);
        if (rc != 0)
            break;
    }
    tsr_batcher_free(&batches);
    return rc == 1 ? 0 : rc;
}

size_t tessera_translate_memory(const tessera_runtime *rt, const tessera_model *m, size_t n,
                                size_t src_len, const tessera_translate_options *o)
{
    if (!rt || !m || !o) /* nothing to plan: it cannot run */
        return SIZE_MAX;
    tsr_kernels table;
    tsr_gemm_config gemm;
    tsr_exec ex;
    tsr_runtime_exec(rt, m, &table, &gemm, &ex);
    src_len = tsr_plan_add(src_len, tsr_source_extra(&m->cfg)); /* what the encoder reads */
    tsr_batch_shape b = {.n = n, .src_rows = tsr_plan_mul(n, src_len), .longest_src = src_len};
    size_t own = tsr_plan_add(tsr_plan_thread_scratch(&ex), tsr_batcher_plan(n, o->batch_tokens > 0));
    return tsr_plan_add(own, batch_plan(&ex, o, &b));
}

int tessera_translate_with(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src,
                           size_t n, const tessera_translate_options *o, tessera_hypothesis **out,
                           char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "translate: the result pointer is NULL");
    *out = NULL;
    if (!rt || !m || !o || (n > 0 && !src))
        return tsr_fail(err, err_len, "translate: %s is NULL",
                        !rt ? "the runtime" : !m ? "the model" : !o ? "the options" : "src");
    TSR_TRY(tsr_check_has_decoder(m, "translate", err, err_len));
    TSR_TRY(tessera_translate_options_check(&m->cfg, o, err, err_len));
    int32_t source_lang, target_lang;
    TSR_TRY(tsr_languages_for_call(m, o->source_lang, o->target_lang, 1, &source_lang,
                                   &target_lang, err, err_len));
    TSR_TRY(tsr_check_sources(m, src, n, o->allow_empty, "sentence", err, err_len));
    if (o->target_prefix)
        TSR_TRY(check_prefixes(m, o, n, err, err_len));
    const tessera_tokens *view;
    tessera_tokens *owned;
    TSR_TRY(tsr_sources_arranged(m, src, n, source_lang, &view, &owned, err, err_len));
    size_t per = (size_t)o->n_best;
    tessera_hypothesis *h = tsr_calloc(n * per + 1, sizeof *h);
    if (!h) {
        tsr_free(owned);
        return tsr_fail_oom(err, err_len, "out of memory for %zu hypotheses", n * per);
    }
    translate_job job = {view, n, o, h, src, target_lang};
    int rc = tsr_runtime_run(rt, m, translate_all, &job, err, err_len);
    tsr_free(owned);
    if (rc != 0) {
        tessera_hypotheses_free(h, n * per);
        return rc;
    }
    *out = h;
    return 0;
}

int tessera_translate(const tessera_model *m, const tessera_tokens *src, size_t n,
                      const tessera_translate_options *o, tessera_hypothesis **out, char *err,
                      size_t err_len)
{
    if (!out)
        return tessera_translate_with(NULL, m, src, n, o, out, err, err_len) != 0 ? -1 : 0;
    *out = NULL;
    tessera_runtime *rt = tsr_default_runtime(err, err_len);
    if (!rt)
        return -1;
    /* The status codes are newer than this function: any error is -1. */
    return tessera_translate_with(rt, m, src, n, o, out, err, err_len) != 0 ? -1 : 0;
}
