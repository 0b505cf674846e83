/*
 * The GEMM driver (simd/gemm/gemm.h): block sizes from the cache sizes, the
 * decode path, the blocked path for many rows, and the FFN built on them.
 * Portable C at the baseline flags; all arithmetic is in the set's
 * microkernel and epilogue.
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "simd/gemm/gemm.h"
#include "simd/scalar/scalar.h"
#include "simd/thread_scratch.h"

/* Partial sums of one MC x NR block of the output (the blocked path), and one
 * MR x NR tile (the decode path): on the stack, 64-byte aligned. */
#define BLOCK_FLOATS 8192

/* At most this many rows take the decode path: enough to cover beam search
 * and small batches of decoding steps (several row tiles share each panel),
 * few enough that re-reading x from L1 per panel costs nothing. */
#define DECODE_ROWS 16

/* k steps per turn of the row tiles in the decode path: short enough that
 * the panel piece of one turn (3 KB for NR = 16) stays in L1 for all tiles,
 * long enough that the call overhead is small and that the prefetches of a
 * turn arrive before the next one. Measured best at 48 (among 16 to 128) for
 * the avx2 6x16 kernel, which prefetches 48 steps ahead. */
#define DECODE_KC 48

/* ---- Block sizes ------------------------------------------------------------ */

static size_t cache_bytes(int name, size_t fallback)
{
    long v = sysconf(name);
    return v > 0 ? (size_t)v : fallback;
}

static size_t round_down(size_t v, size_t unit)
{
    return v / unit * unit;
}

static size_t round_up(size_t v, size_t unit)
{
    return (v + unit - 1) / unit * unit;
}

static size_t clamp(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

void tsr_gemm_config_init(tsr_gemm_config *cfg, size_t mr, size_t nr, tsr_gemm_ukernel_fn ukernel,
                          tsr_gemm_epilogue_fn epilogue)
{
#ifdef _SC_LEVEL1_DCACHE_SIZE
    size_t l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
    size_t l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 256 << 10);
    size_t l3 = cache_bytes(_SC_LEVEL3_CACHE_SIZE, 8 << 20);
#else
    size_t l1 = 32 << 10, l2 = 256 << 10, l3 = 8 << 20;
#endif
    /* Some systems report nonsense (a whole package's L3, a 4 KB L1 under an
     * emulator); keep the sizes in a sane range. */
    l1 = clamp(l1, 16 << 10, 128 << 10);
    l2 = clamp(l2, 128 << 10, 4 << 20);
    l3 = clamp(l3, 1 << 20, 64 << 20);

    cfg->mr = mr;
    cfg->nr = nr;
    cfg->l1_bytes = l1;
    /* A KC x NR piece of a weight panel, read by every row tile of a block,
     * as large as L1: the classic half of L1 would keep it all there, but
     * the tiles stream it from L2 just as well (the kernel needs 11 bytes a
     * cycle, L2 gives 32) and the longer piece halves the kernel calls and
     * the reloads of the partial sums (measured 1-5% faster at k = 512, the
     * same at k = 2048, on Zen 3). */
    cfg->kc = clamp(round_down(l1 / (nr * sizeof(float)), 8), 32, 2048);
    /* MC rows of packed x (all of k) fill L2, from where every weight piece
     * re-reads them. All of L2 rather than half: more rows share each weight
     * piece brought into L1 (measured 4% faster at 128 x 8000 x 512, the same
     * elsewhere). */
    cfg->a_block_floats = l2 / sizeof(float);
    /* The weight panels of one NC block, shared by all MC blocks of rows, take
     * a quarter of L3 (the rest is other cores' and the activations'). */
    cfg->b_block_floats = l3 / 4 / sizeof(float);
    cfg->decode_rows = DECODE_ROWS;
    cfg->decode_kc = DECODE_KC;
    /* Rows of the FFN intermediate per block: the FFN's speed is flat from 4
     * to 32 row tiles (measured, d_model 512, d_ff 2048), so a small scratch
     * (48 x d_ff for the 6-row avx2 kernel) that stays near L2. */
    cfg->ffn_block_rows = 8 * mr;
    cfg->ukernel = ukernel;
    cfg->epilogue = epilogue;
    cfg->ukernel_final = NULL;
    cfg->pack_rows = tsr_gemm_pack_rows;
    cfg->i8 = NULL;
    cfg->i8_variant_count = 0;
    cfg->i8_kc4 = 0;
    cfg->i8_abs_max = tsr_gemm_i8_abs_max;
    cfg->i8_quantize = tsr_gemm_i8_quantize;
    cfg->i8_dequantize = tsr_gemm_i8_dequantize;
    cfg->i8_epilogue = NULL;
}

