/* A gathered linear layer (core/network/gathered_linear.h). */
#include "core/network/gathered_linear.h"

#include <string.h>

#include "base/memory.h"
#include "core/tessera.h"

/* Rows copied out and packed a block at a time: a block is a whole number
 * of the set's packing units (linear_n_align), so each block's packing is
 * the whole's bytes from its first row on (simd/kernels.h, pack_linear). */
#define BLOCK_UNITS 8

int tsr_gathered_linear_pack(const tsr_kernels *ks, const tsr_packed_linear *src,
                             const int32_t *ids, size_t count, tsr_gathered_linear *out)
{
    const size_t k = src->k, block = BLOCK_UNITS * ks->linear_n_align;
    const int int8 = src->type == TSR_WEIGHTS_INT8;
    memset(out, 0, sizeof *out);
    out->w = (tsr_packed_linear){.n = count, .k = k, .type = src->type};
    out->w.panels = tsr_alloc(ks->pack_bytes(ks, src->type, count, k), 1);
    if (src->bias)
        out->bias = tsr_alloc_floats(count);
    float *rows = int8 ? NULL : tsr_alloc_floats(block * k);
    int8_t *q = int8 ? tsr_alloc(block, k) : NULL;
    float *scales = int8 ? tsr_alloc_floats(block) : NULL;
    if (!out->w.panels || (src->bias && !out->bias) || (int8 ? !q || !scales : !rows)) {
        tsr_free(rows);
        tsr_free(q);
        tsr_free(scales);
        tsr_gathered_linear_free(out);
        return TESSERA_ERR_NOMEM;
    }
    const size_t value = src->type == TSR_WEIGHTS_BF16 ? sizeof(uint16_t) : sizeof(float);
    for (size_t r0 = 0; r0 < count; r0 += block) {
        size_t n = count - r0 < block ? count - r0 : block;
        ks->weight_rows(ks, src, ids + r0, n, rows, q, scales);
        if (int8)
            ks->pack_linear_i8(ks, q, scales, count, k, r0, n, out->w.panels);
        else
            ks->pack_linear(ks, src->type, rows, n, k, (char *)out->w.panels + r0 * k * value);
    }
    if (src->bias)
        for (size_t i = 0; i < count; i++)
            out->bias[i] = src->bias[ids[i]];
    out->w.bias = out->bias;
    tsr_free(rows);
    tsr_free(q);
    tsr_free(scales);
    return 0;
}

void tsr_gathered_linear_free(tsr_gathered_linear *g)
{
    tsr_free(g->w.panels);
    tsr_free(g->bias);
    memset(g, 0, sizeof *g);
}
