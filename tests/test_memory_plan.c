/*
 * Memory plans hold: the working memory a call plans for a batch
 * (tessera_translate_memory, tessera_score_memory, tessera_encode_memory) is
 * at least what the batch really holds at once. The tests' library counts
 * every byte the library holds (base/memory.c with TSR_ALLOC_FAULTS: each
 * block's usable size) and its peak; a call's peak above what was held
 * before it, less its results (which the plan leaves out, and which are
 * counted here the same way, from the blocks returned), must not pass the
 * plan. Shapes: one to eight sentences of one to 23 source tokens, greedy,
 * sampling, beam 4 and 7, with alignments and without, on 1 and 2 threads,
 * on a model with random weights whose generator never prefers EOS, so that
 * every hypothesis runs to the length limit and fills the KV caches the plan
 * counts. The plan is also held to within a factor of what was used, so
 * that a budget means something.
 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "core/tessera.h"
#include "tests/api_util.h"
#include "tests/testutil.h"

#define MAX_N 8
#define MAX_LEN 23

/* The plan may count what the batch never holds at once (tsr_buffer growth
 * at its worst, the allocator's slack on every block): past what an empty
 * batch plans (the threads' scratch, held before the calls measured here),
 * it stays within this factor of what was used. */
#define PLAN_FACTOR 3.0

typedef struct fixture {
    tessera_model *model;
    tessera_runtime *rt[2]; /* 1 and 2 threads */
    tessera_tokens src[MAX_N], tgt[MAX_N];
    int32_t ids[MAX_N][MAX_LEN], tgt_ids[MAX_N][MAX_LEN];
} fixture;

static fixture f;

static void setup(void)
{
    char err[512];
    tessera_config cfg_in;
    tessera_config_defaults(&cfg_in);
    cfg_in.d_model = 64;
    cfg_in.n_heads = 4;
    cfg_in.d_ff = 160;
    cfg_in.n_encoder_layers = cfg_in.n_decoder_layers = 2;
    cfg_in.src_vocab_size = 300;
    cfg_in.tgt_vocab_size = 400;
    cfg_in.max_positions = 64;
    cr_assert_eq(tessera_model_random(&cfg_in, 11, &f.model, err, sizeof err), 0, "%s", err);
    for (int t = 0; t < 2; t++)
        cr_assert_eq(api_runtime(1, 0, t + 1, &f.rt[t], err, sizeof err), 0, "%s", err);
    const tessera_config *cfg = tessera_model_config(f.model);
    for (int i = 0; i < MAX_N; i++)
        for (int t = 0; t < MAX_LEN; t++) {
            f.ids[i][t] = 4 + (i * 7 + t * 13) % (cfg->src_vocab_size - 4);
            f.tgt_ids[i][t] = 4 + (i * 5 + t * 11) % (cfg->tgt_vocab_size - 4);
        }
}

static void teardown(void)
{
    for (int t = 0; t < 2; t++)
        tessera_runtime_free(f.rt[t]);
    tessera_model_free(f.model);
}

TestSuite(memory_plan, .init = setup, .fini = teardown);

/* n sentences of len source tokens (and tgt_len target tokens). */
static void shape(size_t n, size_t len, size_t tgt_len)
{
    for (size_t i = 0; i < n; i++) {
        f.src[i] = (tessera_tokens){f.ids[i], len};
        f.tgt[i] = (tessera_tokens){f.tgt_ids[i], tgt_len};
    }
}

static size_t held(const void *p) { return p ? malloc_usable_size((void *)p) : 0; }

/* Starts counting a call's peak; returns the bytes held before it. */
static size_t start(void)
{
    tsr_alloc_faults_reset_peak();
    return tsr_alloc_faults_bytes_live();
}

/* `empty`: what the same call plans for no sentence at all. */
static void expect_within(const char *what, size_t before, size_t results, size_t plan,
                          size_t empty)
{
    size_t peak = tsr_alloc_faults_bytes_peak() - before;
    size_t used = peak > results ? peak - results : 0;
    cr_log_info("%s: held %zu bytes at the peak (results %zu), planned %zu (%.2fx past %zu)",
                what, peak, results, plan, (double)(plan - empty) / (double)used, empty);
    cr_expect_leq(used, plan, "%s: held %zu bytes besides the results, planned %zu", what, used,
                  plan);
    cr_expect_leq((double)(plan - empty), PLAN_FACTOR * (double)used,
                  "%s: planned %zu bytes (%zu past an empty call's) for %zu held: the plan is "
                  "too loose to budget with", what, plan, plan - empty, used);
}

