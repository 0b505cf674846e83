/*
 * tessera-perf: times every kernel of the table (simd/kernels.h) for every
 * kernel set this build and CPU can run, on the shapes of Transformer-base
 * and -big, and prints one machine-readable line per case (perf/README.md).
 *
 * This header is shared by the pieces of the tool: options, the measured
 * machine (FMA peak per set, memory bandwidth), timing, threads, peers
 * (OpenBLAS, oneDNN) and output lines. Nothing here is part of libtessera.
 */
#ifndef TSR_PERF_PERF_H
#define TSR_PERF_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

/* ---- What to run --------------------------------------------------------- */

enum {
    PERF_OP_GEMM = 1u << 0,
    PERF_OP_FFN = 1u << 1,
    PERF_OP_ATTENTION = 1u << 2,
    PERF_OP_LAYERNORM = 1u << 3,
    PERF_OP_SOFTMAX = 1u << 4,
    PERF_OP_ACTIVATION = 1u << 5,
    PERF_OP_EMBED = 1u << 6,
    PERF_OP_WIDEN = 1u << 7,
    PERF_OP_ALL = (1u << 8) - 1,
};

typedef struct perf_options {
    unsigned ops;       /* PERF_OP_* bits */
    const char *isa;    /* one set, or NULL for every available set */
    int threads;        /* >= 1 */
    int shape_dims;     /* 0: the built-in shapes; else how many of shape[] --shape gave */
    size_t shape[3];
    int repeat;         /* timed runs at least */
    double min_time;    /* seconds of timed runs at least */
    double max_time;    /* stop a case after this many seconds (at least one run) */
    int quick;          /* smoke run: a few small shapes, short timings */
    int peers;          /* compare with OpenBLAS / oneDNN when built with them */
    int ceilings;       /* measure the FMA peaks and the bandwidth first */
    int cpu_clock;      /* time cases by the thread's CPU time, not wall time */
    tsr_weight_type weight_type; /* how tessera's sets hold gemm/ffn weights (--type) */
} perf_options;

/* Parses argv into o. Returns 0 to run, 1 when --help was printed, -1 on a
 * usage error (message already on stderr). */
int perf_parse_options(int argc, char **argv, perf_options *o);

/* ---- The measured machine ------------------------------------------------ */

/* Sets timed at most: the rows of simd/sets.c (tessera-perf says when a set
 * is left out for want of room). */
#define PERF_MAX_SETS 16

typedef struct perf_machine {
    size_t n_sets;
    const tsr_kernels *sets[PERF_MAX_SETS]; /* the sets to time */
    double peak[PERF_MAX_SETS];             /* FMA peak of each, flop/s; 0 if unknown */
    double peak_int8[PERF_MAX_SETS];        /* int8 peak of each one's int8 kernel, op/s
                                               (--type int8); 0 if unknown */
    const tsr_kernels *scalar;              /* to spot entries a set left scalar */
    double best_peak;                       /* highest peak of any runnable set (for peers) */
    const char *best_peak_isa;
    double bandwidth;                       /* streaming read, bytes/s */
    double bandwidth_one_stream;            /* the same, one stream per thread */
    size_t stream_bytes;                    /* size read to measure it */
} perf_machine;

/* One FMA loop per set, compiled with that set's flags and named by its row
 * (simd/sets.h, fma_peak: simd/SET/fma-peak.c): runs `iterations` rounds
 * over independent accumulators and returns the number of floating-point
 * operations done (a fused multiply-add counts two). */
typedef double (*perf_fma_loop_fn)(uint64_t iterations);

/* The FMA loop of the named set, or NULL when this build has none. */
perf_fma_loop_fn perf_fma_loop_for(const char *isa);

/* The int8 loop of the set's int8 kernel (its description's peak,
 * simd/SET/i8-peak*.c, compiled with the kernel's flags: its multiply-add
 * instructions with no loads, the ceiling it can reach; the count is of int8
 * operations, a multiply-add counting two), or NULL for the portable int8
 * layer or a kernel with no loop. */
perf_fma_loop_fn perf_int8_loop_for(const tsr_kernels *set);

/* A set's FMA loop run once on `threads` threads for about `seconds` (2 ms
 * at least), `flops` operations in all (perf/peak.c). perf_run_peak is a
 * perf_run_fn: timed as one more candidate beside a kernel, it gives
 * pct_peak_paired. */
typedef struct perf_peak_run {
    perf_fma_loop_fn loop;
    uint64_t iterations; /* per thread and run */
    int threads;
    double flops;        /* per run, all threads */
} perf_peak_run;
void perf_peak_run_init(perf_peak_run *p, perf_fma_loop_fn loop, int threads, double seconds);
void perf_run_peak(void *ctx);

