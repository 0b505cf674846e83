/*
 * The portable GEMM frame for y = residual + act(x W^T + b), shared by every
 * SIMD kernel set (BLIS style): packing, cache blocking, the decode path for
 * few rows, edges and the FFN, all in plain C at the baseline flags. A kernel
 * set contributes only a register-blocked microkernel and a vector epilogue,
 * compiled with its own flags, and a config naming them (tsr_gemm_config_init).
 *
 * Packed weights: W [n][k] is cut into panels of NR output features; panel j
 * holds, for p = 0..k-1, the NR values W[j*NR + c][p] (c = 0..NR-1)
 * contiguously, zero-padded past n: float32, or bfloat16 (2 bytes a value,
 * same layout, read by the set's bf16 microkernel). int8 weights have panels
 * of their own, in groups of 4 steps of k (simd/gemm/i8-driver.c, below);
 * a set without an int8 microkernel hands them to the portable int8 layer
 * (simd/scalar/i8-linear.c). A microkernel streams one panel with unit
 * stride and never sees a partial panel; the k range of a cache block is a
 * contiguous piece of it.
 *
 * Determinism: every output element is one FMA chain over p = 0..k-1 in
 * ascending order, started from zero; cache blocking over k continues the
 * chain (the microkernel loads the partial sums back into its accumulators)
 * instead of adding partial sums, and every path (packed, decode, any tile
 * height) runs the same chain, so the result depends on neither m, the
 * column range, the blocking nor the thread count. The epilogue then adds the
 * bias, applies the activation and adds the residual, element by element.
 *
 * Two paths (driver.c):
 *   - m <= decode_rows: x is read in place and each weight panel is streamed
 *     from memory exactly once: the row tiles (at most MR rows each) take
 *     turns over decode_kc steps of k, so each piece of the panel is pulled
 *     from memory by the first tile and read from L1 by the others. This path
 *     is bound by memory bandwidth for a few rows, by the FMAs for more.
 *   - more rows: BLIS loops. For each block of NC columns and MC rows, the MC
 *     rows of x are packed (all of k) into MR-row panels that stay in L2; for
 *     each weight panel, k is walked in KC steps so that a KC x NR piece of the
 *     panel stays in L1/L2 while every MR-row tile of the block consumes it. The
 *     block's MC x NR partial sums live in an aligned stack buffer, never in y
 *     (y may be the residual), and the epilogue writes y from it while it is
 *     hot; a set with a fused final kernel (ukernel_final) has its full
 *     tiles apply the epilogue in registers on their last piece instead.
 *     Edges need nothing special: packed rows past m and panel columns past
 *     n are zeros, and the epilogue writes only the valid part.
 *
 * Memory and threads: the config is filled once and only read after, so all
 * entry points are safe to call from several threads on disjoint outputs.
 * The blocked path packs x into a buffer private to the calling thread,
 * allocated on first need, grown when a call needs more, and freed when the
 * thread exits; should that allocation fail, the call computes with x read
 * in place instead (slower, same bits). Nothing else is allocated.
 */
#ifndef TSR_SIMD_GEMM_H
#define TSR_SIMD_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

/* One MR x NR tile: C[i][c] for i < m <= MR and all c < NR, where C is `c`
 * with rows NR floats apart.
 *   accumulate == 0:  C = sum_p A[i][p] * B[p][c], an FMA chain from zero
 *   accumulate != 0:  the chain continues from the values in C
 * over p = 0..k-1 ascending; k may be 0. A[i][p] is a[i * a_rs + p * a_cs]
 * (packed A: a_rs = 1, a_cs = MR; rows of x read in place: a_rs = ldx,
 * a_cs = 1). B is k rows of NR floats, contiguous. Rows of A and C at and
 * past m are neither read nor written. When NR is a multiple of 8, B and C
 * are 32-byte aligned (packed weights start 64-byte aligned).
 *
 * Prefetch hint: with next == NULL the kernel prefetches B itself, some
 * steps ahead (the tile that first reads a piece of weights from memory).
 * Otherwise B is already in cache (a later tile of the same piece) and the
 * kernel instead prefetches `next`, the weights the frame needs after this
 * piece: one NR-float step of it every `every` steps of its own loop, in
 * order, so that memory fetches the next piece while the tiles compute on
 * this one. A kernel may ignore the hint; results never depend on it. */
typedef void (*tsr_gemm_ukernel_fn)(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                    const float *b, float *c, size_t m, int accumulate,
                                    const float *next, size_t every);

