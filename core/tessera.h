/*
 * tessera: CPU inference for the encoder-decoder Transformer (Vaswani et al.).
 *
 * Conventions for every function below:
 *  - Errors: functions returning int return 0 on success and a negative
 *    tessera_status on error; on error they write a one-line, NUL-terminated
 *    message naming the culprit (key, tensor, sentence) into err (at most
 *    err_len bytes, truncated if need be; err may be NULL when err_len is 0).
 *    Nothing is leaked on error. The functions older than the status codes
 *    (tessera_model_load, tessera_model_random, tessera_translate,
 *    tessera_score, tessera_set_threads, tessera_set_placement,
 *    tessera_describe_placement, tessera_compute_type_parse) return -1 for
 *    every error, as they always have; their *_with forms and every newer
 *    function return the status that tells the kind.
 *  - Ownership: memory a function returns is owned by the caller and released
 *    with the matching *_free function. Inputs are borrowed for the call only.
 *  - Threads: a loaded model is immutable and may be shared by any number of
 *    runtimes and threads; tessera_model_free must not race with calls on it.
 *    Work runs on a runtime (tessera_runtime below): threads of the library's
 *    own, bound to their cores, never the caller's (whose CPU affinity the
 *    library never changes). A runtime runs one call at a time: any number
 *    of threads may call it, and their calls queue. Several runtimes run at
 *    once. The functions that take no runtime use a default one, made on
 *    first use from tessera_set_threads / tessera_set_placement.
 */
#ifndef TESSERA_H
#define TESSERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this library: TESSERA_VERSION at build time, and the one
 * linked at run time ("0.1.0"), which may be newer. */
#define TESSERA_VERSION_MAJOR 0
#define TESSERA_VERSION_MINOR 1
#define TESSERA_VERSION_PATCH 0
#define TESSERA_VERSION "0.1.0"
const char *tessera_version(void);

/* What kind of failure an error was; the message says what failed. */
typedef enum tessera_status {
    TESSERA_OK = 0,
    TESSERA_ERR_INPUT = -1,    /* bad input: a model file, a sentence, an option, the
                                  environment (TESSERA_*): the message names it */
    TESSERA_ERR_NOMEM = -2,    /* an allocation failed; nothing was leaked, and the
                                  model and runtime stay usable */
    TESSERA_ERR_INTERNAL = -3, /* the system refused what should work (a thread),
                                  or a bug: please report it with the message */
    TESSERA_ERR_CANCELLED = -4, /* the caller's cancel function stopped the call
                                   (tessera_cancel_fn); nothing was leaked */
} tessera_status;

/* "ok", "bad input", "out of memory", "internal error", "cancelled"
 * ("unknown status" for anything else). */
const char *tessera_status_name(int status);

typedef enum tessera_activation {
    TESSERA_RELU = 0,
    TESSERA_GELU = 1, /* erf form, as PyTorch */
    TESSERA_SILU = 2,
    TESSERA_GELU_TANH = 3,    /* x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    TESSERA_GELU_SIGMOID = 4, /* x sigmoid(1.702 x): Marian's "gelu" */
} tessera_activation;

/* How LayerNorm divides x - mean (config key layer_norm_form). */
typedef enum tessera_layer_norm_form {
    TESSERA_LAYER_NORM_VARIANCE = 0,     /* / sqrt(var + eps), biased var: PyTorch */
    TESSERA_LAYER_NORM_STD = 1,          /* / (std + eps), biased std: Ba et al. */
    TESSERA_LAYER_NORM_STD_UNBIASED = 2, /* / (std + eps), N - 1 std: Annotated Transformer */
} tessera_layer_norm_form;

/* The position table when the file holds none (config key position_encoding;
 * docs/model-format.md): every form is sin and cos of p x a frequency per pair. */
typedef enum tessera_position_encoding {
    TESSERA_POSITIONS_SINUSOID = 0,           /* Vaswani et al.: sin, cos interleaved */
    TESSERA_POSITIONS_SINUSOID_HALVES = 1,    /* sin | cos halves, 10000^(-2i/d): transformers */
    TESSERA_POSITIONS_SINUSOID_HALVES_T2T = 2 /* sin | cos halves, 10000^(-i/(d/2-1)): Marian */
} tessera_position_encoding;

/* The decoder's first input (config key decoder_start). */
typedef enum tessera_decoder_start {
    TESSERA_START_BOS = 0,  /* bos_id's embedding */
    TESSERA_START_ZEROS = 1 /* a zero vector (Marian): the position alone */
} tessera_decoder_start;

/* Where a multilingual model's source carries its language token (config
 * key source_language; docs/model-format.md "Languages"). */
typedef enum tessera_source_language {
    TESSERA_SOURCE_LANGUAGE_NONE = 0,   /* the model takes no source language */
    TESSERA_SOURCE_LANGUAGE_PREFIX = 1, /* [lang] tokens source_suffix (NLLB, M2M100, mBART-50) */
    TESSERA_SOURCE_LANGUAGE_SUFFIX = 2  /* tokens source_suffix [lang] (NLLB legacy, mBART-cc25) */
} tessera_source_language;

/* How a multilingual model's decoder is given the target language (config
 * key target_language). */
typedef enum tessera_target_language {
    TESSERA_TARGET_LANGUAGE_NONE = 0,   /* the model takes no target language */
    TESSERA_TARGET_LANGUAGE_FORCED = 1, /* [bos] then [lang] forced: the first output,
                                           log-probability 0, not returned (NLLB,
                                           M2M100, mBART-50) */
    TESSERA_TARGET_LANGUAGE_START = 2   /* [lang] instead of [bos] (mBART-cc25) */
} tessera_target_language;

