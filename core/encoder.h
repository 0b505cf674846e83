/* The encoder stack over a batch of source sentences. */
#ifndef TSR_CORE_ENCODER_H
#define TSR_CORE_ENCODER_H

#include "core/batch.h"
#include "core/model.h"
#include "core/runtime.h"

/* Encodes the sentences laid out by `p` (token ids already validated):
 * memory[p->rows][d] receives the encoder output (after the final norm when
 * the model has one), on the call's threads. Returns TESSERA_ERR_NOMEM with
 * a message on allocation failure. */
int tsr_encode(const tsr_exec *ex, const tessera_tokens *src, const tsr_packing *p,
               float *memory, char *err, size_t err_len);

#endif
