/*
 * The FMA peak, one loop (simd/SET/fma-peak.c) run on every thread asked
 * for, in two uses that share how a run is sized and run:
 *
 *   at start    perf_measure_peak: the best of many 2 ms runs, a ceiling
 *               (the library's tsr_measure_peak, threads/limits.c)
 *               found in the quietest moment of half a second (pct_peak);
 *   paired      perf_run_peak as one more candidate of a timed comparison
 *               (pct_peak_paired). A kernel's time is a median over the
 *               seconds its case runs, minutes after the start. On a
 *               machine shared with other guests the two see different
 *               loads: on one host (Zen 5, KVM) the same GEMM binary gave
 *               89 % of the start peak in one full run and 79 % in the next,
 *               with the start peaks 212-218 GFLOP/s in both. Timed in the
 *               round robin of the case (timing.c), the loop's median sees
 *               the same moments as the kernel's, with the same clock and
 *               the same statistic, so their ratio leaves the host's hour
 *               out. A run then lasts as long as one of the kernel's, so that
 *               the two take turns sample for sample (with 2 ms runs against
 *               a 20 ms kernel the loop sampled on alone after the kernel had
 *               its five, and once came out at 108 %).
 */
#include "perf/perf.h"
#include "threads/limits.h"

/* Seconds per run at least: short enough that the best of many finds one
 * no scheduler tick cut on a busy machine. */
#define MIN_RUN_SECONDS 0.002

void perf_peak_run_init(perf_peak_run *p, perf_fma_loop_fn loop, int threads, double seconds)
{
    if (seconds < MIN_RUN_SECONDS)
        seconds = MIN_RUN_SECONDS;
    p->loop = loop;
    p->threads = threads;
    double per_iteration;
    p->iterations = tsr_peak_iterations(loop, seconds, &per_iteration);
    /* Every thread runs the same number of iterations. */
    p->flops = per_iteration * (double)p->iterations * (double)threads;
}

static void run_part(void *ctx, int t, int threads)
{
    perf_peak_run *p = ctx;
    (void)t;
    (void)threads;
    p->loop(p->iterations);
}

void perf_run_peak(void *ctx)
{
    perf_peak_run *p = ctx;
    perf_parallel(p->threads, run_part, p);
}

double perf_measure_peak(perf_fma_loop_fn loop, int threads, int quick)
{
    return tsr_measure_peak(loop, threads, quick ? 10 : 25);
}