/* The same tile with B held as bfloat16 (a bf16 panel: the f32 panel's
 * values rounded, same [k][NR] layout, 2 bytes each). Each B value is widened
 * exactly before its FMA, so the chains, and the bits, are those of the f32
 * microkernel on the rounded weights; `next` likewise steps NR values. */
typedef void (*tsr_gemm_ukernel_bf16_fn)(size_t k, const float *a, size_t a_rs, size_t a_cs,
                                         const uint16_t *b, float *c, size_t m, int accumulate,
                                         const uint16_t *next, size_t every);

/* y = act(c + bias) + residual over m rows and n columns. c is a finished
 * block (rows ldc floats apart); bias (n floats) and residual
 * are already offset to the block, either may be NULL; residual may equal y
 * (each element is read before it is written). */
typedef void (*tsr_gemm_epilogue_fn)(const float *c, size_t ldc, size_t m, size_t n,
                                     const float *bias, tsr_activation act,
                                     const float *residual, size_t ldr, float *y, size_t ldy);

/* Where a finished tile goes: y = act(C + bias) + residual over the tile's
 * rows and its first n <= NR columns, as the epilogue would write them from
 * the tile (bias, residual and y offset to the tile's first row and column;
 * bias and residual may be NULL; residual may equal y). */
typedef struct tsr_gemm_tile_out {
    const float *bias;
    tsr_activation act;
    const float *residual;
    size_t ldr;
    float *y;
    size_t ldy;
    size_t n;
} tsr_gemm_tile_out;

/* Optional: a full MR-row tile of packed A (a_rs = 1, a_cs = MR, f32
 * panels) whose k steps are the last of its chains, written straight to
 * `out` from the accumulators instead of through C and the epilogue: the
 * same chains and the same epilogue operations, so the same bits, without
 * storing and reloading the tile (the epilogue's pass was 4.6 % of a
 * 128 x 2048 x 512 GEMM's samples on Zen 5). C is only read, and only when
 * accumulate != 0 (the chains continue from it). */
typedef void (*tsr_gemm_ukernel_final_fn)(size_t k, const float *a, const float *b,
                                          const float *c, int accumulate, const void *next,
                                          size_t every, const tsr_gemm_tile_out *out);

/* Packs rows [0, m) and k columns of x (rows ldx apart) into ceil(m / mr)
 * panels of mr rows, [k][mr] each, rows past m zero-filled. The frame's
 * portable tsr_gemm_pack_rows is the definition; a set may supply a faster
 * one that writes the same floats. */
typedef void (*tsr_gemm_pack_fn)(const float *x, size_t ldx, size_t m, size_t k, size_t mr,
                                 float *packed);

/*
 * int8 (simd/int8.h gives the arithmetic, simd/gemm/i8-driver.c the frame).
 * Weights: per output row a scale and the column sum of its int8 values, then
 * panels of NR rows as [ceil(k/4)][NR][4] int8 (four consecutive k of one
 * output feature together, k zero-padded to a multiple of 4). Rows of x:
 * quantized per row on every call and packed per MR-row tile as
 * [ceil(k/4)][MR][4] bytes, each the int8 value plus the kernel's a_offset
 * (128 for vpdpbusd, whose first operand is unsigned; 0 for signed
 * products), which the frame takes back out with the column sums:
 * sum (xq + off) w = acc + off * colsum. Integer sums are exact, so the order
 * of k groups and the blocking cannot change a bit: every int8 kernel of
 * every set gives the portable layer's results.
 *
 * One MR x NR tile: C[i][c] (int32, rows NR apart) = [C +] sum over groups
 * g < k4 and q < 4 of A[g][i][q] * B[g][c][q], for rows i < m <= MR only
 * (A is a tile's packed rows, B a panel's, both contiguous).
 */
typedef void (*tsr_gemm_ukernel_i8_fn)(size_t k4, const uint8_t *a, const int8_t *b,
                                       int32_t *c, size_t m, int accumulate);

typedef struct tsr_gemm_i8_kernel {
    const char *name; /* e.g. "avx512-vnni 12x32", for info and test messages */
    size_t mr, nr;    /* nr divides the set's linear_n_align; <= TSR_GEMM_I8_NR_MAX */
    int a_offset;     /* 128 (x held as unsigned xq + 128) or 0 (signed xq) */
    tsr_gemm_ukernel_i8_fn ukernel;
    /* A loop of the kernel's multiply-add instructions alone, compiled with
     * its flags: runs `iterations` rounds, returns the int8 multiply-adds x 2
     * it did (its peak: tessera_runtime_limits, tessera-perf); NULL: none. */
    double (*peak)(uint64_t iterations);
} tsr_gemm_i8_kernel;

