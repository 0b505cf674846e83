/*
 * Packing for the GEMM frame (layouts in simd/gemm/gemm.h): the weights once,
 * at load, into NR-wide k-major panels; rows of x, on every large call, into
 * MR-row k-major panels. Plain copies, except that bf16 panels round each
 * weight to bfloat16 (simd/bf16.h); no other arithmetic touches the values.
 * int8 weights are packed by the int8 frame (simd/gemm/i8-driver.c), or, for a
 * set without an int8 microkernel, by the portable int8 layer
 * (simd/scalar/i8-linear.c), which then also computes with them.
 */
#include <string.h>

#include "simd/bf16.h"
#include "simd/gemm/gemm.h"
#include "simd/scalar/scalar.h"

static size_t panels_of(size_t n, size_t nr)
{
    return (n + nr - 1) / nr;
}

size_t tsr_gemm_pack_bytes(const tsr_gemm_config *cfg, tsr_weight_type type, size_t n,
                           size_t k)
{
    if (type == TSR_WEIGHTS_INT8)
        return cfg->i8 ? tsr_gemm_i8_pack_bytes(cfg->i8, n, k) : tsr_i8_pack_bytes__scalar(n, k);
    size_t value = type == TSR_WEIGHTS_BF16 ? sizeof(uint16_t) : sizeof(float);
    return panels_of(n, cfg->nr) * cfg->nr * k * value;
}

/* Values of a row packed at a time: a block of the panel (PACK_DEPTH x nr
 * values, 8 KiB for nr 32) stays in L1 while every row writes its column of
 * it, where whole columns (the panel is k x nr, 64 KiB and more) would
 * evict each line before the next row's write to it. */
#define PACK_DEPTH 64

/* Read W row by row (contiguous), write each into its column of the panel,
 * PACK_DEPTH values deep at a time; the padding columns are zero. */
void tsr_gemm_pack_linear(const tsr_gemm_config *cfg, tsr_weight_type type, const float *w,
                          size_t n, size_t k, void *panels)
{
    if (type == TSR_WEIGHTS_INT8) {
        if (cfg->i8)
            tsr_gemm_i8_pack_linear(cfg->i8, w, n, k, panels);
        else
            tsr_i8_pack_linear__scalar(w, n, k, panels);
        return;
    }
    const size_t nr = cfg->nr;
    const int bf16 = type == TSR_WEIGHTS_BF16;
    const size_t value = bf16 ? sizeof(uint16_t) : sizeof(float);

    for (size_t j = 0; j < panels_of(n, nr); j++) {
        size_t cols = n - j * nr < nr ? n - j * nr : nr;
        float *f32 = (float *)panels + j * nr * k;
        uint16_t *h = (uint16_t *)panels + j * nr * k;
        if (cols < nr)
            memset(bf16 ? (void *)h : (void *)f32, 0, nr * k * value);
        for (size_t p0 = 0; p0 < k; p0 += PACK_DEPTH) {
            size_t p1 = k - p0 < PACK_DEPTH ? k : p0 + PACK_DEPTH;
            for (size_t c = 0; c < cols; c++) {
                const float *w_row = w + (j * nr + c) * k;
                for (size_t p = p0; p < p1; p++) {
                    if (bf16)
                        h[p * nr + c] = tsr_f32_to_bf16(w_row[p]);
                    else
                        f32[p * nr + c] = w_row[p];
                }
            }
        }
    }
}

/* Row r of an f32 or bf16 weight as floats (bf16 widened exactly): column
 * r % nr of panel r / nr, one value every nr. */
static void panel_row(const tsr_packed_linear *w, size_t nr, size_t r, float *out)
{
    const size_t k = w->k, at = r / nr * nr * k + r % nr;
    if (w->type == TSR_WEIGHTS_BF16) {
        const uint16_t *panel = (const uint16_t *)w->panels + at;
        for (size_t p = 0; p < k; p++)
            out[p] = tsr_bf16_to_f32(panel[p * nr]);
    } else {
        const float *panel = (const float *)w->panels + at;
        for (size_t p = 0; p < k; p++)
            out[p] = panel[p * nr];
    }
}

/* Row r of an f32 weight lives in column r % nr of panel r / nr, one value
 * every nr: gathered into the output row, which embed then scales and adds
 * the position to in place. int8 weights (a tied table held once, as an
 * int8 file gave it) are read back as q x scale, by the layout that packed
 * them. */
void tsr_gemm_embed_packed(const tsr_kernels *ks, const tsr_packed_linear *w, const int32_t *ids,
                           size_t count, float scale, const float *pos, float *out, size_t ldo)
{
    const size_t nr = ks->gemm->nr, k = w->k;
    static const int32_t first = 0;
    for (size_t i = 0; i < count; i++) {
        size_t r = (size_t)ids[i];
        float *o = out + i * ldo;
        if (w->type == TSR_WEIGHTS_INT8 && ks->gemm->i8) {
            tsr_gemm_i8_row(ks->gemm->i8, w->panels, w->n, k, r, o);
        } else if (w->type == TSR_WEIGHTS_INT8) {
            tsr_i8_row__scalar(w->panels, w->n, k, r, o);
        } else {
            panel_row(w, nr, r, o);
        }
        ks->embed(&first, 1, o, k, scale, pos ? pos + i * k : NULL, o, ldo);
    }
}

/* The rows as embed_packed reads them, int8 ones without the scale applied. */
void tsr_gemm_weight_rows(const tsr_kernels *ks, const tsr_packed_linear *w, const int32_t *ids,
                          size_t count, float *out, int8_t *q, float *scales)
{
    const size_t nr = ks->gemm->nr, k = w->k;
    for (size_t i = 0; i < count; i++) {
        size_t r = (size_t)ids[i];
        if (w->type == TSR_WEIGHTS_INT8 && ks->gemm->i8) {
            tsr_gemm_i8_row_quantized(ks->gemm->i8, w->panels, w->n, k, r, q + i * k, &scales[i]);
        } else if (w->type == TSR_WEIGHTS_INT8) {
            tsr_i8_row_quantized__scalar(w->panels, w->n, k, r, q + i * k, &scales[i]);
        } else {
            panel_row(w, nr, r, out + i * k);
        }
    }
}

/* One panel of exactly `rows` rows (rows <= mr); the rest of the panel's
 * rows are zero. Reading a row at a time keeps each read stream sequential;
 * the writes land in the same few lines of the panel, which sit in L1. */
static void pack_panel(const float *x, size_t ldx, size_t rows, size_t k, size_t mr,
                       float *panel)
{
    if (rows < mr)
        memset(panel, 0, mr * k * sizeof *panel);
    for (size_t i = 0; i < rows; i++) {
        const float *x_row = x + i * ldx;
        float *dst = panel + i;
        for (size_t p = 0; p < k; p++)
            dst[p * mr] = x_row[p];
    }
}

void tsr_gemm_pack_rows(const float *x, size_t ldx, size_t m, size_t k, size_t mr, float *packed)
{
    for (size_t i0 = 0; i0 < m; i0 += mr) {
        size_t rows = m - i0 < mr ? m - i0 : mr;
        pack_panel(x + i0 * ldx, ldx, rows, k, mr, packed + i0 * k);
    }
}