/* Most ids config.json's source_suffix and banned_target_ids may list. */
#define TESSERA_SOURCE_SUFFIX_MAX 4
#define TESSERA_BANNED_IDS_MAX 16

/* Largest max_positions accepted: 64Ki positions, past any translation
 * model's, and a sinusoid table (max_positions x d_model floats, made when
 * the model loads) of at most 256 MiB at d_model 1024. */
#define TESSERA_MAX_POSITIONS_MAX 65536

/* Architecture and special ids, as config.json (see docs/model-format.md). */
typedef struct tessera_config {
    int d_model, n_heads, d_ff;
    int n_encoder_layers, n_decoder_layers; /* 0 decoder layers: an encoder alone */
    int src_vocab_size, tgt_vocab_size;
    int max_positions;
    tessera_activation activation;
    int norm_first;      /* 0: post-norm LN(x + f(x)); 1: pre-norm x + f(LN(x)) */
    float layer_norm_eps;
    int scale_embedding; /* multiply token embeddings by sqrt(d_model) */
    int bos_id, eos_id, pad_id, unk_id;
    tessera_layer_norm_form layer_norm_form;
    /* The keys model families add (docs/model-format.md), after the first
     * ones so that older callers' layouts stay valid: */
    tessera_position_encoding position_encoding;
    int tie_output_projection; /* the generator's weight is the target embedding */
    int share_embeddings;      /* the source embedding is the target embedding */
    tessera_decoder_start decoder_start;
    int source_suffix[TESSERA_SOURCE_SUFFIX_MAX]; /* appended to every source */
    int n_source_suffix;
    int banned_target_ids[TESSERA_BANNED_IDS_MAX]; /* never output by translate */
    int n_banned_target_ids;
    int ban_logits; /* 1: taken out before the softmax; 0: masked after it (searches only) */
    char family[32]; /* where the model came from ("marian", ...), "" when unsaid */
    int position_offset; /* position p reads row p + position_offset of the table */
    /* Alignments (--alignments) from decoder layer alignment_layer - 1 (0:
     * the last; config.json counts from 0, -1 the last), averaged over its
     * first alignment_heads heads (0: all). */
    int alignment_layer, alignment_heads;
    /* eos banned while a hypothesis is shorter (searches only, as
     * banned_target_ids_mode says; fairseq's min_len 1) */
    int min_target_length;
    /* The model's SentencePiece files (config key tokenizer; docs/model-format.md
     * section 3), names in the model directory; "" when it has none. */
    char source_tokenizer[64], target_tokenizer[64];
    /* The source vocabulary's unknown id when it is not unk_id (config key
     * source_unk_id; CTranslate2 appends <unk> to each vocabulary that lacks
     * it): used when has_source_unk_id is nonzero (0, the default and what
     * a zeroed config holds: unk_id for both sides). Read it through
     * tessera_config_unk_id. */
    int has_source_unk_id, source_unk_id;
    /* A multilingual model's languages (config keys source_language,
     * target_language; the names and their ids are the model's, see
     * tessera_model_language): each call then names them in its options. */
    tessera_source_language source_language;
    tessera_target_language target_language;
} tessera_config;

/* Every field at config.json's default (docs/model-format.md), the required sizes
 * (d_model, n_heads, d_ff, layers, vocabulary sizes) at 0 for the caller to
 * set. */
void tessera_config_defaults(tessera_config *config);

typedef struct tessera_model tessera_model;

/* How the weights of the linear layers (attention projections, FFN,
 * generator) are held and multiplied; activations, attention, LayerNorm,
 * softmax and the KV cache are float32 whatever the type (docs/model-format.md). */
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
    /* Where the packed weights live on a NUMA machine: "replicate" (a
     * read-only copy on each node with allowed cores; each runtime thread
     * reads its node's), "interleave", "local", "off", "auto", or NULL for
     * tessera_set_placement's policy, else TESSERA_NUMA's, else auto. */
    const char *numa;
    /* Threads that convert and pack the weights during the load: 0 for
     * TESSERA_NUM_THREADS, else OMP_NUM_THREADS, else one per CPU the
     * process may run on. The loaded model does not depend on it. */
    int threads;
} tessera_load_options;

/* Defaults: compute_type TESSERA_COMPUTE_DEFAULT, numa NULL, threads 0. */
void tessera_load_options_init(tessera_load_options *options);

/* Loads MODEL_DIR (config.json + model.safetensors). The weights file is
 * read whole, every tensor validated (shapes, dtypes, finite values), and
 * the weights converted to the compute type and repacked for the kernel set
 * in use, on the load's threads; the file's bytes are released before
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

/* A multilingual model's languages (config key languages), in the order
 * config.json lists them: the count, and language i's name as the model's
 * tokenizer spells it ("eng_Latn", "en_XX") with its token id in *id (id
 * may be NULL); NULL past the last. 0 languages for any other model. */
size_t tessera_model_language_count(const tessera_model *model);
const char *tessera_model_language(const tessera_model *model, size_t i, int32_t *id);

/* The token id of language `name` (exact, case-sensitive). TESSERA_ERR_INPUT
 * with a one-line message when the model has no such language, naming it and
 * the model's nearest names ("unknown language 'deu': the nearest the model
 * has are deu_Latn, dyu_Latn, ..."), or has no languages at all. */
int tessera_model_language_id(const tessera_model *model, const char *name, int32_t *id,
                              char *err, size_t err_len);

