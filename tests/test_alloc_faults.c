/*
 * Allocation-failure injection: every allocation the library makes goes
 * through base/memory.c, whose copy in the tests' library can fail a chosen
 * one (TSR_ALLOC_FAULTS). For each operation below the walk first counts the
 * allocations of a clean run, then, for every n below that count, runs the
 * operation again with allocation n failing (once, and then with every
 * allocation from n on failing) and requires:
 *   - the call returns TESSERA_ERR_NOMEM with a one-line message, or
 *     succeeds (a path with a fallback, such as GEMM reading x in place when
 *     its packing buffer cannot be had) with the clean run's exact answer;
 *   - nothing leaks: the library's count of blocks held comes back to where
 *     it was before the call;
 *   - the model and runtime stay usable: the next clean call gives the clean
 *     run's answer, bit for bit.
 * jansson (config.json, the safetensors header) allocates on its own; the
 * walk counts its blocks too (a json_decref missed on an error path is a
 * leak) but does not fail them: jansson reports most of its own allocation
 * failures as syntax errors ("string or '}' expected"), which the library
 * cannot tell from a bad file. hwloc (the runtime's topology) and libgomp are
 * outside the walk.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "core/tessera.h"
#include "tests/api_util.h"
#include "tests/testutil.h"

/* Sentences of the golden inputs each call takes: enough for several
 * batches, few enough that the walk stays short. */
#define SENTENCES 5

/* jansson's blocks held (it is only used from the calling thread here). */
static long jansson_live;

static void *jansson_malloc(size_t n)
{
    void *p = malloc(n);
    jansson_live += p != NULL;
    return p;
}

static void jansson_free(void *p)
{
    jansson_live -= p != NULL;
    free(p);
}

static void count_jansson(void) { json_set_alloc_funcs(jansson_malloc, jansson_free); }

TestSuite(alloc_faults, .init = count_jansson);

/* A growable text of the answers, in the test's own (uncounted) memory. */
typedef struct answer {
    char *s;
    size_t len, cap;
} answer;

static void say(answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(answer *a, const char *fmt, ...)
{
    char piece[256];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(piece, sizeof piece, fmt, ap);
    va_end(ap);
    cr_assert(w >= 0 && (size_t)w < sizeof piece);
    if (a->len + (size_t)w + 1 > a->cap) {
        a->cap = (a->cap + (size_t)w + 1) * 2;
        a->s = realloc(a->s, a->cap);
        cr_assert_not_null(a->s);
    }
    memcpy(a->s + a->len, piece, (size_t)w + 1);
    a->len += (size_t)w;
}

/* What an operation works on; `out` receives its answer as text. */
typedef struct fixture {
    api_inputs in;
    tessera_model *model;
    tessera_runtime *rt;
    tessera_translate_options translate;
    tessera_compute_type compute;
    int threads;
} fixture;

typedef int (*operation)(fixture *f, answer *out, char *err, size_t err_len);

static int op_load(fixture *f, answer *out, char *err, size_t err_len)
{
    char dir[1024];
    tessera_load_options o;
    tessera_model *m;
    tessera_load_options_init(&o);
    o.compute_type = f->compute;
    snprintf(dir, sizeof dir, "%s/tests/golden/%s", test_srcdir(), API_MODEL);
    int rc = tessera_model_load_with(dir, &o, &m, err, err_len);
    if (rc == 0) {
        say(out, "%zu bytes, %s", tessera_model_weight_bytes(m),
            tessera_compute_type_name(tessera_model_compute_type(m)));
        tessera_model_free(m);
    }
    return rc;
}

static int op_runtime(fixture *f, answer *out, char *err, size_t err_len)
{
    tessera_runtime *rt;
    int rc = api_runtime(1, 0, f->threads, &rt, err, err_len);
    if (rc == 0) {
        say(out, "%d threads", tessera_runtime_threads(rt));
        tessera_runtime_free(rt);
    }
    return rc;
}

static int op_translate(fixture *f, answer *out, char *err, size_t err_len)
{
    tessera_hypothesis *h;
    int rc = tessera_translate_with(f->rt, f->model, f->in.src, SENTENCES, &f->translate, &h,
                                    err, err_len);
    if (rc != 0)
        return rc;
    size_t count = SENTENCES * (size_t)f->translate.n_best;
    for (size_t i = 0; i < count; i++) {
        for (size_t k = 0; k < h[i].len; k++)
            say(out, "%d/%d ", (int)h[i].ids[k], h[i].alignment ? (int)h[i].alignment[k] : -1);
        say(out, "| %a\n", h[i].score);
    }
    tessera_hypotheses_free(h, count);
    return 0;
}

static int op_score(fixture *f, answer *out, char *err, size_t err_len)
{
    tessera_score_options o;
    float **lp;
    tessera_score_options_init(&o);
    o.batch = 2;
    int rc = tessera_score_with(f->rt, f->model, f->in.src, f->in.tgt, SENTENCES, &o, &lp, err,
                                err_len);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < SENTENCES; i++) {
        for (size_t k = 0; k <= f->in.tgt[i].len; k++)
            say(out, "%a ", (double)lp[i][k]);
        say(out, "\n");
    }
    tessera_scores_free(lp, SENTENCES);
    return 0;
}

