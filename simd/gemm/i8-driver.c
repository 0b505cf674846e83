/*
 * The int8 GEMM frame (layouts in simd/gemm/gemm.h, arithmetic in
 * simd/int8.h): weights quantized and packed once, at load; on every call the
 * rows of x quantized and packed a block at a time, the set's int8
 * microkernel over k in L1-sized pieces, and the float epilogue. Portable C
 * at the baseline flags; the integer work is in the set's microkernel, the
 * bias, activation and residual in its f32 epilogue.
 *
 * Bits: the integer sums are exact whatever the blocking, and the roundings
 * (quantizing, the int32 to float conversion, the two scale products) are
 * those of the portable layer (simd/scalar/i8-linear.c), so every set and
 * every path give the same pre-activation values, for any rows, columns and
 * threads.
 *
 * Memory: the quantized rows of a block go to a buffer private to the
 * thread (simd/thread_scratch.h). Should that allocation fail, each tile's
 * rows are quantized a piece of k at a time into a stack buffer instead,
 * once per weight panel (slower, same bits).
 */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "simd/gemm/gemm.h"
#include "simd/int8.h"
#include "simd/thread_scratch.h"

/* Accumulators of one block's row tiles for one panel (int32) and one tile's
 * scaled values (float): on the stack, 64-byte aligned. */
#define BLOCK_INT32 8192
#define TILE_FLOATS 1024

/* At most this many rows per block (their scales live on the stack). */
#define BLOCK_ROWS_MAX 512

/* The stack buffer for one tile's piece of quantized rows, when the
 * thread's buffer cannot be had. */
#define FALLBACK_PIECE_BYTES 8192

