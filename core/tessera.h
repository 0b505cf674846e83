/*
 * tessera: CPU inference for the encoder-decoder Transformer (Vaswani et al.).
 *
 * Conventions for every function below:
 *  - Errors: functions returning int return 0 on success and -1 on error; on
 *    error they write a one-line, NUL-terminated message naming the culprit
 *    (key, tensor, sentence) into err (at most err_len bytes, truncated if
 *    need be; err may be NULL when err_len is 0). Nothing is leaked on error.
 *  - Ownership: memory a function returns is owned by the caller and released
 *    with the matching *_free function. Inputs are borrowed for the call only.
 *  - Threads: a loaded model is immutable. Any number of threads may call
 *    tessera_translate / tessera_score on the same model at once; each call
 *    allocates its own working state. tessera_model_free must not race with
 *    them. Each call itself uses the library's thread pool (see
 *    tessera_set_threads).
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tessera_activation {
    TESSERA_RELU = 0,
    TESSERA_GELU = 1, /* erf form, as PyTorch */
    TESSERA_SILU = 2,
} tessera_activation;

/* Architecture and special ids, as config.json (see INTERFACE.md). */
typedef struct tessera_config {
    int d_model, n_heads, d_ff;
    int n_encoder_layers, n_decoder_layers;
    int src_vocab_size, tgt_vocab_size;
    int max_positions;
    tessera_activation activation;
    int norm_first;      /* 0: post-norm LN(x + f(x)); 1: pre-norm x + f(LN(x)) */
    float layer_norm_eps;
    int scale_embedding; /* multiply token embeddings by sqrt(d_model) */
    int bos_id, eos_id, pad_id, unk_id;
} tessera_config;

typedef struct tessera_model tessera_model;

/* How the weights of the linear layers (attention projections, FFN,
 * generator) are held and multiplied; activations, attention, LayerNorm,
 * softmax and the KV cache are float32 whatever the type (INTERFACE.md). */
typedef enum tessera_compute_type {
    TESSERA_COMPUTE_DEFAULT = -1, /* TESSERA_COMPUTE_TYPE from the environment, else f32 */
    TESSERA_COMPUTE_F32 = 0,
    TESSERA_COMPUTE_BF16 = 1, /* weights rounded to bfloat16, math in float32 */
    TESSERA_COMPUTE_INT8 = 2, /* int8 weights per row, activations per token, int32 sums */
} tessera_compute_type;

/* "f32", "bf16", "int8"; "default" for TESSERA_COMPUTE_DEFAULT. */
const char *tessera_compute_type_name(tessera_compute_type type);

/* Parses "f32", "bf16" or "int8" (as --compute-type and TESSERA_COMPUTE_TYPE
 * take them); -1 with a message naming the value otherwise. */
int tessera_compute_type_parse(const char *name, tessera_compute_type *type, char *err,
                               size_t err_len);

/* How to load a model. Initialise with tessera_load_options_init, then set
 * the fields wanted: fields added later start at their defaults there. */
typedef struct tessera_load_options {
    tessera_compute_type compute_type;
} tessera_load_options;

/* Defaults: compute_type TESSERA_COMPUTE_DEFAULT. */
void tessera_load_options_init(tessera_load_options *options);

/* Loads MODEL_DIR (config.json + model.safetensors). The weights file is
 * mapped, validated, widened to float32, converted to the compute type and
 * repacked for the kernel set in use; the mapping is released before
 * returning. tessera_model_load is tessera_model_load_with default options. */
int tessera_model_load(const char *dir, tessera_model **model, char *err, size_t err_len);
int tessera_model_load_with(const char *dir, const tessera_load_options *options,
                            tessera_model **model, char *err, size_t err_len);

/* Builds a model of the given architecture with reproducible random weights
 * (for benchmarks): no files needed. The _with form takes load options (NULL:
 * the defaults). */
int tessera_model_random(const tessera_config *config, uint64_t seed, tessera_model **model,
                         char *err, size_t err_len);
int tessera_model_random_with(const tessera_config *config, uint64_t seed,
                              const tessera_load_options *options, tessera_model **model,
                              char *err, size_t err_len);