/* Checks a call's languages as translate and score (with_target 1) and
 * encode (0: target_lang must be NULL) check them: each side's given
 * exactly when the model takes that side's language (config keys
 * source_language, target_language), and one of the model's. A program
 * checks before it reads its sentences. TESSERA_ERR_INPUT with a one-line
 * message that starts with the option's field name ("target_lang: the
 * model needs a target language: one of its 202 (ace_Arab, ...)"), as
 * tessera_translate_options_check's messages do. */
int tessera_model_check_languages(const tessera_model *model, const char *source_lang,
                                  const char *target_lang, int with_target, char *err,
                                  size_t err_len);

/* One tensor of a model directory's model.safetensors (docs/model-format.md). */
typedef struct tessera_tensor_spec {
    const char *name;
    size_t ndim;
    size_t shape[3];
    int optional;      /* the model runs without it */
    int linear_weight; /* may be stored I8, with "<name>_scale" */
} tessera_tensor_spec;

typedef int (*tessera_tensor_visit)(const tessera_tensor_spec *tensor, void *arg);

/* Every tensor a model of `config` reads, the one list the loader, the
 * tests' and bench's writers and converters share: visit is called for
 * each, the required ones first in file order (embeddings, each encoder
 * then decoder layer, the generator), then the optional ones; a nonzero
 * return stops the walk and is returned. -1 with a message for a config
 * that does not validate. */
int tessera_model_tensors(const tessera_config *config, tessera_tensor_visit visit, void *arg,
                          char *err, size_t err_len);

/* A few lines on this machine and what tessera uses on it: the CPU and its
 * features, each kernel set and whether it runs here (and why not), the set
 * chosen (TESSERA_ISA may force one), the int8 kernel, the hwloc topology.
 * An error names TESSERA_ISA when it names a set this build or CPU cannot
 * run. Always NUL-terminates buf. */
int tessera_describe_system(char *buf, size_t len, char *err, size_t err_len);

/* The name of the kernel set in use ("scalar", "avx2", "avx512", "neon"),
 * chosen on first use (TESSERA_ISA may force it), or NULL with a message
 * in err when TESSERA_ISA names a set this build or CPU cannot run. */
const char *tessera_kernel_set(char *err, size_t err_len);

/* ---- Runtimes --------------------------------------------------------------
 *
 * A runtime is an execution context: a team of threads of its own (its
 * leader thread and K - 1 more), bound to cores of their own, the weight
 * copy each reads on a NUMA machine, and their reusable scratch memory. The
 * model stays separate and immutable, so N runtimes of K threads can serve
 * one model at once: CTranslate2's inter_threads x intra_threads. A server
 * makes the N runtimes with workers = N and worker = 0 .. N-1, so that their
 * threads share the machine's cores without overlapping (workers are spread
 * over NUMA nodes, each reading its node's copy of the weights when the
 * model was loaded with one per node). Results do not depend on the runtime:
 * any runtime gives the same bits for the same model, input and options. */
typedef struct tessera_runtime tessera_runtime;

typedef struct tessera_runtime_options {
    int threads;      /* K threads of this runtime; 0: TESSERA_NUM_THREADS, then
                         OMP_NUM_THREADS, then the allowed cores shared among the
                         workers. K x workers is at most 8 per CPU the process
                         may use (tessera_cpus) and within ulimit -u */
    int workers;      /* how many runtimes share the machine (0 or 1: this one) */
    int worker;       /* which of them this one is, 0 .. workers - 1 */
    const char *numa; /* "auto", "replicate", "interleave", "local", "off", or NULL
                         for TESSERA_NUMA: the policy whose plan places the threads */
    int use_smt;      /* with threads 0: count hardware threads, not cores */
    /* Working memory (bytes) one call may plan to hold at once: the
     * activations, KV caches, logits and search state of a batch and the
     * threads' scratch; the weights and the results are not counted. A call
     * whose batch would need more runs it as several smaller batches (the
     * results do not change); a sentence that alone needs more is an error
     * (TESSERA_ERR_NOMEM) naming it. 0: half the memory available when the
     * runtime is made (MemAvailable, else the free memory; at most half an
     * address-space limit), shared equally among the workers. */
    size_t max_memory;
} tessera_runtime_options;

/* Defaults: threads 0, workers 1, worker 0, numa NULL, use_smt 0,
 * max_memory 0. */
void tessera_runtime_options_init(tessera_runtime_options *options);

/* Makes a runtime and starts its threads; options NULL means the defaults.
 * The calling thread is not bound. Errors: a bad option or environment
 * variable (TESSERA_ERR_INPUT), memory (TESSERA_ERR_NOMEM), a thread the
 * system would not start (TESSERA_ERR_INTERNAL). */
int tessera_runtime_create(const tessera_runtime_options *options, tessera_runtime **runtime,
                           char *err, size_t err_len);

/* Stops the runtime's threads and releases it; NULL is accepted. Must not
 * race with calls on it. */
void tessera_runtime_free(tessera_runtime *runtime);

/* The runtime's threads: how many, and a few lines on where they run (its
 * worker among the plan's, cores, NUMA nodes, the weight policy). A NULL
 * runtime has 0 threads; describing it (or into a NULL buf) is
 * TESSERA_ERR_INPUT. */
int tessera_runtime_threads(const tessera_runtime *runtime);
int tessera_runtime_describe(const tessera_runtime *runtime, char *buf, size_t len);

/* The CPUs this process may run on (its affinity mask), at least 1. A
 * runtime takes at most 8 threads per CPU, in all its workers. */
