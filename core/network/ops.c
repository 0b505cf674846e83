#include "core/network/ops.h"

#include <math.h>

#include "core/model/config.h"
#include "core/runtime/work.h"

#ifdef _OPENMP
#include <omp.h>
static size_t team_size(void) { return (size_t)omp_get_num_threads(); }
static size_t thread_index(void) { return (size_t)omp_get_thread_num(); }
#else
static size_t team_size(void) { return 1; }
static size_t thread_index(void) { return 0; }
#endif

/* Up to this many rows, threads split the weight panels of a linear layer
 * (each thread streams only its share of the weights, once); above it they
 * split the rows, each thread's weights then staying hot in its caches. A
 * decoding step (one row per hypothesis) or a short sentence is far below. */
#define SPLIT_COLUMNS_ROWS 256

/* [begin, end) of part i of n things cut into `parts` near-equal parts. */
static size_t part_begin(size_t n, size_t parts, size_t i) { return n * i / parts; }

/* The weight copy this thread of the team reads. */
static int my_copy(const tsr_exec *ex)
{
    size_t t = thread_index();
    return ex->copy_of_thread && t < (size_t)ex->threads ? ex->copy_of_thread[t] : 0;
}

static void linear_call(const tsr_exec *ex, const tsr_packed_linear *w, const float *x,
                        size_t ldx, size_t rows, size_t n_begin, size_t n_end, tsr_activation act,
                        const float *residual, size_t ldr, float *y, size_t ldy)
{
    tsr_packed_linear local;
    tsr_linear_args a = {
        .x = x, .ldx = ldx, .m = rows, .n_begin = n_begin, .n_end = n_end, .act = act,
        .residual = residual, .ldr = ldr, .y = y, .ldy = ldy,
        .w = tsr_model_replica(ex->m, w, my_copy(ex), &local),
    };
    ex->ks->linear(ex->ks, &a);
}

/* The arithmetic of a linear layer of w over `rows` rows and the bytes of
 * its weights, which it streams once (tessera_runtime_stats). */
static void count_linear(const tsr_exec *ex, const tsr_packed_linear *w, size_t rows)
{
    double products = 2.0 * (double)rows * (double)w->n * (double)w->k;
    double weights = (double)w->n * (double)w->k;
    if (w->type == TSR_WEIGHTS_INT8)
        tsr_work_add(ex, 0.0, products, weights);
    else
        tsr_work_add(ex, products, 0.0, weights * (w->type == TSR_WEIGHTS_BF16 ? 2.0 : 4.0));
}

void tsr_op_linear(const tsr_exec *ex, const tsr_packed_linear *w, const float *x, size_t ldx,
                   size_t rows, tsr_activation act, const float *residual, size_t ldr, float *y,
                   size_t ldy)
{
    size_t T = team_size(), align = ex->ks->linear_n_align;
    size_t units = (w->n + align - 1) / align;
    if (rows == 0)
        return;
    count_linear(ex, w, rows);
    if ((rows <= SPLIT_COLUMNS_ROWS && units >= T) || T == 1) {
        double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
        for (long t = 0; t < (long)T; t++) {
            size_t u0 = part_begin(units, T, (size_t)t), u1 = part_begin(units, T, (size_t)t + 1);
            size_t n_end = u1 * align < w->n ? u1 * align : w->n;
            if (u0 < u1)
                linear_call(ex, w, x, ldx, rows, u0 * align, n_end, act, residual, ldr, y, ldy);
        }
        tsr_work_end(ex, began);
    } else {
        double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
        for (long t = 0; t < (long)T; t++) {
            size_t r0 = part_begin(rows, T, (size_t)t), r1 = part_begin(rows, T, (size_t)t + 1);
            if (r0 < r1)
                linear_call(ex, w, x + r0 * ldx, ldx, r1 - r0, 0, w->n, act,
                            residual ? residual + r0 * ldr : NULL, ldr, y + r0 * ldy, ldy);
        }
        tsr_work_end(ex, began);
    }
}