/* The compute type the model was loaded with (never TESSERA_COMPUTE_DEFAULT). */
tessera_compute_type tessera_model_compute_type(const tessera_model *model);

/* Releases a model; NULL is accepted. */
void tessera_model_free(tessera_model *model);

/* The model's configuration; valid as long as the model. */
const tessera_config *tessera_model_config(const tessera_model *model);

/* Bytes of weights held (packed, float32). */
size_t tessera_model_weight_bytes(const tessera_model *model);

/* The name of the kernel set in use ("scalar", "avx2", "avx512", "neon"),
 * chosen on first use (TESSERA_ISA may force it), or NULL with a message
 * in err when TESSERA_ISA names a set this build or CPU cannot run. */
const char *tessera_kernel_set(char *err, size_t err_len);

/* Threads used by later calls: n >= 1, or 0 for the default (TESSERA_NUM_THREADS,
 * then OMP_NUM_THREADS, then one per core this process may run on). Not
 * thread-safe: call it before loading models. */
int tessera_set_threads(int n, char *err, size_t err_len);
int tessera_threads(void);

/* Where threads run and weights live, for the models loaded after the call.
 * numa: "replicate" (a read-only copy of the packed weights on each NUMA node
 * that runs threads, each thread reading its node's copy), "interleave",
 * "local", "off", "auto" (chosen from the topology and the model size), or
 * NULL for TESSERA_NUMA, else auto. use_smt: with the default thread count,
 * one thread per hardware thread instead of one per core (call this before
 * tessera_set_threads). Threads are bound one per core from inside the pool.
 * Errors name TESSERA_NUMA or TESSERA_TOPOLOGY when those are malformed.
 * Not thread-safe: call before loading models. */
int tessera_set_placement(const char *numa, int use_smt, char *err, size_t err_len);

/* A few lines describing the plan: threads -> cores -> NUMA nodes, weight
 * copies per node, the policy and why. */
int tessera_describe_placement(char *buf, size_t len, char *err, size_t err_len);

/* A sequence of token ids (borrowed). */
typedef struct tessera_tokens {
    const int32_t *ids;
    size_t len;
} tessera_tokens;

typedef struct tessera_translate_options {
    int beam;             /* 1: greedy; N > 1: beam search with N hypotheses */
    int max_len;          /* most target tokens (EOS not counted); capped so
                             that [bos] + output fits max_positions */
    float length_penalty; /* beam: hypotheses ranked by score / len^A */
    int n_best;           /* hypotheses returned per sentence, 1..beam */
    int batch;            /* sentences decoded together, >= 1 */
} tessera_translate_options;

/* Defaults: greedy, max_len 256, length_penalty 0, n_best 1, batch 1. */
void tessera_translate_options_init(tessera_translate_options *options);

/* One output hypothesis. ids excludes BOS and EOS. score is the total
 * log-probability (EOS included when the hypothesis ended with it), divided
 * by len^length_penalty where len counts the EOS too. */
typedef struct tessera_hypothesis {
    int32_t *ids;
    size_t len;
    double score;
} tessera_hypothesis;

/* Translates n source sentences. On success *out holds n * n_best hypotheses,
 * sentence by sentence, best first; release with tessera_hypotheses_free.
 * Results do not depend on options->batch or the thread count. An id out of
 * range, an empty or over-long sentence is an error naming the sentence
 * (counted from 1). */
int tessera_translate(const tessera_model *model, const tessera_tokens *src, size_t n,
                      const tessera_translate_options *options, tessera_hypothesis **out,
                      char *err, size_t err_len);

void tessera_hypotheses_free(tessera_hypothesis *h, size_t count);

/* Teacher-forced scoring: for each pair, the decoder is fed [bos] + tgt and
 * logprobs receives the natural-log probabilities of each tgt token and then
 * of eos: tgt[i].len + 1 values. On success *out is an array of n arrays
 * (release with tessera_scores_free). */
int tessera_score(const tessera_model *model, const tessera_tokens *src,
                  const tessera_tokens *tgt, size_t n, int batch, float ***out, char *err,
                  size_t err_len);

void tessera_scores_free(float **scores, size_t n);

#ifdef __cplusplus
}
#endif

#endif