int tessera_cpus(void);

/* The runtime's memory budget in bytes (options.max_memory, or the default
 * it stands for). */
size_t tessera_runtime_memory_budget(const tessera_runtime *runtime);

/* What a runtime's calls did, summed over its calls since it was made (or
 * last reset): for benchmarks and profilers (tessera bench's serial_pct= and
 * pct_limit=; perf/README.md). Counting costs two clock reads per divided
 * loop, on one thread. */
typedef struct tessera_runtime_stats {
    uint64_t calls;
    double seconds;         /* in calls, on the runtime's leader thread */
    /* Of those, the time the leader spent in work divided among the
     * runtime's threads (the model's parallel loops, their barriers
     * included). The rest does not shrink with more threads: measured with
     * one thread, (seconds - divided_seconds) / seconds is the serial share
     * s of Amdahl's law, and T threads take at best s + (1 - s) / T of the
     * time. */
    double divided_seconds;
    /* Of divided_seconds, the time the team's threads waited at those loops'
     * barriers for the slowest, on average over the threads (0 with one
     * thread): the imbalance that serial_pct does not show. */
    double waited_seconds;
    double f32_flops;       /* float multiplies and adds of the linear layers on
                               f32 and bf16 weights, and of attention */
    double i8_ops;          /* multiplies and adds of the linear layers on int8 weights */
    double bytes;           /* bytes the linear layers and attention must stream: the
                               weights (once per layer call), keys and values, logits */
} tessera_runtime_stats;

/* Copies the runtime's counters into *stats and, when reset is non-zero,
 * sets them to zero. Safe while calls run on the runtime (they are counted
 * when they end). Errors: a NULL argument (TESSERA_ERR_INPUT). */
int tessera_runtime_stats_get(tessera_runtime *runtime, tessera_runtime_stats *stats, int reset);

/* What this machine allows a model's kernel set and compute type on the
 * runtime's threads, measured there (about half a second), as tessera-perf
 * measures it: for tessera bench's pct_limit= (perf/README.md). */
typedef struct tessera_limits {
    double f32_flops_per_s;    /* the set's FMA loop: floating-point operations/s */
    double i8_ops_per_s;       /* its int8 kernel's instructions: int8 operations/s;
                                  0: not measured (no int8 kernel, or no loop for it) */
    double memory_bytes_per_s; /* reading a buffer of 4x the last-level cache */
    double cache_bytes_per_s;  /* reading a quarter of the last-level cache, again and
                                  again; 0 when the cache's size is unknown */
    size_t cache_bytes;        /* the last-level cache (one instance), 0: unknown */
} tessera_limits;

/* Measures *limits for model m (its kernel set, compute type) on the
 * runtime's threads. Errors: a NULL argument (TESSERA_ERR_INPUT), memory for
 * the bandwidth buffers (TESSERA_ERR_NOMEM). */
int tessera_runtime_limits(tessera_runtime *runtime, const tessera_model *model,
                           tessera_limits *limits, char *err, size_t err_len);

/* The read bandwidth (bytes/s, all the runtime's threads) at which data of
 * `bytes` can stream again and again, as tessera_runtime_limits measures
 * memory and the cache: the best sweep of a buffer of that size, of its half
 * and of its quarter (data a little larger than a cache still finds part of
 * itself there), whatever cache sizes the machine reports (a VM may report
 * its host's). A buffer larger than memory_bytes_per_s's is measured at that
 * size. Errors: a NULL argument or 0 bytes (TESSERA_ERR_INPUT),
 * memory for the buffer (TESSERA_ERR_NOMEM). */
int tessera_runtime_read_bandwidth(tessera_runtime *runtime, const tessera_model *model,
                                   size_t bytes, double *bytes_per_s, char *err, size_t err_len);

/* ---- Process-wide defaults -------------------------------------------------
 *
 * The settings of the default runtime (the one behind tessera_translate and
 * tessera_score) and of model loads. None is thread-safe: call them before
 * loading models and making runtimes; a change makes the default runtime
 * anew on its next use. */

/* Threads of the default runtime: n >= 1, or 0 for the default
 * (TESSERA_NUM_THREADS, then OMP_NUM_THREADS, then one per core this process
 * may run on). */
int tessera_set_threads(int n, char *err, size_t err_len);
int tessera_threads(void);

/* Where threads run and weights live. numa, for the models loaded after the
 * call (and the default runtime's plan): "replicate" (a read-only copy of the
 * packed weights on each NUMA node with allowed cores, each thread reading its
 * node's copy), "interleave", "local", "off", "auto" (chosen from the
 * topology and the model size), or NULL for TESSERA_NUMA, else auto. use_smt:
 * with the default thread count, one thread per hardware thread instead of
 * one per core (call this before tessera_set_threads). Errors name
 * TESSERA_NUMA or TESSERA_TOPOLOGY when those are malformed. */
int tessera_set_placement(const char *numa, int use_smt, char *err, size_t err_len);

/* A few lines describing the default runtime's plan: threads -> cores -> NUMA
 * nodes, weight copies per node, the policy and why. */
int tessera_describe_placement(char *buf, size_t len, char *err, size_t err_len);

/* A sequence of token ids (borrowed). */
typedef struct tessera_tokens {
    const int32_t *ids;
    size_t len;
} tessera_tokens;

/* The bounds of the decoding options (tessera_translate_options_check says
 * which rule uses which): the command's --help and the server's API
 * (cli/serve/api.md) quote these. */