size_t tsr_op_ffn_scratch_floats(const tsr_exec *ex)
{
    size_t per_team = (size_t)ex->threads * ex->ks->ffn_block_rows;
    return (per_team > SPLIT_COLUMNS_ROWS ? per_team : SPLIT_COLUMNS_ROWS) *
           (size_t)ex->m->cfg.d_ff;
}

void tsr_op_ffn(const tsr_exec *ex, const tsr_packed_linear *w1, const tsr_packed_linear *w2,
                const float *x, size_t rows, const float *residual, float *y, float *scratch)
{
    const tessera_model *m = ex->m;
    size_t T = team_size(), d = m->d, d_ff = (size_t)m->cfg.d_ff;
    if (rows == 0)
        return;
    if (rows <= SPLIT_COLUMNS_ROWS && T > 1) {
        /* Both layers split their weight panels, the intermediate shared in
         * scratch, so the weights are streamed once, not once per thread.
         * The FFN kernel is defined to equal these two calls bit for bit. */
        tsr_op_linear(ex, w1, x, d, rows, m->act, NULL, 0, scratch, d_ff);
        tsr_op_linear(ex, w2, scratch, d_ff, rows, TSR_ACT_NONE, residual, d, y, d);
        return;
    }
    count_linear(ex, w1, rows);
    count_linear(ex, w2, rows);
    double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
    for (long t = 0; t < (long)T; t++) {
        size_t r0 = part_begin(rows, T, (size_t)t), r1 = part_begin(rows, T, (size_t)t + 1);
        tsr_packed_linear local1, local2;
        int copy = my_copy(ex);
        tsr_ffn_args a = {
            .x = x + r0 * d, .ldx = d, .m = r1 - r0, .act = m->act,
            .w1 = tsr_model_replica(m, w1, copy, &local1),
            .w2 = tsr_model_replica(m, w2, copy, &local2),
            .residual = residual ? residual + r0 * d : NULL, .ldr = d, .y = y + r0 * d, .ldy = d,
            .scratch = scratch + thread_index() * ex->ks->ffn_block_rows * d_ff,
        };
        if (r0 < r1)
            ex->ks->ffn(ex->ks, &a);
    }
    tsr_work_end(ex, began);
}

void tsr_op_layernorm(const tsr_exec *ex, const tsr_norm *norm, float *x, const float *delta,
                      size_t rows, float *out)
{
    const tessera_model *m = ex->m;
    size_t T = team_size(), d = m->d;
    double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
    for (long t = 0; t < (long)T; t++) {
        size_t r0 = part_begin(rows, T, (size_t)t), r1 = part_begin(rows, T, (size_t)t + 1);
        if (r0 < r1)
            ex->ks->add_layernorm(x + r0 * d, d, delta ? delta + r0 * d : NULL, d, r1 - r0, d,
                                      norm->gamma, norm->beta, tsr_layernorm_of(&m->cfg),
                                      out + r0 * d, d);
    }
    tsr_work_end(ex, began);
}

/* Asks for the keys and values of head h of job j to be brought into this
 * core's caches. A decoding step's head reads 1 to a few hundred keys that
 * sit in L3 (the caches of a batch outgrow L2), in short strided runs that
 * the hardware prefetcher does not pick up: without this, each head's call
 * waits on L3 latency line after line, at a fifth of L3's bandwidth. */
