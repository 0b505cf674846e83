/* The in-memory model: configuration, the chosen kernel table and every
 * weight, already widened to float32 (linear layers: converted to the
 * compute type) and packed for that table. Immutable after tsr_model_build
 * returns. */
#ifndef TSR_CORE_MODEL_MODEL_H
#define TSR_CORE_MODEL_MODEL_H

#include <stddef.h>

#include "core/tessera.h"
#include "simd/kernels.h"
#include "threads/numa_memory.h"

typedef struct tsr_norm {
    float *gamma; /* NULL when the norm is absent (optional final norms) */
    float *beta;
} tsr_norm;

typedef struct tsr_self_attention {
    tsr_packed_linear qkv; /* in_proj: [3d][d], q, k, v stacked */
    tsr_packed_linear out; /* out_proj: [d][d] */
} tsr_self_attention;

/* Cross-attention splits in_proj: q is applied to the decoder stream at every
 * step, k and v to the encoder output once per sentence. */
typedef struct tsr_cross_attention {
    tsr_packed_linear q;  /* in_proj rows [0, d) */
    tsr_packed_linear kv; /* in_proj rows [d, 3d) */
    tsr_packed_linear out;
} tsr_cross_attention;

typedef struct tsr_encoder_layer {
    tsr_self_attention attn;
    tsr_packed_linear ff1, ff2;
    tsr_norm norm1, norm2;
} tsr_encoder_layer;

typedef struct tsr_decoder_layer {
    tsr_self_attention self_attn;
    tsr_cross_attention cross;
    tsr_packed_linear ff1, ff2;
    tsr_norm norm1, norm2, norm3;
} tsr_decoder_layer;

struct tessera_model {
    tessera_config cfg;
    const tsr_kernels *kernels;
    tessera_compute_type compute_type;
    tsr_weight_type weight_type; /* how the linear layers hold it */
    tsr_activation act;
    float emb_scale;
    size_t d, d_head, n_heads;

    /* Read through tsr_embed_tokens (core/network/embedding.h), which knows where
     * each side's rows are: */
    float *src_emb;   /* [src_vocab][d]; NULL when shared with the target's */
    float *tgt_emb;   /* [tgt_vocab][d]; NULL when it is the generator's
                         panels (a tied output projection held once: f32,
                         or int8 as an int8 file gave it) */
    float *positions; /* [max_positions][d]: the file's table or the sinusoid,
                         from row position_offset */
    float *dec_positions; /* the decoder's: its own table, or positions */
    tsr_encoder_layer *enc;
    tsr_decoder_layer *dec;
    tsr_norm enc_norm, dec_norm;
    tsr_norm enc_emb_norm, dec_emb_norm; /* after embedding + positions; optional */
    tsr_packed_linear generator;

    /* Every packed panel lives in one arena, so that the placement plan can
     * give each NUMA node a copy of its own: replicas[0] is where the
     * panels pointers point, replicas[c] the same bytes on copy c's node. */
    unsigned char *arena;
    size_t arena_bytes, arena_used;
    unsigned char **replicas;
    tsr_numa_block *replica_blocks; /* NULL when replicas[0] is the arena itself */
    int *replica_node;              /* [n_replicas]: its topology node, or -1 (plain,
                                       interleaved) */
    int n_replicas;

    /* The float tensors kept as they are (embeddings, positions, norms,
     * biases), carved from one block sized by the checking pass. */
    float *plain;
    size_t plain_floats, plain_used;
    size_t weight_bytes;

    /* The tokenizers and vocabularies config.json names (text/tokenizer.h);
     * NULL when it names none. */
    struct tsr_model_text *text;
    /* config.json's languages (core/model/languages.h); NULL for a model
     * without them, and for one built by tessera_model_random. */
    struct tsr_languages *languages;
};

/* The panels thread `copy`'s weights: w itself for copy 0, else a copy of w
 * in `local` pointing into replica `copy`. */