/* This thread's buffer for `floats` packed floats of x (simd/thread_scratch.h),
 * or NULL: the caller then reads x in place. */
static float *packing_buffer(size_t floats)
{
    if (floats > SIZE_MAX / sizeof(float))
        return NULL;
    return tsr_thread_scratch(TSR_SCRATCH_GEMM_PACK, floats * sizeof(float));
}

/* ---- Both paths ------------------------------------------------------------------ */

/* Bytes of one weight value in a panel of `type`. */
static size_t value_bytes(tsr_weight_type type)
{
    return type == TSR_WEIGHTS_BF16 ? 2 : sizeof(float);
}

/* The weights `values` values into a panel buffer of `type`. */
static const void *panel_at(const void *panels, tsr_weight_type type, size_t values)
{
    return (const char *)panels + values * value_bytes(type);
}

/* One microkernel call on a panel piece of `type` (next, when not NULL,
 * points into the same panels). */
static inline void run_ukernel(const tsr_gemm_config *cfg, tsr_weight_type type, size_t k,
                               const float *a, size_t a_rs, size_t a_cs, const void *b, float *c,
                               size_t m, int accumulate, const void *next, size_t every)
{
    if (type == TSR_WEIGHTS_BF16)
        cfg->ukernel_bf16(k, a, a_rs, a_cs, b, c, m, accumulate, next, every);
    else
        cfg->ukernel(k, a, a_rs, a_cs, b, c, m, accumulate, next, every);
}

/* Asks for the lines of y (and of the residual) that the epilogue of rows
 * [i0, i0 + rows) and columns [j0, j0 + cols) will touch, while the
 * microkernel computes them. Each weight panel's epilogue writes one line of
 * each row; with many columns (y larger than L2) those lines are cold, and
 * the epilogue's stores would stall on them once the store buffer fills
 * (measured 0.5 to 3% of the whole call at n = 2048 and 8000). */
static void prefetch_outputs(const tsr_linear_args *a, size_t i0, size_t rows, size_t j0,
                             size_t cols)
{
    for (size_t i = i0; i < i0 + rows; i++) {
        const float *y_row = a->y + i * a->ldy + j0;
        __builtin_prefetch(y_row, 1, 3);
        __builtin_prefetch(y_row + cols - 1, 1, 3);
        if (a->residual && a->residual != a->y) {
            const float *r_row = a->residual + i * a->ldr + j0;
            __builtin_prefetch(r_row, 0, 3);
            __builtin_prefetch(r_row + cols - 1, 0, 3);
        }
    }
}

/* ---- The decode path ----------------------------------------------------------- */

/* Rows [0, m) of x read in place (any m; m <= decode_rows in practice). Each
 * weight panel is streamed from memory once: its row tiles take turns over
 * k in chunks of decode_kc steps, so the first tile to read a chunk pulls it
 * into L1 and the others find it there, and the microkernel's prefetch of
 * the lines ahead, issued by every tile, keeps memory busy while the other
 * tiles compute. The chains continue across chunks through the tile
 * buffers. Row tiles are balanced (16 rows: 6 + 5 + 5) so none is too short
 * to hide the FMA latency. */
