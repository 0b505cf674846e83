/* The C API used as a server uses it, with no command in between: several
 * runtimes on one loaded model, called from several threads of the
 * application at once, must give each call the output a single-threaded run
 * gives; the application's threads keep their CPU affinity; failures say
 * which kind they are; the GEMM blocking of a runtime changes no bit. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "tessera-config.h"
#include "core/runtime/runtime.h"
#include "core/tessera.h"
#include "tests/api_util.h"
#include "tests/testutil.h"

static char err[1024];

/* The helpers of tests/api_util.c, failing the test on error. */
static api_inputs *read_inputs(void)
{
    api_inputs *in = malloc(sizeof *in);
    cr_assert(in);
    cr_assert_eq(api_read_inputs(test_srcdir(), in, err, sizeof err), 0, "%s", err);
    return in;
}

static tessera_model *load_model(void)
{
    tessera_model *m;
    cr_assert_eq(api_load_model(test_srcdir(), &m, err, sizeof err), 0, "%s", err);
    return m;
}

static tessera_runtime *runtime(int workers, int worker, int threads)
{
    tessera_runtime *rt;
    cr_assert_eq(api_runtime(workers, worker, threads, &rt, err, sizeof err), 0, "%s", err);
    return rt;
}

static char *answers(tessera_runtime *rt, const tessera_model *m, const api_inputs *in)
{
    char why[1024];
    char *text = api_answers(rt, m, in, why, sizeof why);
    cr_assert(text, "%s", why);
    return text;
}

static int same_mask(const cpu_set_t *a, const cpu_set_t *b) { return CPU_EQUAL(a, b); }

/* ---- Several application threads, several runtimes, one model -------------- */

typedef struct caller {
    tessera_runtime *rt;
    const tessera_model *m;
    const api_inputs *in;
    const char *expected;
    int rounds;
    int mismatches;
    int mask_changed;
} caller;

static void *call_repeatedly(void *arg)
{
    caller *c = arg;
    cpu_set_t before, after;
    sched_getaffinity(0, sizeof before, &before);
    for (int r = 0; r < c->rounds; r++) {
        char *got = answers(c->rt, c->m, c->in);
        c->mismatches += strcmp(got, c->expected) != 0;
        free(got);
    }
    sched_getaffinity(0, sizeof after, &after);
    c->mask_changed = !same_mask(&before, &after);
    return NULL;
}

/* Runs `callers` application threads at once, caller i on runtimes[i %
 * n_rt], each checking every round against `expected`. */
static void run_callers(tessera_runtime **runtimes, int n_rt, int callers, const tessera_model *m,
                        const api_inputs *in, const char *expected, int rounds)
{
    pthread_t threads[16];
    caller c[16];
    cr_assert_leq(callers, 16);
    for (int i = 0; i < callers; i++) {
        c[i] = (caller){.rt = runtimes[i % n_rt], .m = m, .in = in, .expected = expected,
                        .rounds = rounds};
        cr_assert_eq(pthread_create(&threads[i], NULL, call_repeatedly, &c[i]), 0);
    }
    for (int i = 0; i < callers; i++) {
        pthread_join(threads[i], NULL);
        cr_expect_eq(c[i].mismatches, 0, "caller %d: %d of %d rounds differ from one thread", i,
                     c[i].mismatches, rounds);
        cr_expect_eq(c[i].mask_changed, 0, "caller %d: its CPU affinity changed", i);
    }
}

/* The done-when line: 2 runtimes of 1 thread on this machine, called from 2
 * threads at once on one model, give what one runtime gives, and no
 * application thread's CPU mask changes (the main thread's neither: not by
 * the load, the runtimes or the calls). */
Test(api, two_runtimes_from_two_threads)
{
    cpu_set_t mask, after;
    cr_assert_eq(sched_getaffinity(0, sizeof mask, &mask), 0);
    api_inputs *in = read_inputs();
    tessera_model *m = load_model();
    cr_assert_eq(sched_getaffinity(0, sizeof after, &after), 0);
    cr_expect(same_mask(&mask, &after), "loading the model changed the caller's affinity");

    tessera_runtime *one = runtime(1, 0, 1);
    char *expected = answers(one, m, in);
    tessera_runtime_free(one);

    tessera_runtime *rts[2] = {runtime(2, 0, 1), runtime(2, 1, 1)};
    run_callers(rts, 2, 2, m, in, expected, 3);
    cr_assert_eq(sched_getaffinity(0, sizeof after, &after), 0);
    cr_expect(same_mask(&mask, &after), "the runtimes or calls changed the caller's affinity");

    tessera_runtime_free(rts[0]);
    tessera_runtime_free(rts[1]);
    free(expected);
    tessera_model_free(m);
    free(in);
}

/* 8 application threads share 2 runtimes (their calls queue on each) and the
 * default runtime's model: every answer is the single-threaded one. */
