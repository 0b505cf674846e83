/*
 * op=layernorm and op=softmax: the row-wise kernels, memory-light and
 * latency-bound at decode sizes. They report gbps of the arrays they must
 * read and write (these fit in cache here, so no pct_bw).
 *
 * layernorm: add_layernorm as post-norm calls it (x += delta, then
 * out = LN(x) gamma + beta) on rows x d_model; bytes: x read and written,
 * delta read, out written. Each call adds +delta or -delta in turn so x
 * stays where it started.
 * softmax: log_softmax, logsumexp and argmax over generator rows of the
 * 8000-token vocabulary, once per row; bytes: the row read (and for
 * log_softmax, written).
 * With --threads, rows are split across threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "perf/perf.h"

typedef struct rows_job {
    const tsr_kernels *t;
    size_t rows, n;
    float *x;
    const float *delta[2];
    size_t flip;
    const float *gamma, *beta;
    float *out;
    size_t *index;
    float *sums;
    int threads;
    int which; /* softmax: 0 log_softmax, 1 logsumexp, 2 argmax */
} rows_job;

static const tsr_layernorm_params pytorch_layernorm = {TSR_LAYERNORM_VARIANCE, 1e-5f};

static void layernorm_part(void *ctx, int part, int threads)
{
    rows_job *j = ctx;
    size_t b, e;
    perf_split(j->rows, 1, part, threads, &b, &e);
    if (b < e)
        j->t->add_layernorm(j->x + b * j->n, j->n, j->delta[j->flip] + b * j->n, j->n, e - b,
                            j->n, j->gamma, j->beta, pytorch_layernorm, j->out + b * j->n, j->n);
}

static void run_layernorm(void *ctx)
{
    rows_job *j = ctx;
    perf_parallel(j->threads, layernorm_part, j);
    j->flip ^= 1;
}

static void layernorm_case(const perf_options *o, const perf_machine *mc, size_t rows, size_t n)
{
    float *x0 = perf_random_floats(rows * n, 31);
    float *x = perf_random_floats(rows * n, 31);
    float *plus = perf_random_floats(rows * n, 32);
    float *minus = perf_random_floats(rows * n, 32);
    float *gamma = perf_random_floats(n, 33), *beta = perf_random_floats(n, 34);
    float *out = perf_random_floats(rows * n, 35), *ref = perf_random_floats(rows * n, 36);
    char shape[64], what[128];
    const char *ref_who = NULL;

    for (size_t i = 0; i < rows * n; i++)
        minus[i] = -plus[i];
    snprintf(shape, sizeof shape, "%zux%zu", rows, n);
    snprintf(what, sizeof what, "op=layernorm shape=%s", shape);
    for (size_t s = 0; s < mc->n_sets; s++) {
        const tsr_kernels *t = mc->sets[s];
        rows_job j = {.t = t, .rows = rows, .n = n, .x = x, .delta = {plus, minus},
                      .gamma = gamma, .beta = beta, .out = out, .threads = o->threads};
        perf_time_rowwise(o, mc, s, "layernorm", NULL, NULL, shape, 4.0 * rows * n * sizeof(float),
                          t != mc->scalar && t->add_layernorm == mc->scalar->add_layernorm,
                          run_layernorm, &j);

        /* One checked call from the starting x. */
        memcpy(x, x0, rows * n * sizeof *x);
        j.flip = 0;
        run_layernorm(&j);
        if (ref_who)
            perf_check_result(what, t->name, ref_who, ref, out, rows * n);
        else
            memcpy(ref, out, rows * n * sizeof *out);
        ref_who = ref_who ? ref_who : t->name;
        memcpy(x, x0, rows * n * sizeof *x);
    }
    tsr_free(x0);
    tsr_free(x);
    tsr_free(plus);
    tsr_free(minus);
    tsr_free(gamma);
    tsr_free(beta);
    tsr_free(out);
    tsr_free(ref);
}

