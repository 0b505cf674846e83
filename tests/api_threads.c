/* Several application threads calling the library at once, as a server does,
 * as a plain program: ThreadSanitizer cannot run Criterion's runner, so
 * .ci/tsan builds this one with -fsanitize=thread (and without OpenMP, whose
 * libgomp is not instrumented) to look for data races between runtimes
 * sharing one model. make check runs it too.
 *
 * Reference: everything one runtime of one thread answers. Then 2 runtimes
 * of 1 thread each (the placement of 2 workers), called from 4 application
 * threads at once for 2 rounds each: every answer must be the reference.
 * Exit 0 when all agree, 1 otherwise, 99 when the setup fails. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_util.h"

enum { RUNTIMES = 2, CALLERS = 4, ROUNDS = 2 };

typedef struct caller {
    tessera_runtime *rt;
    const tessera_model *m;
    const api_inputs *in;
    const char *expected;
    int mismatches;
    char err[512];
} caller;

static void *call(void *arg)
{
    caller *c = arg;
    for (int r = 0; r < ROUNDS; r++) {
        char *got = api_answers(c->rt, c->m, c->in, c->err, sizeof c->err);
        c->mismatches += !got || strcmp(got, c->expected) != 0;
        free(got);
    }
    return NULL;
}

int main(void)
{
    const char *srcdir = getenv("TESSERA_TEST_SRCDIR");
    char err[512];
    static api_inputs in;
    tessera_model *m;
    tessera_runtime *rts[RUNTIMES];
    if (!srcdir)
        srcdir = ".";
    if (api_read_inputs(srcdir, &in, err, sizeof err) != 0 ||
        api_load_model(srcdir, &m, err, sizeof err) != 0 ||
        api_runtime(1, 0, 1, &rts[0], err, sizeof err) != 0) {
        fprintf(stderr, "api_threads: %s\n", err);
        return 99;
    }
    char *expected = api_answers(rts[0], m, &in, err, sizeof err);
    tessera_runtime_free(rts[0]);
    if (!expected) {
        fprintf(stderr, "api_threads: %s\n", err);
        return 99;
    }
    for (int r = 0; r < RUNTIMES; r++)
        if (api_runtime(RUNTIMES, r, 1, &rts[r], err, sizeof err) != 0) {
            fprintf(stderr, "api_threads: runtime %d: %s\n", r, err);
            return 99;
        }

    pthread_t threads[CALLERS];
    caller callers[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        callers[i] = (caller){.rt = rts[i % RUNTIMES], .m = m, .in = &in, .expected = expected};
        if (pthread_create(&threads[i], NULL, call, &callers[i]) != 0) {
            fprintf(stderr, "api_threads: cannot start caller %d\n", i);
            return 99;
        }
    }
    int failed = 0;
    for (int i = 0; i < CALLERS; i++) {
        pthread_join(threads[i], NULL);
        if (callers[i].mismatches) {
            fprintf(stderr, "api_threads: caller %d: %d of %d rounds differ from one thread%s%s\n",
                    i, callers[i].mismatches, ROUNDS, callers[i].err[0] ? ": " : "",
                    callers[i].err);
            failed = 1;
        }
    }
    for (int r = 0; r < RUNTIMES; r++)
        tessera_runtime_free(rts[r]);
    tessera_model_free(m);
    free(expected);
    printf("api_threads: %d callers on %d runtimes, %d rounds each: %s\n", CALLERS, RUNTIMES,
           ROUNDS, failed ? "DIFFER" : "same as one thread");
    return failed;
}