Test(api, eight_threads_translate_and_score_at_once, .timeout = 240)
{
    api_inputs *in = read_inputs();
    tessera_model *m = load_model();
    tessera_runtime *one = runtime(1, 0, 1);
    char *expected = answers(one, m, in);
    tessera_runtime_free(one);

    tessera_runtime *rts[2] = {runtime(2, 0, 1), runtime(2, 1, 1)};
    run_callers(rts, 2, 8, m, in, expected, 2);
    tessera_runtime_free(rts[0]);
    tessera_runtime_free(rts[1]);
    free(expected);
    tessera_model_free(m);
    free(in);
}

/* ---- The GEMM frame's loops, several passes each ----------------------------- */

/* A model with d_model 64 and 128-row calls, run with block sizes so small
 * that every loop of the frame (k pieces, row blocks, column blocks, decode
 * turns, int8 pieces) runs several times: the same bits as the kernel set's
 * own blocking, for every compute type. */
Test(api, small_gemm_blocks_change_no_bit)
{
    static const tessera_compute_type types[] = {TESSERA_COMPUTE_F32, TESSERA_COMPUTE_BF16,
                                                 TESSERA_COMPUTE_INT8};
    tessera_config c;
    tessera_config_defaults(&c);
    c.d_model = 64;
    c.n_heads = 4;
    c.d_ff = 96;
    c.n_encoder_layers = c.n_decoder_layers = 2;
    c.src_vocab_size = c.tgt_vocab_size = 50;
    c.max_positions = 64;
    api_inputs *in = calloc(1, sizeof *in);
    cr_assert(in);
    in->n = 16;
    for (size_t i = 0; i < in->n; i++) {
        for (size_t t = 0; t < 12; t++) {
            in->ids[i][t] = (int32_t)(4 + (i * 7 + t * 3) % 46);
            in->tgt_ids[i][t] = (int32_t)(4 + (i * 5 + t * 11) % 46);
        }
        in->src[i] = (tessera_tokens){in->ids[i], 8 + i % 5};
        in->tgt[i] = (tessera_tokens){in->tgt_ids[i], 12};
    }
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        tessera_load_options lo;
        tessera_model *m;
        tessera_load_options_init(&lo);
        lo.compute_type = types[ti];
        cr_assert_eq(tessera_model_random_with(&c, 5, &lo, &m, err, sizeof err), 0, "%s", err);
        tessera_runtime *plain = runtime(1, 0, 1), *tiny = runtime(1, 0, 1);
        tsr_gemm_blocks b = {.kc = 8, .a_block_floats = 1, .b_block_floats = 1, .i8_kc4 = 2,
                             .decode_kc = 4};
        tsr_runtime_set_gemm_blocks(tiny, &b);
        char *want = answers(plain, m, in), *got = answers(tiny, m, in);
        cr_expect_str_eq(got, want, "%s: small GEMM blocks changed the output",
                         tessera_compute_type_name(types[ti]));
        free(want);
        free(got);
        tessera_runtime_free(plain);
        tessera_runtime_free(tiny);
        tessera_model_free(m);
    }
    free(in);
}

/* ---- The encoder alone ---------------------------------------------------------- */