static size_t round_up(size_t v, size_t unit)
{
    return (v + unit - 1) / unit * unit;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* ---- Weights -------------------------------------------------------------------- */

/* The packed buffer: scales [n_pad] float, column sums [n_pad] int32, then
 * the panels, each section starting 64 bytes after the previous one's start
 * rounded up. */
typedef struct i8_layout {
    size_t n_pad, k4, scales_at, sums_at, panels_at, bytes;
} i8_layout;

static i8_layout layout_of(const tsr_gemm_i8_kernel *kernel, size_t n, size_t k)
{
    i8_layout l;
    l.n_pad = round_up(n, kernel->nr);
    l.k4 = (k + 3) / 4;
    l.scales_at = 0;
    l.sums_at = round_up(l.n_pad * sizeof(float), 64);
    l.panels_at = l.sums_at + round_up(l.n_pad * sizeof(int32_t), 64);
    l.bytes = l.panels_at + l.n_pad * l.k4 * 4;
    return l;
}

size_t tsr_gemm_i8_pack_bytes(const tsr_gemm_i8_kernel *kernel, size_t n, size_t k)
{
    return layout_of(kernel, n, k).bytes;
}

/* The bytes between the scales, the sums and the panels: zeros, so that a
 * packing's bytes are all its own (for an nr whose rows' scales do not end
 * on 64 bytes: NEON's 12). */
static void clear_gaps(const i8_layout *l, void *panels)
{
    char *p = panels;
    size_t scales_end = l->scales_at + l->n_pad * sizeof(float);
    size_t sums_end = l->sums_at + l->n_pad * sizeof(int32_t);
    memset(p + scales_end, 0, l->sums_at - scales_end);
    memset(p + sums_end, 0, l->panels_at - sums_end);
}

/* Unit scales and zero sums for the padding rows past n (their panel
 * values are zeros: they add nothing to any sum). */
static void pad_rows(const i8_layout *l, void *panels, size_t n)
{
    float *scales = (float *)((char *)panels + l->scales_at);
    int32_t *sums = (int32_t *)((char *)panels + l->sums_at);
    for (size_t j = n; j < l->n_pad; j++) {
        scales[j] = 1.0f;
        sums[j] = 0;
    }
}

/* Row j's scale and the sum of its k values. */
static void store_scale(const i8_layout *l, void *panels, size_t j, float scale, int32_t sum)
{
    ((float *)((char *)panels + l->scales_at))[j] = scale;
    ((int32_t *)((char *)panels + l->sums_at))[j] = sum;
}

static int8_t *panel_of(const tsr_gemm_i8_kernel *kernel, const i8_layout *l, void *panels,
                        size_t j0)
{
    return (int8_t *)panels + l->panels_at + j0 / kernel->nr * kernel->nr * l->k4 * 4;
}

/* `groups` groups of one panel (dst: the first of them) from `rows` <= nr
 * rows of int8 values, ld apart, of which the first `real` of each row are
 * values and the rest (up to groups * 4) padding: a group's four bytes per
 * row; zeros for the padding and for the rows past `rows`. Four rows at a
 * time, their words of one group stored together (2.5 times faster than a
 * word at a time, on panels of 32 rows: AMD Zen 4). */
static void store_groups(size_t nr, const int8_t *rows_q, size_t ld, size_t rows, size_t real,
                         size_t groups, int8_t *dst)
{
    const size_t full = min_size(real / 4, groups);
    size_t c = 0;
    for (; c + 4 <= rows; c += 4) {
        const int8_t *src = rows_q + c * ld;
        for (size_t g = 0; g < full; g++) {
            int8_t words[16];
            memcpy(words, src + g * 4, 4);
            memcpy(words + 4, src + ld + g * 4, 4);
            memcpy(words + 8, src + 2 * ld + g * 4, 4);
            memcpy(words + 12, src + 3 * ld + g * 4, 4);
            memcpy(dst + (g * nr + c) * 4, words, 16);
        }
    }
    for (; c < rows; c++)
        for (size_t g = 0; g < full; g++)
            memcpy(dst + (g * nr + c) * 4, rows_q + c * ld + g * 4, 4);
    for (size_t g = 0; g < full; g++)
        memset(dst + (g * nr + rows) * 4, 0, (nr - rows) * 4);
    dst += full * nr * 4;
    for (size_t g = full; g < groups; g++, dst += nr * 4) {
        memset(dst, 0, nr * 4);
        for (size_t r = 0; r < rows; r++)
            for (size_t q = 0; g * 4 + q < real; q++)
                dst[r * 4 + q] = rows_q[r * ld + g * 4 + q];
    }
}

/* The sum of a row's k int8 values: blocks of a fixed length, which GCC
 * vectorizes at -O2, then the tail. */
static int32_t row_sum(const int8_t *q, size_t k)
{
    enum { BLOCK = 64 };
    int32_t sum = 0;
    size_t p = 0;
    for (; p + BLOCK <= k; p += BLOCK) {
        int32_t part = 0;
        for (size_t i = 0; i < BLOCK; i++)
            part += q[p + i];
        sum += part;
    }
    for (; p < k; p++)
        sum += q[p];
    return sum;
}

/* Values of each of a panel's rows quantized at a time while packing (a
 * multiple of 4: whole groups). */
#define PACK_CHUNK 256

void tsr_gemm_i8_pack_linear(const tsr_gemm_i8_kernel *kernel, const float *w, size_t n,
                             size_t k, void *panels)
{
    const i8_layout l = layout_of(kernel, n, k);
    const size_t nr = kernel->nr;
    clear_gaps(&l, panels);
    /* A panel's rows a chunk of k at a time, quantized into q, then moved
     * into the panel group by group. */
    int8_t q[TSR_GEMM_I8_NR_MAX * PACK_CHUNK];
    float scales[TSR_GEMM_I8_NR_MAX];
    int32_t sums[TSR_GEMM_I8_NR_MAX];
    for (size_t j0 = 0; j0 < l.n_pad; j0 += nr) {
        const size_t rows = j0 < n ? min_size(n - j0, nr) : 0;
        for (size_t c = 0; c < rows; c++) {
            scales[c] = tsr_i8_row_scale(w + (j0 + c) * k, k);
            sums[c] = 0;
        }
        int8_t *panel = panel_of(kernel, &l, panels, j0);
        for (size_t p0 = 0; p0 < l.k4 * 4; p0 += PACK_CHUNK) {
            const size_t len = min_size(l.k4 * 4 - p0, PACK_CHUNK);
            const size_t real = k > p0 ? min_size(k - p0, len) : 0;
            for (size_t c = 0; c < rows; c++) {
                int8_t *qc = q + c * PACK_CHUNK;
                tsr_i8_quantize_weights(w + (j0 + c) * k + p0, real, scales[c], qc);
                sums[c] += row_sum(qc, real);
            }
            store_groups(nr, q, PACK_CHUNK, rows, real, len / 4, panel + p0 / 4 * nr * 4);
        }
        for (size_t c = 0; c < rows; c++)
            store_scale(&l, panels, j0 + c, scales[c], sums[c]);
    }
    pad_rows(&l, panels, n);
}

void tsr_gemm_i8_pack_quantized(const tsr_gemm_i8_kernel *kernel, const int8_t *q,
                                const float *scales, size_t n, size_t k, size_t r0,
                                size_t block_rows, void *panels)
{
    const i8_layout l = layout_of(kernel, n, k);
    const size_t nr = kernel->nr, end = r0 + block_rows;
    clear_gaps(&l, panels);
    /* The last block also packs the padding panel rows past n. */
    const size_t last = end == n ? l.n_pad : end;
    for (size_t j0 = r0; j0 < last; j0 += nr) {
        const size_t rows = j0 < n ? min_size(n - j0, nr) : 0;
        const int8_t *src = q + (j0 - r0) * k;
        /* A piece of every row at a time: 16 groups are one cache line of
         * each row read, 2 KiB of panel written for nr = 32. */
        int8_t *panel = panel_of(kernel, &l, panels, j0);
        for (size_t g0 = 0; g0 < l.k4; g0 += 16)
            store_groups(nr, src + g0 * 4, k, rows, min_size(k - g0 * 4, 64),
                         min_size(l.k4 - g0, 16), panel + g0 * nr * 4);
        for (size_t c = 0; c < rows; c++)
            store_scale(&l, panels, j0 + c, scales[j0 - r0 + c], row_sum(src + c * k, k));
    }
    if (end == n)
        pad_rows(&l, panels, n);
}

/* Row j's values: value p at panel[p / 4 * nr * 4 + p % 4]; its scale in *scale. */
static const int8_t *row_at(const tsr_gemm_i8_kernel *kernel, const void *panels, size_t n,
                            size_t k, size_t j, float *scale)
{
    const i8_layout l = layout_of(kernel, n, k);
    const size_t nr = kernel->nr;
    *scale = ((const float *)((const char *)panels + l.scales_at))[j];
    return (const int8_t *)panels + l.panels_at + j / nr * nr * l.k4 * 4 + j % nr * 4;
}

/* Row j's k values from its panel (row_at): a group's 4 values at a time,
 * nr * 4 bytes apart; the last group's padding is not copied. A value at a
 * time, with its division, was 3 % of an argos int8 greedy-batch's samples
 * under a shortlist, which gathers a batch's candidate rows (AMD Zen 4). */
static void row_values(const tsr_gemm_i8_kernel *kernel, const int8_t *panel, size_t k,
                       int8_t *q)
{
    const size_t stride = kernel->nr * 4;
    size_t p = 0;
    for (; p + 4 <= k; p += 4, panel += stride)
        memcpy(q + p, panel, 4);
    for (size_t c = 0; p < k; p++, c++)
        q[p] = panel[c];
}

void tsr_gemm_i8_row(const tsr_gemm_i8_kernel *kernel, const void *panels, size_t n, size_t k,
                     size_t j, float *out)
{
    float scale;
    const int8_t *panel = row_at(kernel, panels, n, k, j, &scale);
    enum { CHUNK = 256 };
    int8_t q[CHUNK];
    for (size_t p0 = 0; p0 < k; p0 += CHUNK, panel += CHUNK / 4 * kernel->nr * 4) {
        const size_t len = min_size(k - p0, CHUNK);
        row_values(kernel, panel, len, q);
        for (size_t p = 0; p < len; p++)
            out[p0 + p] = (float)q[p] * scale;
    }
}

void tsr_gemm_i8_row_quantized(const tsr_gemm_i8_kernel *kernel, const void *panels, size_t n,
                               size_t k, size_t j, int8_t *q, float *scale)
{
    row_values(kernel, row_at(kernel, panels, n, k, j, scale), k, q);
}

/* ---- Rows of x -------------------------------------------------------------------- */

/* The portable steps (simd/gemm/gemm.h); a set may supply vector ones. */

float tsr_gemm_i8_abs_max(const float *x, size_t k)
{
    float m = 0.0f;
    for (size_t p = 0; p < k; p++)
        m = fmaxf(m, fabsf(x[p]));
    return m;
}

void tsr_gemm_i8_quantize(const float *x, size_t k, float inv, int offset, uint8_t *q)
{
    for (size_t p = 0; p < k; p++)
        q[p] = (uint8_t)(tsr_i8_round(x[p] * inv) + offset);
}

void tsr_gemm_i8_dequantize(const int32_t *acc, size_t n, int32_t offset, const int32_t *sums,
                            const float *w_scales, float x_scale, float *out)
{
    for (size_t c = 0; c < n; c++)
        out[c] = ((float)(acc[c] - offset * sums[c]) * w_scales[c]) * x_scale;
}

/* Bytes of one row quantized at a time before they are spread over the
 * tile (a multiple of 4). */
#define ROW_CHUNK 256

/* Groups [g0, g0 + groups) of one row, quantized, offset, into row slot i of
 * packed tile rows (dst points at group g0 of the tile): a chunk at a time
 * into contiguous bytes, then each group's 4 bytes to their place. Past k:
 * the value 0 (offset like the others); the weights there are zeros anyway. */
static void pack_row(const tsr_gemm_config *cfg, const float *x, size_t k, float inv,
                     size_t g0, size_t groups, size_t i, uint8_t *dst)
{
    const size_t mr = cfg->i8->mr;
    const int offset = cfg->i8->a_offset;
    uint8_t bytes[ROW_CHUNK];
    for (size_t c0 = 0; c0 < groups * 4; c0 += ROW_CHUNK) {
        const size_t p0 = g0 * 4 + c0;
        const size_t len = min_size(groups * 4 - c0, ROW_CHUNK);
        const size_t real = k > p0 ? min_size(k - p0, len) : 0;
        cfg->i8_quantize(x + p0, real, inv, offset, bytes);
        memset(bytes + real, offset, len - real);
        for (size_t g = 0; g < len / 4; g++)
            memcpy(dst + ((c0 / 4 + g) * mr + i) * 4, bytes + g * 4, 4);
    }
}

/* ---- The layer -------------------------------------------------------------------- */

typedef struct i8_call {
    const tsr_gemm_config *cfg;
    const tsr_linear_args *a;
    i8_layout l;
    const float *w_scales;
    const int32_t *w_sums;
    const int8_t *w_panels;
} i8_call;

/* y of rows [i0, i0 + rows) (one tile) and columns [j0, j0 + cols) from the
 * tile's int32 sums: ((float)(acc - off * colsum) * s_w) * s_x, then the
 * set's epilogue adds the bias, applies the activation and the residual;
 * in one pass when the set has a fused int8 epilogue. */
static inline __attribute__((always_inline)) void
finish_tile(const i8_call *call, const int32_t *acc, const float *x_scale, size_t i0, size_t rows,
            size_t j0, size_t cols)
{
    _Alignas(64) float tile[TILE_FLOATS];
    const tsr_linear_args *a = call->a;
    const size_t nr = call->cfg->i8->nr;
    const int32_t off = call->cfg->i8->a_offset;
    if (call->cfg->i8_epilogue) {
        call->cfg->i8_epilogue(acc, nr, rows, cols, off, call->w_sums + j0, call->w_scales + j0,
                               x_scale, a->w->bias ? a->w->bias + j0 : NULL, a->act,
                               a->residual ? a->residual + i0 * a->ldr + j0 : NULL, a->ldr,
                               a->y + i0 * a->ldy + j0, a->ldy);
        return;
    }
    for (size_t i = 0; i < rows; i++)
        call->cfg->i8_dequantize(acc + i * nr, nr, off, call->w_sums + j0, call->w_scales + j0,
                                 x_scale[i], tile + i * nr);
    call->cfg->epilogue(tile, nr, rows, cols, a->w->bias ? a->w->bias + j0 : NULL, a->act,
                        a->residual ? a->residual + i0 * a->ldr + j0 : NULL, a->ldr,
                        a->y + i0 * a->ldy + j0, a->ldy);
}

/* Rows [r0, r0 + m) of the call, every column of its range; `packed` holds
 * their quantized tiles (all of k), or is NULL: each tile piece is then
 * quantized as it is needed. */
static void row_block(const i8_call *call, size_t r0, size_t m, const uint8_t *packed,
                      const float *inv, const float *x_scale)
{
    _Alignas(64) int32_t acc[BLOCK_INT32];
    const tsr_linear_args *a = call->a;
    const tsr_gemm_i8_kernel *kn = call->cfg->i8;
    const size_t mr = kn->mr, nr = kn->nr, k4 = call->l.k4, k = a->w->k;
    const size_t tiles = (m + mr - 1) / mr;
    /* One tile (decode) reads each panel once, whole; several take turns
     * over L1-sized pieces of it. */
    size_t kc4 = tiles > 1 ? call->cfg->i8_kc4 : (k4 ? k4 : 1);
    _Alignas(64) uint8_t piece[FALLBACK_PIECE_BYTES];
    if (!packed)
        kc4 = min_size(kc4, FALLBACK_PIECE_BYTES / (mr * 4));
    const int one_piece = tiles > 1 && kc4 >= k4;

    for (size_t j0 = a->n_begin; j0 < a->n_end; j0 += nr) {
        const size_t cols = min_size(a->n_end - j0, nr);
        const int8_t *panel = call->w_panels + j0 * k4 * 4;
        size_t g0 = 0;
        do {
            const size_t groups = min_size(k4 - g0, kc4);
            for (size_t t = 0; t < tiles; t++) {
                const size_t rows = min_size(m - t * mr, mr);
                const uint8_t *tile_a;
                if (packed) {
                    tile_a = packed + (t * k4 + g0) * mr * 4;
                } else {
                    for (size_t i = 0; i < rows; i++)
                        pack_row(call->cfg, a->x + (r0 + t * mr + i) * a->ldx, k,
                                 inv[t * mr + i], g0, groups, i, piece);
                    tile_a = piece;
                }
                kn->ukernel(groups, tile_a, panel + g0 * nr * 4, acc + t * mr * nr, rows,
                            g0 > 0);
                /* All of k in one piece: the tile's sums go to y while they
                 * are in L1, and the panel is not pushed out of L1 by every
                 * tile's sums (20 tiles of 1.5 KB for 240 rows). */
                if (one_piece)
                    finish_tile(call, acc + t * mr * nr, x_scale + t * mr, r0 + t * mr, rows,
                                j0, cols);
            }
            g0 += groups;
        } while (g0 < k4);

        if (!one_piece)
            for (size_t t = 0; t < tiles; t++)
                finish_tile(call, acc + t * mr * nr, x_scale + t * mr, r0 + t * mr,
                            min_size(m - t * mr, mr), j0, cols);
    }
}

/* Rows per block: their packed tiles (all of k) in L2, their accumulators
 * for one panel on the stack; balanced over the blocks m needs. */
static size_t rows_per_block(const tsr_gemm_config *cfg, size_t m, size_t k4)
{
    const size_t mr = cfg->i8->mr;
    size_t cap = cfg->a_block_floats * sizeof(float) / (k4 ? k4 * 4 : 1) / mr * mr;
    size_t acc_cap = min_size(BLOCK_INT32 / cfg->i8->nr, BLOCK_ROWS_MAX) / mr * mr;
    cap = cap < mr ? mr : cap;
    cap = cap > acc_cap ? acc_cap : cap;
    size_t blocks = (m + cap - 1) / cap;
    return round_up((m + blocks - 1) / blocks, mr);
}

void tsr_gemm_i8_linear(const tsr_gemm_config *cfg, const tsr_linear_args *a)
{
    const tsr_gemm_i8_kernel *kn = cfg->i8;
    const tsr_packed_linear *w = a->w;
    const size_t mr = kn->mr, k = w->k;
    i8_call call = {.cfg = cfg, .a = a, .l = layout_of(kn, w->n, k)};
    call.w_scales = (const float *)((const char *)w->panels + call.l.scales_at);
    call.w_sums = (const int32_t *)((const char *)w->panels + call.l.sums_at);
    call.w_panels = (const int8_t *)w->panels + call.l.panels_at;
    const size_t k4 = call.l.k4;

    const size_t mc = rows_per_block(cfg, a->m, k4);
    uint8_t *packed = tsr_thread_scratch(TSR_SCRATCH_I8_ROWS, mc * (k4 ? k4 : 1) * 4);
    float inv[BLOCK_ROWS_MAX], x_scale[BLOCK_ROWS_MAX];

    for (size_t r0 = 0; r0 < a->m; r0 += mc) {
        const size_t m = min_size(a->m - r0, mc);
        for (size_t i = 0; i < m; i++) {
            const float *x = a->x + (r0 + i) * a->ldx;
            const float amax = cfg->i8_abs_max(x, k);
            inv[i] = tsr_i8_activation_inverse(amax);
            x_scale[i] = amax / 127.0f;
            if (packed)
                pack_row(cfg, x, k, inv[i], 0, k4, i % mr, packed + (i / mr) * k4 * mr * 4);
        }
        row_block(&call, r0, m, packed, inv, x_scale);
    }
}

/* ---- Configuration -------------------------------------------------------------- */

void tsr_gemm_add_i8_kernel(tsr_gemm_config *cfg, const tsr_gemm_i8_kernel *kernel)
{
    if (cfg->i8_variant_count >= TSR_GEMM_I8_VARIANTS_MAX || kernel->nr > TSR_GEMM_I8_NR_MAX)
        return;
    cfg->i8_variants[cfg->i8_variant_count++] = kernel;
    if (!cfg->i8) {
        cfg->i8 = kernel;
        /* A piece of the panel (NR x 4 bytes a group) in half of L1. */
        size_t kc4 = cfg->l1_bytes / 2 / (kernel->nr * 4);
        cfg->i8_kc4 = kc4 < 16 ? 16 : kc4;
    }
}
