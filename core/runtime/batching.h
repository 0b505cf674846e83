/* A call's batches (translate, score, encode): its sentences taken a batch
 * at a time, each batch at most `batch` sentences, at most `batch_tokens`
 * source tokens (a longer sentence alone), and within the runtime's memory
 * budget by the call's memory plan (core/runtime/plan.h); a sentence that
 * alone needs more than the budget is an error naming it. With a token
 * limit the sentences are taken shortest first (a stable sort by source
 * length), as CTranslate2 does for batches counted in tokens; otherwise in
 * input order. The results do not depend on how the batches are formed
 * (every output element is reduced in an order fixed by its own sentence),
 * so the call answers in input order whatever the batches were. */
#ifndef TSR_CORE_RUNTIME_BATCHING_H
#define TSR_CORE_RUNTIME_BATCHING_H

#include <stddef.h>

#include "core/runtime/plan.h"

/* The plan of one batch of the call (ctx: the call's options). */
typedef size_t (*tsr_batch_plan_fn)(const tsr_exec *ex, const void *ctx, const tsr_batch_shape *b);

typedef struct tsr_batcher {
    const tsr_exec *ex;
    const tessera_tokens *src, *tgt; /* tgt: the targets of score, else NULL */
    size_t n;
    size_t max_count, max_tokens;    /* max_tokens 0: no token limit */
    tsr_batch_plan_fn plan;
    const void *plan_ctx;
    const char *what;                /* "sentence", "pair": how errors name an input */
    size_t own;                      /* the threads' scratch and the batcher's own arrays */
    size_t budget;                   /* bytes a batch may plan: ex's budget less `own` */
    size_t *order;                   /* [n]: input indices in the order batches take them */
    size_t taken;                    /* how many of order[] batches have taken */
    tessera_cancel_fn cancel;        /* asked before each batch (NULL: never) */
    void *cancel_arg;
} tsr_batcher;

/* Leaves out of the batches the sentences whose given[i] is empty (what a
 * caller passed before the model's suffix): nothing is computed for them. */
void tsr_batcher_leave_out_empty(tsr_batcher *b, const tessera_tokens *given);

/* Prepares the batches of src[0..n) (and tgt, for score); the limits and the
 * plan as above. 0, or TESSERA_ERR_NOMEM. */
int tsr_batcher_init(tsr_batcher *b, const tsr_exec *ex, const tessera_tokens *src,
                     const tessera_tokens *tgt, size_t n, int max_count, int max_tokens,
                     tsr_batch_plan_fn plan, const void *plan_ctx, const char *what, char *err,
                     size_t err_len);
void tsr_batcher_free(tsr_batcher *b);

/* What the batcher itself holds for a call of n inputs (its order, and the
 * keys it sorts when it sorts): its budget is what the runtime's leaves
 * after that and the threads' scratch. */
size_t tsr_batcher_plan(size_t n, int sorting);

/* The next batch: the inputs order[*first .. *first + *count). Returns 0,
 * 1 when every input has been taken, TESSERA_ERR_CANCELLED when the
 * batcher's cancel function says so, or TESSERA_ERR_NOMEM naming the input
 * that does not fit the budget alone. */
int tsr_batcher_next(tsr_batcher *b, size_t *first, size_t *count, char *err, size_t err_len);

#endif