#define TESSERA_BEAM_MAX 1024
#define TESSERA_MAX_LEN_MAX (1 << 20)
#define TESSERA_LENGTH_PENALTY_MAX 100.0f
#define TESSERA_SAMPLING_TOPK_MAX (1 << 20)
#define TESSERA_SAMPLING_TEMPERATURE_MIN 0.001f
#define TESSERA_SAMPLING_TEMPERATURE_MAX 100.0f
#define TESSERA_NO_REPEAT_NGRAM_MAX 1024
#define TESSERA_REPETITION_PENALTY_MIN 0.01f
#define TESSERA_REPETITION_PENALTY_MAX 100.0f

/* Stops a call early: the options of translate, score and encode may name
 * one (with the argument it is called with). The call asks it before each
 * batch and, while decoding, after every step of the batch (one token for
 * every sentence), on one of the runtime's threads, never twice at once;
 * when it returns nonzero the call frees what it made and returns
 * TESSERA_ERR_CANCELLED at once. A request deadline, a client that went
 * away or a flag set by another thread (read it atomically) are all such a
 * function. */
typedef int (*tessera_cancel_fn)(void *arg);

/* Streaming: called for each token as it joins a sentence's hypothesis,
 * with the sentence's index in the call's input (from 0), the token id, its
 * log-probability (as it counts in the score) and its step (its position in
 * the hypothesis, from 0; a target prefix's tokens come first, forced). The
 * tokens of a sentence arrive in order and are exactly its hypothesis's ids:
 * the ending token (EOS, end_token) is never passed. A nonzero return ends
 * that sentence's hypothesis after this token (its score the log-probability
 * so far, as for a hypothesis cut at max_len); the other sentences go on.
 * Called on the runtime's thread during the call, one call at a time.
 * Greedy decoding and sampling give each token as it is chosen, the
 * sentences of a batch interleaved step by step; beam search gives a
 * sentence's best hypothesis (the first of its n_best) once its search is
 * done, token by token, a stop cutting that hypothesis alone. */
typedef int (*tessera_token_fn)(void *arg, size_t sentence, int32_t id, float logprob,
                                size_t step);

/* A vocabulary shortlist ("Vocabulary shortlists" below; NULL in the
 * options: every target id). */
typedef struct tessera_shortlist tessera_shortlist;

typedef struct tessera_translate_options {
    int beam;             /* 1: greedy; N > 1: beam search with N hypotheses;
                             at most TESSERA_BEAM_MAX */
    int max_len;          /* most target tokens (EOS not counted), 0..
                             TESSERA_MAX_LEN_MAX; capped so that [bos] +
                             output fits max_positions */
    float length_penalty; /* beam: hypotheses ranked by score / len^A, A in
                             [0, TESSERA_LENGTH_PENALTY_MAX] */
    int n_best;           /* hypotheses returned per sentence, 1..beam */
    int batch;            /* sentences decoded together, >= 1 */

    /* Decoding options (README "Decoding options" gives the exact rules).
     * Fields added here go at the end so older initialisers stay valid;
     * always start from tessera_translate_options_init. */

    /* Sampling, on when sampling_topk != 1 (needs beam 1): the next token is
     * drawn from the sampling_topk most likely (0: all) restricted to the
     * nucleus of mass sampling_topp, at sampling_temperature. Sentence i of
     * the call draws from the stream (seed, first_sentence_index + i), so a
     * sentence samples the same tokens in any batch and on any thread count;
     * a caller that splits its input over calls passes each call's offset. */
    int sampling_topk;          /* 0..TESSERA_SAMPLING_TOPK_MAX; 1 (default): no sampling */
    float sampling_topp;        /* (0, 1]; default 1 */
    float sampling_temperature; /* [TESSERA_SAMPLING_TEMPERATURE_MIN, _MAX]; default 1 */
    uint64_t seed;
    uint64_t first_sentence_index;

    /* NULL, or one prefix per sentence: those target ids are forced first
     * (scored by the model, untouched by the rules below) and decoding goes
     * on from there; they are part of the output. */
    const tessera_tokens *target_prefix;

    int min_len;              /* no ending token before min_len tokens, <= max_len */
    int no_repeat_ngram;      /* 0..TESSERA_NO_REPEAT_NGRAM_MAX: no n-gram of this
                                 size twice; 0: off */
    float repetition_penalty; /* [TESSERA_REPETITION_PENALTY_MIN, _MAX], CTRL
                                 form; 1 (default): off */
    int disable_unk;          /* nonzero: unk_id is never produced */
    int end_token;            /* -1 (default), or a target id that also ends a
                                 hypothesis, as eos does */

    /* Nonzero: each hypothesis also gets its alignment (see
     * tessera_hypothesis). */
    int return_alignments;

    /* > 0: a batch also holds at most this many source tokens (a longer
     * sentence alone), and the sentences are batched shortest first, as
     * CTranslate2's batch_type "tokens"; 0 (default): batches of `batch`
     * sentences in input order. Either way the results come in input order
     * and do not depend on the batches, which the runtime's memory budget
     * may also split. */
    int batch_tokens;

    /* NULL (default), or what may stop the call early (tessera_cancel_fn). */
    tessera_cancel_fn cancel;
    void *cancel_arg;
    /* Nonzero: an empty source is no error; it gets n_best empty hypotheses
     * (ids NULL, len 0, score 0) and is not decoded (what an empty line of
     * text becomes). 0 (default): an empty source is an error. */
    int allow_empty;
    /* NULL (default), or one stream per sentence: sentence i then samples
     * from (seed, stream_index[i]) instead of first_sentence_index + i, for
     * a caller that decodes sentences of different inputs together (the
     * server's batches). */
    const uint64_t *stream_index;
    /* A multilingual model's languages, by name (tessera_model_language):
     * what the model's config says it needs (source_language,
     * target_language) must be given, and nothing else; NULL (default):
     * none. The source's language token is added as the model says; the
     * target's is forced first (or starts the decoder) and is not part of
     * the hypotheses, nor of their length or score. */
    const char *source_lang;
    const char *target_lang;
    /* NULL (default), or a shortlist read for this model: each sentence then
     * chooses among its own candidates, the softmax over them alone
     * ("Vocabulary shortlists" below). Greedy, beam and sampling alike. */
    const tessera_shortlist *shortlist;
    /* NULL (default), or the streaming callback above, and its argument. */
    tessera_token_fn on_token;
    void *on_token_arg;
} tessera_translate_options;

