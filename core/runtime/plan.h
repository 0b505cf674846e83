/* Memory plans: the working memory a batch of a call will allocate, computed
 * from its shapes before it runs, so that a call keeps within its runtime's
 * memory budget by splitting its batches (core/runtime/batching.h).
 *
 * Every figure is an upper bound of the bytes the batch holds at once
 * through base/memory.c: its activations, the KV cache of every hypothesis at
 * the longest it may grow, the logits, the search's state, each block with
 * what the allocator may add to it. Not counted: the weights, the call's
 * results (the caller's from then on), and the threads' GEMM scratch,
 * planned apart (tsr_plan_thread_scratch) because it outlives calls.
 * tests/test_alloc_faults.c holds each plan to what a counting allocator
 * sees. Each module plans what it allocates, next to the code that
 * allocates it, and declares its plan in its own header; this one holds
 * what they share. */
#ifndef TSR_CORE_RUNTIME_PLAN_H
#define TSR_CORE_RUNTIME_PLAN_H

#include <stddef.h>

#include "core/runtime/runtime.h"

/* The sentences of one batch: how many, their source tokens in all, the
 * longest source, and (scoring) the decoder rows, BOS + target, in all and
 * the most one sentence has. */
typedef struct tsr_batch_shape {
    size_t n;
    size_t src_rows, longest_src;
    size_t tgt_rows, longest_tgt;
} tsr_batch_shape;

/* The scratch every thread of ex's team keeps across calls
 * (simd/thread_scratch.h), at the most, all threads together. */
size_t tsr_plan_thread_scratch(const tsr_exec *ex);

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
