/* The parts of `tessera bench` with a file of their own. */
#ifndef TSR_CLI_BENCH_H
#define TSR_CLI_BENCH_H

#include <stddef.h>

#include "core/tessera.h"

/* A built-in configuration (cli/bench_configs.c): its sizes; everything
 * else is config.json's defaults (post-norm, ReLU, max_positions 1024, the
 * usual special ids). `tied`: one table for both sides and the output. */
typedef struct cli_bench_config {
    const char *name, *what;
    int d_model, n_heads, d_ff, layers, vocab, tied;
} cli_bench_config;

extern const cli_bench_config cli_bench_configs[];
extern const size_t cli_bench_config_count;

/* The configuration called `name`, or NULL. */
const cli_bench_config *cli_bench_config_find(const char *name);
void cli_bench_config_of(const cli_bench_config *b, tessera_config *c);

/* --shortlist N: a synthetic vocabulary shortlist of about per_sentence
 * candidates for sentences of src_len tokens (cli/bench_shortlist.c); 0, or
 * 1 after printing an error. */
int cli_bench_shortlist(const tessera_model *m, int per_sentence, int src_len,
                        tessera_shortlist **out);

/* Writes config.json and an F32 model.safetensors of reproducible random
 * weights for the encoder-decoder `c` into the existing directory `dir`.
 * 0, or -1 with a message naming the file. */
int cli_bench_write_model(const tessera_config *c, const char *dir, char *err, size_t err_len);

/* The load case: loads the model in `dir` with `load` (its threads field
 * set) `repeat` times and reads its model.safetensors as many times from
 * the page cache into fresh huge-page memory, interleaved, and prints one
 * line with the best of each: load_ms=, read_ms= and ratio= (load over
 * read). 0, or 1 after printing the error. */
int cli_bench_load(const char *dir, const char *label, const tessera_load_options *load,
                   int threads, int repeat);

/* The text-batch case's sentences: the text of each source, detokenized
 * from its random ids (random pieces make text of every kind the tokenizer
 * knows). *texts is n strings, released with cli_bench_texts_free. 0, or 1
 * after printing the error. */
int cli_bench_texts(const tessera_model *m, const tessera_tokens *src, int n, char ***texts);
void cli_bench_texts_free(char **texts, int n);

/* One run of text-batch: tokenize the n texts, translate them greedily
 * together (max_len tgt_len), detokenize the translations. Milliseconds in
 * all, *text_ms of them tokenizing and detokenizing, *produced the target
 * tokens; a negative value after printing an error. */
double cli_bench_text_once(tessera_runtime *rt, const tessera_model *m, char *const *texts, int n,
                           int tgt_len, double *text_ms, long *produced);

/* The work a case must do, modeled (cli/bench_work.c): float multiplies and
 * adds (linear layers on f32 or bf16 weights, attention), int8 ones (linear
 * layers on int8 weights), and the bytes that must stream at the least. */
typedef struct cli_bench_work {
    double f32_flops, i8_ops, bytes;
} cli_bench_work;

typedef enum cli_bench_kind {
    CLI_BENCH_DECODE, /* translate: encoder, cross memory, tgt_len decoding steps */
    CLI_BENCH_SCORE,  /* score: encoder, cross memory, one teacher-forced pass */
    CLI_BENCH_ENCODE, /* the encoder alone */
} cli_bench_kind;

typedef struct cli_bench_shape {
    cli_bench_kind kind;
    int sentences, src_len, tgt_len, beam;
} cli_bench_shape;

void cli_bench_work_of(const tessera_config *c, tessera_compute_type type,
                       const cli_bench_shape *s, cli_bench_work *w);

/* The bytes of the model's linear layers' weights (one copy). */
double cli_bench_weight_bytes(const tessera_config *c, tessera_compute_type type);

/* The weights a case of `kind` reads over and over, whose size decides
 * where they can stream from: the encoder's layers for the encoder alone,
 * else those of one decoding step (the decoder's layers but the
 * cross-attention keys and values, made once, and the generator). */
double cli_bench_streamed_weight_bytes(const tessera_config *c, tessera_compute_type type,
                                       cli_bench_kind kind);

/* The roofline bound of work w on a machine with limits l: the larger of
 * its arithmetic at the peaks (f32 and int8 added) and its bytes at
 * stream_bytes_per_s, the read bandwidth measured at the size the case
 * streams again and again (stream_bytes: cli_bench_streamed_weight_bytes).
 * limit says where that size fits by the reported cache ("cache" or
 * "memory"); the rate is measured, not taken from the level, so that a VM
 * reporting its host's cache cannot put a case above its bound. seconds 0
 * when a peak it needs is unknown. */
typedef struct cli_bench_bound_of {
    double seconds;
    const char *limit; /* "compute", "memory" or "cache" */
} cli_bench_bound_of;
void cli_bench_bound(const cli_bench_work *w, double stream_bytes, double stream_bytes_per_s,
                     const tessera_limits *l, cli_bench_bound_of *b);

#endif
