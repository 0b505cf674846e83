/* Cancellation (tessera_cancel_fn) as a plain program, so that .ci/asan and
 * .ci/tsan run it under their sanitizers (make check runs it too).
 *
 * On the golden model, four calls (greedy, beam 4 with 2 best, score,
 * encode), each first run to its end for a reference: a fingerprint of every
 * id and the bits of every float it returned. Then:
 *   1. the cancel function is asked at least once per decoding step (greedy:
 *      at least as often as the longest hypothesis has tokens);
 *   2. cancelled deterministically at its k-th question, for every k the
 *      uncancelled call asks (under an emulator, $TESSERA_TEST_RUNNER set,
 *      the first, the last and every 10th: each call there costs seconds):
 *      TESSERA_ERR_CANCELLED, "cancelled", and the next call on the same
 *      runtime answers the reference exactly;
 *   3. ITERATIONS calls (argument 1; default 200, 20 under an emulator) of a random kind, each
 *      cancelled at a random moment by another thread setting an atomic flag:
 *      each either answers the reference or is cancelled, and the runtime
 *      stays usable. Leaks show under ASan's leak checker, races under TSan.
 * Exit 0 when all hold, 1 otherwise, 99 when the setup fails. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/api_util.h"

enum kind { GREEDY, BEAM, SCORE, ENCODE, KINDS };
static const char *const kind_name[KINDS] = {"greedy", "beam", "score", "encode"};

typedef struct asker {
    long asked;     /* questions so far */
    long cancel_at; /* > 0: answer "stop" to this question */
    atomic_int *flag; /* non-NULL: "stop" once another thread sets it */
} asker;

static int ask(void *arg)
{
    asker *a = arg;
    a->asked++;
    if (a->flag && atomic_load(a->flag))
        return 1;
    return a->cancel_at > 0 && a->asked >= a->cancel_at;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    return (h ^ v) * 0x100000001b3ULL;
}

static uint64_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Runs one call of `kind`; its fingerprint in *print, its longest output in
 * *longest. Returns the call's status. */
static int run(enum kind kind, tessera_runtime *rt, const tessera_model *m, const api_inputs *in,
               asker *a, uint64_t *print, size_t *longest, char *err, size_t err_len)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int rc;
    *longest = 0;
    if (kind == GREEDY || kind == BEAM) {
        tessera_translate_options o;
        tessera_hypothesis *hy;
        tessera_translate_options_init(&o);
        o.beam = kind == GREEDY ? 1 : 4;
        o.n_best = kind == GREEDY ? 1 : 2;
        o.max_len = 20;
        o.batch = 3;
        o.cancel = ask;
        o.cancel_arg = a;
        rc = tessera_translate_with(rt, m, in->src, in->n, &o, &hy, err, err_len);
        for (size_t i = 0; rc == 0 && i < in->n * (size_t)o.n_best; i++) {
            for (size_t k = 0; k < hy[i].len; k++)
                h = mix(h, (uint64_t)hy[i].ids[k]);
            h = mix(mix(h, float_bits((float)hy[i].score)), 0xffff);
            if (hy[i].len > *longest)
                *longest = hy[i].len;
        }
        if (rc == 0)
            tessera_hypotheses_free(hy, in->n * (size_t)o.n_best);
    } else if (kind == SCORE) {
        tessera_score_options o;
        float **lp;
        tessera_score_options_init(&o);
        o.batch = 2;
        o.cancel = ask;
        o.cancel_arg = a;
        rc = tessera_score_with(rt, m, in->src, in->tgt, in->n, &o, &lp, err, err_len);
        for (size_t i = 0; rc == 0 && i < in->n; i++)
            for (size_t k = 0; k <= in->tgt[i].len; k++)
                h = mix(h, float_bits(lp[i][k]));
        if (rc == 0)
            tessera_scores_free(lp, in->n);
    } else {
        tessera_encode_options o;
        float **v;
        tessera_encode_options_init(&o);
        o.batch = 2;
        o.cancel = ask;
        o.cancel_arg = a;
        size_t d = (size_t)tessera_model_config(m)->d_model;
        rc = tessera_encode_with(rt, m, in->src, in->n, &o, &v, err, err_len);
        for (size_t i = 0; rc == 0 && i < in->n; i++)
            for (size_t k = 0; k < in->src[i].len * d; k++)
                h = mix(h, float_bits(v[i][k]));
        if (rc == 0)
            tessera_encodings_free(v, in->n);
    }
    *print = h;
    return rc;
}

