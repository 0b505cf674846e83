/*
 * op=activation, op=embed, op=widen: the element-wise kernels. Like the
 * row-wise ops they report gbps of the arrays they must read and write.
 *
 * activation: activate() in place on rows x d_ff of the FFN intermediate.
 * Applied over and over, GELU and SiLU would drive the values towards zero
 * and into subnormals, which no real input does, so each call first restores
 * the input: the time includes that copy, and the kernel=restore line times
 * the copy alone (it matters next to ReLU only).
 * embed: embed() of `count` token ids from an 8000 x d table, scaled, plus
 * positions; bytes: the table rows and positions read, the output written.
 * widen: f16_to_f32 and bf16_to_f32 of n elements, as at load; bytes: 2n
 * read, 4n written.
 * With --threads, elements, rows or ids are split across threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "perf/perf.h"

#define SPLIT_UNIT 64 /* elements: a thread's part starts on a cache line */

typedef struct elem_job {
    const tsr_kernels *t;
    size_t n;
    const float *src;
    float *x;
    tsr_activation act;
    int restore_only; /* time the copy that restores the input, alone */
    const int32_t *ids;
    const float *table, *pos;
    size_t d;
    const uint16_t *half;
    int bf16;
    int threads;
} elem_job;

static void activation_part(void *ctx, int part, int threads)
{
    elem_job *j = ctx;
    size_t b, e;
    perf_split(j->n, SPLIT_UNIT, part, threads, &b, &e);
    if (b == e)
        return;
    memcpy(j->x + b, j->src + b, (e - b) * sizeof *j->x);
    if (!j->restore_only)
        j->t->activate(j->x + b, e - b, j->act);
}

static void run_activation(void *ctx)
{
    elem_job *j = ctx;
    perf_parallel(j->threads, activation_part, j);
}

static void activation_case(const perf_options *o, const perf_machine *mc, size_t rows,
                            size_t n)
{
    static const struct {
        const char *name;
        tsr_activation act;
    } acts[] = {{"restore", TSR_ACT_NONE}, {"relu", TSR_ACT_RELU}, {"gelu", TSR_ACT_GELU},
                {"silu", TSR_ACT_SILU}};
    size_t count = rows * n;
    float *src = perf_random_floats(count, 51), *x = perf_random_floats(count, 52);
    float *ref = perf_random_floats(count, 53);
    char shape[64], what[128];

    for (size_t i = 0; i < count; i++)
        src[i] *= 4.0f; /* pre-activations of a trained FFN are a few units wide */
    snprintf(shape, sizeof shape, "%zux%zu", rows, n);
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++) {
        const char *ref_who = NULL;
        snprintf(what, sizeof what, "op=activation kernel=%s shape=%s", acts[a].name, shape);
        for (size_t s = 0; s < mc->n_sets; s++) {
            const tsr_kernels *t = mc->sets[s];
            elem_job j = {.t = t, .n = count, .src = src, .x = x, .act = acts[a].act,
                          .restore_only = a == 0, .threads = o->threads};
            int fallback = a > 0 && t != mc->scalar && t->activate == mc->scalar->activate;
            perf_time_rowwise(o, mc, s, "activation", acts[a].name, NULL, shape,
                              2.0 * count * sizeof(float), fallback, run_activation, &j);
            if (ref_who)
                perf_check_result(what, t->name, ref_who, ref, x, count);
            else
                memcpy(ref, x, count * sizeof *x);
            ref_who = ref_who ? ref_who : t->name;
        }
    }
    tsr_free(src);
    tsr_free(x);
    tsr_free(ref);
}

void perf_run_activation(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        activation_case(o, mc, o->shape[0], o->shape[1]);
        return;
    }
    activation_case(o, mc, 1, perf_models[0].d_ff);
    activation_case(o, mc, o->quick ? 16 : 128, perf_models[0].d_ff);
}

static void embed_part(void *ctx, int part, int threads)
{
    elem_job *j = ctx;
    size_t b, e;
    perf_split(j->n, 1, part, threads, &b, &e);
    if (b < e)
        j->t->embed(j->ids + b, e - b, j->table, j->d, 22.627417f, j->pos + b * j->d,
                    j->x + b * j->d, j->d);
}

static void run_embed(void *ctx)
{
    elem_job *j = ctx;
    perf_parallel(j->threads, embed_part, j);
}

