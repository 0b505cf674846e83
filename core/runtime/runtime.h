/*
 * The runtime (tessera_runtime, the public handle): an execution context that
 * owns what a call needs besides the model, with no process state behind it
 * other than the machine's read-only description (CPU features, topology):
 *   - its threads: a leader thread of its own, which runs every call made on
 *     the runtime, and the OpenMP team that leader opens (K threads, the
 *     leader included), bound to the cores its plan gives it. The caller's
 *     thread hands the call over and waits: it is never bound or re-bound;
 *   - its place among N workers x K threads (threads/placement.h), which
 *     tells each thread the NUMA node whose copy of the weights it reads;
 *   - the GEMM blocking (normally the kernel set's; tests inject small block
 *     sizes to run every loop of the frame several times);
 *   - its threads' scratch (simd/thread_scratch.h), kept across calls.
 * One call runs at a time on a runtime (calls from several threads queue);
 * several runtimes run at once, on one immutable model or several.
 *
 * The model's code receives a tsr_exec, the part of the runtime one call
 * uses, explicitly: the ops, the GEMM frame (through the kernel table) and
 * the kernels see nothing else.
 */
#ifndef TSR_CORE_RUNTIME_RUNTIME_H
#define TSR_CORE_RUNTIME_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"
#include "simd/gemm/gemm.h"
#include "simd/kernels.h"
#include "threads/placement.h"
#include "threads/topology.h"

/* Doubles of one thread's barrier-arrival record (tsr_work.arrived): its own
 * cache line. */
#define TSR_WORK_STRIDE 8

/* A call's counters (the brackets that fill them: core/runtime/work.h). */
typedef struct tsr_work {
    double divided_seconds; /* thread 0's time inside divided work */
    double waited_seconds;  /* of it, the team's mean wait at those loops' barriers */
    double *arrived;        /* [threads * TSR_WORK_STRIDE]: each thread's arrival at the
                               barrier (two alternating slots) and its count of them */
    double f32_flops;       /* multiplies and adds on float32 (and bf16) weights, attention */
    double i8_ops;          /* multiplies and adds on int8 weights */
    double bytes;           /* weights, keys and values read; logits written */
} tsr_work;

/* What one call on one model uses of its runtime. Built by the runtime for
 * the call, read-only during it (but for the counters `work` points to). */
typedef struct tsr_exec {
    const tessera_model *m;
    const tsr_kernels *ks;     /* the model's kernel set, with the runtime's GEMM blocking */
    int threads;               /* the team size of every parallel region */
    const int *copy_of_thread; /* [threads]: the weight copy (model->replicas) each reads */
    size_t memory_budget;      /* bytes the call may plan to hold (core/runtime/batching.h) */
    tsr_work *work;            /* the call's counters, or NULL */
} tsr_exec;

/* A call run on the runtime's leader thread: returns 0 or a tessera_status
 * with a message. */
typedef int (*tsr_call_fn)(const tsr_exec *x, void *arg, char *err, size_t err_len);

/* The exec a call on model m would get from rt (for planning, not running:
 * table and gemm are its storage). */
void tsr_runtime_exec(const tessera_runtime *rt, const tessera_model *m, tsr_kernels *table,
                      tsr_gemm_config *gemm, tsr_exec *ex);

/* Runs fn(exec for model m, arg) on rt's threads and returns its status. Calls
 * on one runtime run one at a time, in the order their callers got the
 * runtime's lock. */
int tsr_runtime_run(tessera_runtime *rt, const tessera_model *m, tsr_call_fn fn, void *arg,
                    char *err, size_t err_len);

/* The runtime behind the functions that take none (tessera_translate, ...):
 * made on first use from the process-wide settings (tessera_set_threads,
 * tessera_set_placement), made again after they change. NULL with a message
 * when it cannot be made. */
tessera_runtime *tsr_default_runtime(char *err, size_t err_len);

/* GEMM blocking for a runtime's calls, for tests: every size > 0 replaces
 * the kernel set's (kc: k steps per cache block; a_block_floats: packed rows
 * of x per block; b_block_floats: weight panels per column block; i8_kc4: k
 * groups per int8 piece); 0 keeps the set's. Call before the runtime's first
 * call; not thread-safe with calls on it. */
typedef struct tsr_gemm_blocks {
    size_t kc, a_block_floats, b_block_floats, i8_kc4, decode_kc;
} tsr_gemm_blocks;
void tsr_runtime_set_gemm_blocks(tessera_runtime *rt, const tsr_gemm_blocks *blocks);

#endif