static int op_encode(fixture *f, answer *out, char *err, size_t err_len)
{
    tessera_encode_options o;
    float **v;
    tessera_encode_options_init(&o);
    o.batch = 2;
    int rc = tessera_encode_with(f->rt, f->model, f->in.src, SENTENCES, &o, &v, err, err_len);
    if (rc != 0)
        return rc;
    size_t d = (size_t)tessera_model_config(f->model)->d_model;
    for (size_t i = 0; i < SENTENCES; i++) {
        for (size_t k = 0; k < f->in.src[i].len * d; k++)
            say(out, "%a ", (double)v[i][k]);
        say(out, "\n");
    }
    tessera_encodings_free(v, SENTENCES);
    return 0;
}

/* Runs `op` clean and returns its answer (caller frees). */
static char *clean_run(const char *what, operation op, fixture *f)
{
    answer a = {0};
    char err[512] = "";
    say(&a, "%s", "");
    tsr_alloc_faults_arm(-1, 0);
    cr_assert_eq(op(f, &a, err, sizeof err), 0, "%s, no fault: %s", what, err);
    return a.s;
}

/* The walk described at the top, for one operation; returns how many
 * allocations a clean run makes. */
static long walk(const char *what, operation op, fixture *f)
{
    /* Twice first: per-thread and per-runtime buffers grow to size on the
     * first call and are then reused, so the second call counts what every
     * later one makes. */
    free(clean_run(what, op, f));
    long held = tsr_alloc_faults_live(), json_held = jansson_live;
    char *want = clean_run(what, op, f);
    long total = tsr_alloc_faults_attempts();
    cr_assert_gt(total, 0, "%s: no allocation counted", what);
    cr_assert_eq(tsr_alloc_faults_live(), held, "%s, no fault: %ld blocks leaked", what,
                 tsr_alloc_faults_live() - held);

    long failures = 0;
    for (int persistent = 0; persistent <= 1; persistent++) {
        for (long n = 0; n < total; n++) {
            answer got = {0};
            char err[512] = "";
            say(&got, "%s", "");
            tsr_alloc_faults_arm(n, persistent);
            int rc = op(f, &got, err, sizeof err);
            int fired = tsr_alloc_faults_fired();
            tsr_alloc_faults_arm(-1, 0);
            const char *mode = persistent ? "and every later one" : "alone";
            cr_assert(fired, "%s: allocation %ld of %ld was never asked for", what, n, total);
            if (rc == 0) {
                cr_assert_str_eq(got.s, want, "%s: allocation %ld failing (%s) changed the answer",
                                 what, n, mode);
            } else {
                failures++;
                cr_assert_eq(rc, TESSERA_ERR_NOMEM,
                             "%s: allocation %ld failing (%s) gave status %d (%s), not out of "
                             "memory: %s",
                             what, n, mode, rc, tessera_status_name(rc), err);
                cr_assert(err[0] != '\0' && !strchr(err, '\n'),
                          "%s: allocation %ld failing (%s): the message is not one line: '%s'",
                          what, n, mode, err);
            }
            cr_assert_eq(tsr_alloc_faults_live(), held,
                         "%s: allocation %ld failing (%s) leaked %ld blocks", what, n, mode,
                         tsr_alloc_faults_live() - held);
            cr_assert_eq(jansson_live, json_held,
                         "%s: allocation %ld failing (%s) leaked %ld JSON blocks", what, n, mode,
                         jansson_live - json_held);
            free(got.s);
            char *again = clean_run(what, op, f);
            cr_assert_str_eq(again, want,
                             "%s: after allocation %ld failed (%s), a clean call answers "
                             "differently",
                             what, n, mode);
            free(again);
        }
    }
    cr_assert_gt(failures, 0, "%s: no failure reached the caller", what);
    free(want);
    return total;
}

