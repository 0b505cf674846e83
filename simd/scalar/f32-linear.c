/*
 * y = residual + act(x W^T + b) for a range of output columns.
 *
 * The packed layout is W itself ([n][k] row-major; bf16 weights rounded and
 * widened back as they are read), so each output is the dot product of two
 * contiguous rows, accumulated in float, one accumulator, k
 * ascending: the reference order. An output's value depends only on its own
 * row of x and column of W, never on m or on the column range asked for.
 *
 * Rows are taken ROW_BLOCK at a time and, inside a block, column by column:
 * the block of x rows stays in L1 while W streams through once per block
 * instead of once per row.
 */
#include <string.h>

#include "simd/bf16.h"
#include "simd/scalar/scalar.h"

#define ROW_BLOCK 8

size_t tsr_pack_bytes__scalar(const tsr_kernels *ks, tsr_weight_type type, size_t n, size_t k)
{
    (void)ks;
    if (type == TSR_WEIGHTS_INT8)
        return tsr_i8_pack_bytes__scalar(n, k);
    return n * k * (type == TSR_WEIGHTS_BF16 ? sizeof(uint16_t) : sizeof(float));
}

void tsr_pack_linear__scalar(const tsr_kernels *ks, tsr_weight_type type, const float *w,
                             size_t n, size_t k, void *panels)
{
    (void)ks;
    if (type == TSR_WEIGHTS_INT8) {
        tsr_i8_pack_linear__scalar(w, n, k, panels);
    } else if (type == TSR_WEIGHTS_BF16) {
        uint16_t *h = panels;
        for (size_t i = 0; i < n * k; i++)
            h[i] = tsr_f32_to_bf16(w[i]);
    } else {
        memcpy(panels, w, n * k * sizeof *w);
    }
}

/* The layout is W itself: the rows are the table. */
void tsr_embed_packed__scalar(const tsr_kernels *ks, const tsr_packed_linear *w,
                              const int32_t *ids, size_t count, float scale, const float *pos,
                              float *out, size_t ldo)
{
    ks->embed(ids, count, w->panels, w->k, scale, pos, out, ldo);
}

/* Row j of the weights times a row of x: the reference order. */
static float dot(const float *x, const tsr_packed_linear *w, size_t j)
{
    const size_t k = w->k;
    float acc = 0.0f;
    if (w->type == TSR_WEIGHTS_BF16) {
        const uint16_t *w_row = (const uint16_t *)w->panels + j * k;
        for (size_t t = 0; t < k; t++)
            acc += x[t] * tsr_bf16_to_f32(w_row[t]);
    } else {
        const float *w_row = (const float *)w->panels + j * k;
        for (size_t t = 0; t < k; t++)
            acc += x[t] * w_row[t];
    }
    return acc;
}

void tsr_f32_linear__scalar(const tsr_kernels *ks, const tsr_linear_args *a)
{
    (void)ks;
    const tsr_packed_linear *w = a->w;
    if (w->type == TSR_WEIGHTS_INT8) {
        tsr_i8_linear__scalar(a);
        return;
    }

    for (size_t i0 = 0; i0 < a->m; i0 += ROW_BLOCK) {
        size_t i_end = i0 + ROW_BLOCK < a->m ? i0 + ROW_BLOCK : a->m;
        for (size_t j = a->n_begin; j < a->n_end; j++) {
            const float bias = w->bias ? w->bias[j] : 0.0f;
            for (size_t i = i0; i < i_end; i++) {
                float v = dot(a->x + i * a->ldx, w, j);
                if (w->bias)
                    v += bias;
                v = tsr_f32_activate_one__scalar(v, a->act);
                /* Read the residual before writing y: they may be the same. */
                if (a->residual)
                    v = a->residual[i * a->ldr + j] + v;
                a->y[i * a->ldy + j] = v;
            }
        }
    }
}