void perf_run_layernorm(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        layernorm_case(o, mc, o->shape[0], o->shape[1]);
        return;
    }
    static const size_t rows[] = {1, 16, 128, 512};
    for (size_t mi = 0; mi < (o->quick ? 1 : perf_model_count); mi++)
        for (size_t r = o->quick ? 1 : 0; r < (o->quick ? 2 : 4); r++)
            layernorm_case(o, mc, rows[r], perf_models[mi].d);
}

static void softmax_part(void *ctx, int part, int threads)
{
    rows_job *j = ctx;
    size_t b, e;
    perf_split(j->rows, 1, part, threads, &b, &e);
    for (size_t i = b; i < e; i++) {
        const float *row = j->x + i * j->n;
        if (j->which == 0)
            j->t->log_softmax(row, j->n, j->out + i * j->n);
        else if (j->which == 1)
            j->sums[i] = j->t->logsumexp(row, j->n);
        else
            j->index[i] = j->t->argmax(row, j->n);
    }
}

static void run_softmax(void *ctx)
{
    rows_job *j = ctx;
    perf_parallel(j->threads, softmax_part, j);
}

static int softmax_fallback(const tsr_kernels *t, const tsr_kernels *scalar, int which)
{
    if (t == scalar)
        return 0;
    if (which == 0)
        return t->log_softmax == scalar->log_softmax;
    if (which == 1)
        return t->logsumexp == scalar->logsumexp;
    return t->argmax == scalar->argmax;
}

static void softmax_case(const perf_options *o, const perf_machine *mc, size_t rows, size_t n)
{
    static const char *const kernels[3] = {"log_softmax", "logsumexp", "argmax"};
    float *x = perf_random_floats(rows * n, 41);
    float *out = perf_random_floats(rows * n, 42), *ref = perf_random_floats(rows * n, 43);
    float *sums = perf_random_floats(rows, 44), *ref_sums = perf_random_floats(rows, 45);
    size_t *index = calloc(rows, sizeof *index), *ref_index = calloc(rows, sizeof *index);
    char shape[64], what[128];

    for (size_t i = 0; i < rows * n; i++)
        x[i] *= 8.0f; /* logits spread like a trained generator's */
    snprintf(shape, sizeof shape, "%zux%zu", rows, n);
    for (int which = 0; which < 3; which++) {
        const char *ref_who = NULL;
        snprintf(what, sizeof what, "op=softmax kernel=%s shape=%s", kernels[which], shape);
        for (size_t s = 0; s < mc->n_sets; s++) {
            const tsr_kernels *t = mc->sets[s];
            rows_job j = {.t = t, .rows = rows, .n = n, .x = x, .out = out, .index = index,
                          .sums = sums, .threads = o->threads, .which = which};
            double bytes = (which == 0 ? 2.0 : 1.0) * rows * n * sizeof(float);
            perf_time_rowwise(o, mc, s, "softmax", kernels[which], NULL, shape, bytes,
                              softmax_fallback(t, mc->scalar, which), run_softmax, &j);
            if (which == 0 && ref_who)
                perf_check_result(what, t->name, ref_who, ref, out, rows * n);
            if (which == 1 && ref_who)
                perf_check_result(what, t->name, ref_who, ref_sums, sums, rows);
            if (which == 2 && ref_who && memcmp(index, ref_index, rows * sizeof *index) != 0)
                fprintf(stderr, "tessera-perf: warning: %s: %s picks another index than %s\n",
                        what, t->name, ref_who);
            if (!ref_who) {
                memcpy(ref, out, rows * n * sizeof *out);
                memcpy(ref_sums, sums, rows * sizeof *sums);
                memcpy(ref_index, index, rows * sizeof *index);
                ref_who = t->name;
            }
        }
    }
    tsr_free(x);
    tsr_free(out);
    tsr_free(ref);
    tsr_free(sums);
    tsr_free(ref_sums);
    free(index);
    free(ref_index);
}

void perf_run_softmax(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        softmax_case(o, mc, o->shape[0], o->shape[1]);
        return;
    }
    softmax_case(o, mc, 1, perf_models[0].vocab);
    if (!o->quick)
        softmax_case(o, mc, 128, perf_models[0].vocab);
}