/* Defaults: greedy, max_len 256, length_penalty 0, n_best 1, batch 1, no
 * sampling (topk 1, topp 1, temperature 1, seed 0, first index 0), no
 * prefix, min_len 0, no_repeat_ngram 0, repetition_penalty 1, disable_unk 0,
 * end_token -1, no alignments, batch_tokens 0, no cancel function, empty
 * sources refused, stream_index NULL, no languages, no shortlist, no
 * streaming. */
void tessera_translate_options_init(tessera_translate_options *options);

/* Checks every rule of the decoding options that does not depend on the
 * sentences: each field's range (the TESSERA_*_MAX bounds above, and
 * README "Decoding options") and the combinations (n_best <= beam, min_len
 * <= max_len, sampling with beam 1, topp and temperature with sampling);
 * with a model's config (tessera_model_config; NULL: any model), also
 * end_token within its target vocabulary. tessera_translate_with checks
 * the same; a program checks before it has sentences (the command after
 * its flags, the server for each request).
 *
 * TESSERA_ERR_INPUT with a one-line message that starts with the field at
 * fault and names every option it mentions by its field name here, as a
 * whole word: "min_len: 30 is out of range [0, max_len (20)]". No other word
 * of a message is such a name, so a program whose options have other names
 * may put its own in (the command writes --min-len and --max-len); the
 * server's JSON fields are these names. Thread-safe; options NULL is an
 * error. */
int tessera_translate_options_check(const tessera_config *config,
                                    const tessera_translate_options *options, char *err,
                                    size_t err_len);

/* Checks one target prefix against a model's config and the options: ids
 * within the target vocabulary, no ending token (eos_id, end_token), at
 * most the target tokens max_len and max_positions allow. TESSERA_ERR_INPUT
 * with a one-line message naming options as tessera_translate_options_check
 * does but not the prefix itself ("holds the ending token 2 (eos_id)"): the
 * caller says which sentence's it is. Thread-safe. */
int tessera_target_prefix_check(const tessera_config *config,
                                const tessera_translate_options *options,
                                const tessera_tokens *prefix, char *err, size_t err_len);

/* One output hypothesis. ids excludes BOS and EOS. score is the total
 * log-probability (EOS included when the hypothesis ended with it), divided
 * by len^length_penalty where len counts the EOS too.
 *
 * alignment is NULL unless options->return_alignments; then it holds len
 * source positions (from 0): alignment[j] is the source token that target
 * token j attends to most in the last decoder layer's cross-attention, at
 * the step that chose token j (the attention probabilities averaged over
 * the heads; the first position on ties), as fairseq's and CTranslate2's
 * alignments. The ending token gets none. */
typedef struct tessera_hypothesis {
    int32_t *ids;
    size_t len;
    double score;
    int32_t *alignment;
} tessera_hypothesis;

/* Translates n source sentences on `runtime`. On success *out holds
 * n * n_best hypotheses, sentence by sentence, best first; release with
 * tessera_hypotheses_free. Results do not depend on options->batch, the
 * runtime or its thread count. An id out of range, an empty or over-long
 * sentence is an error naming the sentence (counted from 1). */
int tessera_translate_with(tessera_runtime *runtime, const tessera_model *model,
                           const tessera_tokens *src, size_t n,
                           const tessera_translate_options *options, tessera_hypothesis **out,
                           char *err, size_t err_len);

/* The same on the default runtime; -1 on any error. */
int tessera_translate(const tessera_model *model, const tessera_tokens *src, size_t n,
                      const tessera_translate_options *options, tessera_hypothesis **out,
                      char *err, size_t err_len);

void tessera_hypotheses_free(tessera_hypothesis *h, size_t count);

typedef struct tessera_score_options {
    int batch;        /* pairs scored together, >= 1 */
    int batch_tokens; /* > 0: at most this many source tokens a batch (as in
                         tessera_translate_options); 0: no limit */
    tessera_cancel_fn cancel; /* NULL, or asked before each batch */
    void *cancel_arg;
    /* The languages, as tessera_translate_options takes them: the target
     * language token is fed after bos and not scored. */
    const char *source_lang;
    const char *target_lang;
} tessera_score_options;

/* Defaults: batch 1, batch_tokens 0, no cancel function, no languages. */
void tessera_score_options_init(tessera_score_options *options);

/* Teacher-forced scoring on `runtime`: for each pair, the decoder is fed
 * [bos] + tgt and logprobs receives the natural-log probabilities of each tgt
 * token and then of eos: tgt[i].len + 1 values. On success *out is an array
 * of n arrays (release with tessera_scores_free). Results do not depend on
 * the batch or the runtime. */
