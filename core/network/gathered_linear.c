/* A gathered linear layer (core/network/gathered_linear.h). */
#include "core/network/gathered_linear.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "base/memory.h"
#include "core/runtime/plan.h"
#include "core/tessera.h"

/* Rows copied out and packed a block at a time: a block is a whole number
 * of the set's packing units (linear_n_align), so each block's packing is
 * the whole's bytes from its first row on (simd/kernels.h, pack_linear). */
#define BLOCK_UNITS 8

/* One thread's room for a block: its rows as floats, or as int8 values and scales. */
typedef struct block_room {
    float *rows;
    int8_t *q;
    float *scales;
} block_room;

size_t tsr_gathered_linear_plan(const tsr_kernels *ks, const tsr_packed_linear *src,
                                size_t count, int threads)
{
    const size_t block = BLOCK_UNITS * ks->linear_n_align, k = src->k;
    const size_t t = (size_t)(threads > 0 ? threads : 1);
    size_t held = tsr_plan_aligned(ks->pack_bytes(ks, src->type, count, k));
    if (src->bias)
        held = tsr_plan_add(held, tsr_plan_floats(count));
    size_t one = src->type == TSR_WEIGHTS_INT8
                     ? tsr_plan_add(tsr_plan_aligned(tsr_plan_mul(block, k)), tsr_plan_floats(block))
                     : tsr_plan_floats(tsr_plan_mul(block, k));
    held = tsr_plan_add(held, tsr_plan_block(tsr_plan_mul(t, sizeof(block_room))));
    return tsr_plan_add(held, tsr_plan_mul(t, one));
}

int tsr_gathered_linear_pack(const tsr_kernels *ks, const tsr_packed_linear *src,
                             const int32_t *ids, size_t count, int threads,
                             tsr_gathered_linear *out)
{
    const size_t k = src->k, block = BLOCK_UNITS * ks->linear_n_align;
    const int int8 = src->type == TSR_WEIGHTS_INT8;
    const size_t blocks = (count + block - 1) / block;
    threads = threads < 1 ? 1 : (size_t)threads > blocks ? (int)blocks : threads;
    memset(out, 0, sizeof *out);
    out->w = (tsr_packed_linear){.n = count, .k = k, .type = src->type};
    out->w.panels = tsr_alloc(ks->pack_bytes(ks, src->type, count, k), 1);
    if (src->bias)
        out->bias = tsr_alloc_floats(count);
    block_room *room = tsr_calloc((size_t)threads, sizeof *room);
    int failed = !out->w.panels || (src->bias && !out->bias) || !room;
    for (int t = 0; !failed && t < threads; t++) {
        if (int8) {
            room[t].q = tsr_alloc(block, k);
            room[t].scales = tsr_alloc_floats(block);
            failed = !room[t].q || !room[t].scales;
        } else {
            room[t].rows = tsr_alloc_floats(block * k);
            failed = !room[t].rows;
        }
    }
    const size_t value = src->type == TSR_WEIGHTS_BF16 ? sizeof(uint16_t) : sizeof(float);
    if (!failed) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (long b = 0; b < (long)blocks; b++) {
#ifdef _OPENMP
            block_room *r = &room[omp_get_thread_num()];
#else
            block_room *r = &room[0];
#endif
            size_t r0 = (size_t)b * block, n = count - r0 < block ? count - r0 : block;
            ks->weight_rows(ks, src, ids + r0, n, r->rows, r->q, r->scales);
            if (int8)
                ks->pack_linear_i8(ks, r->q, r->scales, count, k, r0, n, out->w.panels);
            else
                ks->pack_linear(ks, src->type, r->rows, n, k,
                                (char *)out->w.panels + r0 * k * value);
        }
        if (src->bias)
            for (size_t i = 0; i < count; i++)
                out->bias[i] = src->bias[ids[i]];
        out->w.bias = out->bias;
    }
    for (int t = 0; room && t < threads; t++) {
        tsr_free(room[t].rows);
        tsr_free(room[t].q);
        tsr_free(room[t].scales);
    }
    tsr_free(room);
    if (failed) {
        tsr_gathered_linear_free(out);
        return TESSERA_ERR_NOMEM;
    }
    return 0;
}

void tsr_gathered_linear_free(tsr_gathered_linear *g)
{
    tsr_free(g->w.panels);
    tsr_free(g->bias);
    memset(g, 0, sizeof *g);
}