static void linear_in_place(const tsr_gemm_config *cfg, const tsr_linear_args *a)
{
    _Alignas(64) float tiles_buf[BLOCK_FLOATS];
    const tsr_packed_linear *w = a->w;
    const size_t k = w->k, mr = cfg->mr, nr = cfg->nr;
    const size_t tiles_max = BLOCK_FLOATS / (mr * nr);

    for (size_t r0 = 0; r0 < a->m; r0 += tiles_max * mr) {
        const size_t m = a->m - r0 < tiles_max * mr ? a->m - r0 : tiles_max * mr;
        const size_t tiles = (m + mr - 1) / mr;
        const size_t chunk = tiles > 1 ? cfg->decode_kc : k;
        const float *x = a->x + r0 * a->ldx;

        for (size_t j0 = a->n_begin; j0 < a->n_end; j0 += nr) {
            const void *panel = panel_at(w->panels, w->type, j0 * k);
            size_t cols = a->n_end - j0 < nr ? a->n_end - j0 : nr;
            size_t p0 = 0;
            do {
                size_t kb = k - p0 < chunk ? k - p0 : chunk;
                size_t i0 = 0;
                for (size_t t = 0; t < tiles; t++) {
                    size_t rows = m / tiles + (t < m % tiles);
                    if (p0 == 0)
                        prefetch_outputs(a, r0 + i0, rows, j0, cols);
                    run_ukernel(cfg, w->type, kb, x + i0 * a->ldx + p0, a->ldx, 1,
                                panel_at(panel, w->type, p0 * nr), tiles_buf + t * mr * nr,
                                rows, p0 > 0, NULL, 1);
                    i0 += rows;
                }
                p0 += kb;
            } while (p0 < k);

            size_t i0 = 0;
            for (size_t t = 0; t < tiles; t++) {
                size_t rows = m / tiles + (t < m % tiles), i = r0 + i0;
                cfg->epilogue(tiles_buf + t * mr * nr, nr, rows, cols,
                              w->bias ? w->bias + j0 : NULL, a->act,
                              a->residual ? a->residual + i * a->ldr + j0 : NULL, a->ldr,
                              a->y + i * a->ldy + j0, a->ldy);
                i0 += rows;
            }
        }
    }
}

/* ---- The blocked path ------------------------------------------------------------ */

/* Rows per MC block: as many MR-row panels of packed x (all of k) as fit the
 * L2 share and the partial-sum buffer, then balanced over the blocks m needs
 * so the last block is not a sliver. */
static size_t rows_per_block(const tsr_gemm_config *cfg, size_t m, size_t k)
{
    const size_t mr = cfg->mr;
    size_t cap = round_down(cfg->a_block_floats / (k ? k : 1), mr);
    cap = clamp(cap, mr, round_down(BLOCK_FLOATS / cfg->nr, mr));
    size_t blocks = (m + cap - 1) / cap;
    return round_up((m + blocks - 1) / blocks, mr);
}

/* Columns per NC block: the weight panels of a block fit the L3 share. */
static size_t cols_per_block(const tsr_gemm_config *cfg, size_t k)
{
    return clamp(round_down(cfg->b_block_floats / (k ? k : 1), cfg->nr), cfg->nr, SIZE_MAX);
}

/* Row tiles after the first that share the prefetch of the next weight piece
 * (see panel_block). */
#define NEXT_PIECE_TILES 4

/* Rows [0, rows) of the output, columns [j0, j0 + cols) of one weight panel,
 * from `rows` rows of x packed in `packed`: k in KC steps, every row tile of
 * the block per step, so the panel's KC x NR piece is read from L1 by all of
 * them; the chain of each output continues across steps through `block`.
 *
 * Memory: the first tile pulls the piece in (prefetching it ahead itself);
 * the next tiles, which find it in cache, prefetch the piece that follows in
 * memory (this panel's next k block, or the next panel) a share each, one
 * line every few steps, so that the weights stream while the tiles compute
 * instead of only while the first one does (an encoder pass of 30 rows, its
 * 75 MB of weights cold, one thread on Zen 3: 14.8-16.0 ms before, 12.8-13.0
 * after; perf/RESULTS.md). */
