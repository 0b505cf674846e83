/* tessera bench's modeled work (cli/bench_work.c, written from the model's
 * definition) against what the library counts as it runs each case
 * (tessera_runtime_stats, counted op by op from the shapes the ops see), on
 * a small configuration, for every compute type: two independent counts
 * that must agree exactly. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "cli/bench.h"
#include "core/tessera.h"
#include "tests/testutil.h"

#define N 3
#define SRC_LEN 5
#define TGT_LEN 4

static tessera_config small_config(void)
{
    tessera_config c;
    tessera_config_defaults(&c);
    c.d_model = 32;
    c.n_heads = 4;
    c.d_ff = 48;
    c.n_encoder_layers = 2;
    c.n_decoder_layers = 3;
    c.src_vocab_size = 40;
    c.tgt_vocab_size = 56;
    c.max_positions = 32;
    return c;
}

typedef struct run {
    tessera_model *m;
    tessera_runtime *rt;
    tessera_tokens src[N], tgt[N];
    int32_t ids[N][SRC_LEN + TGT_LEN];
    int threads;
} run;

static void run_open(run *r, tessera_compute_type type, int threads)
{
    char err[512];
    tessera_config c = small_config();
    tessera_load_options lo;
    tessera_load_options_init(&lo);
    lo.compute_type = type;
    cr_assert_eq(tessera_model_random_with(&c, 11, &lo, &r->m, err, sizeof err), 0, "%s", err);
    tessera_runtime_options ro;
    tessera_runtime_options_init(&ro);
    ro.threads = threads;
    r->threads = threads;
    cr_assert_eq(tessera_runtime_create(&ro, &r->rt, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < N; i++) {
        for (int t = 0; t < SRC_LEN + TGT_LEN; t++)
            r->ids[i][t] = 4 + (i * 7 + t * 3) % 30;
        r->src[i] = (tessera_tokens){r->ids[i], SRC_LEN};
        r->tgt[i] = (tessera_tokens){r->ids[i] + SRC_LEN, TGT_LEN};
    }
}

static void run_close(run *r)
{
    tessera_runtime_free(r->rt);
    tessera_model_free(r->m);
}

static void expect_equal(const char *what, const char *field, double counted, double modeled)
{
    cr_expect(fabs(counted - modeled) <= 1e-9 * fabs(modeled) + 0.5,
              "%s: %s counted %.17g, modeled %.17g", what, field, counted, modeled);
}

/* Runs one case, then compares the counters with the model. */
static void check_case(run *r, const char *what, const cli_bench_shape *shape)
{
    char err[512];
    tessera_runtime_stats st;
    tessera_runtime_stats_get(r->rt, &st, 1);
    if (shape->kind == CLI_BENCH_ENCODE) {
        float **out;
        tessera_encode_options eo;
        tessera_encode_options_init(&eo);
        eo.batch = shape->sentences;
        cr_assert_eq(tessera_encode_with(r->rt, r->m, r->src, (size_t)shape->sentences, &eo, &out,
                                         err, sizeof err), 0, "%s", err);
        tessera_encodings_free(out, (size_t)shape->sentences);
    } else if (shape->kind == CLI_BENCH_SCORE) {
        float **scores;
        tessera_score_options so;
        tessera_score_options_init(&so);
        so.batch = shape->sentences;
        cr_assert_eq(tessera_score_with(r->rt, r->m, r->src, r->tgt, (size_t)shape->sentences,
                                        &so, &scores, err, sizeof err), 0, "%s", err);
        tessera_scores_free(scores, (size_t)shape->sentences);
    } else {
        tessera_hypothesis *h;
        tessera_translate_options t;
        tessera_translate_options_init(&t);
        t.beam = shape->beam;
        t.max_len = shape->tgt_len;
        t.min_len = shape->tgt_len; /* every sentence runs its full length */
        t.batch = shape->sentences;
        cr_assert_eq(tessera_translate_with(r->rt, r->m, r->src, (size_t)shape->sentences, &t, &h,
                                            err, sizeof err), 0, "%s", err);
        for (int i = 0; i < shape->sentences; i++)
            cr_assert_eq(h[i].len, (size_t)shape->tgt_len, "%s: sentence %d ran %zu tokens", what,
                         i, h[i].len);
        tessera_hypotheses_free(h, (size_t)shape->sentences);
    }
    cr_assert_eq(tessera_runtime_stats_get(r->rt, &st, 1), 0);
    cr_assert_eq(st.calls, 1, "%s: %llu calls counted", what, (unsigned long long)st.calls);
    cr_expect(st.divided_seconds >= 0 && st.divided_seconds <= st.seconds,
              "%s: %g s divided of %g s", what, st.divided_seconds, st.seconds);
    /* The barriers' waits are part of the divided time; one thread never waits. */
    cr_expect(st.waited_seconds >= 0 && st.waited_seconds <= st.divided_seconds * (1 + 1e-12),
              "%s: %g s waited of %g s divided", what, st.waited_seconds, st.divided_seconds);
    if (r->threads == 1)
        cr_expect_eq(st.waited_seconds, 0.0, "%s: one thread waited %g s", what,
                     st.waited_seconds);
#ifdef _OPENMP /* the team's threads run side by side only with OpenMP */
    else /* and never reach a barrier at the same nanosecond every time */
        cr_expect(st.waited_seconds > 0, "%s: %d threads never waited", what, r->threads);
#endif
    cli_bench_work w;
    cli_bench_work_of(tessera_model_config(r->m), tessera_model_compute_type(r->m), shape, &w);
    expect_equal(what, "f32_flops", st.f32_flops, w.f32_flops);
    expect_equal(what, "i8_ops", st.i8_ops, w.i8_ops);
    expect_equal(what, "bytes", st.bytes, w.bytes);
    cr_expect(w.f32_flops > 0 && w.bytes > 0, "%s: no work modeled", what);
}

