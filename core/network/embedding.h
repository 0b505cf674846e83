/* The token embeddings of either side, wherever the model holds them: its
 * own table, the other side's (share_embeddings), or the generator's packed
 * f32 weights (a tied output projection held once); and the decoder's start
 * (bos_id's row, or a zero vector: decoder_start). docs/model-format.md. */
#ifndef TSR_CORE_NETWORK_EMBEDDING_H
#define TSR_CORE_NETWORK_EMBEDDING_H

#include <stddef.h>
#include <stdint.h>

#include "core/model/model.h"

typedef enum tsr_side { TSR_SOURCE = 0, TSR_TARGET = 1 } tsr_side;

/* out[i] = embedding(ids[i]) * emb_scale + positions[pos0 + i] for i < count
 * rows of d_model floats (ldo apart). On the target side, the row at
 * position 0 is the decoder's start: with decoder_start "zeros" it is the
 * position alone, whatever its id. ids are already validated. */
void tsr_embed_tokens(const tessera_model *m, const tsr_kernels *ks, tsr_side side,
                      const int32_t *ids, size_t count, size_t pos0, float *out, size_t ldo);

#endif
