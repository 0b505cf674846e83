/*
 * op=gemm: the linear kernel alone, y = x W^T (no bias, activation or
 * residual, so that the work is exactly the peers'), on the projections of
 * Transformer-base and -big: in_proj (3d x d), out_proj (d x d), linear1
 * (d_ff x d), linear2 (d x d_ff) and the generator (vocab x d), for each
 * number of rows in perf_rows. A shape MxNxK is m rows, n outputs, k inputs.
 *
 * Decode shapes (m <= PERF_DECODE_ROWS) cycle through copies of the weights
 * larger than the last-level cache, as a decode step streams the weights of
 * every layer, and report gbps (packed weight bytes per second) and pct_bw.
 */
#include <stdio.h>

#include "base/memory.h"
#include "perf/perf.h"

typedef struct gemm_case {
    const char *name;
    size_t m, n, k;
} gemm_case;

typedef struct linear_job {
    const tsr_kernels *t;
    const perf_packed *packed;
    size_t next;
    const tsr_packed_linear *w; /* the copy this call reads */
    const float *x;
    size_t m;
    float *y;
    int threads;
} linear_job;

/* Part `part` of the output columns, cut in the set's linear_n_align units
 * as the library's threads will cut them. */
static void linear_part(void *ctx, int part, int threads)
{
    linear_job *j = ctx;
    size_t b, e;
    perf_split(j->w->n, j->t->linear_n_align, part, threads, &b, &e);
    if (b == e)
        return;
    tsr_linear_args a = {
        .x = j->x, .ldx = j->w->k, .m = j->m, .w = j->w, .n_begin = b, .n_end = e,
        .act = TSR_ACT_NONE, .residual = NULL, .ldr = 0, .y = j->y, .ldy = j->w->n,
    };
    j->t->linear(j->t, &a);
}

static void run_linear(void *ctx)
{
    linear_job *j = ctx;
    j->w = &j->packed->w[j->next];
    j->next = (j->next + 1) % j->packed->copies;
    perf_parallel(j->threads, linear_part, j);
}

typedef struct peer_job {
    size_t peer, m, n, k;
    const float *x;
    const float *w_store;
    size_t copies, stride, next;
    float *y;
} peer_job;

static void run_peer(void *ctx)
{
    peer_job *j = ctx;
    const float *w = j->w_store + j->next * j->stride;
    j->next = (j->next + 1) % j->copies;
    perf_peer_gemm(j->peer, j->m, j->n, j->k, j->x, w, j->y);
}

/* Every kernel set and peer gets its own operands and output, prepared
 * before timing, so that they can be timed in turn (perf_median_ms_each). */
