/* A batch's source side: the encoder's output for its sentences and the
 * decoder's cross-attention keys and values, shared by the decoding
 * strategies and scoring. */
#ifndef TSR_CORE_SEARCH_SOURCE_BATCH_H
#define TSR_CORE_SEARCH_SOURCE_BATCH_H

#include <stddef.h>

#include "core/network/batch.h"
#include "core/network/decoder.h"
#include "core/runtime/plan.h"
#include "core/runtime/runtime.h"

/* A batch of source sentences, encoded, with its cross-attention memory. */
typedef struct tsr_source_batch {
    tsr_packing packing;
    float *memory;
    tsr_cross_memory cross;
} tsr_source_batch;

/* Encodes src[0..n) (already validated) and builds the cross memory, for
 * decoding steps or not (tsr_cross_memory_build). */
int tsr_source_batch_encode(const tsr_exec *ex, const tessera_tokens *src, size_t n, int steps,
                            tsr_source_batch *b, char *err, size_t err_len);
void tsr_source_batch_free(const tessera_model *m, tsr_source_batch *b);

/* Its working memory (core/runtime/plan.h): its packing, the encoder's
 * output and its work (core/network/encoder.c), the cross-attention keys and
 * values (core/network/decoder.c); `then` is what is allocated after the
 * cross memory and held with it (the decoder), so that the encoder's work,
 * freed by then, is not counted twice. */
size_t tsr_source_batch_plan(const tsr_exec *ex, const tsr_batch_shape *b, int steps, size_t then);

#endif
