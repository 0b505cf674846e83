/*
 * op=ffn: the position-wise FFN kernel as the model calls it,
 * y = residual + linear2(relu(linear1(x) + b1)) + b2, on Transformer-base and
 * -big for each number of rows in perf_rows. A shape MxNxK is m rows,
 * d_ff = n, d_model = k. Its flops are those of the two GEMMs.
 *
 * With --threads, rows are cut into blocks of the set's ffn_block_rows, each
 * thread with its own scratch (a decode step of few rows runs on one).
 * Decode shapes cycle through copies of both weight matrices, as op=gemm.
 *
 * Peers: two sgemm calls with plain C loops for the bias, ReLU and residual
 * in between, over a whole m x d_ff intermediate.
 */
#include <stdio.h>

#include "base/memory.h"
#include "perf/perf.h"

typedef struct ffn_case {
    const char *name;
    size_t m, d_ff, d;
} ffn_case;

typedef struct ffn_job {
    const tsr_kernels *t;
    const perf_packed *w1, *w2;
    size_t next, current;
    const float *x, *residual;
    float *y;
    float *scratch; /* one block per thread */
    size_t m, d;
    int threads;
} ffn_job;

static void ffn_part(void *ctx, int part, int threads)
{
    ffn_job *j = ctx;
    size_t b, e;
    perf_split(j->m, j->t->ffn_block_rows, part, threads, &b, &e);
    if (b == e)
        return;
    const tsr_packed_linear *w1 = &j->w1->w[j->current];
    tsr_ffn_args a = {
        .x = j->x + b * j->d, .ldx = j->d, .m = e - b,
        .w1 = w1, .w2 = &j->w2->w[j->current], .act = TSR_ACT_RELU,
        .residual = j->residual + b * j->d, .ldr = j->d, .y = j->y + b * j->d, .ldy = j->d,
        .scratch = j->scratch + (size_t)part * j->t->ffn_block_rows * w1->n,
    };
    j->t->ffn(j->t, &a);
}

static void run_ffn(void *ctx)
{
    ffn_job *j = ctx;
    j->current = j->next;
    j->next = (j->next + 1) % j->w1->copies;
    perf_parallel(j->threads, ffn_part, j);
}

typedef struct peer_ffn_job {
    size_t peer;
    const ffn_case *c;
    const float *x, *residual, *b1, *b2;
    const float *w1_store, *w2_store;
    size_t copies, stride1, stride2, next;
    float *h, *y;
} peer_ffn_job;

static void run_peer_ffn(void *ctx)
{
    peer_ffn_job *j = ctx;
    const ffn_case *c = j->c;
    const float *w1 = j->w1_store + j->next * j->stride1;
    const float *w2 = j->w2_store + j->next * j->stride2;
    j->next = (j->next + 1) % j->copies;

    perf_peer_gemm(j->peer, c->m, c->d_ff, c->d, j->x, w1, j->h);
    for (size_t i = 0; i < c->m; i++)
        for (size_t f = 0; f < c->d_ff; f++) {
            float v = j->h[i * c->d_ff + f] + j->b1[f];
            j->h[i * c->d_ff + f] = v < 0.0f ? 0.0f : v;
        }
    perf_peer_gemm(j->peer, c->m, c->d, c->d_ff, j->h, w2, j->y);
    for (size_t i = 0; i < c->m; i++)
        for (size_t f = 0; f < c->d; f++)
            j->y[i * c->d + f] += j->b2[f] + j->residual[i * c->d + f];
}

/* As op=gemm: every set and peer gets its own operands and output, and they
 * are timed in turn. */