typedef struct canceller {
    atomic_int *flag;
    long delay_ns;
} canceller;

static void *cancel_later(void *arg)
{
    canceller *c = arg;
    struct timespec t = {0, c->delay_ns};
    nanosleep(&t, NULL);
    atomic_store(c->flag, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *srcdir = getenv("TESSERA_TEST_SRCDIR");
    const char *runner = getenv("TESSERA_TEST_RUNNER");
    int emulated = runner && *runner;
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : emulated ? 20 : 200;
    char err[512];
    static api_inputs in;
    tessera_model *m;
    tessera_runtime *rt;
    if (!srcdir)
        srcdir = ".";
    if (api_read_inputs(srcdir, &in, err, sizeof err) != 0 ||
        api_load_model(srcdir, &m, err, sizeof err) != 0 ||
        api_runtime(1, 0, 1, &rt, err, sizeof err) != 0) {
        fprintf(stderr, "api_cancel: %s\n", err);
        return 99;
    }
    uint64_t reference[KINDS];
    long questions[KINDS];
    size_t longest;
    int failed = 0;
    for (int k = 0; k < KINDS; k++) {
        asker a = {0};
        if (run(k, rt, m, &in, &a, &reference[k], &longest, err, sizeof err) != 0) {
            fprintf(stderr, "api_cancel: %s: %s\n", kind_name[k], err);
            return 99;
        }
        questions[k] = a.asked;
        if (k == GREEDY && (size_t)a.asked < longest) {
            fprintf(stderr, "api_cancel: greedy asked %ld times for %zu steps\n", a.asked, longest);
            failed = 1;
        }
    }

    /* 2: cancelled at every question the call asks. */
    for (int k = 0; k < KINDS; k++)
        for (long at = 1; at <= questions[k]; at++) {
            if (emulated && at != 1 && at != questions[k] && at % 10 != 0)
                continue;
            asker a = {.cancel_at = at}, none = {0};
            uint64_t print;
            err[0] = '\0';
            int rc = run(k, rt, m, &in, &a, &print, &longest, err, sizeof err);
            if (rc != TESSERA_ERR_CANCELLED || strcmp(err, "cancelled") != 0 || a.asked != at) {
                fprintf(stderr, "api_cancel: %s cancelled at question %ld: status %d (%s), "
                        "asked %ld times\n", kind_name[k], at, rc, err, a.asked);
                failed = 1;
            }
            rc = run(k, rt, m, &in, &none, &print, &longest, err, sizeof err);
            if (rc != 0 || print != reference[k]) {
                fprintf(stderr, "api_cancel: %s after a cancel at question %ld: %s\n",
                        kind_name[k], at, rc ? err : "other results than the reference");
                failed = 1;
            }
        }

    /* 3: cancelled from another thread at random moments. */
    unsigned seed = 12345;
    long cancelled = 0, finished = 0;
    for (long i = 0; i < iterations && !failed; i++) {
        enum kind k = (enum kind)(rand_r(&seed) % KINDS);
        atomic_int flag = 0;
        asker a = {.flag = &flag};
        canceller c = {&flag, (long)(rand_r(&seed) % 2000) * 1000};
        pthread_t t;
        if (pthread_create(&t, NULL, cancel_later, &c) != 0) {
            fprintf(stderr, "api_cancel: cannot start the cancelling thread\n");
            return 99;
        }
        uint64_t print;
        int rc = run(k, rt, m, &in, &a, &print, &longest, err, sizeof err);
        pthread_join(t, NULL);
        if (rc == TESSERA_ERR_CANCELLED) {
            cancelled++;
        } else if (rc == 0 && print == reference[k]) {
            finished++;
        } else {
            fprintf(stderr, "api_cancel: %s, iteration %ld: %s\n", kind_name[k], i,
                    rc ? err : "other results than the reference");
            failed = 1;
        }
    }
    tessera_runtime_free(rt);
    tessera_model_free(m);
    printf("api_cancel: cancelled at %s %ld+%ld+%ld+%ld questions; %ld random cancels: "
           "%ld cancelled, %ld finished with the reference: %s\n",
           emulated ? "the first, last and every 10th of the" : "each of", questions[GREEDY],
           questions[BEAM], questions[SCORE], questions[ENCODE], iterations,
           cancelled, finished, failed ? "FAILED" : "ok");
    return failed;
}