int tessera_score_with(tessera_runtime *runtime, const tessera_model *model,
                       const tessera_tokens *src, const tessera_tokens *tgt, size_t n,
                       const tessera_score_options *options, float ***out, char *err,
                       size_t err_len);

/* The same on the default runtime with options.batch = batch; -1 on any
 * error. */
int tessera_score(const tessera_model *model, const tessera_tokens *src,
                  const tessera_tokens *tgt, size_t n, int batch, float ***out, char *err,
                  size_t err_len);

void tessera_scores_free(float **scores, size_t n);

typedef struct tessera_encode_options {
    int batch;        /* sentences encoded together, >= 1 */
    int batch_tokens; /* > 0: at most this many source tokens a batch (as in
                         tessera_translate_options); 0: no limit */
    tessera_cancel_fn cancel; /* NULL, or asked before each batch */
    void *cancel_arg;
    /* The source language, as tessera_translate_options takes it; its token
     * is encoded too (one more row). */
    const char *source_lang;
} tessera_encode_options;

/* Defaults: batch 1, batch_tokens 0, no cancel function, no languages. */
void tessera_encode_options_init(tessera_encode_options *options);

/* The encoder alone on `runtime` (encoder-only use): out[i] receives
 * (src[i].len + n_source_suffix, + 1 with a source language) x d_model
 * floats, the encoder's output for each token the encoder reads: sentence
 * i as the model arranges it (its language token first or last, as config
 * key source_language says, and the ids of source_suffix after the
 * sentence's tokens), after the final encoder norm when the model has one,
 * row by row. On success *out is an array of n arrays, released with
 * tessera_encodings_free. Results do not depend on the batch or the
 * runtime. */
int tessera_encode_with(tessera_runtime *runtime, const tessera_model *model,
                        const tessera_tokens *src, size_t n,
                        const tessera_encode_options *options, float ***out, char *err,
                        size_t err_len);

void tessera_encodings_free(float **vectors, size_t n);

/* ---- Text -------------------------------------------------------------------
 *
 * A model directory whose config.json names a tokenizer (SentencePiece models,
 * docs/model-format.md section 3) reads and writes text: pieces map to ids
 * through the model's own vocabulary files, never the tokenizer's ids. Every
 * function here is safe from any number of threads on one model. */

typedef enum tessera_side {
    TESSERA_SOURCE = 0,
    TESSERA_TARGET = 1
} tessera_side;

/* The id an unknown piece of that side maps to: unk_id, or for the source
 * source_unk_id when has_source_unk_id. */
int tessera_config_unk_id(const tessera_config *config, tessera_side side);

/* A vocabulary: one piece per line, line number = id. */
typedef struct tessera_vocabulary tessera_vocabulary;

/* Loads a vocabulary file that must hold exactly `size` lines (a trailing
 * '\r' of a line is dropped). Errors name the file. */
int tessera_vocabulary_load(const char *path, size_t size, tessera_vocabulary **vocab,
                            char *err, size_t err_len);
void tessera_vocabulary_free(tessera_vocabulary *vocab); /* NULL is accepted */
size_t tessera_vocabulary_size(const tessera_vocabulary *vocab);
/* The id of a piece (len bytes), the first line that holds it; -1 when absent. */
int32_t tessera_vocabulary_find(const tessera_vocabulary *vocab, const char *piece, size_t len);
/* The piece of an id; NULL when out of range. Valid as long as vocab. */
const char *tessera_vocabulary_piece(const tessera_vocabulary *vocab, int32_t id);

/* The vocabulary of a side, loaded with the model when config.json names a
 * tokenizer (vocab.src.txt, vocab.tgt.txt); NULL otherwise. Valid as long
 * as the model. */
const tessera_vocabulary *tessera_model_vocabulary(const tessera_model *model, tessera_side side);

/* 1 when the model can tokenize and detokenize that side's text (it names a
 * tokenizer, and this library was built with SentencePiece); else 0. */
int tessera_model_has_tokenizer(const tessera_model *model, tessera_side side);

/* ---- Vocabulary shortlists ------------------------------------------------
 *
 * The target ids each sentence may be translated into, read from the files
 * production runtimes ship (README "Vocabulary shortlists"): the generator
 * and the softmax are then computed over a sentence's candidates alone -
 * those the file gives for its source ids, and always the model's bos, eos,
 * unk and pad ids, the call's target language token, its end_token and the
 * sentence's target prefix. The log-probabilities are those of the softmax
 * over the candidates (as Marian and CTranslate2 compute them), so a
 * shortlist that holds every id gives exactly the full vocabulary's output.
 * A sentence's candidates are its own, never its batch neighbours', so the
 * output still does not depend on the batch (Marian and CTranslate2 take the
 * batch's union). A shortlist is read over the vocabularies src and tgt of
 * the model's sizes (NULL: the model's own, tessera_model_vocabulary), may
 * be used by any number of calls and threads at once, and is freed by the
 * caller after its last call. Errors name the file and, for text files, the
 * line. */

/* CTranslate2's vocabulary map (vmap.txt): lines "<source n-gram>\t<target
 * pieces>", the empty n-gram's targets candidates of every sentence. */
int tessera_shortlist_load_vmap(const tessera_model *model, const tessera_vocabulary *src,
                                const tessera_vocabulary *tgt, const char *path,
                                tessera_shortlist **out, char *err, size_t err_len);

/* first or best given as this: the binary file's own count, or Marian's
 * default (100) for a text file. */
