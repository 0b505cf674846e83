/* tessera_encode_with: the encoder's output vectors through the public API
 * (encoder-only use, and the encoder's own timing in tessera bench). */
#include <stdlib.h>
#include <string.h>

#include "core/batch.h"
#include "core/decode.h"
#include "core/encoder.h"
#include "core/errors.h"
#include "core/memory.h"

void tessera_encode_options_init(tessera_encode_options *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
}

typedef struct encode_job {
    const tessera_tokens *src;
    size_t n, batch;
    float **out;
} encode_job;

/* On the runtime's threads: each batch packed without padding rows, encoded,
 * and its rows copied out sentence by sentence. */
static int encode_all(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    const encode_job *j = arg;
    const size_t d = ex->m->d;
    for (size_t first = 0; first < j->n; first += j->batch) {
        size_t count = j->n - first < j->batch ? j->n - first : j->batch;
        size_t *row0 = tsr_calloc(count + 1, sizeof *row0), *len = tsr_calloc(count + 1, sizeof *len);
        tsr_packing p = {.n = count, .row0 = row0, .len = len};
        float *memory = NULL;
        int rc = 0;
        if (row0 && len) {
            for (size_t i = 0; i < count; i++) {
                row0[i] = p.rows;
                len[i] = j->src[first + i].len;
                p.rows += len[i];
            }
            memory = tsr_alloc_floats(p.rows * d);
        }
        if (!row0 || !len || !memory)
            rc = tsr_fail_oom(err, err_len, "out of memory encoding %zu sentences", count);
        else
            rc = tsr_encode(ex, j->src + first, &p, memory, err, err_len);
        for (size_t i = 0; rc == 0 && i < count; i++)
            memcpy(j->out[first + i], memory + row0[i] * d, len[i] * d * sizeof(float));
        tsr_free(memory);
        tsr_free(row0);
        tsr_free(len);
        TSR_TRY(rc);
    }
    return 0;
}

int tessera_encode_with(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src,
                        size_t n, const tessera_encode_options *o, float ***out, char *err,
                        size_t err_len)
{
    *out = NULL;
    if (!rt || !m || !o)
        return tsr_fail(err, err_len, "encode: %s is NULL",
                        !rt ? "the runtime" : !m ? "the model" : "the options");
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch size %d: must be at least 1", o->batch);
    TSR_TRY(tsr_check_tokens(src, n, m->cfg.src_vocab_size, m->cfg.max_positions, "sentence", 1,
                             0, err, err_len));
    float **vectors = tsr_calloc(n + 1, sizeof *vectors);
    if (!vectors)
        return tsr_fail_oom(err, err_len, "out of memory for %zu encodings", n);
    for (size_t i = 0; i < n; i++)
        if (!(vectors[i] = tsr_malloc(src[i].len * m->d * sizeof(float)))) {
            tessera_encodings_free(vectors, n);
            return tsr_fail_oom(err, err_len, "out of memory for %zu encodings", n);
        }
    encode_job job = {src, n, (size_t)o->batch, vectors};
    int rc = tsr_runtime_run(rt, m, encode_all, &job, err, err_len);
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
