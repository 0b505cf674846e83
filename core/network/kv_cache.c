#include "core/network/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/runtime/plan.h"

int tsr_kv_cache_init(tsr_kv_cache *c, size_t n_slots, size_t n_layers, size_t d)
{
    c->n_slots = n_slots;
    c->n_layers = n_layers;
    c->d = d;
    c->rows = tsr_calloc(n_slots * n_layers, sizeof *c->rows);
    c->cap = tsr_calloc(n_slots, sizeof *c->cap);
    c->len = tsr_calloc(n_slots, sizeof *c->len);
    if (!c->rows || !c->cap || !c->len) {
        tsr_kv_cache_free(c);
        return TESSERA_ERR_NOMEM;
    }
    return 0;
}

void tsr_kv_cache_free(tsr_kv_cache *c)
{
    if (c->rows)
        for (size_t i = 0; i < c->n_slots * c->n_layers; i++)
            tsr_free(c->rows[i]);
    tsr_free(c->rows);
    tsr_free(c->cap);
    tsr_free(c->len);
    memset(c, 0, sizeof *c);
}

int tsr_kv_cache_reserve(tsr_kv_cache *c, size_t slot, size_t positions)
{
    if (positions <= c->cap[slot])
        return 0;
    size_t cap = c->cap[slot] ? c->cap[slot] : 16;
    while (cap < positions)
        cap *= 2;
    size_t width = 2 * c->d;
    for (size_t l = 0; l < c->n_layers; l++) {
        float **buf = &c->rows[slot * c->n_layers + l];
        float *grown = tsr_alloc_floats(cap * width);
        if (!grown)
            return TESSERA_ERR_NOMEM;
        if (*buf)
            memcpy(grown, *buf, c->len[slot] * width * sizeof(float));
        tsr_free(*buf);
        *buf = grown;
    }
    c->cap[slot] = cap;
    return 0;
}

void tsr_kv_cache_copy_layer(tsr_kv_cache *c, size_t dst, size_t src, size_t layer)
{
    size_t n = c->len[src];
    memcpy(tsr_kv_cache_layer(c, dst, layer), tsr_kv_cache_layer(c, src, layer),
           n * 2 * c->d * sizeof(float));
    if (layer == 0)
        c->len[dst] = n;
}

size_t tsr_kv_cache_plan(size_t slots, size_t layers, size_t d, size_t positions)
{
    /* Capacities 16, 32, ...: the last at least `positions`. */
    size_t cap = 16;
    while (cap < positions && cap <= SIZE_MAX / 2)
        cap *= 2;
    size_t layer = tsr_plan_floats(tsr_plan_mul(cap, 2 * d));
    size_t all = tsr_plan_mul(tsr_plan_mul(slots, layers), layer);
    /* One layer of one slot grows at a time, its old block (half the size)
     * held until the new one is filled. */
    size_t growing = tsr_plan_floats(tsr_plan_mul(cap / 2, 2 * d));
    size_t tables = tsr_plan_add(tsr_plan_block(tsr_plan_mul(slots * layers, sizeof(float *))),
                                 tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(slots, sizeof(size_t)))));
    return tsr_plan_add(tsr_plan_add(all, growing), tables);
}