static void embed_case(const perf_options *o, const perf_machine *mc, size_t count, size_t d)
{
    const size_t vocab = perf_models[0].vocab;
    float *table = perf_random_floats(vocab * d, 61), *pos = perf_random_floats(count * d, 62);
    float *out = perf_random_floats(count * d, 63), *ref = perf_random_floats(count * d, 64);
    int32_t *ids = malloc(count * sizeof *ids);
    char shape[64], what[128];
    const char *ref_who = NULL;

    if (!ids) {
        fprintf(stderr, "tessera-perf: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++)
        ids[i] = (int32_t)((i * 2654435761u) % vocab);
    snprintf(shape, sizeof shape, "%zux%zu", count, d);
    snprintf(what, sizeof what, "op=embed shape=%s", shape);
    for (size_t s = 0; s < mc->n_sets; s++) {
        const tsr_kernels *t = mc->sets[s];
        elem_job j = {.t = t, .n = count, .x = out, .ids = ids, .table = table, .pos = pos,
                      .d = d, .threads = o->threads};
        perf_time_rowwise(o, mc, s, "embed", NULL, NULL, shape, 3.0 * count * d * sizeof(float),
                          t != mc->scalar && t->embed == mc->scalar->embed, run_embed, &j);
        if (ref_who)
            perf_check_result(what, t->name, ref_who, ref, out, count * d);
        else
            memcpy(ref, out, count * d * sizeof *out);
        ref_who = ref_who ? ref_who : t->name;
    }
    tsr_free(table);
    tsr_free(pos);
    tsr_free(out);
    tsr_free(ref);
    free(ids);
}

void perf_run_embed(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        embed_case(o, mc, o->shape[0], o->shape[1]);
        return;
    }
    embed_case(o, mc, 1, perf_models[0].d);
    embed_case(o, mc, o->quick ? 16 : 128, perf_models[0].d);
}

static void widen_part(void *ctx, int part, int threads)
{
    elem_job *j = ctx;
    size_t b, e;
    perf_split(j->n, SPLIT_UNIT, part, threads, &b, &e);
    if (b == e)
        return;
    if (j->bf16)
        j->t->bf16_to_f32(j->half + b, e - b, j->x + b);
    else
        j->t->f16_to_f32(j->half + b, e - b, j->x + b);
}

static void run_widen(void *ctx)
{
    elem_job *j = ctx;
    perf_parallel(j->threads, widen_part, j);
}

/* Finite, normal halves of both kinds: exponent fields kept away from the
 * all-zero and all-one codes. */
static void fill_halves(uint16_t *h, size_t n, int bf16)
{
    uint32_t s = 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        uint16_t bits = (uint16_t)(s >> 16);
        if (bf16)
            bits = (uint16_t)((bits & 0x807f) | ((uint16_t)(120 + (s >> 8) % 16) << 7));
        else
            bits = (uint16_t)((bits & 0x83ff) | ((uint16_t)(8 + (s >> 8) % 16) << 10));
        h[i] = bits;
    }
}

static void widen_case(const perf_options *o, const perf_machine *mc, size_t n)
{
    uint16_t *half = tsr_alloc(n, sizeof *half);
    float *out = perf_random_floats(n, 71), *ref = perf_random_floats(n, 72);
    char shape[64], what[128];

    if (!half) {
        fprintf(stderr, "tessera-perf: out of memory\n");
        exit(1);
    }
    snprintf(shape, sizeof shape, "%zu", n);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        const char *kernel = bf16 ? "bf16_to_f32" : "f16_to_f32";
        const char *ref_who = NULL;
        fill_halves(half, n, bf16);
        snprintf(what, sizeof what, "op=widen kernel=%s shape=%s", kernel, shape);
        for (size_t s = 0; s < mc->n_sets; s++) {
            const tsr_kernels *t = mc->sets[s];
            elem_job j = {.t = t, .n = n, .x = out, .half = half, .bf16 = bf16,
                          .threads = o->threads};
            int fallback = t != mc->scalar && (bf16 ? t->bf16_to_f32 == mc->scalar->bf16_to_f32
                                                    : t->f16_to_f32 == mc->scalar->f16_to_f32);
            perf_time_rowwise(o, mc, s, "widen", kernel, NULL, shape, 6.0 * n, fallback,
                              run_widen, &j);
            if (ref_who && memcmp(ref, out, n * sizeof *out) != 0)
                fprintf(stderr, "tessera-perf: warning: %s: %s differs from %s\n", what, t->name,
                        ref_who);
            if (!ref_who) {
                memcpy(ref, out, n * sizeof *out);
                ref_who = t->name;
            }
        }
    }
    tsr_free(half);
    tsr_free(out);
    tsr_free(ref);
}

void perf_run_widen(const perf_options *o, const perf_machine *mc)
{
    if (o->shape_dims) {
        widen_case(o, mc, o->shape[0]);
        return;
    }
    /* A big model's largest tensor, the generator, is 8000 x 1024. */
    widen_case(o, mc, o->quick ? (size_t)1 << 16 : (size_t)8000 * 1024);
}