static void panel_block(const tsr_gemm_config *cfg, const tsr_linear_args *a, const float *packed,
                        size_t i_base, size_t rows, size_t j0, size_t cols, float *block)
{
    const size_t k = a->w->k, mr = cfg->mr, nr = cfg->nr;
    /* k in pieces of (nearly) equal length, at most KC: k = 512 with KC =
     * 384 runs as 256 + 256, not 384 + 128, so that the piece that follows
     * any piece (in this panel or at the start of the next) is no longer
     * than it, and the sharers below, spreading the next piece over this
     * one's steps, prefetch all of it. */
    const size_t pieces = (k + cfg->kc - 1) / cfg->kc;
    const size_t kc = pieces ? (k + pieces - 1) / pieces : k;
    const size_t tiles = (rows + mr - 1) / mr;
    const size_t sharers = tiles - 1 < NEXT_PIECE_TILES ? tiles - 1 : NEXT_PIECE_TILES;
    const tsr_weight_type type = a->w->type;
    const void *panel = panel_at(a->w->panels, type, j0 * k);
    /* Full f32 tiles finish straight into y on their last piece when the set
     * has a fused kernel; the rest (a partial last tile, bf16 panels) go
     * through the block and the epilogue from row `unfused`. */
    const int fuse = cfg->ukernel_final && type == TSR_WEIGHTS_F32;
    const size_t unfused = fuse ? rows / mr * mr : 0;
    size_t p0 = 0;

    do {
        size_t kb = k - p0 < kc ? k - p0 : kc;
        /* Panels are contiguous, so the piece after this one starts where
         * it ends, whether in this panel or the next (whose first piece is
         * kc long). */
        const void *next_piece = panel_at(panel, type, (p0 + kb) * nr);
        const size_t next_kb = p0 + kb < k ? (k - p0 - kb < kc ? k - p0 - kb : kc) : kc;
        const size_t share = sharers ? (next_kb + sharers - 1) / sharers : 0;
        for (size_t t = 0; t < tiles; t++) {
            /* The last tile computes only the rows there are (30 rows in
             * 12-row tiles: 12 + 12 + 6, not 36): the same chains, fewer. */
            const size_t tile_rows = rows - t * mr < mr ? rows - t * mr : mr;
            /* Asked for as the tile's last piece starts, not its first: a
             * block's outputs all at once, rows a power of two apart, fill a
             * few L1 sets and evicted each other and the weights
             * (128 x 2048 x 512, Zen 5: median 86.5 -> 88.9 % of peak). */
            if (p0 + kb == k)
                prefetch_outputs(a, i_base + t * mr, tile_rows, j0, cols);
            const void *next =
                t >= 1 && t <= sharers ? panel_at(next_piece, type, (t - 1) * share * nr) : NULL;
            if (p0 + kb == k && t * mr < unfused) {
                const size_t i = i_base + t * mr;
                const tsr_gemm_tile_out out = {
                    .bias = a->w->bias ? a->w->bias + j0 : NULL, .act = a->act,
                    .residual = a->residual ? a->residual + i * a->ldr + j0 : NULL,
                    .ldr = a->ldr, .y = a->y + i * a->ldy + j0, .ldy = a->ldy, .n = cols,
                };
                cfg->ukernel_final(kb, packed + t * mr * k + p0 * mr,
                                   panel_at(panel, type, p0 * nr), block + t * mr * nr, p0 > 0,
                                   next, sharers, &out);
                continue;
            }
            run_ukernel(cfg, type, kb, packed + t * mr * k + p0 * mr, 1, mr,
                        panel_at(panel, type, p0 * nr), block + t * mr * nr, tile_rows, p0 > 0,
                        next, sharers);
        }
        p0 += kb;
    } while (p0 < k);

    if (unfused < rows) {
        const size_t i = i_base + unfused;
        cfg->epilogue(block + unfused * nr, nr, rows - unfused, cols,
                      a->w->bias ? a->w->bias + j0 : NULL, a->act,
                      a->residual ? a->residual + i * a->ldr + j0 : NULL, a->ldr,
                      a->y + i * a->ldy + j0, a->ldy);
    }
}

static void linear_packed(const tsr_gemm_config *cfg, const tsr_linear_args *a, float *packed,
                          size_t mc)
{
    _Alignas(64) float block[BLOCK_FLOATS];
    const size_t k = a->w->k, nr = cfg->nr;
    const size_t nc = cols_per_block(cfg, k);

    for (size_t jc = a->n_begin; jc < a->n_end; jc += nc) {
        size_t jc_end = a->n_end - jc < nc ? a->n_end : jc + nc;
        for (size_t ic = 0; ic < a->m; ic += mc) {
            size_t rows = a->m - ic < mc ? a->m - ic : mc;
            cfg->pack_rows(a->x + ic * a->ldx, a->ldx, rows, k, cfg->mr, packed);
            for (size_t j0 = jc; j0 < jc_end; j0 += nr) {
                size_t cols = jc_end - j0 < nr ? jc_end - j0 : nr;
                panel_block(cfg, a, packed, ic, rows, j0, cols, block);
            }
        }
    }
}

