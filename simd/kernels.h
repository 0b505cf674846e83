/*
 * The kernel table: every numeric operation the model performs, as one struct
 * of function pointers per kernel set (scalar, avx2, avx512, neon). A set's
 * table is filled once at start-up (simd/dispatch.c) and only read after, so
 * the model code in core/ never names an ISA.
 *
 * Kernels know nothing of models: they see matrices, rows and strides.
 * All matrices are row-major float32; "ld" is the distance in floats between
 * the starts of two consecutive rows. Unless said otherwise, inputs and
 * outputs must not overlap, pointers need only float alignment, and every
 * kernel is safe to call from several threads on disjoint outputs.
 *
 * Determinism: each output element is reduced in an order that depends only
 * on the shapes of the operands, never on which rows or columns a call was
 * asked to compute, so splitting work across threads or batching rows
 * together gives bit-identical results.
 */
#ifndef TSR_SIMD_KERNELS_H
#define TSR_SIMD_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* How LayerNorm scales x - mean (config key layer_norm_form; the values are
 * those of tessera_layer_norm_form): */
typedef enum tsr_layernorm_form {
    TSR_LAYERNORM_VARIANCE = 0,     /* / sqrt(var + eps), biased var: PyTorch */
    TSR_LAYERNORM_STD = 1,          /* / (sqrt(var) + eps), biased var: Ba et al. */
    TSR_LAYERNORM_STD_UNBIASED = 2, /* / (s + eps), s^2 = var * n/(n-1): Annotated Transformer */
} tsr_layernorm_form;

typedef struct tsr_layernorm_params {
    tsr_layernorm_form form;
    float eps;
} tsr_layernorm_params;

typedef enum tsr_activation {
    TSR_ACT_NONE = 0,
    TSR_ACT_RELU,
    TSR_ACT_GELU, /* erf form: x/2 * (1 + erf(x/sqrt 2)), as PyTorch */
    TSR_ACT_SILU, /* x * sigmoid(x) */
    /* The GELU approximations, both computed as x / (1 + e^-g(x)) (the
     * silu form: x sigmoid(2u) is x/2 (1 + tanh u)): */
    TSR_ACT_GELU_TANH,    /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    TSR_ACT_GELU_SIGMOID, /* x sigmoid(1.702 x): Marian's "gelu" */
} tsr_activation;

/* How a linear layer's weights are held in memory: the model's compute type.
 * Whatever the type, activations, accumulation and everything outside the
 * linear layers stay float32. */
typedef enum tsr_weight_type {
    TSR_WEIGHTS_F32 = 0,
    /* bfloat16, rounded to nearest even at packing (simd/bf16.h) and widened
     * exactly as the kernels read them: a set's bf16 result is bit-identical
     * to its f32 result on the rounded weights. */
    TSR_WEIGHTS_BF16,
    /* int8 per output row, activations quantized per row on every call,
     * int32 accumulation (simd/int8.h): every set gives the same bits. */
    TSR_WEIGHTS_INT8,
} tsr_weight_type;

/*
 * Weights of one linear layer y = x W^T + b, W given as [n][k] (PyTorch's
 * [out_features][in_features]) and repacked once, at load, into whatever layout
 * the kernel set's linear() reads fastest, holding the values as `type`. The
 * packed buffer is allocated by the caller (pack_bytes() bytes, 64-byte
 * aligned) and owned by it.
 */
typedef struct tsr_packed_linear {
    size_t n;             /* output features */
    size_t k;             /* input features */
    const float *bias;    /* [n], or NULL for no bias; not owned */
    void *panels;         /* layout private to the set that packed it */
    tsr_weight_type type; /* what panels hold */
} tsr_packed_linear;

/* y[i][j] = residual[i][j] + act(sum_k x[i][k] W[j][k] + b[j]) for rows
 * i < m and columns n_begin <= j < n_end. n_begin must be a multiple of the
 * set's linear_n_align (threads split the output columns in such units). */