/* Best-of-several FMA throughput on `threads` threads, flop/s. */
double perf_measure_peak(perf_fma_loop_fn loop, int threads, int quick);

/* Bytes a buffer must have to stream from memory rather than cache: four
 * times the last-level cache, between 64 and 512 MiB. */
size_t perf_stream_bytes(void);

/* Best-of-several streaming read of `bytes` on `threads` threads, bytes/s;
 * the best with a single sequential stream per thread goes to *one_stream. */
double perf_measure_bandwidth(size_t bytes, int threads, int quick, double *one_stream);

/* ---- Timing ---------------------------------------------------------------- */

typedef void (*perf_run_fn)(void *ctx);

/* Seconds from a monotonic clock. */
double perf_now(void);

/* Median milliseconds per call of run(ctx). The first call warms caches and
 * is kept as a sample only when it took at least min_time (a run that long is
 * not cold in any way that matters); then runs go on until there are `repeat`
 * samples and min_time has passed, or max_time has passed. Calls faster than
 * 50 us are batched so that each sample lasts about that long. */
double perf_median_ms(const perf_options *o, perf_run_fn run, void *ctx);

/* The same for n candidates at once (kernel sets and peers on one shape),
 * sampled in turn, one sample each per round, so that a burst of other work
 * on a shared machine falls on all of them alike and their ratios hold:
 * ms[i] is run[i]'s median. */
void perf_median_ms_each(const perf_options *o, size_t n, perf_run_fn const run[],
                         void *const ctx[], double ms[]);

/* ---- Threads ------------------------------------------------------------- */

/* Sets the OpenMP and peer thread counts once at start; returns the count
 * that will really run (1 in a build without OpenMP). */
int perf_set_threads(int threads);

/* Comment lines on the thread settings worth knowing for a run of `threads`. */
void perf_print_thread_notes(int threads);

/* Runs fn(ctx, t, threads) for t = 0..threads-1, in parallel when OpenMP is
 * built in (one call on the calling thread when threads == 1). */
void perf_parallel(int threads, void (*fn)(void *ctx, int t, int threads), void *ctx);

/* [begin, end) of part t of `count` items cut into `threads` parts whose
 * boundaries fall on multiples of `unit`. */
void perf_split(size_t count, size_t unit, int t, int threads, size_t *begin, size_t *end);

/* ---- Peers (OpenBLAS, oneDNN), perf only ---------------------------------- */

#define PERF_MAX_PEERS 2

/* Names of the peers this build has ("openblas", "onednn"); returns how many. */
size_t perf_peer_names(const char *names[PERF_MAX_PEERS]);

/* y[m][n] = x[m][k] W^T with W [n][k] row-major, through peer p. */
void perf_peer_gemm(size_t p, size_t m, size_t n, size_t k, const float *x, const float *w,
                    float *y);

/* ---- Buffers --------------------------------------------------------------- */

/* 64-byte aligned floats filled with reproducible values in [-1, 1); exits
 * with a message when memory runs out. */
float *perf_random_floats(size_t n, uint32_t seed);
void perf_fill_random(float *x, size_t n, uint32_t seed);

/* Copies of a read-only operand to cycle through so that each call of a
 * memory-bound case finds its operand in memory, not in cache, as a decode
 * step does with the weights of the whole model: enough copies to exceed
 * machine->stream_bytes, or 1 when `streamed` is 0. */
size_t perf_copies_for(const perf_machine *mc, size_t bytes, int streamed);

/* Rows at most this many are decode shapes: weight-streaming, memory-bound;
 * their weights are cycled through copies and they report pct_bw. */
#define PERF_DECODE_ROWS 16

/* `copies` identical packings of one linear layer by set t. */
typedef struct perf_packed {
    tsr_packed_linear *w; /* [copies] */
    size_t copies;
    size_t bytes;         /* of one packed copy */
    size_t stride;        /* floats between copies */
    float *store;
} perf_packed;
void perf_pack_copies(const tsr_kernels *t, tsr_weight_type type, const float *w,
                      const float *bias, size_t n, size_t k, size_t copies, perf_packed *out);

/* The weights every candidate of a gemm or ffn case multiplies by: w itself,
 * or, for bf16, w rounded to bfloat16 (in place), so that the peers, which
 * read float32, compute with the same values and results stay comparable.
 * int8 leaves w alone: the sets quantize it, the peers cannot. */
void perf_round_weights(tsr_weight_type type, float *w, size_t n);

/* The name of a weight type, for the type= field. */
const char *perf_type_name(tsr_weight_type type);
void perf_packed_free(perf_packed *p);