#define TESSERA_SHORTLIST_DEFAULT_COUNT ((size_t)-1)

/* A Marian lexical shortlist: the text form (lex.s2t lines "<target>
 * <source> <probability>"), each source word's `best` most probable targets
 * of probability above `threshold` kept and ids 0..first-1 always candidates, as
 * Marian's --shortlist FILE first best threshold; or the binary form
 * Bergamot and Firefox Translations ship (lex.*.bin), which holds its own
 * counts: first and best must then be TESSERA_SHORTLIST_DEFAULT_COUNT and
 * threshold 0. When the model shares its embeddings, a sentence's own
 * source ids are candidates too, as in Marian. */
int tessera_shortlist_load_lexical(const tessera_model *model, const tessera_vocabulary *src,
                                   const tessera_vocabulary *tgt, const char *path, size_t first,
                                   size_t best, float threshold, tessera_shortlist **out,
                                   char *err, size_t err_len);

void tessera_shortlist_free(tessera_shortlist *shortlist); /* NULL is accepted */

/* The most bytes of text a token may take: a sentence that must fit N
 * tokens (max_positions) is refused, before it is tokenized, when it is longer
 * than N times this (a SentencePiece piece is at most 16 characters of up to
 * 4 bytes), so that a huge line costs no huge tokenization. */
#define TESSERA_TEXT_BYTES_PER_TOKEN 64

/* A tokenized text: len ids and, when asked for, the tokenizer's pieces (a
 * piece absent from the vocabulary has unk_id). */
typedef struct tessera_tokenized {
    int32_t *ids;
    char **pieces; /* NULL unless asked for; each NUL-terminated */
    size_t len;
} tessera_tokenized;

/* Tokenizes len bytes of UTF-8 text (no NUL; invalid UTF-8 is an error
 * naming the byte offset): a leading >>tag<< in the vocabulary is one token,
 * the rest the tokenizer's pieces; no bos, eos or source_suffix added. An
 * empty text gives 0 ids. Release with tessera_tokenized_free. */
int tessera_tokenize(const tessera_model *model, tessera_side side, const char *text, size_t len,
                     int with_pieces, tessera_tokenized *out, char *err, size_t err_len);
void tessera_tokenized_free(tessera_tokenized *tokenized);

/* Ids back to text: bos_id (unless the decoder starts from zeros), eos_id
 * and pad_id dropped, the others' pieces
 * decoded by the tokenizer. *text is NUL-terminated (a NUL the pieces decode
 * to, byte piece <0x00>, is a space); release with tessera_text_free. An id
 * out of the vocabulary is an error. */
int tessera_detokenize(const tessera_model *model, tessera_side side, const int32_t *ids,
                       size_t n, char **text, char *err, size_t err_len);
/* The same from pieces, each taken as the vocabulary's id (an unknown one as
 * unk_id), as the command reads pieces. */
int tessera_detokenize_pieces(const tessera_model *model, tessera_side side,
                              const char *const *pieces, size_t n, char **text, char *err,
                              size_t err_len);
void tessera_text_free(char *text);

/* A translation of text: the detokenized text of each hypothesis, and its
 * ids, score and alignment (source positions count the source's tokens) as
 * tessera_translate_with gives them. */
typedef struct tessera_text_hypothesis {
    char *text;
    tessera_hypothesis tokens;
} tessera_text_hypothesis;

/* Translates n texts (NUL-terminated UTF-8) on `runtime` (options NULL: the
 * defaults): each tokenized,
 * translated as tessera_translate_with does (options->target_prefix, when
 * given, holds target ids), each hypothesis detokenized: n * n_best results,
 * sentence by sentence, best first. An empty text (no token) gets n_best
 * empty hypotheses of score 0 without being decoded. Errors name the
 * sentence. Release with tessera_text_hypotheses_free. */
int tessera_translate_text(tessera_runtime *runtime, const tessera_model *model,
                           const char *const *src, size_t n,
                           const tessera_translate_options *options,
                           tessera_text_hypothesis **out, char *err, size_t err_len);
void tessera_text_hypotheses_free(tessera_text_hypothesis *h, size_t count);

/* Scores n (source, target) text pairs as tessera_score_with scores their
 * tokens (options NULL: the defaults): *out as tessera_score_with's (each target's token count + 1
 * values), released with tessera_scores_free. */
int tessera_score_text(tessera_runtime *runtime, const tessera_model *model,
                       const char *const *src, const char *const *tgt, size_t n,
                       const tessera_score_options *options, float ***out, char *err,
                       size_t err_len);

/* ---- Memory plans ------------------------------------------------------------
 *
 * The working memory a call on `runtime` plans for one batch of n sentences
 * of src_len source tokens each (and, to score, tgt_len target tokens each),
 * the runtime's threads' scratch included: what its memory budget
 * (tessera_runtime_options.max_memory) is held against before the batch
 * runs. An upper bound of what the batch allocates at once, its KV caches at
 * the longest the options allow; the weights and the results are not
 * counted. SIZE_MAX when it passes what a size_t holds, or when runtime,
 * model (or options) is NULL. */
size_t tessera_translate_memory(const tessera_runtime *runtime, const tessera_model *model,
                                size_t n, size_t src_len, const tessera_translate_options *options);
size_t tessera_score_memory(const tessera_runtime *runtime, const tessera_model *model, size_t n,
                            size_t src_len, size_t tgt_len);
size_t tessera_encode_memory(const tessera_runtime *runtime, const tessera_model *model, size_t n,
                             size_t src_len);

#ifdef __cplusplus
}
#endif

#endif