typedef struct tsr_linear_args {
    const float *x;
    size_t ldx;
    size_t m;
    const tsr_packed_linear *w;
    size_t n_begin, n_end;
    tsr_activation act;
    const float *residual; /* NULL for none; may equal y (in-place add) */
    size_t ldr;
    float *y;
    size_t ldy;
} tsr_linear_args;

/* Position-wise FFN for m rows: y = residual + linear2(act(linear1(x))).
 * The m x d_ff intermediate is never materialised whole: rows are processed
 * in blocks of ffn_block_rows through `scratch`, which holds
 * ffn_block_rows * w1->n floats (64-byte aligned). residual may equal y;
 * x must not overlap y. */
typedef struct tsr_ffn_args {
    const float *x;
    size_t ldx;
    size_t m;
    const tsr_packed_linear *w1; /* [d_ff][d_model] */
    const tsr_packed_linear *w2; /* [d_model][d_ff] */
    tsr_activation act;
    const float *residual; /* NULL for none */
    size_t ldr;
    float *y;
    size_t ldy;
    float *scratch;
} tsr_ffn_args;

/*
 * Scaled dot-product attention of one head:
 *   out[i] = sum_j softmax_j(scale * q[i].k[j]) v[j]
 * over the n_k keys that query i may see. Keys past n_k do not exist for this
 * call: a key-padding mask is expressed by passing the sentence's own key
 * count. With causal set, query i sits at absolute position q_pos + i and sees
 * keys j <= q_pos + i only (keys are at positions 0..n_k-1). Every query must
 * see at least one key. Memory beyond the arguments is O(block) per call: the
 * softmax is computed online, a block of keys at a time, with a running
 * maximum and sum per query row.
 *
 * kt, when not NULL, holds the same keys transposed: kt[c * ldkt + j] =
 * k[j * ldk + c] (the decoder keeps its cross-attention keys so). A set may
 * read either: a decoding step's scores then come with plain vector loads,
 * where K needs transposing first. Each score is the same FMA chain either
 * way, so the bits do not depend on it.
 */
typedef struct tsr_attention_args {
    const float *q;
    size_t ldq;
    const float *k;
    size_t ldk;
    const float *kt; /* NULL, or the keys transposed, rows ldkt apart */
    size_t ldkt;
    const float *v;
    size_t ldv;
    float *out;
    size_t ldo;
    size_t n_q, n_k, d;
    float scale;
    int causal;
    size_t q_pos;
} tsr_attention_args;

struct tsr_gemm_config;