static void run_case(const perf_options *o, const perf_machine *mc, const gemm_case *c)
{
    const int streamed = c->m <= PERF_DECODE_ROWS;
    const double flops = 2.0 * (double)c->m * (double)c->n * (double)c->k;
    const size_t out = c->m * c->n;
    float *x = perf_random_floats(c->m * c->k, 1);
    float *w = perf_random_floats(c->n * c->k, 2);
    perf_round_weights(o->weight_type, w, c->n * c->k);
    const char *peers[PERF_MAX_PEERS];
    const size_t n_sets = mc->n_sets, n_peers = o->peers ? perf_peer_names(peers) : 0;
    const size_t n_all = n_sets + n_peers;
    perf_packed packed[PERF_MAX_SETS];
    linear_job jobs[PERF_MAX_SETS];
    peer_job peer_jobs[PERF_MAX_PEERS];
    float *peer_store[PERF_MAX_PEERS];
    perf_peak_run paired[PERF_MAX_SETS];
    size_t paired_set[PERF_MAX_SETS], n_paired = 0;
    float *y[PERF_MAX_SETS + PERF_MAX_PEERS];
    perf_run_fn run[2 * PERF_MAX_SETS + PERF_MAX_PEERS];
    void *ctx[2 * PERF_MAX_SETS + PERF_MAX_PEERS];
    double ms[2 * PERF_MAX_SETS + PERF_MAX_PEERS];
    perf_result res[PERF_MAX_SETS + PERF_MAX_PEERS];
    char what[160], shape[64];

    snprintf(shape, sizeof shape, "%zux%zux%zu", c->m, c->n, c->k);
    snprintf(what, sizeof what, "op=gemm name=%s shape=%s type=%s", c->name, shape,
             perf_type_name(o->weight_type));

    for (size_t s = 0; s < n_sets; s++) {
        const tsr_kernels *t = mc->sets[s];
        size_t bytes = t->pack_bytes(t, o->weight_type, c->n, c->k);
        perf_pack_copies(t, o->weight_type, w, NULL, c->n, c->k,
                         perf_copies_for(mc, bytes, streamed), &packed[s]);
        y[s] = perf_random_floats(out, 3);
        jobs[s] = (linear_job){.t = t, .packed = &packed[s], .x = x, .m = c->m, .y = y[s],
                               .threads = o->threads};
        run[s] = run_linear;
        ctx[s] = &jobs[s];
    }
    for (size_t p = 0; p < n_peers; p++) {
        peer_job *j = &peer_jobs[p];
        size_t i = n_sets + p;
        *j = (peer_job){.peer = p, .m = c->m, .n = c->n, .k = c->k, .x = x};
        j->copies = perf_copies_for(mc, c->n * c->k * sizeof(float), streamed);
        peer_store[p] = perf_copies_of(w, c->n * c->k, j->copies, &j->stride);
        j->w_store = peer_store[p];
        y[i] = j->y = perf_random_floats(out, 3);
        run[i] = run_peer;
        ctx[i] = j;
    }

    /* Compute-bound cases time each set's FMA loop in the same round robin
     * (perf/peak.c); int8 kernels have their own peak, not this. */
    for (size_t s = 0; s < n_sets && o->ceilings && !streamed; s++) {
        perf_fma_loop_fn loop = perf_fma_loop_for(mc->sets[s]->name);
        if (!loop || o->weight_type == TSR_WEIGHTS_INT8)
            continue;
        /* A run of the kernel (a warm-up too) sets the loop's run length. */
        double t0 = perf_now();
        run[s](ctx[s]);
        perf_peak_run_init(&paired[n_paired], loop, o->threads, perf_now() - t0);
        paired_set[n_paired] = s;
        run[n_all + n_paired] = perf_run_peak;
        ctx[n_all + n_paired] = &paired[n_paired];
        n_paired++;
    }

    perf_median_ms_each(o, n_all + n_paired, run, ctx, ms);

    for (size_t i = 0; i < n_all; i++) {
        perf_result *r = &res[i];
        *r = perf_result_of_candidate("gemm", c->name, shape, o->threads, mc, i, n_sets, peers,
                                      ms[i], flops, streamed);
        if (i < n_sets) {
            const tsr_kernels *t = mc->sets[i];
            r->bytes = streamed ? (double)packed[i].bytes : 0;
            r->type = perf_type_name(o->weight_type);
            if (o->weight_type == TSR_WEIGHTS_INT8)
                r->peak = mc->peak_int8[i]; /* its int8 kernel's, not the FMA peak */
            r->fallback_scalar = t != mc->scalar && t->linear == mc->scalar->linear;
            perf_packed_free(&packed[i]);
        } else {
            r->bytes = streamed ? (double)(c->n * c->k * sizeof(float)) : 0;
            tsr_free(peer_store[i - n_sets]);
        }
        /* int8: every set gives the same bits (simd/int8.h); the peers'
         * float32 results differ by the quantization. */
        if (i > 0 && (i < n_sets || o->weight_type != TSR_WEIGHTS_INT8))
            perf_check_result(what, r->isa ? r->isa : r->peer, res[0].isa, y[0], y[i], out);
    }
    for (size_t q = 0; q < n_paired; q++)
        res[paired_set[q]].paired_peak = paired[q].flops / (ms[n_all + q] * 1e-3);
    perf_add_ratios(res, n_sets, n_all);
    for (size_t i = 0; i < n_all; i++)
        perf_print_result(&res[i]);
    for (size_t i = 0; i < n_all; i++)
        tsr_free(y[i]);
    tsr_free(x);
    tsr_free(w);
}

void perf_run_gemm(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        gemm_case c = {"custom", o->shape[0], o->shape[1], o->shape_dims > 2 ? o->shape[2] : 0};
        run_case(o, mc, &c);
        return;
    }
    const size_t *rows = o->quick ? perf_quick_rows : perf_rows;
    size_t n_rows = o->quick ? perf_quick_rows_count : perf_rows_count;
    for (size_t mi = 0; mi < (o->quick ? 1 : perf_model_count); mi++) {
        const perf_model *md = &perf_models[mi];
        char names[5][32];
        const gemm_case layers[5] = {
            {names[0], 0, 3 * md->d, md->d},
            {names[1], 0, md->d, md->d},
            {names[2], 0, md->d_ff, md->d},
            {names[3], 0, md->d, md->d_ff},
            {names[4], 0, md->vocab, md->d},
        };
        static const char *const layer_names[5] = {"in_proj", "out_proj", "linear1", "linear2",
                                                   "generator"};
        for (size_t l = 0; l < 5; l++)
            snprintf(names[l], sizeof names[l], "%s.%s", md->name, layer_names[l]);
        /* A smoke run times one small layer. */
        size_t first = o->quick ? 1 : 0, last = o->quick ? 2 : 5;
        for (size_t l = first; l < last; l++)
            for (size_t r = 0; r < n_rows; r++) {
                gemm_case c = layers[l];
                c.m = rows[r];
                run_case(o, mc, &c);
            }
    }
}
