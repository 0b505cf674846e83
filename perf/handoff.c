/* What a call costs to hand to a runtime's own thread (core/runtime/runtime.c: the
 * caller signals the runtime's leader thread and waits for its answer), the
 * price of never binding the caller's thread: a call that does nothing, run
 * through tsr_runtime_run, against the same function called directly.
 *
 *   perf/tessera-handoff [CALLS]     (default 20000)
 *
 * Prints one line per case, key=value as tessera-perf: back to back (the
 * leader finds the next call at once, or has just gone to sleep) and after
 * 1 ms of idleness (the leader asleep, as between a server's requests), for
 * runtimes of 1 and 2 threads; us = median microseconds per call over 5
 * blocks. The translation of one short sentence by Transformer-base takes
 * milliseconds (perf/RESULTS.md), so these are the overhead's scale. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/runtime/runtime.h"
#include "core/tessera.h"

static volatile int sink;

static int nothing(const tsr_exec *x, void *arg, char *err, size_t err_len)
{
    (void)x;
    (void)arg;
    (void)err;
    (void)err_len;
    sink++;
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void pause_1ms(void)
{
    struct timespec d = {0, 1000000};
    nanosleep(&d, NULL);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median microseconds per call over 5 blocks of `calls` calls; rt NULL calls
 * the function directly. Idle time, when asked for, is not counted. */
static double time_calls(tessera_runtime *rt, const tessera_model *m, long calls, int idle)
{
    double block[5];
    char err[256];
    for (int b = 0; b < 5; b++) {
        double total = 0;
        for (long i = 0; i < calls; i++) {
            if (idle)
                pause_1ms();
            double t0 = now();
            if (rt)
                tsr_runtime_run(rt, m, nothing, NULL, err, sizeof err);
            else
                nothing(NULL, NULL, err, sizeof err);
            total += now() - t0;
        }
        block[b] = 1e6 * total / (double)calls;
    }
    qsort(block, 5, sizeof *block, by_value);
    return block[2];
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    if (calls < 1 || argc > 2) {
        fprintf(stderr, "Usage: tessera-handoff [CALLS]\n");
        return 2;
    }
    char err[256];
    tessera_config c;
    tessera_model *m;
    tessera_config_defaults(&c);
    c.d_model = 8;
    c.n_heads = 1;
    c.d_ff = 8;
    c.n_encoder_layers = c.n_decoder_layers = 1;
    c.src_vocab_size = c.tgt_vocab_size = 8;
    c.max_positions = 8;
    if (tessera_model_random_with(&c, 1, NULL, &m, err, sizeof err) != 0) {
        fprintf(stderr, "tessera-handoff: %s\n", err);
        return 1;
    }
    long idle_calls = calls / 20 > 0 ? calls / 20 : 1;
    printf("op=handoff case=direct calls=%ld us=%.3f\n", calls, time_calls(NULL, m, calls, 0));
    for (int threads = 1; threads <= 2; threads++) {
        tessera_runtime_options o;
        tessera_runtime *rt;
        tessera_runtime_options_init(&o);
        o.threads = threads;
        if (tessera_runtime_create(&o, &rt, err, sizeof err) != 0) {
            fprintf(stderr, "tessera-handoff: %s\n", err);
            return 1;
        }
        printf("op=handoff case=back-to-back threads=%d calls=%ld us=%.3f\n", threads, calls,
               time_calls(rt, m, calls, 0));
        printf("op=handoff case=after-1ms-idle threads=%d calls=%ld us=%.3f\n", threads,
               idle_calls, time_calls(rt, m, idle_calls, 1));
        tessera_runtime_free(rt);
    }
    tessera_model_free(m);
    return 0;
}