/* The steps around the int8 microkernel, as vector code of the set (the
 * frame's portable ones by default), each with the arithmetic of
 * simd/int8.h, so bit-identical to them:
 *   abs_max:    max_p |x[p]| (NaNs passed over, as fmaxf);
 *   quantize:   q[p] = (uint8_t)(round(x[p] * inv) + offset), p < k;
 *   dequantize: out[c] = ((float)(acc[c] - offset * sums[c]) * w_scales[c])
 *               * x_scale, c < n (n a multiple of 4). */
typedef float (*tsr_gemm_i8_abs_max_fn)(const float *x, size_t k);
typedef void (*tsr_gemm_i8_quantize_fn)(const float *x, size_t k, float inv, int offset,
                                        uint8_t *q);
typedef void (*tsr_gemm_i8_dequantize_fn)(const int32_t *acc, size_t n, int32_t offset,
                                          const int32_t *sums, const float *w_scales,
                                          float x_scale, float *out);

/* Optional: dequantize and the f32 epilogue in one pass over a tile, rows
 * i < m and columns c < n of the int32 sums acc (rows ldacc apart; sums and
 * w_scales padded to whole vectors of the panel):
 *     y = act(((float)(acc - offset * sums[c]) * w_scales[c]) * x_scales[i]
 *             + bias[c]) + residual
 * with the same operations in the same order as dequantize, then the set's
 * epilogue, so the same bits; NULL: the frame runs those two. */
typedef void (*tsr_gemm_i8_epilogue_fn)(const int32_t *acc, size_t ldacc, size_t m, size_t n,
                                        int32_t offset, const int32_t *sums,
                                        const float *w_scales, const float *x_scales,
                                        const float *bias, tsr_activation act,
                                        const float *residual, size_t ldr, float *y, size_t ldy);

/* The int8 kernels a set was built with and this CPU runs, best first. */
#define TSR_GEMM_I8_VARIANTS_MAX 4

/* The widest int8 panel a kernel may have (the packing holds a panel's rows
 * of a piece of k on the stack). */
#define TSR_GEMM_I8_NR_MAX 64

typedef struct tsr_gemm_config {
    size_t mr, nr;          /* microkernel tile */
    size_t l1_bytes;        /* L1 data cache as reported (in a sane range) */
    size_t kc;              /* k per block: a KC x NR weight piece fills L1 (a set may take more) */
    size_t a_block_floats;  /* packed rows of x (MC x k) fill L2 */
    size_t b_block_floats;  /* weight panels of one NC block (k x NC) in a share of L3 */
    size_t decode_rows;     /* at most this many rows: the decode path */
    size_t decode_kc;       /* k steps per turn of the row tiles on one panel (decode) */
    size_t ffn_block_rows;  /* rows of the FFN intermediate per scratch block */
    tsr_gemm_ukernel_fn ukernel;
    tsr_gemm_ukernel_bf16_fn ukernel_bf16; /* for bf16 panels; every set has one */
    tsr_gemm_epilogue_fn epilogue;
    tsr_gemm_ukernel_final_fn ukernel_final; /* NULL: ukernel, then epilogue */
    tsr_gemm_pack_fn pack_rows; /* tsr_gemm_pack_rows unless the set has its own */
    /* int8: the kernel in use (NULL: the portable int8 layer), and every one
     * the set could use here (for the tests, which run each). */
    const tsr_gemm_i8_kernel *i8;
    const tsr_gemm_i8_kernel *i8_variants[TSR_GEMM_I8_VARIANTS_MAX];
    size_t i8_variant_count;
    size_t i8_kc4;          /* k groups per block: a piece of an int8 panel in L1 */
    tsr_gemm_i8_abs_max_fn i8_abs_max;
    tsr_gemm_i8_quantize_fn i8_quantize;
    tsr_gemm_i8_dequantize_fn i8_dequantize;
    tsr_gemm_i8_epilogue_fn i8_epilogue; /* NULL: i8_dequantize, then epilogue */
} tsr_gemm_config;