Test(api, encode_is_the_same_in_any_batch_and_runtime)
{
    api_inputs *in = read_inputs();
    tessera_model *m = load_model();
    size_t d = (size_t)tessera_model_config(m)->d_model;
    tessera_runtime *a = runtime(1, 0, 1), *b = runtime(1, 0, 2);
    tessera_encode_options o1, o4;
    tessera_encode_options_init(&o1);
    tessera_encode_options_init(&o4);
    o4.batch = 4;
    float **x, **y;
    cr_assert_eq(tessera_encode_with(a, m, in->src, in->n, &o1, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tessera_encode_with(b, m, in->src, in->n, &o4, &y, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < in->n; i++)
        cr_expect_eq(memcmp(x[i], y[i], in->src[i].len * d * sizeof(float)), 0,
                     "sentence %zu: batch 4 on 2 threads differs from batch 1 on 1", i + 1);
    tessera_encodings_free(x, in->n);
    tessera_encodings_free(y, in->n);
    tessera_runtime_free(a);
    tessera_runtime_free(b);
    tessera_model_free(m);
    free(in);
}

/* ---- Status codes, options, version -------------------------------------------- */

Test(api, bad_input_says_so)
{
    tessera_model *m = load_model();
    tessera_runtime *rt = runtime(1, 0, 1);
    int32_t bad[] = {1, 2, 999};
    tessera_tokens src = {bad, 3};
    tessera_translate_options o;
    tessera_hypothesis *h;
    tessera_translate_options_init(&o);
    cr_expect_eq(tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "sentence 1") && strstr(err, "999"), "%s", err);
    cr_expect_null(h);
    /* The older function: -1 for any error. */
    cr_expect_eq(tessera_translate(m, &src, 1, &o, &h, err, sizeof err), -1);
    o.beam = 0;
    src.len = 2;
    cr_expect_eq(tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "beam: 0 is out of range [1, 1024]"), "%s", err);
    cr_expect_eq(tessera_translate_with(NULL, m, &src, 1, &o, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "runtime is NULL"), "%s", err);
    cr_expect_str_eq(tessera_status_name(TESSERA_ERR_NOMEM), "out of memory");
    cr_expect_str_eq(tessera_status_name(TESSERA_ERR_CANCELLED), "cancelled");
    cr_expect_str_eq(tessera_status_name(42), "unknown status");
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

/* NULL where a pointer is needed is bad input, named, never a crash (issue
 * 34): the results, the sentences, a sentence's ids, the directory. */
Test(api, null_arguments_are_refused)
{
    tessera_model *m = load_model();
    tessera_runtime *rt = runtime(1, 0, 1);
    int32_t ids[] = {5, 6};
    tessera_tokens src = {ids, 2}, no_ids = {NULL, 2};
    tessera_translate_options to;
    tessera_score_options so;
    tessera_encode_options eo;
    tessera_translate_options_init(&to);
    tessera_score_options_init(&so);
    tessera_encode_options_init(&eo);
    tessera_hypothesis *h;
    float **scores, **vectors;
    static const struct {
        int which;
        const char *message;
    } cases[] = {
        {0, "translate: the result pointer is NULL"}, {1, "translate: src is NULL"},
        {2, "sentence 1: ids is NULL with 2 tokens"}, {3, "score: the result pointer is NULL"},
        {4, "score: src is NULL"},                    {5, "score: tgt is NULL"},
        {6, "target 1: ids is NULL with 2 tokens"},   {7, "encode: the result pointer is NULL"},
        {8, "encode: src is NULL"},                   {9, "model load: the model directory is NULL"},
        {10, "model load: the result pointer is NULL"},
        {11, "runtime: the result pointer is NULL"},
        {12, "compute type: the name is NULL"},
        {13, "translate: the result pointer is NULL"},
        {14, "runtime read bandwidth: a NULL argument"},
        {15, "runtime read bandwidth: a buffer of 0 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = 0;
        tessera_model *loaded = NULL;
        tessera_compute_type type;
        err[0] = '\0';
        switch (cases[i].which) {
        case 0: rc = tessera_translate_with(rt, m, &src, 1, &to, NULL, err, sizeof err); break;
        case 1: rc = tessera_translate_with(rt, m, NULL, 1, &to, &h, err, sizeof err); break;
        case 2: rc = tessera_translate_with(rt, m, &no_ids, 1, &to, &h, err, sizeof err); break;
        case 3: rc = tessera_score_with(rt, m, &src, &src, 1, &so, NULL, err, sizeof err); break;
        case 4: rc = tessera_score_with(rt, m, NULL, &src, 1, &so, &scores, err, sizeof err); break;
        case 5: rc = tessera_score_with(rt, m, &src, NULL, 1, &so, &scores, err, sizeof err); break;
        case 6:
            rc = tessera_score_with(rt, m, &src, &no_ids, 1, &so, &scores, err, sizeof err);
            break;
        case 7: rc = tessera_encode_with(rt, m, &src, 1, &eo, NULL, err, sizeof err); break;
        case 8: rc = tessera_encode_with(rt, m, NULL, 1, &eo, &vectors, err, sizeof err); break;
        case 9: rc = tessera_model_load_with(NULL, NULL, &loaded, err, sizeof err); break;
        case 10: rc = tessera_model_load_with(".", NULL, NULL, err, sizeof err); break;
        case 11: rc = tessera_runtime_create(NULL, NULL, err, sizeof err); break;
        case 12: rc = tessera_compute_type_parse(NULL, &type, err, sizeof err); break;
        case 13: rc = tessera_translate(m, &src, 1, &to, NULL, err, sizeof err) == -1
                          ? TESSERA_ERR_INPUT : 0;
            break;
        case 14: rc = tessera_runtime_read_bandwidth(rt, m, 1 << 20, NULL, err, sizeof err); break;
        case 15: {
            double rate;
            rc = tessera_runtime_read_bandwidth(rt, m, 0, &rate, err, sizeof err);
            break;
        }
        }
        cr_expect_eq(rc, TESSERA_ERR_INPUT, "case %zu: status %d (%s)", i, rc, err);
        cr_expect(strstr(err, cases[i].message), "case %zu: '%s' lacks '%s'", i, err,
                  cases[i].message);
        cr_expect_null(loaded);
    }
    /* The getters and initialisers take NULL quietly. */
    tessera_translate_options_init(NULL);
    tessera_config_defaults(NULL);
    cr_expect_null(tessera_model_config(NULL));
    cr_expect_eq(tessera_model_weight_bytes(NULL), 0);
    cr_expect_eq(tessera_runtime_threads(NULL), 0);
    cr_expect_eq(tessera_encode_memory(NULL, m, 1, 2), SIZE_MAX);
    char buf[64];
    cr_expect_eq(tessera_runtime_describe(NULL, buf, sizeof buf), TESSERA_ERR_INPUT);
    /* Still usable after all that. */
    cr_expect_eq(tessera_translate_with(rt, m, &src, 1, &to, &h, err, sizeof err), 0, "%s", err);
    double rate = 0;
    cr_expect_eq(tessera_runtime_read_bandwidth(rt, m, 1 << 16, &rate, err, sizeof err), 0, "%s",
                 err);
    cr_expect(rate > 0, "a 64 KiB buffer read at %g bytes/s", rate);
    tessera_hypotheses_free(h, 1);
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

Test(api, runtime_options_are_checked)
{
    tessera_runtime_options o;
    tessera_runtime *rt;
    tessera_runtime_options_init(&o);
    o.workers = 2;
    o.worker = 2;
    cr_expect_eq(tessera_runtime_create(&o, &rt, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "worker 2"), "%s", err);
    cr_expect_null(rt);
    tessera_runtime_options_init(&o);
    o.threads = -3;
    cr_expect_eq(tessera_runtime_create(&o, &rt, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "threads -3"), "%s", err);
    tessera_runtime_options_init(&o);
    o.numa = "spread";
    cr_expect_eq(tessera_runtime_create(&o, &rt, err, sizeof err), TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "'spread'"), "%s", err);
    /* Defaults: the cores shared among the workers, at least one thread. */
    cr_assert_eq(tessera_runtime_create(NULL, &rt, err, sizeof err), 0, "%s", err);
    cr_expect_geq(tessera_runtime_threads(rt), 1);
    char text[4096];
    cr_expect_eq(tessera_runtime_describe(rt, text, sizeof text), 0);
    cr_expect(strstr(text, "placement:"), "%s", text);
    tessera_runtime_free(rt);
    tessera_runtime_free(NULL);
}

/* A model too large for the address space this test allows itself is an
 * out-of-memory error, not bad input, and leaves the library usable. */
Test(api, out_of_memory_is_its_own_kind)
{
#ifdef TEST_UNDER_SANITIZER
    cr_skip_test("built with a sanitizer, which reserves more address space than any limit allows");
#endif
    struct rlimit limit = {(rlim_t)3 << 30, (rlim_t)3 << 30};
    cr_assert_eq(setrlimit(RLIMIT_AS, &limit), 0);
    /* qemu-user (.ci/neon) keeps a guest's address-space limit to itself and
     * never applies it: there, more than the limit can still be had, and
     * this test can only say so. */
    size_t beyond_limit = (size_t)4 << 30;
    void *beyond = mmap(NULL, beyond_limit, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (beyond != MAP_FAILED) {
        munmap(beyond, beyond_limit);
        /* Criterion names skipped tests only when verbose: name it here. */
        const char *why = "RLIMIT_AS is not enforced here (an emulator?): 4 GiB mapped under a 3 GiB limit";
        fprintf(stderr, "SKIP: api::out_of_memory_is_its_own_kind: %s\n", why);
        cr_skip_test("%s", why);
    }
    tessera_config c;
    tessera_config_defaults(&c);
    c.d_model = 4096;
    c.n_heads = 16;
    c.d_ff = 16384;
    c.n_encoder_layers = c.n_decoder_layers = 6;
    c.src_vocab_size = c.tgt_vocab_size = 32000;
    tessera_model *m;
    cr_expect_eq(tessera_model_random_with(&c, 1, NULL, &m, err, sizeof err), TESSERA_ERR_NOMEM,
                 "%s", err);
    cr_expect(strstr(err, "out of memory"), "%s", err);
    cr_expect_null(m);
    /* The legacy call keeps its -1. */
    cr_expect_eq(tessera_model_random(&c, 1, &m, err, sizeof err), -1);
    m = load_model();
    tessera_runtime *rt = runtime(1, 0, 1);
    api_inputs *in = read_inputs();
    free(answers(rt, m, in));
    free(in);
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

Test(api, version)
{
    cr_expect_str_eq(tessera_version(), TESSERA_VERSION);
    cr_expect_str_eq(tessera_version(), PACKAGE_VERSION);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", TESSERA_VERSION_MAJOR, TESSERA_VERSION_MINOR,
             TESSERA_VERSION_PATCH);
    cr_expect_str_eq(tessera_version(), expected);
}

/* An encoder alone (n_decoder_layers 0) loads and encodes; translate and
 * score say it is bad input for them. */
Test(api, encoder_only_model)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/golden/encoder-only-f32", test_srcdir());
    tessera_model *m;
    cr_assert_eq(tessera_model_load(dir, &m, err, sizeof err), 0, "%s", err);
    cr_expect_eq(tessera_model_config(m)->n_decoder_layers, 0);
    tessera_runtime *rt = runtime(1, 0, 1);
    const int32_t ids[] = {4, 5, 6};
    tessera_tokens src = {ids, 3};
    float **vectors;
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    cr_expect_eq(tessera_encode_with(rt, m, &src, 1, &eo, &vectors, err, sizeof err), 0, "%s",
                 err);
    tessera_encodings_free(vectors, 1);
    tessera_translate_options to;
    tessera_translate_options_init(&to);
    tessera_hypothesis *h;
    cr_expect_eq(tessera_translate_with(rt, m, &src, 1, &to, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "encoder alone"), "%s", err);
    tessera_score_options so;
    tessera_score_options_init(&so);
    float **scores;
    cr_expect_eq(tessera_score_with(rt, m, &src, &src, 1, &so, &scores, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "encoder alone"), "%s", err);
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

/* ---- Decoding options ---------------------------------------------------- */

/* Every bad decoding option is TESSERA_ERR_INPUT naming the option. */
Test(api, decoding_options_are_checked)
{
    tessera_model *m = load_model();
    tessera_runtime *rt = runtime(1, 0, 1);
    int32_t ids[] = {1, 2, 3};
    tessera_tokens src = {ids, 3};
    tessera_hypothesis *h;
    static const struct {
        const char *field, *says;
    } cases[] = {
        {"sampling_topp 1.5", "sampling_topp: 1.5 is out of range (0, 1]"},
        {"sampling_topp 0", "sampling_topp: 0 is out of range (0, 1]"},
        {"sampling_topk -1", "sampling_topk: -1 is out of range"},
        {"sampling_temperature 0", "sampling_temperature: 0 is out of range"},
        {"topp without topk", "needs sampling_topk 0 or above 1"},
        {"sampling with beam", "sampling_topk: 5 samples, which needs beam 1, not 2"},
        {"min_len 30 max_len 20", "min_len: 30 is out of range [0, max_len (20)]"},
        {"no_repeat_ngram 5000", "no_repeat_ngram: 5000 is out of range"},
        {"repetition_penalty 0", "repetition_penalty: 0 is out of range"},
        {"end_token 9999", "end_token: 9999 is out of range"},
        {"prefix id 9999", "sentence 1: target prefix: token id 9999"},
        {"prefix eos", "ending token"},
        {"prefix too long", "target prefix: 21 tokens"},
    };
    int32_t prefix_ids[21] = {0};
    tessera_tokens prefix = {prefix_ids, 1};
    const tessera_config *cfg = tessera_model_config(m);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tessera_translate_options o;
        tessera_translate_options_init(&o);
        o.max_len = 20;
        switch (i) {
        case 0: o.sampling_topk = 0; o.sampling_topp = 1.5f; break;
        case 1: o.sampling_topk = 0; o.sampling_topp = 0.0f; break;
        case 2: o.sampling_topk = -1; break;
        case 3: o.sampling_topk = 0; o.sampling_temperature = 0.0f; break;
        case 4: o.sampling_topp = 0.5f; break;
        case 5: o.sampling_topk = 5; o.beam = 2; break;
        case 6: o.min_len = 30; break;
        case 7: o.no_repeat_ngram = 5000; break;
        case 8: o.repetition_penalty = 0.0f; break;
        case 9: o.end_token = 9999; break;
        case 10: prefix_ids[0] = 9999; o.target_prefix = &prefix; break;
        case 11: prefix_ids[0] = cfg->eos_id; o.target_prefix = &prefix; break;
        case 12: prefix_ids[0] = 0; prefix.len = 21; o.target_prefix = &prefix; break;
        }
        cr_expect_eq(tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err),
                     TESSERA_ERR_INPUT, "%s: accepted", cases[i].field);
        cr_expect(strstr(err, cases[i].says), "%s: message '%s' lacks '%s'", cases[i].field, err,
                  cases[i].says);
        cr_expect_null(h);
    }
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

/* Whether two hypotheses hold the same ids. */
static int same_ids(const tessera_hypothesis *a, const tessera_hypothesis *b)
{
    return a->len == b->len && memcmp(a->ids, b->ids, a->len * sizeof *a->ids) == 0;
}

/* Sentence i alone, translated with `o` keyed as sentence `index`; the
 * caller frees the hypothesis. */
static tessera_hypothesis *translate_one(tessera_runtime *rt, const tessera_model *m,
                                         const tessera_tokens *src,
                                         const tessera_translate_options *o, uint64_t index,
                                         uint64_t seed)
{
    tessera_translate_options single = *o;
    tessera_hypothesis *h;
    single.batch = 1;
    single.first_sentence_index = index;
    single.seed = seed;
    cr_assert_eq(tessera_translate_with(rt, m, src, 1, &single, &h, err, sizeof err), 0, "%s",
                 err);
    return h;
}

/* Sentence i of a call samples from the stream (seed, first_sentence_index
 * + i): one call over all sentences equals one call per sentence with its
 * index, and a different seed or index changes some sentence. */
Test(api, sampling_streams_follow_the_sentence_index)
{
    tessera_model *m = load_model();
    tessera_runtime *rt = runtime(1, 0, 1);
    api_inputs *in = read_inputs();
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.sampling_topk = 0;
    o.seed = 42;
    o.max_len = 20;
    o.batch = 5;
    tessera_hypothesis *all;
    cr_assert_eq(tessera_translate_with(rt, m, in->src, in->n, &o, &all, err, sizeof err), 0, "%s",
                 err);
    size_t changed_by_index = 0, changed_by_seed = 0;
    for (size_t i = 0; i < in->n; i++) {
        tessera_hypothesis *one = translate_one(rt, m, &in->src[i], &o, i, 42);
        cr_expect(same_ids(one, &all[i]) && one->score == all[i].score,
                  "sentence %zu alone differs from the whole call", i + 1);
        tessera_hypotheses_free(one, 1);
        tessera_hypothesis *other = translate_one(rt, m, &in->src[i], &o, i + 1000, 42);
        changed_by_index += !same_ids(other, &all[i]);
        tessera_hypotheses_free(other, 1);
        other = translate_one(rt, m, &in->src[i], &o, i, 43);
        changed_by_seed += !same_ids(other, &all[i]);
        tessera_hypotheses_free(other, 1);
    }
    cr_expect_gt(changed_by_index, in->n / 2, "another index changed %zu of %zu", changed_by_index,
                 in->n);
    cr_expect_gt(changed_by_seed, in->n / 2, "another seed changed %zu of %zu", changed_by_seed,
                 in->n);
    /* stream_index: each sentence samples from the stream given for it,
     * whatever its place in the call (the server's batches). */
    uint64_t streams[64];
    cr_assert_leq(in->n, 64);
    for (size_t i = 0; i < in->n; i++)
        streams[i] = 1000 + (in->n - 1 - i);
    tessera_translate_options given = o;
    given.stream_index = streams;
    tessera_hypothesis *by_stream;
    cr_assert_eq(tessera_translate_with(rt, m, in->src, in->n, &given, &by_stream, err, sizeof err),
                 0, "%s", err);
    for (size_t i = 0; i < in->n; i++) {
        tessera_hypothesis *one = translate_one(rt, m, &in->src[i], &o, streams[i], 42);
        cr_expect(same_ids(one, &by_stream[i]) && one->score == by_stream[i].score,
                  "sentence %zu with stream_index %llu differs from it alone", i + 1,
                  (unsigned long long)streams[i]);
        tessera_hypotheses_free(one, 1);
    }
    tessera_hypotheses_free(by_stream, in->n);
    tessera_hypotheses_free(all, in->n);
    free(in);
    tessera_runtime_free(rt);
    tessera_model_free(m);
}

/* The alignments of a call, each checked for its shape: NULL unless asked
 * for, else one source position per target token, within the source. */
static void expect_alignment_shape(const tessera_hypothesis *h, const tessera_tokens *src,
                                   int wanted, const char *what)
{
    if (!wanted) {
        cr_expect_null(h->alignment, "%s: an alignment nobody asked for", what);
        return;
    }
    cr_assert_not_null(h->alignment, "%s: no alignment", what);
    for (size_t j = 0; j < h->len; j++)
        cr_expect(h->alignment[j] >= 0 && (size_t)h->alignment[j] < src->len,
                  "%s: token %zu aligned to %d, the source has %zu", what, j,
                  (int)h->alignment[j], src->len);
}

/* Alignments change nothing else, do not depend on the batch or the threads,
 * and depend on the source and the output alone (as their definition says):
 * every beam hypothesis, reselected step after step, has the alignment of
 * the same ids forced as a target prefix. */
Test(api, alignments_follow_the_output, .timeout = 120)
{
    tessera_model *m = load_model();
    tessera_runtime *rt1 = runtime(1, 0, 1), *rt2 = runtime(1, 0, 2);
    api_inputs *in = read_inputs();
    static const struct { int beam, n_best, topk; } modes[] = {{1, 1, 1}, {4, 2, 1}, {1, 1, 5}};
    size_t varied = 0;
    for (size_t mode = 0; mode < sizeof modes / sizeof *modes; mode++) {
        tessera_translate_options o;
        tessera_translate_options_init(&o);
        o.beam = modes[mode].beam;
        o.n_best = modes[mode].n_best;
        o.sampling_topk = modes[mode].topk;
        o.seed = 3;
        o.max_len = 20;
        size_t K = (size_t)o.n_best, n = in->n;
        tessera_hypothesis *plain, *aligned, *batched;
        cr_assert_eq(tessera_translate_with(rt1, m, in->src, n, &o, &plain, err, sizeof err), 0,
                     "%s", err);
        o.return_alignments = 1;
        cr_assert_eq(tessera_translate_with(rt1, m, in->src, n, &o, &aligned, err, sizeof err),
                     0, "%s", err);
        o.batch = 5;
        cr_assert_eq(tessera_translate_with(rt2, m, in->src, n, &o, &batched, err, sizeof err),
                     0, "%s", err);
        for (size_t i = 0; i < n * K; i++) {
            char what[96];
            snprintf(what, sizeof what, "mode %zu sentence %zu hypothesis %zu", mode, i / K + 1,
                     i % K + 1);
            const tessera_tokens *src = &in->src[i / K];
            expect_alignment_shape(&plain[i], src, 0, what);
            expect_alignment_shape(&aligned[i], src, 1, what);
            cr_expect(same_ids(&aligned[i], &plain[i]) && aligned[i].score == plain[i].score,
                      "%s: asking for alignments changed the output", what);
            cr_expect(same_ids(&batched[i], &aligned[i]) &&
                          memcmp(batched[i].alignment, aligned[i].alignment,
                                 aligned[i].len * sizeof(int32_t)) == 0,
                      "%s: --batch 5 on 2 threads changed the alignment", what);
            for (size_t j = 1; j < aligned[i].len; j++)
                varied += aligned[i].alignment[j] != aligned[i].alignment[0];

            /* The same ids forced: the same alignment. */
            tessera_translate_options forced;
            tessera_translate_options_init(&forced);
            forced.return_alignments = 1;
            forced.max_len = (int)aligned[i].len;
            tessera_tokens prefix = {aligned[i].ids, aligned[i].len};
            forced.target_prefix = &prefix;
            tessera_hypothesis *f;
            cr_assert_eq(tessera_translate_with(rt1, m, src, 1, &forced, &f, err, sizeof err), 0,
                         "%s", err);
            cr_expect(same_ids(f, &aligned[i]) &&
                          memcmp(f->alignment, aligned[i].alignment,
                                 f->len * sizeof(int32_t)) == 0,
                      "%s: forcing the same ids gives another alignment", what);
            tessera_hypotheses_free(f, 1);
        }
        tessera_hypotheses_free(plain, n * K);
        tessera_hypotheses_free(aligned, n * K);
        tessera_hypotheses_free(batched, n * K);
    }
    cr_expect_gt(varied, 20, "alignments hardly vary (%zu tokens off the first position)",
                 varied);
    free(in);
    tessera_runtime_free(rt1);
    tessera_runtime_free(rt2);
    tessera_model_free(m);
}

/* ---- Memory budgets and batches by tokens -------------------------------------- */

static tessera_runtime *runtime_with_budget(size_t max_memory)
{
    tessera_runtime_options o;
    tessera_runtime *rt;
    tessera_runtime_options_init(&o);
    o.threads = 1;
    o.max_memory = max_memory;
    cr_assert_eq(tessera_runtime_create(&o, &rt, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tessera_runtime_memory_budget(rt), max_memory);
    return rt;
}

static size_t longest(const tessera_tokens *s, size_t n)
{
    size_t most = 0;
    for (size_t i = 0; i < n; i++)
        most = s[i].len > most ? s[i].len : most;
    return most;
}

/* The options api_answers translates with, beam 4 (its largest plan). */
static void answers_beam(tessera_translate_options *o)
{
    tessera_translate_options_init(o);
    o->beam = 4;
    o->n_best = 2;
    o->max_len = 20;
}

/* What a call keeps for its n inputs besides its batches (the order it takes
 * them in): a budget made from one batch's plan needs it too. */
#define CALL_ARRAYS 4096

/* A budget that holds one sentence of the longest source at a time splits
 * the batches of api_answers (3 sentences to translate) and of score and
 * encode, and changes no bit. */
Test(api, a_memory_budget_splits_batches_and_changes_no_bit, .timeout = 120)
{
    api_inputs *in = read_inputs();
    tessera_model *m = load_model();
    tessera_runtime *free_rt = runtime(1, 0, 1);
    size_t d = (size_t)tessera_model_config(m)->d_model;
    size_t src = longest(in->src, in->n), tgt = longest(in->tgt, in->n);
    tessera_translate_options beam;
    answers_beam(&beam);
    size_t one = tessera_translate_memory(free_rt, m, 1, src, &beam);
    size_t score_one = tessera_score_memory(free_rt, m, 1, src, tgt);
    size_t budget = (one > score_one ? one : score_one) + CALL_ARRAYS;
    cr_assert_gt(tessera_translate_memory(free_rt, m, 2, src, &beam), one + CALL_ARRAYS,
                 "the budget would not split a batch");
    tessera_runtime *tight = runtime_with_budget(budget);
    char *want = answers(free_rt, m, in), *got = answers(tight, m, in);
    cr_expect_str_eq(got, want, "a memory budget changed the output");

    cr_assert_gt(tessera_score_memory(free_rt, m, 2, src, tgt), score_one + CALL_ARRAYS,
                 "the budget would not split a batch of pairs");
    tessera_runtime *score_tight = runtime_with_budget(score_one + CALL_ARRAYS);
    tessera_score_options so;
    tessera_score_options_init(&so);
    so.batch = 8;
    float **x, **y;
    cr_assert_eq(tessera_score_with(free_rt, m, in->src, in->tgt, in->n, &so, &x, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(tessera_score_with(score_tight, m, in->src, in->tgt, in->n, &so, &y, err,
                                    sizeof err), 0, "%s", err);
    for (size_t i = 0; i < in->n; i++)
        cr_expect_eq(memcmp(x[i], y[i], (in->tgt[i].len + 1) * sizeof(float)), 0,
                     "pair %zu: scored differently under a budget", i + 1);
    tessera_scores_free(x, in->n);
    tessera_scores_free(y, in->n);
    tessera_runtime_free(score_tight);

    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    eo.batch = 8;
    cr_assert_eq(tessera_encode_with(free_rt, m, in->src, in->n, &eo, &x, err, sizeof err), 0,
                 "%s", err);
    cr_assert_gt(tessera_encode_memory(free_rt, m, 2, src), tessera_encode_memory(free_rt, m, 1, src) + CALL_ARRAYS);
    tessera_runtime *enc_tight =
        runtime_with_budget(tessera_encode_memory(free_rt, m, 1, src) + CALL_ARRAYS);
    cr_assert_eq(tessera_encode_with(enc_tight, m, in->src, in->n, &eo, &y, err, sizeof err), 0,
                 "%s", err);
    for (size_t i = 0; i < in->n; i++)
        cr_expect_eq(memcmp(x[i], y[i], in->src[i].len * d * sizeof(float)), 0,
                     "sentence %zu: encoded differently under a budget", i + 1);
    tessera_encodings_free(x, in->n);
    tessera_encodings_free(y, in->n);
    free(want);
    free(got);
    tessera_runtime_free(enc_tight);
    tessera_runtime_free(tight);
    tessera_runtime_free(free_rt);
    tessera_model_free(m);
    free(in);
}

/* A sentence that alone needs more than the budget is an out-of-memory
 * error naming it, before anything of the call runs; the runtime then still
 * translates what fits. */
Test(api, a_sentence_past_the_budget_is_named)
{
    tessera_model *m = load_model();
    tessera_runtime *free_rt = runtime(1, 0, 1);
    tessera_translate_options o;
    answers_beam(&o);
    int32_t ids[103];
    for (int t = 0; t < 103; t++)
        ids[t] = 7 + t % 20;
    const tessera_tokens src[] = {{ids, 2}, {ids, 1}, {ids + 3, 100}, {ids, 2}};
    tessera_runtime *tight =
        runtime_with_budget(tessera_translate_memory(free_rt, m, 1, 2, &o) + CALL_ARRAYS);
    tessera_hypothesis *h;
    int rc = tessera_translate_with(tight, m, src, 4, &o, &h, err, sizeof err);
    cr_assert_eq(rc, TESSERA_ERR_NOMEM, "status %d: %s", rc, err);
    cr_expect(strstr(err, "sentence 3 (100 tokens) needs") && strstr(err, "memory budget") &&
                  !strchr(err, '\n'),
              "the error should name sentence 3 and the budget: %s", err);
    cr_expect_eq(tessera_translate_with(tight, m, src, 2, &o, &h, err, sizeof err), 0, "%s", err);
    tessera_hypotheses_free(h, 4);
    tessera_runtime_free(tight);
    tessera_runtime_free(free_rt);
    tessera_model_free(m);
}

/* Batches of at most N source tokens, shortest first, answer in input
 * order with the bits of batches of one sentence: greedy, sampling (each
 * sentence keeps its own random stream), beam, scores and encodings. */
Test(api, batches_by_tokens_change_no_bit, .timeout = 120)
{
    api_inputs *in = read_inputs();
    tessera_model *m = load_model();
    tessera_runtime *rt = runtime(1, 0, 2);
    size_t d = (size_t)tessera_model_config(m)->d_model;
    static const int topk[] = {1, 5, 1};
    for (int c = 0; c < 3; c++) {
        tessera_translate_options one, by_tokens;
        tessera_translate_options_init(&one);
        one.max_len = 20;
        one.sampling_topk = topk[c];
        one.seed = 7;
        one.beam = c == 2 ? 3 : 1;
        by_tokens = one;
        by_tokens.batch = 64;
        by_tokens.batch_tokens = 12;
        tessera_hypothesis *a, *b;
        cr_assert_eq(tessera_translate_with(rt, m, in->src, in->n, &one, &a, err, sizeof err), 0,
                     "%s", err);
        cr_assert_eq(tessera_translate_with(rt, m, in->src, in->n, &by_tokens, &b, err, sizeof err),
                     0, "%s", err);
        for (size_t i = 0; i < in->n; i++)
            cr_expect(same_ids(&a[i], &b[i]) && a[i].score == b[i].score,
                      "case %d, sentence %zu: batches of 12 tokens differ from batches of one", c,
                      i + 1);
        tessera_hypotheses_free(a, in->n);
        tessera_hypotheses_free(b, in->n);
    }
    tessera_score_options s1, st;
    tessera_score_options_init(&s1);
    tessera_score_options_init(&st);
    st.batch = 64;
    st.batch_tokens = 9;
    float **x, **y;
    cr_assert_eq(tessera_score_with(rt, m, in->src, in->tgt, in->n, &s1, &x, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(tessera_score_with(rt, m, in->src, in->tgt, in->n, &st, &y, err, sizeof err), 0,
                 "%s", err);
    for (size_t i = 0; i < in->n; i++)
        cr_expect_eq(memcmp(x[i], y[i], (in->tgt[i].len + 1) * sizeof(float)), 0,
                     "pair %zu: scored differently in batches by tokens", i + 1);
    tessera_scores_free(x, in->n);
    tessera_scores_free(y, in->n);
    tessera_encode_options e1, et;
    tessera_encode_options_init(&e1);
    tessera_encode_options_init(&et);
    et.batch = 64;
    et.batch_tokens = 9;
    cr_assert_eq(tessera_encode_with(rt, m, in->src, in->n, &e1, &x, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tessera_encode_with(rt, m, in->src, in->n, &et, &y, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < in->n; i++)
        cr_expect_eq(memcmp(x[i], y[i], in->src[i].len * d * sizeof(float)), 0,
                     "sentence %zu: encoded differently in batches by tokens", i + 1);
    tessera_encodings_free(x, in->n);
    tessera_encodings_free(y, in->n);
    tessera_runtime_free(rt);
    tessera_model_free(m);
    free(in);
}
