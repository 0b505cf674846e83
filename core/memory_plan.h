/* Memory plans: the working memory a batch of a call will allocate, computed
 * from its shapes before it runs, so that a call keeps within its runtime's
 * memory budget by splitting its batches (core/batching.h).
 *
 * Every figure is an upper bound of the bytes the batch holds at once
 * through core/memory.c: its activations, the KV cache of every hypothesis at
 * the longest it may grow, the logits, the search's state, each block with
 * what the allocator may add to it. Not counted: the weights, the call's
 * results (the caller's from then on), and the threads' GEMM scratch,
 * planned apart (tsr_plan_thread_scratch) because it outlives calls.
 * tests/test_alloc_faults.c holds each plan to what a counting allocator
 * sees. Each module plans what it allocates, next to the code that
 * allocates it; this header lists them. */
#ifndef TSR_CORE_MEMORY_PLAN_H
#define TSR_CORE_MEMORY_PLAN_H

#include <stddef.h>

#include "core/runtime.h"

/* The sentences of one batch: how many, their source tokens in all, the
 * longest source, and (scoring) the decoder rows, BOS + target, in all and
 * the most one sentence has. */
typedef struct tsr_batch_shape {
    size_t n;
    size_t src_rows, longest_src;
    size_t tgt_rows, longest_tgt;
} tsr_batch_shape;

/* ---- Whole batches ----------------------------------------------------------- */

/* tessera_translate_with: greedy or sampling (core/greedy.c), beam search
 * (core/beam.c), as o says. */
size_t tsr_plan_translate(const tsr_exec *ex, const tessera_translate_options *o,
                          const tsr_batch_shape *b);
size_t tsr_greedy_plan(const tsr_exec *ex, const tessera_translate_options *o,
                       const tsr_batch_shape *b);
size_t tsr_beam_plan(const tsr_exec *ex, const tessera_translate_options *o,
                     const tsr_batch_shape *b);
/* tessera_score_with (core/score.c), tessera_encode_with (core/encode.c). */
size_t tsr_score_plan(const tsr_exec *ex, const tsr_batch_shape *b);
size_t tsr_encode_plan(const tsr_exec *ex, const tsr_batch_shape *b);

/* The scratch every thread of ex's team keeps across calls
 * (simd/thread_scratch.h), at the most, all threads together. */
size_t tsr_plan_thread_scratch(const tsr_exec *ex);

/* ---- The parts ------------------------------------------------------------------ */

/* A batch's source side (core/translate.c): its packing, the encoder's
 * output and its work (core/encoder.c), the cross-attention keys and values
 * (core/decoder.c); `then` is what is allocated after the cross memory and
 * held with it (the decoder), so that the encoder's work, freed by then, is
 * not counted twice. */
size_t tsr_source_batch_plan(const tsr_exec *ex, const tsr_batch_shape *b, size_t then);
size_t tsr_encoder_work_plan(const tsr_exec *ex, size_t n, size_t rows);
size_t tsr_cross_memory_plan(const tessera_model *m, size_t src_rows);
/* What building it holds besides: one layer's rows before their layout. */
size_t tsr_cross_memory_build_plan(const tessera_model *m, size_t src_rows);

/* A decoder (core/decoder.c) over `slots` hypotheses whose caches reach
 * `positions` positions, fed `rows` rows by `seqs` sequences per call at
 * the most; with alignments, over sources of up to longest_src tokens. */
size_t tsr_decoder_plan(const tsr_exec *ex, size_t slots, size_t seqs, size_t rows,
                        size_t positions, size_t longest_src, int alignments);
/* The KV cache (core/kv_cache.c) of that decoder. */
size_t tsr_kv_cache_plan(size_t slots, size_t layers, size_t d, size_t positions);

/* ---- Blocks -------------------------------------------------------------------- */

/* A tsr_malloc / tsr_calloc / tsr_realloc block of `bytes`; a tsr_alloc
 * block of `bytes`, and of n floats; a tsr_buffer grown to n floats (its
 * doubling included, and the old block held beside the new one while it
 * grows). */
size_t tsr_plan_block(size_t bytes);
size_t tsr_plan_aligned(size_t bytes);
size_t tsr_plan_floats(size_t n);
size_t tsr_plan_buffer(size_t n);

/* size_t arithmetic that saturates at SIZE_MAX instead of wrapping. */
size_t tsr_plan_add(size_t a, size_t b);
size_t tsr_plan_mul(size_t a, size_t b);

#endif
