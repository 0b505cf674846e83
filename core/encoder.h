/* The encoder stack over a batch of source sentences. */
#ifndef TSR_CORE_ENCODER_H
#define TSR_CORE_ENCODER_H

#include "core/batch.h"
#include "core/model.h"

/* Encodes the sentences laid out by `p` (token ids already validated):
 * memory[p->rows][d] receives the encoder output (after the final norm when
 * the model has one). Returns -1 with a message on allocation failure. */
int tsr_encode(const tessera_model *m, const tessera_tokens *src, const tsr_packing *p,
               float *memory, char *err, size_t err_len);

#endif
