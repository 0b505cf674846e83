/* The encoder stack over a batch of source sentences. */
#ifndef TSR_CORE_NETWORK_ENCODER_H
#define TSR_CORE_NETWORK_ENCODER_H

#include "core/model/model.h"
#include "core/network/batch.h"
#include "core/runtime/runtime.h"

/* Encodes the sentences laid out by `p` (token ids already validated):
 * memory[p->rows][d] receives the encoder output (after the final norm when
 * the model has one), on the call's threads. Returns TESSERA_ERR_NOMEM with
 * a message on allocation failure. */
int tsr_encode(const tsr_exec *ex, const tessera_tokens *src, const tsr_packing *p,
               float *memory, char *err, size_t err_len);

/* The work tsr_encode allocates for n sentences of `rows` tokens in all
 * (core/runtime/plan.h says what a plan counts). */
size_t tsr_encoder_work_plan(const tsr_exec *ex, size_t n, size_t rows);

#endif
