/* Self-attention keys and values of the decoder, per hypothesis slot and
 * layer: row t of a slot's layer buffer holds K (columns [0, d)) and V
 * (columns [d, 2d)) of position t. Buffers grow by doubling, so a decoding
 * step appends in O(d) amortised and never recomputes the prefix. */
#ifndef TSR_CORE_NETWORK_KV_CACHE_H
#define TSR_CORE_NETWORK_KV_CACHE_H

#include <stddef.h>

typedef struct tsr_kv_cache {
    size_t n_slots, n_layers, d;
    float **rows;  /* [slot * n_layers + layer] */
    size_t *cap;   /* positions allocated per slot */
    size_t *len;   /* positions filled per slot */
} tsr_kv_cache;

int tsr_kv_cache_init(tsr_kv_cache *c, size_t n_slots, size_t n_layers, size_t d);
void tsr_kv_cache_free(tsr_kv_cache *c);

/* Makes room for `positions` positions in every layer of `slot`, keeping
 * what is there. 0, or TESSERA_ERR_NOMEM on allocation failure. */
int tsr_kv_cache_reserve(tsr_kv_cache *c, size_t slot, size_t positions);

static inline float *tsr_kv_cache_layer(const tsr_kv_cache *c, size_t slot, size_t layer)
{
    return c->rows[slot * c->n_layers + layer];
}

/* Makes layer `layer` of slot dst a copy of slot src's (its len positions),
 * for a beam hypothesis whose parent has more than one surviving child;
 * dst must have room (tsr_kv_cache_reserve). Copying layer 0 sets dst's
 * length. Copies into distinct slots from slots no copy writes may run on
 * several threads at once. */
void tsr_kv_cache_copy_layer(tsr_kv_cache *c, size_t dst, size_t src, size_t layer);

/* The memory (core/runtime/plan.h) of a cache of `slots` slots grown to
 * `positions` positions. */
size_t tsr_kv_cache_plan(size_t slots, size_t layers, size_t d, size_t positions);

#endif