static void setup(fixture *f, int threads)
{
    char err[512];
    memset(f, 0, sizeof *f);
    f->threads = threads;
    cr_assert_eq(api_read_inputs(test_srcdir(), &f->in, err, sizeof err), 0, "%s", err);
    cr_assert_geq(f->in.n, SENTENCES);
    cr_assert_eq(api_load_model(test_srcdir(), &f->model, err, sizeof err), 0, "%s", err);
    cr_assert_eq(api_runtime(1, 0, threads, &f->rt, err, sizeof err), 0, "%s", err);
    tessera_translate_options_init(&f->translate);
    f->translate.max_len = 12;
    f->translate.batch = 2;
    f->translate.return_alignments = 1;
}

static void teardown(fixture *f)
{
    tessera_runtime_free(f->rt);
    tessera_model_free(f->model);
}

Test(alloc_faults, load_every_compute_type)
{
    fixture f;
    setup(&f, 1);
    static const tessera_compute_type types[] = {TESSERA_COMPUTE_F32, TESSERA_COMPUTE_BF16,
                                                 TESSERA_COMPUTE_INT8};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char what[64];
        f.compute = types[i];
        snprintf(what, sizeof what, "load (%s)", tessera_compute_type_name(types[i]));
        cr_log_info("%s: %ld allocations walked", what, walk(what, op_load, &f));
    }
    teardown(&f);
}

Test(alloc_faults, runtime_create)
{
    fixture f;
    setup(&f, 2);
    cr_log_info("runtime: %ld allocations walked", walk("runtime (2 threads)", op_runtime, &f));
    teardown(&f);
}

Test(alloc_faults, translate_greedy_and_sampling)
{
    fixture f;
    setup(&f, 1);
    cr_log_info("greedy: %ld allocations walked", walk("greedy", op_translate, &f));
    f.translate.sampling_topk = 5;
    f.translate.seed = 7;
    cr_log_info("sampling: %ld allocations walked", walk("sampling", op_translate, &f));
    teardown(&f);
}

Test(alloc_faults, translate_beam)
{
    fixture f;
    setup(&f, 1);
    f.translate.beam = 4;
    f.translate.n_best = 2;
    cr_log_info("beam: %ld allocations walked", walk("beam 4", op_translate, &f));
    teardown(&f);
}

Test(alloc_faults, score_and_encode)
{
    fixture f;
    setup(&f, 1);
    cr_log_info("score: %ld allocations walked", walk("score", op_score, &f));
    cr_log_info("encode: %ld allocations walked", walk("encode", op_encode, &f));
    teardown(&f);
}

Test(alloc_faults, translate_on_two_threads)
{
    fixture f;
    setup(&f, 2);
    f.translate.batch = 3;
    cr_log_info("greedy, 2 threads: %ld allocations walked",
                walk("greedy, 2 threads", op_translate, &f));
    f.translate.beam = 3;
    cr_log_info("beam, 2 threads: %ld allocations walked",
                walk("beam 3, 2 threads", op_translate, &f));
    teardown(&f);
}
