/*
 * Output: one line per case, space-separated key=value pairs with no spaces
 * inside a value, so that `grep`, `awk -F'[ =]'` or a split on spaces and the
 * first '=' read it. Keys always come in the same order; a key is left out
 * when it does not apply (perf/README.md lists them).
 */
#include <stdio.h>

#include "perf/perf.h"

perf_result perf_result_start(const char *op, const char *kernel, const char *name, int threads)
{
    perf_result r = {0};
    r.op = op;
    r.kernel = kernel;
    r.name = name;
    r.threads = threads;
    return r;
}

perf_result perf_result_of_candidate(const char *op, const char *name, const char *shape,
                                     int threads, const perf_machine *mc, size_t i,
                                     size_t n_sets, const char *const *peers, double ms,
                                     double flops, int streamed)
{
    perf_result r = perf_result_start(op, NULL, name, threads);
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    r.ms = ms;
    r.flops = flops;
    r.memory_bound = streamed;
    r.bandwidth = mc->bandwidth;
    if (i < n_sets) {
        r.isa = mc->sets[i]->name;
        r.peak = mc->peak[i];
    } else {
        r.peer = peers[i - n_sets];
        r.peak = mc->best_peak;
    }
    return r;
}

void perf_add_ratios(perf_result *res, size_t n_sets, size_t n_total)
{
    for (size_t s = 0; s < n_sets; s++)
        for (size_t p = n_sets; p < n_total && res[s].n_ratios < PERF_MAX_PEERS; p++) {
            perf_result *r = &res[s];
            r->ratio_name[r->n_ratios] = res[p].peer;
            r->ratio[r->n_ratios++] = res[s].ms / res[p].ms;
        }
}

/* Four significant digits, without an exponent for large values (a scalar
 * run of 22290 ms reads better than 2.229e+04). */
static void print_value(const char *key, double v)
{
    if (v >= 1e4)
        printf(" %s=%.0f", key, v);
    else
        printf(" %s=%.4g", key, v);
}

void perf_print_result(const perf_result *r)
{
    double seconds = r->ms * 1e-3;

    printf("op=%s", r->op);
    if (r->kernel)
        printf(" kernel=%s", r->kernel);
    if (r->name)
        printf(" name=%s", r->name);
    if (r->isa)
        printf(" isa=%s", r->isa);
    if (r->peer)
        printf(" peer=%s", r->peer);
    if (r->type)
        printf(" type=%s", r->type);
    printf(" shape=%s threads=%d", r->shape, r->threads);
    print_value("ms", r->ms);
    if (r->flops > 0) {
        double flops_per_s = r->flops / seconds;
        print_value("gflops", flops_per_s * 1e-9);
        if (r->peak > 0)
            printf(" pct_peak=%.1f", 100.0 * flops_per_s / r->peak);
        if (r->paired_peak > 0)
            printf(" pct_peak_paired=%.1f", 100.0 * flops_per_s / r->paired_peak);
    }
    if (r->bytes > 0) {
        double bytes_per_s = r->bytes / seconds;
        print_value("gbps", bytes_per_s * 1e-9);
        if (r->memory_bound && r->bandwidth > 0)
            printf(" pct_bw=%.1f", 100.0 * bytes_per_s / r->bandwidth);
    }
    for (size_t i = 0; i < r->n_ratios; i++)
        printf(" ratio_%s=%.3f", r->ratio_name[i], r->ratio[i]);
    if (r->fallback_scalar)
        printf(" fallback=scalar");
    putchar('\n');
    fflush(stdout);
}

void perf_time_rowwise(const perf_options *o, const perf_machine *mc, size_t s, const char *op,
                       const char *kernel, const char *name, const char *shape, double bytes,
                       int fallback, perf_run_fn run, void *ctx)
{
    perf_result r = perf_result_start(op, kernel, name, o->threads);
    r.isa = mc->sets[s]->name;
    snprintf(r.shape, sizeof r.shape, "%s", shape);
    r.ms = perf_median_ms(o, run, ctx);
    r.bytes = bytes;
    r.fallback_scalar = fallback;
    perf_print_result(&r);
}