void tsr_gemm_linear(const tsr_gemm_config *cfg, const tsr_linear_args *a)
{
    if (a->m == 0 || a->n_end <= a->n_begin)
        return;
    if (a->w->type == TSR_WEIGHTS_INT8) {
        /* The set's int8 kernel in the int8 frame, or, for a set without
         * one, the portable layer: the same bits (simd/int8.h). */
        if (cfg->i8)
            tsr_gemm_i8_linear(cfg, a);
        else
            tsr_i8_linear__scalar(a);
        return;
    }
    if (a->m > cfg->decode_rows) {
        size_t mc = rows_per_block(cfg, a->m, a->w->k);
        float *packed = packing_buffer(mc * a->w->k);
        if (packed) {
            linear_packed(cfg, a, packed, mc);
            return;
        }
    }
    /* Few rows, or no memory to pack many: same chains, same bits. */
    linear_in_place(cfg, a);
}

/* ---- The FFN -------------------------------------------------------------------- */

void tsr_ffn_in_blocks(const tsr_kernels *ks, const tsr_ffn_args *a)
{
    const size_t d_ff = a->w1->n;
    const size_t block_rows = ks->ffn_block_rows;

    for (size_t r0 = 0; r0 < a->m; r0 += block_rows) {
        size_t rows = a->m - r0 < block_rows ? a->m - r0 : block_rows;

        tsr_linear_args up = {
            .x = a->x + r0 * a->ldx, .ldx = a->ldx, .m = rows,
            .w = a->w1, .n_begin = 0, .n_end = d_ff, .act = a->act,
            .residual = NULL, .ldr = 0,
            .y = a->scratch, .ldy = d_ff,
        };
        ks->linear(ks, &up);

        tsr_linear_args down = {
            .x = a->scratch, .ldx = d_ff, .m = rows,
            .w = a->w2, .n_begin = 0, .n_end = a->w2->n, .act = TSR_ACT_NONE,
            .residual = a->residual ? a->residual + r0 * a->ldr : NULL, .ldr = a->ldr,
            .y = a->y + r0 * a->ldy, .ldy = a->ldy,
        };
        ks->linear(ks, &down);
    }
}

/* ---- The table entries ------------------------------------------------------------- */

static size_t table_pack_bytes(const tsr_kernels *ks, tsr_weight_type type, size_t n, size_t k)
{
    return tsr_gemm_pack_bytes(ks->gemm, type, n, k);
}

static void table_pack_linear(const tsr_kernels *ks, tsr_weight_type type, const float *w,
                              size_t n, size_t k, void *panels)
{
    tsr_gemm_pack_linear(ks->gemm, type, w, n, k, panels);
}

static void table_pack_linear_i8(const tsr_kernels *ks, const int8_t *q, const float *scales,
                                 size_t n, size_t k, size_t r0, size_t rows, void *panels)
{
    if (ks->gemm->i8)
        tsr_gemm_i8_pack_quantized(ks->gemm->i8, q, scales, n, k, r0, rows, panels);
    else
        tsr_i8_pack_quantized__scalar(q, scales, n, k, r0, rows, panels);
}

static void table_linear(const tsr_kernels *ks, const tsr_linear_args *a)
{
    tsr_gemm_linear(ks->gemm, a);
}

void tsr_gemm_bind(tsr_kernels *t, const tsr_gemm_config *cfg)
{
    t->gemm = cfg;
    t->linear_n_align = cfg->nr;
    t->pack_bytes = table_pack_bytes;
    t->pack_linear = table_pack_linear;
    t->pack_linear_i8 = table_pack_linear_i8;
    t->embed_packed = tsr_gemm_embed_packed;
    t->weight_rows = tsr_gemm_weight_rows;
    t->linear = table_linear;
    t->ffn_block_rows = cfg->ffn_block_rows;
    t->ffn = tsr_ffn_in_blocks;
}