typedef struct tsr_kernels {
    const char *name; /* "scalar", "avx2", "avx512", "neon" */

    /* Linear layers and the FFN. Each entry takes the table it was called
     * through, `ks->linear(ks, &args)`, so that one implementation (the
     * portable GEMM frame, simd/gemm/) serves every set that plugs a
     * microkernel into it: such a set describes its microkernel, blocking
     * and packer in `gemm` (tsr_gemm_bind fills these entries), and a new set
     * is its kernels plus one table. NULL for a set with its own linear
     * layers (scalar). */
    const struct tsr_gemm_config *gemm;
    size_t linear_n_align;
    /* Bytes the packed form of an n x k weight takes as `type`, and the
     * packing of W ([n][k] float32) into it: bf16 rounds each value to
     * nearest even, the only change packing ever makes to a value. f32 and
     * bf16 packings hold the rows in order, so that W may be packed a block
     * of rows at a time: rows [r0, r0 + m), r0 a multiple of linear_n_align
     * and m one too unless r0 + m = n, packed alone as an m x k weight, are
     * the bytes of the whole's packing from byte r0 x k x (4, bf16 2) on. */
    size_t (*pack_bytes)(const struct tsr_kernels *ks, tsr_weight_type type, size_t n, size_t k);
    void (*pack_linear)(const struct tsr_kernels *ks, tsr_weight_type type, const float *w,
                        size_t n, size_t k, void *panels);
    /* The int8 packing of weights already quantized (simd/int8.h's form),
     * rows [r0, r0 + rows) of an n x k weight: q [rows][k] in -127..127 and
     * one scale > 0 per row, taken as they are. r0 is a multiple of
     * linear_n_align and rows one too unless r0 + rows = n: packing every
     * block of a weight so (the whole: r0 0, rows n) gives the whole's bytes. */
    void (*pack_linear_i8)(const struct tsr_kernels *ks, const int8_t *q, const float *scales,
                           size_t n, size_t k, size_t r0, size_t rows, void *panels);
    void (*linear)(const struct tsr_kernels *ks, const tsr_linear_args *a);
    size_t ffn_block_rows;
    void (*ffn)(const struct tsr_kernels *ks, const tsr_ffn_args *a);

    /* Attention of one head (see tsr_attention_args). */
    void (*attention)(const tsr_attention_args *a);

    /* For each of `rows` rows: if delta is not NULL, x += delta (stored back
     * to x); then out = LayerNorm(x) * gamma + beta over n elements, in the
     * form norm.form (simd/layernorm_scale.h) with norm.eps. out may equal x
     * (post-norm updates the stream in place). */
    void (*add_layernorm)(float *x, size_t ldx, const float *delta, size_t ldd, size_t rows,
                          size_t n, const float *gamma, const float *beta,
                          tsr_layernorm_params norm, float *out, size_t ldo);

    /* x[i] = act(x[i]) for i < n. */
    void (*activate)(float *x, size_t n, tsr_activation act);

    /* y = x - logsumexp(x) over n elements; y may equal x. */
    void (*log_softmax)(const float *x, size_t n, float *y);
    /* log(sum exp(x[i])), computed without overflow. */
    float (*logsumexp)(const float *x, size_t n);
    /* Index of the largest element; the first one on ties. n >= 1. */
    size_t (*argmax)(const float *x, size_t n);

    /* out[i] = table[ids[i]] * scale + pos[i] for i < count rows of d
     * elements; pos is `count` consecutive rows of the position table (or NULL
     * for none). ids must already be validated against the table size. An
     * element is read before its own output is written and never after, so
     * out may be the table row itself (count 1, in place). */
    void (*embed)(const int32_t *ids, size_t count, const float *table, size_t d, float scale,
                  const float *pos, float *out, size_t ldo);
    /* embed, the table being the rows of a linear layer's weights as packed
     * (a tied output projection read as the target embedding: one copy in
     * memory), d = w->k: for f32 weights the same bits as embed on the
     * unpacked [n][k] weights; for int8 ones, as embed on the table
     * (float)q[r][p] * scale[r] (one rounding: the weights an int8 file
     * gave, held once). Not for bf16 weights. */
    void (*embed_packed)(const struct tsr_kernels *ks, const tsr_packed_linear *w,
                         const int32_t *ids, size_t count, float scale, const float *pos,
                         float *out, size_t ldo);

    /* Rows ids[0..count) of a packed weight as they are held, for packing
     * them alone (a vocabulary shortlist's rows of the output projection):
     * f32 and bf16 weights into out [count][w->k] floats (bf16 widened
     * exactly, so pack_linear as bf16 gives the same values back); int8 ones
     * into q [count][w->k] and scales [count], which pack_linear_i8 takes as
     * they are. The outputs the type does not use are not written. */
    void (*weight_rows)(const struct tsr_kernels *ks, const tsr_packed_linear *w,
                        const int32_t *ids, size_t count, float *out, int8_t *q, float *scales);

    /* Widening at load. src may be unaligned (it points into a mapped file). */
    void (*f16_to_f32)(const void *src, size_t n, float *dst);
    void (*bf16_to_f32)(const void *src, size_t n, float *dst);
} tsr_kernels;

#endif