static void check_all_cases(tessera_compute_type type, int threads)
{
    run r;
    run_open(&r, type, threads);
    cli_bench_shape encoder = {CLI_BENCH_ENCODE, 1, SRC_LEN, 0, 1};
    cli_bench_shape encode = {CLI_BENCH_ENCODE, N, SRC_LEN, 0, 1};
    cli_bench_shape greedy = {CLI_BENCH_DECODE, 1, SRC_LEN, TGT_LEN, 1};
    cli_bench_shape greedy_batch = {CLI_BENCH_DECODE, N, SRC_LEN, TGT_LEN, 1};
    cli_bench_shape beam4 = {CLI_BENCH_DECODE, N, SRC_LEN, TGT_LEN, 4};
    cli_bench_shape score = {CLI_BENCH_SCORE, N, SRC_LEN, TGT_LEN, 1};
    check_case(&r, "encoder", &encoder);
    check_case(&r, "encode-batch", &encode);
    check_case(&r, "greedy", &greedy);
    check_case(&r, "greedy-batch", &greedy_batch);
    check_case(&r, "beam4", &beam4);
    check_case(&r, "score", &score);
    run_close(&r);
}

Test(bench_work, f32_one_thread) { check_all_cases(TESSERA_COMPUTE_F32, 1); }
Test(bench_work, bf16_two_threads) { check_all_cases(TESSERA_COMPUTE_BF16, 2); }
Test(bench_work, int8_two_threads) { check_all_cases(TESSERA_COMPUTE_INT8, 2); }

/* The model by hand for the smallest case, so that the two counts cannot
 * agree by sharing a mistake: the encoder alone over one sentence of s
 * tokens, f32. Per layer: Q, K, V and the output projection 2s(4d^2),
 * the FFN 2s(2 d d_ff), attention 4 d s^2; the weights (4d^2 + 2 d d_ff)
 * floats, the keys and values 2 s d floats. */