static void prefetch_head(const tsr_attention_job *j, size_t h, size_t dh)
{
#if defined(__GNUC__) || defined(__clang__)
    const size_t k_off = h * (j->k_head ? j->k_head : dh), v_off = h * (j->v_head ? j->v_head : dh);
    const size_t line = 64 / sizeof(float);
    for (size_t r = 0; r < j->n_k; r++) {
        const float *v = j->v + v_off + r * j->ldv;
        for (size_t c = 0; c < dh; c += line)
            __builtin_prefetch(v + c, 0, 2);
    }
    if (j->kt) { /* the keys a decoding step reads: dh rows of n_k */
        for (size_t c = 0; c < dh; c++) {
            const float *kt = j->kt + h * j->kt_head + c * j->ldkt;
            for (size_t r = 0; r < j->n_k; r += line)
                __builtin_prefetch(kt + r, 0, 2);
            __builtin_prefetch(kt + j->n_k - 1, 0, 2);
        }
        return;
    }
    for (size_t r = 0; r < j->n_k; r++) {
        const float *k = j->k + k_off + r * j->ldk;
        for (size_t c = 0; c < dh; c += line)
            __builtin_prefetch(k + c, 0, 2);
    }
#else
    (void)j, (void)h, (void)dh;
#endif
}

static void run_head(const tsr_exec *ex, const tsr_attention_job *j, size_t h, size_t dh,
                     float scale)
{
    size_t off = h * dh;
    size_t k_off = h * (j->k_head ? j->k_head : dh), v_off = h * (j->v_head ? j->v_head : dh);
    tsr_attention_args a = {
        .q = j->q + off, .ldq = j->ldq, .k = j->k + k_off, .ldk = j->ldk,
        .kt = j->kt ? j->kt + h * j->kt_head : NULL, .ldkt = j->ldkt,
        .v = j->v + v_off, .ldv = j->ldv, .out = j->out + off, .ldo = j->ldo,
        .n_q = j->n_q, .n_k = j->n_k, .d = dh, .scale = scale,
        .causal = j->causal, .q_pos = j->q_pos,
    };
    ex->ks->attention(&a);
}

void tsr_op_attention(const tsr_exec *ex, const tsr_attention_job *jobs, size_t n_jobs)
{
    size_t H = ex->m->n_heads, dh = ex->m->d_head;
    float scale = 1.0f / sqrtf((float)dh);
    long total = (long)(n_jobs * H);
    if (tsr_work_counted(ex)) {
        /* Each (query, visible key) pair of a head: a dot product and a
         * weighted add of d_head each; each head reads its keys and values. */
        double pairs = 0.0, keys = 0.0;
        for (size_t i = 0; i < n_jobs; i++) {
            const tsr_attention_job *j = &jobs[i];
            keys += (double)j->n_k;
            for (size_t q = 0; q < j->n_q; q++) {
                size_t visible = j->causal && j->q_pos + q + 1 < j->n_k ? j->q_pos + q + 1 : j->n_k;
                pairs += (double)visible;
            }
        }
        tsr_work_add(ex, 4.0 * (double)(dh * H) * pairs, 0.0, 2.0 * 4.0 * (double)(dh * H) * keys);
    }
    /* A decoding step (one query per job, as many keys in each head) splits
     * the pairs evenly and in order, so that each thread knows its next pair
     * and has its keys and values fetched while it runs this one; a query
     * block's cost varies with its length and position, so those go to
     * whichever thread is free. Each pair's bits are its own either way. */
    int decode = 1;
    for (size_t i = 0; i < n_jobs && decode; i++)
        decode = jobs[i].n_q == 1;
    double began = tsr_work_begin(ex);
    if (decode) {
#pragma omp for schedule(static) nowait
        for (long t = 0; t < total; t++) {
            size_t next = (size_t)t + 1;
            if (next < (size_t)total)
                prefetch_head(&jobs[next / H], next % H, dh);
            run_head(ex, &jobs[(size_t)t / H], (size_t)t % H, dh, scale);
        }
    } else {
#pragma omp for schedule(dynamic, 1) nowait
        for (long t = 0; t < total; t++)
            run_head(ex, &jobs[(size_t)t / H], (size_t)t % H, dh, scale);
    }
    tsr_work_end(ex, began);
}
