/* A batch's source side (core/search/source_batch.h): the encoder's output
 * and the decoder's cross-attention keys and values, built once per batch
 * and read by every decoding step. */
#include "core/search/source_batch.h"

#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/network/encoder.h"

int tsr_source_batch_encode(const tsr_exec *ex, const tessera_tokens *src, size_t n, int steps,
                            tsr_source_batch *b, char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    memset(b, 0, sizeof *b);
    b->packing.n = n;
    b->packing.row0 = tsr_calloc(n, sizeof(size_t));
    b->packing.len = tsr_calloc(n, sizeof(size_t));
    if (!b->packing.row0 || !b->packing.len)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        b->packing.row0[i] = b->packing.rows;
        b->packing.len[i] = src[i].len;
        b->packing.rows += src[i].len;
    }
    b->memory = tsr_alloc_floats(b->packing.rows * m->d);
    if (!b->memory)
        goto oom;
    int rc = tsr_encode(ex, src, &b->packing, b->memory, err, err_len);
    if (rc == 0)
        rc = tsr_cross_memory_build(ex, b->memory, &b->packing, steps, &b->cross, err, err_len);
    if (rc != 0)
        tsr_source_batch_free(m, b);
    return rc;
oom:
    tsr_source_batch_free(m, b);
    return tsr_fail_oom(err, err_len, "out of memory encoding %zu sentences", n);
}

size_t tsr_source_batch_plan(const tsr_exec *ex, const tsr_batch_shape *b, int steps, size_t then)
{
    size_t packing = tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(b->n, sizeof(size_t))));
    size_t memory = tsr_plan_floats(tsr_plan_mul(b->src_rows, ex->m->d));
    /* The encoder's work is freed before the cross memory is made. */
    size_t work = tsr_encoder_work_plan(ex, b->n, b->src_rows);
    /* The cross memory's build scratch is freed before `then` is allocated. */
    size_t build = tsr_cross_memory_build_plan(ex->m, b->src_rows);
    size_t after = tsr_plan_add(tsr_cross_memory_plan(ex->m, b->src_rows, steps),
                                build > then ? build : then);
    return tsr_plan_add(tsr_plan_add(packing, memory), work > after ? work : after);
}

void tsr_source_batch_free(const tessera_model *m, tsr_source_batch *b)
{
    tsr_cross_memory_free(m, &b->cross);
    tsr_free(b->memory);
    tsr_free(b->packing.row0);
    tsr_free(b->packing.len);
    memset(b, 0, sizeof *b);
}
