/*
 * The portable int8 linear layer (simd/int8.h gives the arithmetic): weights
 * quantized per output row at packing, x quantized per row on every call,
 * int32 dot products, the float epilogue. It is the reference of every set's
 * int8 path, and, until a set has int8 kernels of its own, the path the set
 * runs (simd/gemm/driver.c hands int8 layers here): correct and
 * batch-invariant, not fast.
 *
 * Packed layout: the n float scales, then (from the next 64-byte boundary)
 * Wq as [n][k] int8, row-major.
 *
 * x is quantized a block of rows at a time into this thread's scratch
 * (simd/thread_scratch.h); should that allocation fail, each value is
 * quantized again as it is used (slower, same bits).
 */
#include <string.h>

#include "simd/int8.h"
#include "simd/scalar/scalar.h"
#include "simd/thread_scratch.h"

#define ROW_BLOCK 8

static size_t scales_bytes(size_t n)
{
    return (n * sizeof(float) + 63) / 64 * 64;
}

/* The bytes between the scales and the values: zeros, so that a packing's
 * bytes are all its own. */
static void clear_gap(void *panels, size_t n)
{
    memset((char *)panels + n * sizeof(float), 0, scales_bytes(n) - n * sizeof(float));
}

size_t tsr_i8_pack_bytes__scalar(size_t n, size_t k)
{
    return scales_bytes(n) + n * k;
}

void tsr_i8_pack_linear__scalar(const float *w, size_t n, size_t k, void *panels)
{
    clear_gap(panels, n);
    float *scales = panels;
    int8_t *q = (int8_t *)((char *)panels + scales_bytes(n));
    for (size_t j = 0; j < n; j++) {
        scales[j] = tsr_i8_row_scale(w + j * k, k);
        tsr_i8_quantize_weights(w + j * k, k, scales[j], q + j * k);
    }
}

void tsr_i8_pack_quantized__scalar(const int8_t *q, const float *scales, size_t n, size_t k,
                                   size_t r0, size_t rows, void *panels)
{
    clear_gap(panels, n);
    memcpy((float *)panels + r0, scales, rows * sizeof *scales);
    memcpy((char *)panels + scales_bytes(n) + r0 * k, q, rows * k);
}

/* Row j's int8 values; its scale in *scale. */
static const int8_t *row_of(const void *panels, size_t n, size_t k, size_t j, float *scale)
{
    *scale = ((const float *)panels)[j];
    return (const int8_t *)((const char *)panels + scales_bytes(n)) + j * k;
}

void tsr_i8_row__scalar(const void *panels, size_t n, size_t k, size_t j, float *out)
{
    float scale;
    const int8_t *q = row_of(panels, n, k, j, &scale);
    for (size_t p = 0; p < k; p++)
        out[p] = (float)q[p] * scale;
}

void tsr_i8_row_quantized__scalar(const void *panels, size_t n, size_t k, size_t j, int8_t *q,
                                  float *scale)
{
    memcpy(q, row_of(panels, n, k, j, scale), k);
}

static void table_pack_quantized(const tsr_kernels *ks, const int8_t *q, const float *scales,
                                 size_t n, size_t k, size_t r0, size_t rows, void *panels)
{
    (void)ks;
    tsr_i8_pack_quantized__scalar(q, scales, n, k, r0, rows, panels);
}

void tsr_i8_bind__scalar(tsr_kernels *t)
{
    t->pack_linear_i8 = table_pack_quantized;
}

/* ---- The layer --------------------------------------------------------------- */

/* sum_p xq[p] * wq[p], xq from `quantized` or, when it is NULL, from x. */
static int32_t dot_i8(const int8_t *quantized, const float *x, float inv, const int8_t *wq,
                      size_t k)
{
    int32_t acc = 0;
    if (quantized) {
        /* Partial sums in DOT_LANES lanes, added up at the end: integer sums
         * are exact in any order, and a block of a fixed length is one that
         * GCC vectorizes at -O2 (3.5 times faster on the shipped model,
         * AMD Zen 5); the tail one at a time. */
        enum { DOT_LANES = 16 };
        int32_t lanes[DOT_LANES] = {0};
        size_t p = 0;
        for (; p + DOT_LANES <= k; p += DOT_LANES)
            for (size_t q = 0; q < DOT_LANES; q++)
                lanes[q] += (int32_t)quantized[p + q] * wq[p + q];
        for (size_t q = 0; q < DOT_LANES; q++)
            acc += lanes[q];
        for (; p < k; p++)
            acc += (int32_t)quantized[p] * wq[p];
    } else {
        for (size_t p = 0; p < k; p++)
            acc += (int32_t)tsr_i8_round(x[p] * inv) * wq[p];
    }
    return acc;
}

void tsr_i8_linear__scalar(const tsr_linear_args *a)
{
    const tsr_packed_linear *w = a->w;
    const size_t k = w->k;
    const float *w_scales = w->panels;
    const int8_t *wq = (const int8_t *)((const char *)w->panels + scales_bytes(w->n));
    int8_t *xq = tsr_thread_scratch(TSR_SCRATCH_I8_ROWS, ROW_BLOCK * (k ? k : 1));
    float inv[ROW_BLOCK], x_scale[ROW_BLOCK];

    for (size_t i0 = 0; i0 < a->m; i0 += ROW_BLOCK) {
        size_t rows = a->m - i0 < ROW_BLOCK ? a->m - i0 : ROW_BLOCK;
        for (size_t r = 0; r < rows; r++) {
            const float *x = a->x + (i0 + r) * a->ldx;
            float amax = 0.0f;
            for (size_t p = 0; p < k; p++)
                amax = fmaxf(amax, fabsf(x[p]));
            inv[r] = tsr_i8_activation_inverse(amax);
            x_scale[r] = amax / 127.0f;
            if (xq)
                for (size_t p = 0; p < k; p++)
                    xq[r * k + p] = tsr_i8_round(x[p] * inv[r]);
        }
        for (size_t j = a->n_begin; j < a->n_end; j++) {
            for (size_t r = 0; r < rows; r++) {
                size_t i = i0 + r;
                int32_t acc = dot_i8(xq ? xq + r * k : NULL, a->x + i * a->ldx, inv[r],
                                     wq + j * k, k);
                float v = ((float)acc * w_scales[j]) * x_scale[r];
                if (w->bias)
                    v += w->bias[j];
                v = tsr_f32_activate_one__scalar(v, a->act);
                /* Read the residual before writing y: they may be the same. */
                if (a->residual)
                    v = a->residual[i * a->ldr + j] + v;
                a->y[i * a->ldy + j] = v;
            }
        }
    }
}
