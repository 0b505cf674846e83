/*
 * op=attention: the attention kernel on one head of d_head 64, with queries,
 * keys and values in the fused in_proj output the encoder hands it (rows of
 * 3 * d_model floats, heads side by side), for L = 128, 512, 1024, 4096:
 *   name=self    L queries, L keys, no mask (encoder self-attention)
 *   name=causal  L queries, L keys, causal (the decoder over a whole target,
 *                as in scoring)
 *   name=decode  1 query at position L-1, L keys (one decode step)
 * A shape is n_q x n_k x d_head. Flops are the two matrix products,
 * 4 d_head per (query, visible key) pair; the exponentials are not counted.
 * With --threads N, N heads run side by side, one per thread, and the flops
 * count all of them.
 */
#include <math.h>
#include <stdio.h>

#include "base/memory.h"
#include "perf/perf.h"

#define D_HEAD 64
#define MIN_HEADS 8

typedef struct attention_case {
    const char *name;
    size_t n_q, n_k, d;
    int causal;
    size_t q_pos;
} attention_case;

typedef struct attention_job {
    const tsr_kernels *t;
    const attention_case *c;
    const float *qkv;
    size_t ld_qkv; /* 3 * heads * d */
    float *out;
    size_t ld_out; /* heads * d */
} attention_job;

static void attention_part(void *ctx, int head, int threads)
{
    attention_job *j = ctx;
    const attention_case *c = j->c;
    size_t off = (size_t)head * c->d, dm = j->ld_out;
    (void)threads;
    tsr_attention_args a = {
        .q = j->qkv + off, .ldq = j->ld_qkv, .k = j->qkv + dm + off, .ldk = j->ld_qkv,
        .v = j->qkv + 2 * dm + off, .ldv = j->ld_qkv, .out = j->out + off, .ldo = dm,
        .n_q = c->n_q, .n_k = c->n_k, .d = c->d, .scale = 1.0f / sqrtf((float)c->d),
        .causal = c->causal, .q_pos = c->q_pos,
    };
    j->t->attention(&a);
}

typedef struct run_ctx {
    attention_job *job;
    int threads;
} run_ctx;

static void run_attention(void *ctx)
{
    run_ctx *r = ctx;
    perf_parallel(r->threads, attention_part, r->job);
}

/* Query-key pairs that take part: all of them, or for a causal call the keys
 * at or before each query's position. */
static double visible_pairs(const attention_case *c)
{
    if (!c->causal)
        return (double)c->n_q * (double)c->n_k;
    double pairs = 0;
    for (size_t i = 0; i < c->n_q; i++) {
        size_t seen = c->q_pos + i + 1;
        pairs += (double)(seen < c->n_k ? seen : c->n_k);
    }
    return pairs;
}

static void run_case(const perf_options *o, const perf_machine *mc, const attention_case *c)
{
    size_t heads = (size_t)o->threads > MIN_HEADS ? (size_t)o->threads : MIN_HEADS;
    size_t dm = heads * c->d, rows = c->n_q > c->n_k ? c->n_q : c->n_k;
    float *qkv = perf_random_floats(rows * 3 * dm, 21);
    float *out = perf_random_floats(c->n_q * dm, 22);
    float *ref = perf_random_floats(c->n_q * dm, 23);
    const double flops = 4.0 * (double)c->d * visible_pairs(c) * (double)o->threads;
    const char *ref_who = NULL;
    char what[160], shape[64];

    snprintf(shape, sizeof shape, "%zux%zux%zu", c->n_q, c->n_k, c->d);
    snprintf(what, sizeof what, "op=attention name=%s shape=%s", c->name, shape);

    for (size_t s = 0; s < mc->n_sets; s++) {
        const tsr_kernels *t = mc->sets[s];
        attention_job j = {.t = t, .c = c, .qkv = qkv, .ld_qkv = 3 * dm, .out = out,
                           .ld_out = dm};
        run_ctx rc = {&j, o->threads};

        perf_result r = perf_result_start("attention", NULL, c->name, o->threads);
        r.isa = t->name;
        snprintf(r.shape, sizeof r.shape, "%s", shape);
        r.ms = perf_median_ms(o, run_attention, &rc);
        r.flops = flops;
        r.peak = mc->peak[s];
        r.fallback_scalar = t != mc->scalar && t->attention == mc->scalar->attention;
        perf_print_result(&r);

        /* Only the heads that ran are compared. */
        for (size_t i = 0; i < c->n_q; i++) {
            float *row = out + i * dm, *ref_row = ref + i * dm;
            size_t used = (size_t)o->threads * c->d;
            if (ref_who)
                perf_check_result(what, t->name, ref_who, ref_row, row, used);
            else
                for (size_t e = 0; e < used; e++)
                    ref_row[e] = row[e];
        }
        ref_who = ref_who ? ref_who : t->name;
    }
    tsr_free(qkv);
    tsr_free(out);
    tsr_free(ref);
}

void perf_run_attention(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        size_t n_q = o->shape[0], n_k = o->shape[1], d = o->shape[2];
        attention_case full = {"custom", n_q, n_k, d, 0, 0};
        run_case(o, mc, &full);
        if (n_q <= n_k) {
            /* The queries are the last n_q positions of the n_k keys. */
            attention_case causal = {"custom.causal", n_q, n_k, d, 1, n_k - n_q};
            run_case(o, mc, &causal);
        }
        return;
    }
    static const size_t lengths[] = {128, 512, 1024, 4096};
    size_t n_lengths = o->quick ? 1 : sizeof lengths / sizeof lengths[0];
    for (size_t i = 0; i < n_lengths; i++) {
        size_t L = lengths[i];
        attention_case self = {"self", L, L, D_HEAD, 0, 0};
        attention_case causal = {"causal", L, L, D_HEAD, 1, 0};
        attention_case decode = {"decode", 1, L, D_HEAD, 1, L - 1};
        run_case(o, mc, &self);
        run_case(o, mc, &causal);
        run_case(o, mc, &decode);
    }
}