typedef struct decoding {
    const char *name;
    int beam, n_best, topk, alignments, max_len;
} decoding;

static const decoding decodings[] = {
    {"greedy", 1, 1, 1, 0, 20},
    {"greedy, alignments", 1, 1, 1, 1, 20},
    {"sampling top-k 5", 1, 1, 5, 0, 20},
    {"beam 4, 2 best", 4, 2, 1, 0, 20},
    {"beam 7, alignments", 7, 1, 1, 1, 14},
};

static const size_t counts[] = {1, 3, 8};
static const size_t lengths[] = {1, 6, 23};

Test(memory_plan, translate_holds_no_more_than_planned, .timeout = 120)
{
    char err[512], what[160];
    for (size_t d = 0; d < sizeof decodings / sizeof decodings[0]; d++)
        for (int t = 0; t < 2; t++)
            for (size_t c = 0; c < 3; c++)
                for (size_t l = 0; l < 3; l++) {
                    const decoding *dc = &decodings[d];
                    size_t n = counts[c], len = lengths[l];
                    tessera_translate_options o;
                    tessera_translate_options_init(&o);
                    o.beam = dc->beam;
                    o.n_best = dc->n_best;
                    o.sampling_topk = dc->topk;
                    o.return_alignments = dc->alignments;
                    o.max_len = dc->max_len;
                    o.batch = (int)n;
                    shape(n, len, 0);
                    size_t plan = tessera_translate_memory(f.rt[t], f.model, n, len, &o);
                    size_t empty = tessera_translate_memory(f.rt[t], f.model, 0, 0, &o);
                    tessera_hypothesis *h;
                    size_t before = start();
                    cr_assert_eq(tessera_translate_with(f.rt[t], f.model, f.src, n, &o, &h, err,
                                                        sizeof err), 0, "%s", err);
                    size_t results = held(h);
                    for (size_t i = 0; i < n * (size_t)o.n_best; i++)
                        results += held(h[i].ids) + held(h[i].alignment);
                    snprintf(what, sizeof what, "%s, %zu x %zu tokens, %d threads", dc->name, n,
                             len, t + 1);
                    expect_within(what, before, results, plan, empty);
                    tessera_hypotheses_free(h, n * (size_t)o.n_best);
                }
}

Test(memory_plan, score_and_encode_hold_no_more_than_planned, .timeout = 60)
{
    char err[512], what[160];
    for (int t = 0; t < 2; t++)
        for (size_t c = 0; c < 3; c++)
            for (size_t l = 0; l < 3; l++) {
                size_t n = counts[c], len = lengths[l], tgt_len = lengths[2 - l];
                shape(n, len, tgt_len);
                tessera_score_options so;
                tessera_score_options_init(&so);
                so.batch = (int)n;
                size_t plan = tessera_score_memory(f.rt[t], f.model, n, len, tgt_len);
                size_t empty = tessera_score_memory(f.rt[t], f.model, 0, 0, 0);
                float **scores;
                size_t before = start();
                cr_assert_eq(tessera_score_with(f.rt[t], f.model, f.src, f.tgt, n, &so, &scores,
                                                err, sizeof err), 0, "%s", err);
                size_t results = held(scores);
                for (size_t i = 0; i < n; i++)
                    results += held(scores[i]);
                snprintf(what, sizeof what, "score, %zu x %zu -> %zu tokens, %d threads", n, len,
                         tgt_len, t + 1);
                expect_within(what, before, results, plan, empty);
                tessera_scores_free(scores, n);

                tessera_encode_options eo;
                tessera_encode_options_init(&eo);
                eo.batch = (int)n;
                plan = tessera_encode_memory(f.rt[t], f.model, n, len);
                empty = tessera_encode_memory(f.rt[t], f.model, 0, 0);
                float **vectors;
                before = start();
                cr_assert_eq(tessera_encode_with(f.rt[t], f.model, f.src, n, &eo, &vectors, err,
                                                 sizeof err), 0, "%s", err);
                results = held(vectors);
                for (size_t i = 0; i < n; i++)
                    results += held(vectors[i]);
                snprintf(what, sizeof what, "encode, %zu x %zu tokens, %d threads", n, len, t + 1);
                expect_within(what, before, results, plan, empty);
                tessera_encodings_free(vectors, n);
            }
}