static void run_case(const perf_options *o, const perf_machine *mc, const ffn_case *c)
{
    const int streamed = c->m <= PERF_DECODE_ROWS;
    const size_t out = c->m * c->d;
    const double flops = 4.0 * (double)c->m * (double)c->d_ff * (double)c->d;
    float *x = perf_random_floats(out, 11);
    float *residual = perf_random_floats(out, 12);
    float *w1 = perf_random_floats(c->d_ff * c->d, 13);
    perf_round_weights(o->weight_type, w1, c->d_ff * c->d);
    float *b1 = perf_random_floats(c->d_ff, 14);
    float *w2 = perf_random_floats(c->d * c->d_ff, 15);
    perf_round_weights(o->weight_type, w2, c->d * c->d_ff);
    float *b2 = perf_random_floats(c->d, 16);
    const char *peers[PERF_MAX_PEERS];
    const size_t n_sets = mc->n_sets, n_peers = o->peers ? perf_peer_names(peers) : 0;
    const size_t n_all = n_sets + n_peers;
    perf_packed p1[PERF_MAX_SETS], p2[PERF_MAX_SETS];
    ffn_job jobs[PERF_MAX_SETS];
    peer_ffn_job peer_jobs[PERF_MAX_PEERS];
    float *scratch[PERF_MAX_SETS + PERF_MAX_PEERS], *s1[PERF_MAX_PEERS], *s2[PERF_MAX_PEERS];
    float *y[PERF_MAX_SETS + PERF_MAX_PEERS];
    perf_run_fn run[PERF_MAX_SETS + PERF_MAX_PEERS];
    void *ctx[PERF_MAX_SETS + PERF_MAX_PEERS];
    double ms[PERF_MAX_SETS + PERF_MAX_PEERS];
    perf_result res[PERF_MAX_SETS + PERF_MAX_PEERS];
    char what[160], shape[64];

    snprintf(shape, sizeof shape, "%zux%zux%zu", c->m, c->d_ff, c->d);
    snprintf(what, sizeof what, "op=ffn name=%s shape=%s type=%s", c->name, shape,
             perf_type_name(o->weight_type));

    for (size_t s = 0; s < n_sets; s++) {
        const tsr_kernels *t = mc->sets[s];
        size_t bytes = t->pack_bytes(t, o->weight_type, c->d_ff, c->d) +
                       t->pack_bytes(t, o->weight_type, c->d, c->d_ff);
        size_t copies = perf_copies_for(mc, bytes, streamed);
        perf_pack_copies(t, o->weight_type, w1, b1, c->d_ff, c->d, copies, &p1[s]);
        perf_pack_copies(t, o->weight_type, w2, b2, c->d, c->d_ff, copies, &p2[s]);
        scratch[s] = perf_random_floats((size_t)o->threads * t->ffn_block_rows * c->d_ff, 19);
        y[s] = perf_random_floats(out, 17);
        jobs[s] = (ffn_job){.t = t, .w1 = &p1[s], .w2 = &p2[s], .x = x, .residual = residual,
                            .y = y[s], .scratch = scratch[s], .m = c->m, .d = c->d,
                            .threads = o->threads};
        run[s] = run_ffn;
        ctx[s] = &jobs[s];
    }
    for (size_t p = 0; p < n_peers; p++) {
        peer_ffn_job *j = &peer_jobs[p];
        size_t i = n_sets + p;
        *j = (peer_ffn_job){.peer = p, .c = c, .x = x, .residual = residual, .b1 = b1, .b2 = b2};
        j->copies = perf_copies_for(mc, 2 * c->d_ff * c->d * sizeof(float), streamed);
        s1[p] = perf_copies_of(w1, c->d_ff * c->d, j->copies, &j->stride1);
        s2[p] = perf_copies_of(w2, c->d * c->d_ff, j->copies, &j->stride2);
        j->w1_store = s1[p];
        j->w2_store = s2[p];
        scratch[i] = j->h = perf_random_floats(c->m * c->d_ff, 20);
        y[i] = j->y = perf_random_floats(out, 17);
        run[i] = run_peer_ffn;
        ctx[i] = j;
    }

    perf_median_ms_each(o, n_all, run, ctx, ms);

    for (size_t i = 0; i < n_all; i++) {
        perf_result *r = &res[i];
        *r = perf_result_of_candidate("ffn", c->name, shape, o->threads, mc, i, n_sets, peers,
                                      ms[i], flops, streamed);
        if (i < n_sets) {
            const tsr_kernels *t = mc->sets[i];
            r->bytes = streamed ? (double)(p1[i].bytes + p2[i].bytes) : 0;
            r->type = perf_type_name(o->weight_type);
            if (o->weight_type == TSR_WEIGHTS_INT8)
                r->peak = mc->peak_int8[i]; /* its int8 kernel's, not the FMA peak */
            /* Every set's ffn is the frame's block loop over its own linear,
             * so the linear entry is what tells a set's own FFN. */
            r->fallback_scalar = t != mc->scalar && t->linear == mc->scalar->linear;
            perf_packed_free(&p1[i]);
            perf_packed_free(&p2[i]);
        } else {
            r->bytes = streamed ? (double)(2 * c->d_ff * c->d * sizeof(float)) : 0;
            tsr_free(s1[i - n_sets]);
            tsr_free(s2[i - n_sets]);
        }
        /* int8: every set gives the same bits (simd/int8.h); the peers'
         * float32 results differ by the quantization. */
        if (i > 0 && (i < n_sets || o->weight_type != TSR_WEIGHTS_INT8))
            perf_check_result(what, r->isa ? r->isa : r->peer, res[0].isa, y[0], y[i], out);
    }
    perf_add_ratios(res, n_sets, n_all);
    for (size_t i = 0; i < n_all; i++) {
        perf_print_result(&res[i]);
        tsr_free(y[i]);
        tsr_free(scratch[i]);
    }
    tsr_free(x);
    tsr_free(residual);
    tsr_free(w1);
    tsr_free(b1);
    tsr_free(w2);
    tsr_free(b2);
}

void perf_run_ffn(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        ffn_case c = {"custom", o->shape[0], o->shape[1], o->shape[2]};
        run_case(o, mc, &c);
        return;
    }
    if (o->quick) {
        ffn_case c = {"base", 4, perf_models[0].d_ff, perf_models[0].d};
        run_case(o, mc, &c);
        return;
    }
    for (size_t mi = 0; mi < perf_model_count; mi++)
        for (size_t r = 0; r < perf_rows_count; r++) {
            ffn_case c = {perf_models[mi].name, perf_rows[r], perf_models[mi].d_ff,
                          perf_models[mi].d};
            run_case(o, mc, &c);
        }
}