static inline const tsr_packed_linear *tsr_model_replica(const tessera_model *m,
                                                         const tsr_packed_linear *w, int copy,
                                                         tsr_packed_linear *local)
{
    if (copy <= 0 || copy >= m->n_replicas)
        return w;
    *local = *w;
    local->panels = m->replicas[copy] + ((unsigned char *)w->panels - m->replicas[0]);
    return local;
}

/* The weight copy a thread on topology node `node` (-1: none) reads: the copy
 * on that node, else copy 0. */
int tsr_model_copy_for_node(const tessera_model *m, int node);

/* Where the weights come from: a safetensors file or a random generator.
 * fetch fills dst with the `count` = product(shape) float32 values of tensor
 * `name`, which must have exactly `shape` (or, with rows_at_least, at least
 * shape[0] rows, of which only the first shape[0] are read), using `scratch`
 * (tsr_fetch_scratch_bytes(count, shape[0]) bytes, 64-byte aligned) as it
 * needs. Returns 0 when filled, 1 when the tensor is absent and `optional`,
 * a negative status with a message naming the tensor otherwise. With dst
 * NULL it only checks (the pass that runs before the model allocates
 * anything): present, of that shape and of a dtype the load reads. */
typedef struct tsr_weight_source {
    int (*fetch)(void *ctx, const char *name, const size_t *shape, size_t ndim, int optional,
                 int rows_at_least, float *dst, void *scratch, char *err, size_t err_len);
    /* Rows [row0, row0 + rows) of the 2-D tensor `name` [total_rows][cols]
     * (which the checking pass vouched for) as float32 into dst, through
     * scratch (tsr_fetch_scratch_bytes(rows * cols, rows) bytes), checked
     * as fetch checks them; NULL when the source reads tensors whole only.
     * The load fetches a large linear weight so, a block of rows at a time,
     * where a whole one would be staged at once. */
    int (*fetch_rows)(void *ctx, const char *name, size_t total_rows, size_t cols, size_t row0,
                      size_t rows, float *dst, void *scratch, char *err, size_t err_len);
    /* Rows [row0, row0 + rows) of a linear weight [total_rows][cols]
     * already quantized (int8 values in -127..127 and a scale per row), for
     * compute type int8, or NULL when the source has none: returns 1 when
     * the tensor (or a value of those rows: a -128) is not held so (the
     * caller then fetches floats), 0 when q and scales were filled, a
     * negative tessera_status on error. */
    int (*fetch_i8)(void *ctx, const char *name, size_t total_rows, size_t cols, size_t row0,
                    size_t rows, int8_t *q, float *scales, char *err, size_t err_len);
    void *ctx;
    /* Non-zero when fetch, fetch_rows and fetch_i8 may run on several
     * threads at once (a file); a source with state (the random one) is
     * read in order. */
    int concurrent;
} tsr_weight_source;

/* The scratch a fetch of `values` values in `rows` rows may use: their
 * bytes as F16, BF16 or I8 and the rows' I8 scales, each 64-byte aligned. */
static inline size_t tsr_fetch_scratch_bytes(size_t values, size_t rows)
{
    return 2 * values + 4 * rows + 128;
}

/* A shape as messages print it: "[a, b, c]" (cut to len). */
void tsr_shape_describe(const size_t *shape, size_t ndim, char *buf, size_t len);

/* A NaN or an infinity in weights read from a file is an error naming the
 * tensor and the first bad value, counted from `first` (x being the values
 * from value `first` of the tensor on; 0 when all n are finite). */
int tsr_weights_check_finite(const char *name, const float *x, size_t n, size_t first,
                             char *err, size_t err_len);

/* Builds a model from a validated config and a weight source, packing with
 * `kernels` for compute type `type` (an explicit type, not
 * TESSERA_COMPUTE_DEFAULT), into *out, every tensor fetched (and packed) on
 * up to `threads` threads when the source is concurrent (the result does not
 * depend on how many). Returns 0, or a tessera_status with a message (*out NULL). */
int tsr_model_build(const tessera_config *cfg, const tsr_kernels *kernels,
                    tessera_compute_type type, const char *numa, int threads,
                    const tsr_weight_source *src, tessera_model **out, char *err,
                    size_t err_len);

#endif
