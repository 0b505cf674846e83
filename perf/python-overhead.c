/* The C side of perf/python-overhead.sh: N batch-1 greedy translations of
 * one sentence (ids, or text through the model's tokenizers) on one runtime
 * of 1 thread, through the public API as a C program would call it; prints
 * the microseconds a call took on average, in wall time and in CPU time of
 * the calling thread (what the caller itself spends; the computing is on
 * the runtime's thread). The Python side makes the same calls through
 * tessera.Translator.translate_batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/tessera.h"

static double seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* SOURCE: ids separated by spaces (ids), or the text (text). */
int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[3], "ids") != 0 && strcmp(argv[3], "text") != 0)) {
        fprintf(stderr, "usage: python-overhead MODEL N ids|text SOURCE\n");
        return 2;
    }
    const char *dir = argv[1], *source = argv[4];
    long n = atol(argv[2]);
    int text = strcmp(argv[3], "text") == 0;
    char err[1024];
    tessera_model *m;
    tessera_runtime *rt;
    tessera_runtime_options ro;
    tessera_runtime_options_init(&ro);
    ro.threads = 1;
    tessera_load_options lo;
    tessera_load_options_init(&lo);
    lo.compute_type = TESSERA_COMPUTE_F32;
    if (tessera_runtime_create(&ro, &rt, err, sizeof err) != 0 ||
        tessera_model_load_with(dir, &lo, &m, err, sizeof err) != 0) {
        fprintf(stderr, "python-overhead: %s\n", err);
        return 1;
    }
    int32_t ids[256];
    size_t len = 0;
    for (char *p = (char *)source, *end; !text && len < 256; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        ids[len++] = (int32_t)v;
    }
    tessera_tokens src = {ids, len};
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    double start = 0, start_cpu = 0;
    for (long i = -n / 10; i < n; i++) { /* a tenth more first, as warm-up */
        if (i == 0) {
            start = seconds(CLOCK_MONOTONIC);
            start_cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
        }
        int rc;
        if (text) {
            tessera_text_hypothesis *th;
            rc = tessera_translate_text(rt, m, &source, 1, &o, &th, err, sizeof err);
            if (rc == 0)
                tessera_text_hypotheses_free(th, 1);
        } else {
            tessera_hypothesis *h;
            rc = tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err);
            if (rc == 0)
                tessera_hypotheses_free(h, 1);
        }
        if (rc != 0) {
            fprintf(stderr, "python-overhead: %s\n", err);
            return 1;
        }
    }
    printf("%.3f %.3f\n", (seconds(CLOCK_MONOTONIC) - start) / (double)n * 1e6,
           (seconds(CLOCK_THREAD_CPUTIME_ID) - start_cpu) / (double)n * 1e6);
    tessera_model_free(m);
    tessera_runtime_free(rt);
    return 0;
}
