/*
 * y = residual + act(x W^T + b) for a range of output columns.
 *
 * The packed layout is W itself ([n][k] row-major; bf16 weights rounded and
 * widened back as they are read), so each output is the dot product of two
 * contiguous rows, accumulated in float, one accumulator, k
 * ascending: the reference order. An output's value depends only on its own
 * row of x and column of W, never on m or on the column range asked for.
 *
 * Outputs are computed a tile of TILE_ROWS x TILE_COLS at a time: as many
 * accumulators, each still its own output's one chain in k order (the same
 * bits as one output at a time), but independent chains the core keeps in
 * flight together. One output at a time waited on every add's latency: the
 * shipped model decoded ten times slower under this set than under avx2
 * (AMD Zen 5), and the tests that run every set waited on it. Edges take
 * the same chains one output at a time.
 *
 * Rows are taken ROW_BLOCK at a time and, inside a block, column tile by
 * column tile: the block of x rows stays in L1 while W streams through once
 * per block instead of once per row.
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

/* The layout is W itself: the rows are the table. int8 rows are read back
 * as q x scale first, a row at a time, in place. */
void tsr_embed_packed__scalar(const tsr_kernels *ks, const tsr_packed_linear *w,
                              const int32_t *ids, size_t count, float scale, const float *pos,
                              float *out, size_t ldo)
{
    if (w->type != TSR_WEIGHTS_INT8) {
        ks->embed(ids, count, w->panels, w->k, scale, pos, out, ldo);
        return;
    }
    static const int32_t first = 0;
    for (size_t i = 0; i < count; i++) {
        float *o = out + i * ldo;
        tsr_i8_row__scalar(w->panels, w->n, w->k, (size_t)ids[i], o);
        ks->embed(&first, 1, o, w->k, scale, pos ? pos + i * w->k : NULL, o, ldo);
    }
}

/* The layout is W itself: a row is a copy (bf16 widened). */
void tsr_weight_rows__scalar(const tsr_kernels *ks, const tsr_packed_linear *w,
                             const int32_t *ids, size_t count, float *out, int8_t *q,
                             float *scales)
{
    (void)ks;
    const size_t k = w->k;
    for (size_t i = 0; i < count; i++) {
        size_t r = (size_t)ids[i];
        if (w->type == TSR_WEIGHTS_INT8) {
            tsr_i8_row_quantized__scalar(w->panels, w->n, k, r, q + i * k, &scales[i]);
        } else if (w->type == TSR_WEIGHTS_BF16) {
            const uint16_t *row = (const uint16_t *)w->panels + r * k;
            for (size_t p = 0; p < k; p++)
                out[i * k + p] = tsr_bf16_to_f32(row[p]);
        } else {
            memcpy(out + i * k, (const float *)w->panels + r * k, k * sizeof *out);
        }
    }
}

/* A tile: every row of a row block, TILE_COLS columns (weights_at reads
 * exactly four). */
#define TILE_ROWS ROW_BLOCK
#define TILE_COLS 4

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

/* Weight t of rows j..j+TILE_COLS-1, as dot() reads them: bf16 is a
 * constant where this is inlined, so that each loop below has one kind.
 * Written out: GCC kept a loop of four stores to the stack, and each step
 * then waited to read them back as one vector (2.7 times slower). */
static inline void weights_at(const tsr_packed_linear *w, int bf16, size_t j, size_t t,
                              float wt[TILE_COLS])
{
    const size_t k = w->k;
    if (bf16) {
        const uint16_t *rows = (const uint16_t *)w->panels + j * k + t;
        wt[0] = tsr_bf16_to_f32(rows[0]);
        wt[1] = tsr_bf16_to_f32(rows[k]);
        wt[2] = tsr_bf16_to_f32(rows[2 * k]);
        wt[3] = tsr_bf16_to_f32(rows[3 * k]);
    } else {
        const float *rows = (const float *)w->panels + j * k + t;
        wt[0] = rows[0];
        wt[1] = rows[k];
        wt[2] = rows[2 * k];
        wt[3] = rows[3 * k];
    }
}

/* The TILE_ROWS x TILE_COLS dot products of rows x[0..] (ldx apart) and
 * weight rows j..j+TILE_COLS-1, each as dot() computes it. */
static inline void dot_tile_of(const float *x, size_t ldx, const tsr_packed_linear *w, int bf16,
                               size_t j, float out[TILE_ROWS][TILE_COLS])
{
    float acc[TILE_ROWS][TILE_COLS] = {{0.0f}};
    for (size_t t = 0; t < w->k; t++) {
        float wt[TILE_COLS];
        weights_at(w, bf16, j, t, wt);
        for (size_t r = 0; r < TILE_ROWS; r++)
            for (size_t c = 0; c < TILE_COLS; c++)
                acc[r][c] += x[r * ldx + t] * wt[c];
    }
    memcpy(out, acc, sizeof acc);
}

static void dot_tile(const float *x, size_t ldx, const tsr_packed_linear *w, size_t j,
                     float out[TILE_ROWS][TILE_COLS])
{
    if (w->type == TSR_WEIGHTS_BF16)
        dot_tile_of(x, ldx, w, 1, j, out);
    else
        dot_tile_of(x, ldx, w, 0, j, out);
}

/* The same for one row: TILE_COLS chains (decoding steps have few rows). */
static inline void dot_row_of(const float *x, const tsr_packed_linear *w, int bf16, size_t j,
                              float out[TILE_COLS])
{
    float acc[TILE_COLS] = {0.0f};
    for (size_t t = 0; t < w->k; t++) {
        float wt[TILE_COLS];
        weights_at(w, bf16, j, t, wt);
        for (size_t c = 0; c < TILE_COLS; c++)
            acc[c] += x[t] * wt[c];
    }
    memcpy(out, acc, sizeof acc);
}

static void dot_row(const float *x, const tsr_packed_linear *w, size_t j, float out[TILE_COLS])
{
    if (w->type == TSR_WEIGHTS_BF16)
        dot_row_of(x, w, 1, j, out);
    else
        dot_row_of(x, w, 0, j, out);
}

/* Output (i, j) from its dot product: bias, activation, residual. */
static void finish(const tsr_linear_args *a, size_t i, size_t j, float v)
{
    if (a->w->bias)
        v += a->w->bias[j];
    v = tsr_f32_activate_one__scalar(v, a->act);
    /* Read the residual before writing y: they may be the same. */
    if (a->residual)
        v = a->residual[i * a->ldr + j] + v;
    a->y[i * a->ldy + j] = v;
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
        size_t j = a->n_begin;
        for (; j + TILE_COLS <= a->n_end; j += TILE_COLS) {
            size_t i = i0;
            for (; i + TILE_ROWS <= i_end; i += TILE_ROWS) {
                float v[TILE_ROWS][TILE_COLS];
                dot_tile(a->x + i * a->ldx, a->ldx, w, j, v);
                for (size_t r = 0; r < TILE_ROWS; r++)
                    for (size_t c = 0; c < TILE_COLS; c++)
                        finish(a, i + r, j + c, v[r][c]);
            }
            for (; i < i_end; i++) {
                float v[TILE_COLS];
                dot_row(a->x + i * a->ldx, w, j, v);
                for (size_t c = 0; c < TILE_COLS; c++)
                    finish(a, i, j + c, v[c]);
            }
        }
        for (; j < a->n_end; j++)
            for (size_t i = i0; i < i_end; i++)
                finish(a, i, j, dot(a->x + i * a->ldx, w, j));
    }
}
