/* A call's batches (core/runtime/batching.h). */
#include "core/runtime/batching.h"

#include <stdlib.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/config.h"
#include "core/model/model.h"

/* An input's place in the order: shortest source first, input order among
 * equals (the index breaks ties, so every C library sorts alike). */
typedef struct sort_key {
    size_t len, index;
} sort_key;

static int shorter_first(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int tsr_batcher_init(tsr_batcher *b, const tsr_exec *ex, const tessera_tokens *src,
                     const tessera_tokens *tgt, size_t n, int max_count, int max_tokens,
                     tsr_batch_plan_fn plan, const void *plan_ctx, const char *what, char *err,
                     size_t err_len)
{
    *b = (tsr_batcher){.ex = ex, .src = src, .tgt = tgt, .n = n,
                       .max_count = max_count > 0 ? (size_t)max_count : 1,
                       .max_tokens = max_tokens > 0 ? (size_t)max_tokens : 0,
                       .plan = plan, .plan_ctx = plan_ctx, .what = what};
    b->own = tsr_plan_add(tsr_plan_thread_scratch(ex), tsr_batcher_plan(n, b->max_tokens > 0));
    b->budget = ex->memory_budget > b->own ? ex->memory_budget - b->own : 0;
    b->order = tsr_malloc((n ? n : 1) * sizeof *b->order);
    if (!b->order)
        return tsr_fail_oom(err, err_len, "out of memory ordering %zu %ss", n, what);
    for (size_t i = 0; i < n; i++)
        b->order[i] = i;
    if (b->max_tokens) {
        sort_key *keys = tsr_malloc((n ? n : 1) * sizeof *keys);
        if (!keys) {
            tsr_batcher_free(b);
            return tsr_fail_oom(err, err_len, "out of memory ordering %zu %ss", n, what);
        }
        for (size_t i = 0; i < n; i++)
            keys[i] = (sort_key){src[i].len, i};
        qsort(keys, n, sizeof *keys, shorter_first);
        for (size_t i = 0; i < n; i++)
            b->order[i] = keys[i].index;
        tsr_free(keys);
    }
    return 0;
}

void tsr_batcher_leave_out_empty(tsr_batcher *b, const tessera_tokens *given)
{
    size_t kept = 0;
    for (size_t i = 0; i < b->n; i++)
        if (given[b->order[i]].len > 0)
            b->order[kept++] = b->order[i];
    b->n = kept;
}

size_t tsr_batcher_plan(size_t n, int sorting)
{
    size_t order = tsr_plan_block(tsr_plan_mul(n ? n : 1, sizeof(size_t)));
    size_t keys = sorting ? tsr_plan_block(tsr_plan_mul(n ? n : 1, sizeof(sort_key))) : 0;
    return tsr_plan_add(order, keys);
}

void tsr_batcher_free(tsr_batcher *b)
{
    tsr_free(b->order);
    b->order = NULL;
}

static double mib(size_t bytes) { return (double)bytes / (1024.0 * 1024.0); }

int tsr_batcher_next(tsr_batcher *b, size_t *first, size_t *count, char *err, size_t err_len)
{
    if (b->taken >= b->n)
        return 1;
    TSR_TRY(tsr_cancel_check(b->cancel, b->cancel_arg, err, err_len));
    tsr_batch_shape shape = {0};
    size_t k = 0;
    while (b->taken + k < b->n && k < b->max_count) {
        size_t i = b->order[b->taken + k];
        size_t len = b->src[i].len;
        if (k > 0 && b->max_tokens && shape.src_rows + len > b->max_tokens)
            break;
        tsr_batch_shape more = shape;
        more.n++;
        more.src_rows += len;
        if (len > more.longest_src)
            more.longest_src = len;
        if (b->tgt) { /* score: the start tokens + target */
            size_t rows = b->tgt[i].len + tsr_start_length(&b->ex->m->cfg);
            more.tgt_rows += rows;
            if (rows > more.longest_tgt)
                more.longest_tgt = rows;
        }
        size_t bytes = b->plan(b->ex, b->plan_ctx, &more);
        if (bytes > b->budget) {
            if (k > 0)
                break;
            return tsr_fail_oom(err, err_len,
                                "%s %zu (%zu tokens) needs %.1f MiB of working memory, more than "
                                "the memory budget (%.1f MiB; --max-memory, the runtime's "
                                "max_memory)",
                                b->what, i + 1, len, mib(tsr_plan_add(bytes, b->own)),
                                mib(b->ex->memory_budget));
        }
        shape = more;
        k++;
    }
    *first = b->taken;
    *count = k;
    b->taken += k;
    return 0;
}
