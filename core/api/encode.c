/* tessera_encode_with: the encoder's output vectors through the public API
 * (encoder-only use, and the encoder's own timing in tessera bench). */
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/call_languages.h"
#include "core/network/batch.h"
#include "core/network/encoder.h"
#include "core/runtime/batching.h"
#include "core/runtime/plan.h"
#include "core/search/decode.h"
#include "core/search/sources.h"

void tessera_encode_options_init(tessera_encode_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->batch = 1;
}

static size_t encode_plan(const tsr_exec *ex, const tsr_batch_shape *b)
{
    /* encode_batch(): row0, len, the gathered sources, the encoder's
     * output, then its work. */
    size_t packing = tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(b->n + 1, sizeof(size_t))));
    packing = tsr_plan_add(packing, tsr_plan_block(tsr_plan_mul(b->n, sizeof(tessera_tokens))));
    size_t memory = tsr_plan_floats(tsr_plan_mul(b->src_rows, ex->m->d));
    return tsr_plan_add(tsr_plan_add(packing, memory),
                        tsr_encoder_work_plan(ex, b->n, b->src_rows));
}

typedef struct encode_job {
    const tessera_tokens *src;
    size_t n;
    const tessera_encode_options *o;
    float **out;
} encode_job;

static size_t batch_plan(const tsr_exec *ex, const void *ctx, const tsr_batch_shape *b)
{
    (void)ctx;
    return encode_plan(ex, b);
}

/* One batch, the inputs order[0..count), packed without padding rows,
 * encoded, and its rows copied out sentence by sentence. */
static int encode_batch(const tsr_exec *ex, const encode_job *j, const size_t *order,
                        size_t count, char *err, size_t err_len)
{
    const size_t d = ex->m->d;
    size_t *row0 = tsr_calloc(count + 1, sizeof *row0), *len = tsr_calloc(count + 1, sizeof *len);
    tessera_tokens *src = tsr_malloc(count * sizeof *src);
    tsr_packing p = {.n = count, .row0 = row0, .len = len};
    float *memory = NULL;
    int rc = 0;
    if (row0 && len && src) {
        for (size_t i = 0; i < count; i++) {
            src[i] = j->src[order[i]];
            row0[i] = p.rows;
            len[i] = src[i].len;
            p.rows += len[i];
        }
        memory = tsr_alloc_floats(p.rows * d);
    }
    if (!row0 || !len || !src || !memory)
        rc = tsr_fail_oom(err, err_len, "out of memory encoding %zu sentences", count);
    else
        rc = tsr_encode(ex, src, &p, memory, err, err_len);
    for (size_t i = 0; rc == 0 && i < count; i++)
        memcpy(j->out[order[i]], memory + row0[i] * d, len[i] * d * sizeof(float));
    tsr_free(memory);
    tsr_free(src);
    tsr_free(row0);
    tsr_free(len);
    return rc;
}

/* On the runtime's threads: every batch in turn. */
static int encode_all(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    const encode_job *j = arg;
    tsr_batcher batches;
    TSR_TRY(tsr_batcher_init(&batches, ex, j->src, NULL, j->n, j->o->batch, j->o->batch_tokens,
                             batch_plan, NULL, "sentence", err, err_len));
    batches.cancel = j->o->cancel;
    batches.cancel_arg = j->o->cancel_arg;
    size_t first, count;
    int rc;
    while ((rc = tsr_batcher_next(&batches, &first, &count, err, err_len)) == 0)
        if ((rc = encode_batch(ex, j, batches.order + first, count, err, err_len)) != 0)
            break;
    tsr_batcher_free(&batches);
    return rc == 1 ? 0 : rc;
}

size_t tessera_encode_memory(const tessera_runtime *rt, const tessera_model *m, size_t n,
                             size_t src_len)
{
    if (!rt || !m) /* nothing to plan: it cannot run */
        return SIZE_MAX;
    tsr_kernels table;
    tsr_gemm_config gemm;
    tsr_exec ex;
    tsr_runtime_exec(rt, m, &table, &gemm, &ex);
    src_len = tsr_plan_add(src_len, tsr_source_extra(&m->cfg)); /* what the encoder reads */
    tsr_batch_shape b = {.n = n, .src_rows = tsr_plan_mul(n, src_len), .longest_src = src_len};
    size_t own = tsr_plan_add(tsr_plan_thread_scratch(&ex), tsr_batcher_plan(n, 1));
    return tsr_plan_add(own, batch_plan(&ex, NULL, &b));
}

int tessera_encode_with(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src,
                        size_t n, const tessera_encode_options *o, float ***out, char *err,
                        size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "encode: the result pointer is NULL");
    *out = NULL;
    if (!rt || !m || !o || (n > 0 && !src))
        return tsr_fail(err, err_len, "encode: %s is NULL",
                        !rt ? "the runtime" : !m ? "the model" : !o ? "the options" : "src");
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch size %d: must be at least 1", o->batch);
    if (o->batch_tokens < 0)
        return tsr_fail(err, err_len, "batch tokens %d: must not be negative", o->batch_tokens);
    int32_t source_lang, no_target;
    TSR_TRY(tsr_languages_for_call(m, o->source_lang, NULL, 0, &source_lang, &no_target, err,
                                   err_len));
    TSR_TRY(tsr_check_sources(m, src, n, 0, "sentence", err, err_len));
    /* The vectors of what the model adds are the encoder's output too: each
     * sentence has len + tsr_source_extra of them. */
    const tessera_tokens *view;
    tessera_tokens *owned;
    TSR_TRY(tsr_sources_arranged(m, src, n, source_lang, &view, &owned, err, err_len));
    float **vectors = tsr_calloc(n + 1, sizeof *vectors);
    for (size_t i = 0; vectors && i < n; i++)
        if (!(vectors[i] = tsr_malloc(view[i].len * m->d * sizeof(float)))) {
            tessera_encodings_free(vectors, n);
            vectors = NULL;
        }
    if (!vectors) {
        tsr_free(owned);
        return tsr_fail_oom(err, err_len, "out of memory for %zu encodings", n);
    }
    encode_job job = {view, n, o, vectors};
    int rc = tsr_runtime_run(rt, m, encode_all, &job, err, err_len);
    tsr_free(owned);
    if (rc != 0) {
        tessera_encodings_free(vectors, n);
        return rc;
    }
    *out = vectors;
    return 0;
}

void tessera_encodings_free(float **vectors, size_t n)
{
    tessera_scores_free(vectors, n);
}
