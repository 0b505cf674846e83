/* Sentences batched without padding: sentence s owns rows
 * [row0[s], row0[s] + len[s]) of every activation matrix. A key-padding mask
 * is therefore just each sentence's own key count. */
#ifndef TSR_CORE_NETWORK_BATCH_H
#define TSR_CORE_NETWORK_BATCH_H

#include <stddef.h>

typedef struct tsr_packing {
    size_t n;     /* sentences */
    size_t *row0; /* [n] */
    size_t *len;  /* [n] */
    size_t rows;  /* sum of len */
} tsr_packing;

#endif
