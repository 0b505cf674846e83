/*
 * Timing policy (see perf_median_ms in perf.h). The median, not the mean or
 * the minimum: two cores shared with other work make single runs noisy in
 * both directions, and the median of a handful is stable where the mean is
 * not. Peaks (machine.c) take the best instead, because a ceiling is what
 * they measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "perf/perf.h"

#define MAX_SAMPLES 4096
#define MIN_SAMPLE_SECONDS 50e-6

double perf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The clock samples are taken with: wall time, or with --clock cpu the
 * calling thread's CPU time, which leaves out the time other work on a
 * shared machine holds the core (single-threaded runs only). */
static double sample_clock(const perf_options *o)
{
    if (!o->cpu_clock)
        return perf_now();
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct timer_state {
    double samples[MAX_SAMPLES];
    size_t n;
    double total; /* seconds spent in runs, warm-up included */
    size_t batch; /* calls per sample */
    int done;
} timer_state;

static void warm_up(const perf_options *o, timer_state *s, perf_run_fn run, void *ctx)
{
    double t0 = sample_clock(o);
    run(ctx);
    double first = sample_clock(o) - t0;
    s->n = 0;
    s->total = first;
    s->done = 0;
    if (first >= o->min_time)
        s->samples[s->n++] = first;
    s->batch = 1;
    if (first < MIN_SAMPLE_SECONDS)
        s->batch = (size_t)(MIN_SAMPLE_SECONDS / (first > 1e-9 ? first : 1e-9)) + 1;
}

/* Takes one more sample unless the candidate has enough; returns whether it
 * did. */
static int sample_once(const perf_options *o, timer_state *s, perf_run_fn run, void *ctx)
{
    int enough = s->n >= (size_t)o->repeat && s->total >= o->min_time;
    int too_long = s->n >= 1 && s->total >= o->max_time;
    if (enough || too_long || s->n >= MAX_SAMPLES) {
        s->done = 1;
        return 0;
    }
    double t0 = sample_clock(o);
    for (size_t b = 0; b < s->batch; b++)
        run(ctx);
    double dt = sample_clock(o) - t0;
    s->samples[s->n++] = dt / (double)s->batch;
    s->total += dt;
    return 1;
}

static double median_ms(timer_state *s)
{
    qsort(s->samples, s->n, sizeof s->samples[0], by_value);
    size_t n = s->n;
    double median = n % 2 ? s->samples[n / 2] : 0.5 * (s->samples[n / 2 - 1] + s->samples[n / 2]);
    return median * 1e3;
}

void perf_median_ms_each(const perf_options *o, size_t n, perf_run_fn const run[],
                         void *const ctx[], double ms[])
{
    timer_state *s = calloc(n, sizeof *s);
    if (!s) {
        fprintf(stderr, "tessera-perf: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        warm_up(o, &s[i], run[i], ctx[i]);
    /* Round robin: a burst of other work on the machine lands on every
     * candidate alike instead of on whichever was being timed. */
    for (int busy = 1; busy;) {
        busy = 0;
        for (size_t i = 0; i < n; i++)
            if (!s[i].done)
                busy |= sample_once(o, &s[i], run[i], ctx[i]);
    }
    for (size_t i = 0; i < n; i++)
        ms[i] = median_ms(&s[i]);
    free(s);
}

double perf_median_ms(const perf_options *o, perf_run_fn run, void *ctx)
{
    double ms;
    perf_median_ms_each(o, 1, &run, &ctx, &ms);
    return ms;
}