/* Fills cfg for an mr x nr microkernel (mr * nr <= 1024) from the cache sizes
 * the system reports, with fallbacks when it reports none; pack_rows is the
 * portable packer, for the set to replace if it has a faster one. Call once,
 * at table init. */
void tsr_gemm_config_init(tsr_gemm_config *cfg, size_t mr, size_t nr, tsr_gemm_ukernel_fn ukernel,
                          tsr_gemm_epilogue_fn epilogue);

/* Adds an int8 kernel this CPU runs to cfg's variants (at most
 * TSR_GEMM_I8_VARIANTS_MAX); the first one added is the one used. Call in
 * order of preference, at table init. */
void tsr_gemm_add_i8_kernel(tsr_gemm_config *cfg, const tsr_gemm_i8_kernel *kernel);

/* Makes the frame serve table t's linear layers and FFN with the set's
 * config: t->gemm = cfg (which must outlive the table: a set keeps it in a
 * static, filled once at init), linear_n_align = cfg->nr, ffn_block_rows =
 * cfg->ffn_block_rows, the three GEMM entries the frame's and ffn
 * tsr_ffn_in_blocks. */
void tsr_gemm_bind(tsr_kernels *t, const tsr_gemm_config *cfg);

/* The frame's implementations, for a config (a table reaches them through
 * tsr_gemm_bind). */
size_t tsr_gemm_pack_bytes(const tsr_gemm_config *cfg, tsr_weight_type type, size_t n,
                           size_t k);
void tsr_gemm_pack_linear(const tsr_gemm_config *cfg, tsr_weight_type type, const float *w,
                          size_t n, size_t k, void *panels);
void tsr_gemm_linear(const tsr_gemm_config *cfg, const tsr_linear_args *a);
void tsr_gemm_embed_packed(const tsr_kernels *ks, const tsr_packed_linear *w, const int32_t *ids,
                           size_t count, float scale, const float *pos, float *out, size_t ldo);
void tsr_gemm_weight_rows(const tsr_kernels *ks, const tsr_packed_linear *w, const int32_t *ids,
                          size_t count, float *out, int8_t *q, float *scales);

/* The portable steps around the int8 microkernel (the config's defaults). */
float tsr_gemm_i8_abs_max(const float *x, size_t k);
void tsr_gemm_i8_quantize(const float *x, size_t k, float inv, int offset, uint8_t *q);
void tsr_gemm_i8_dequantize(const int32_t *acc, size_t n, int32_t offset, const int32_t *sums,
                            const float *w_scales, float x_scale, float *out);

/* The int8 frame (simd/gemm/i8-driver.c), for cfg->i8 != NULL. */
size_t tsr_gemm_i8_pack_bytes(const tsr_gemm_i8_kernel *kernel, size_t n, size_t k);
void tsr_gemm_i8_pack_linear(const tsr_gemm_i8_kernel *kernel, const float *w, size_t n,
                             size_t k, void *panels);
/* Rows [r0, r0 + rows) of an n x k weight already quantized (the kernel
 * table's pack_linear_i8). */
void tsr_gemm_i8_pack_quantized(const tsr_gemm_i8_kernel *kernel, const int8_t *q,
                                const float *scales, size_t n, size_t k, size_t r0, size_t rows,
                                void *panels);
/* Row j < n of packed int8 weights as floats: out[p] = (float)q[j][p] *
 * scale[j], p < k. */
void tsr_gemm_i8_row(const tsr_gemm_i8_kernel *kernel, const void *panels, size_t n, size_t k,
                     size_t j, float *out);
/* Row j's int8 values (k of them) and its scale, as packed. */
void tsr_gemm_i8_row_quantized(const tsr_gemm_i8_kernel *kernel, const void *panels, size_t n,
                               size_t k, size_t j, int8_t *q, float *scale);
void tsr_gemm_i8_linear(const tsr_gemm_config *cfg, const tsr_linear_args *a);

/* The FFN entry of every set (simd/kernels.h): its two linear layers
 * through ks->linear, ks->ffn_block_rows rows at a time through a->scratch
 * (block_rows x d_ff floats), so the m x d_ff intermediate is never whole.
 * Bit-identical to two whole linear calls, since no set's linear results
 * depend on its row count. */
void tsr_ffn_in_blocks(const tsr_kernels *ks, const tsr_ffn_args *a);

/* The portable tsr_gemm_pack_fn. */
void tsr_gemm_pack_rows(const float *x, size_t ldx, size_t m, size_t k, size_t mr, float *packed);

#endif
