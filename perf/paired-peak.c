/*
 * The FMA peak as one more candidate of a timed comparison (pct_peak_paired).
 *
 * The peak measured at start (machine.c) is the best of many 2 ms runs: a
 * ceiling, found in the quietest moment of half a second. A kernel's time is
 * a median over the seconds its case runs, minutes later. On a machine
 * shared with other guests the two see different loads: on one host (Zen 5,
 * KVM) the same GEMM binary gave 89 % of the start peak in one full run and
 * 79 % in the next, with the start peaks 212-218 GFLOP/s in both. Timed in
 * the round robin of the case (timing.c), the loop's median sees the same
 * moments as the kernel's, with the same clock and the same statistic, so
 * their ratio leaves the host's hour out. A run lasts as long as one of the
 * kernel's, so that the two take turns sample for sample (with 2 ms runs
 * against a 20 ms kernel the loop sampled on alone after the kernel had its
 * five, and once came out at 108 %). pct_peak stays as it was.
 */
#include "perf/perf.h"

/* Seconds per run at least, as the start peak's runs. */
#define MIN_RUN_SECONDS 0.002

static void run_part(void *ctx, int t, int threads)
{
    perf_paired_peak *p = ctx;
    (void)t;
    (void)threads;
    p->loop(p->iterations);
}

void perf_paired_peak_init(perf_paired_peak *p, perf_fma_loop_fn loop, int threads,
                           double seconds)
{
    if (seconds < MIN_RUN_SECONDS)
        seconds = MIN_RUN_SECONDS;
    p->loop = loop;
    p->threads = threads;
    p->iterations = 1u << 12;
    /* Sized on the calling thread alone, as machine.c sizes the peak's. */
    for (;;) {
        double t0 = perf_now();
        p->flops = loop(p->iterations);
        double dt = perf_now() - t0;
        if (dt >= MIN_RUN_SECONDS / 8) {
            p->iterations = (uint64_t)((double)p->iterations * seconds / dt) + 1;
            break;
        }
        p->iterations *= 2;
    }
    /* Every thread runs the same iterations: the flops of one run are the
     * loop's count for them, times the threads. */
    p->flops = loop(p->iterations) * (double)threads;
}

void perf_run_paired_peak(void *ctx)
{
    perf_paired_peak *p = ctx;
    perf_parallel(p->threads, run_part, p);
}