Test(bench_work, encoder_by_hand)
{
    tessera_config c = small_config();
    double d = 32, dff = 48, s = SRC_LEN, layers = 2;
    double flops = layers * (2 * s * 4 * d * d + 2 * s * 2 * d * dff + 4 * d * s * s);
    double bytes = layers * 4 * ((4 * d * d + 2 * d * dff) + 2 * s * d);
    cli_bench_shape shape = {CLI_BENCH_ENCODE, 1, SRC_LEN, 0, 1};
    cli_bench_work w;
    cli_bench_work_of(&c, TESSERA_COMPUTE_F32, &shape, &w);
    cr_expect_float_eq(w.f32_flops, flops, 1e-9 * flops);
    cr_expect_float_eq(w.bytes, bytes, 1e-9 * bytes);
    cr_expect_eq(w.i8_ops, 0.0);
    /* One copy of every linear layer's weights: the encoder's, the decoder's
     * (self Q, K, V and output, cross Q, K, V and output, FFN), the generator. */
    double weights = 4 * (layers * (4 * d * d + 2 * d * dff) + 3 * (8 * d * d + 2 * d * dff) +
                          d * c.tgt_vocab_size);
    cr_expect_float_eq(cli_bench_weight_bytes(&c, TESSERA_COMPUTE_F32), weights, 1e-9 * weights);
}

/* The weights that decide the bound's level, by hand: the encoder alone
 * reads its 2 layers (4d^2 + 2 d d_ff each); a decoding step reads each of
 * the 3 decoder layers but its cross-attention keys and values (self Q, K,
 * V, output; cross Q, output: 6d^2; FFN 2 d d_ff) and the generator, one
 * byte a weight at int8, two at bf16. */
Test(bench_work, streamed_weights_by_hand)
{
    tessera_config c = small_config();
    double d = 32, dff = 48;
    double encoder = 2 * (4 * d * d + 2 * d * dff);
    double step = 3 * (6 * d * d + 2 * d * dff) + d * c.tgt_vocab_size;
    cr_expect_float_eq(cli_bench_streamed_weight_bytes(&c, TESSERA_COMPUTE_INT8, CLI_BENCH_ENCODE),
                       encoder, 1e-9 * encoder);
    cr_expect_float_eq(cli_bench_streamed_weight_bytes(&c, TESSERA_COMPUTE_INT8, CLI_BENCH_DECODE),
                       step, 1e-9 * step);
    cr_expect_float_eq(cli_bench_streamed_weight_bytes(&c, TESSERA_COMPUTE_BF16, CLI_BENCH_SCORE),
                       2 * step, 1e-9 * step);
}

/* The files bench --case load writes for a built-in configuration load as
 * that configuration: a tied one's config.json says it shares and ties (it
 * said neither, and argos's files were refused for a missing source table). */
Test(bench_work, written_model_files_load_as_their_configuration)
{
    for (int tied = 0; tied <= 1; tied++) {
        tessera_config c = small_config();
        c.src_vocab_size = c.tgt_vocab_size;
        c.share_embeddings = c.tie_output_projection = tied;
        char *dir = test_make_temp_dir(), err[512];
        cr_assert_eq(cli_bench_write_model(&c, dir, err, sizeof err), 0, "%s", err);
        tessera_model *m = NULL;
        cr_assert_eq(tessera_model_load(dir, &m, err, sizeof err), 0, "tied %d: %s", tied, err);
        const tessera_config *got = tessera_model_config(m);
        cr_expect_eq(got->share_embeddings, tied);
        cr_expect_eq(got->tie_output_projection, tied);
        cr_expect_eq(got->d_model, c.d_model);
        cr_expect_eq(got->n_decoder_layers, c.n_decoder_layers);
        tessera_model_free(m);
        test_remove_dir(dir);
        free(dir);
    }
}
