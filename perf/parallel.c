/*
 * Threads for the measurements. The library will split its work with OpenMP
 * (threads/); until it does, perf splits the kernels' work itself, the way
 * the library will (output columns of a linear layer, row blocks of the FFN,
 * heads of attention), so that --threads measures what the kernels can do
 * side by side. The peers get the same count through their own knobs.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tessera-config.h"
#include "perf/perf.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif

int perf_set_threads(int threads)
{
#ifdef _OPENMP
    /* oneDNN (OpenMP build, as Debian's) follows this count too. */
    omp_set_num_threads(threads);
    omp_set_dynamic(0);
#else
    if (threads > 1)
        fprintf(stderr, "tessera-perf: built without OpenMP, --threads %d runs on one thread\n",
                threads);
    threads = 1;
#endif
#ifdef HAVE_OPENBLAS
    openblas_set_num_threads(threads);
#endif
    return threads;
}

void perf_print_thread_notes(int threads)
{
    /* libgomp reads the wait policy before main, so it can only be advised. */
    if (threads > 1 && !getenv("OMP_WAIT_POLICY"))
        printf("# note: OMP_WAIT_POLICY is unset: threads spin between parallel regions, and\n"
               "# on a machine shared with other work a region can then wait a whole scheduler\n"
               "# tick (~10 ms) for a preempted thread; OMP_WAIT_POLICY=passive avoids that\n");
}

void perf_parallel(int threads, void (*fn)(void *ctx, int t, int threads), void *ctx)
{
#ifdef _OPENMP
    if (threads > 1) {
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num();
            int n = omp_get_num_threads();
            /* A team smaller than asked for: the missing parts run here. */
            for (int part = t; part < threads; part += n)
                fn(ctx, part, threads);
        }
        return;
    }
#endif
    for (int t = 0; t < threads; t++)
        fn(ctx, t, threads);
}

void perf_split(size_t count, size_t unit, int t, int threads, size_t *begin, size_t *end)
{
    if (unit == 0)
        unit = 1;
    size_t units = (count + unit - 1) / unit;
    size_t per = units / (size_t)threads, extra = units % (size_t)threads;
    size_t ut = (size_t)t;
    size_t b = ut * per + (ut < extra ? ut : extra);
    size_t e = b + per + (ut < extra ? 1 : 0);
    *begin = b * unit < count ? b * unit : count;
    *end = e * unit < count ? e * unit : count;
}