/* `copies` copies of src[n], `*stride` floats apart, 64-byte aligned. */
float *perf_copies_of(const float *src, size_t n, size_t copies, size_t *stride);

/* max |y - ref| / max |ref| (infinite when y has a NaN). */
double perf_relative_error(const float *ref, const float *y, size_t n);

/* Warns on stderr when y is not ref within 1e-3 of ref's largest value:
 * a misused kernel or peer would otherwise be timed as if it worked. */
void perf_check_result(const char *what, const char *who, const char *ref_who, const float *ref,
                       const float *y, size_t n);

/* ---- Output lines ------------------------------------------------------------ */

typedef struct perf_result {
    const char *op;      /* gemm, ffn, attention, ... */
    const char *kernel;  /* entry of the table when the op has several, else NULL */
    const char *name;    /* which layer the shape is, or NULL */
    const char *isa;     /* kernel set, or NULL for a peer */
    const char *peer;    /* openblas, onednn, or NULL */
    const char *type;    /* a set's weight type (gemm, ffn), or NULL */
    char shape[64];
    int threads;
    double ms;           /* median per call */
    double flops;        /* per call, 0 when not counted */
    double bytes;        /* per call, 0 when not reported */
    int memory_bound;    /* print pct_bw against the streaming bandwidth */
    double peak;         /* flop/s for pct_peak, 0 when unknown */
    double paired_peak;  /* flop/s timed beside it, for pct_peak_paired; 0: none */
    double bandwidth;    /* bytes/s for pct_bw */
    int fallback_scalar; /* this set still uses the scalar entry */
    size_t n_ratios;
    const char *ratio_name[PERF_MAX_PEERS];
    double ratio[PERF_MAX_PEERS]; /* this time / peer time */
} perf_result;

/* A result with the common fields set and the rest zero. */
perf_result perf_result_start(const char *op, const char *kernel, const char *name, int threads);

/* The result of candidate i of a timed comparison (gemm, ffn): kernel set
 * mc->sets[i] for i < n_sets, with its own peak, else peer peers[i - n_sets],
 * against the best set's peak; the op's shape, time and FLOPs, and, when the
 * operands were streamed from memory, the bandwidth for pct_bw. The caller
 * adds the bytes and whether the set falls back to the scalar entry. */
perf_result perf_result_of_candidate(const char *op, const char *name, const char *shape,
                                     int threads, const perf_machine *mc, size_t i,
                                     size_t n_sets, const char *const *peers, double ms,
                                     double flops, int streamed);

/* res[0..n_sets) are tessera's lines and res[n_sets..n_total) the peers':
 * each tessera line gets ratio_<peer> = its time / that peer's time. */
void perf_add_ratios(perf_result *res, size_t n_sets, size_t n_total);

/* Prints the result as one line of key=value pairs on stdout. */
void perf_print_result(const perf_result *r);

/* ---- Built-in shapes (shapes.c) ----------------------------------------- */

typedef struct perf_model {
    const char *name;
    size_t d, d_ff, vocab;
} perf_model;

/* Transformer-base and -big (Vaswani et al.), with an 8000-token vocabulary. */
extern const perf_model perf_models[];
extern const size_t perf_model_count;

/* Rows of a linear layer or FFN call: one decode step for 1, 4 or 16
 * sentences, then an encoder pass over 128 and 512 tokens. */
extern const size_t perf_rows[];
extern const size_t perf_rows_count;
extern const size_t perf_quick_rows[];
extern const size_t perf_quick_rows_count;

/* Times run(ctx) for set mc->sets[s] and prints one line with gbps for
 * `bytes` per call (the arrays the kernel must read and write) and no flops:
 * the shared tail of the row-wise ops (layernorm, softmax, activation,
 * embed, widen). `fallback` says the set still uses the scalar entry. */
void perf_time_rowwise(const perf_options *o, const perf_machine *mc, size_t s, const char *op,
                       const char *kernel, const char *name, const char *shape, double bytes,
                       int fallback, perf_run_fn run, void *ctx);

/* ---- The cases --------------------------------------------------------------- */

void perf_run_gemm(const perf_options *o, const perf_machine *mc);
void perf_run_ffn(const perf_options *o, const perf_machine *mc);
void perf_run_attention(const perf_options *o, const perf_machine *mc);
void perf_run_layernorm(const perf_options *o, const perf_machine *mc);
void perf_run_softmax(const perf_options *o, const perf_machine *mc);
void perf_run_activation(const perf_options *o, const perf_machine *mc);
void perf_run_embed(const perf_options *o, const perf_machine *mc);
void perf_run_widen(const perf_options *o, const perf_machine *mc);

#endif
