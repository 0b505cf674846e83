/*
 * The two ceilings every result is compared with, measured at start on this
 * machine rather than taken from a data sheet (a VM's clock and a shared
 * socket's bandwidth are whatever they are today):
 *
 *   peak       the FMA throughput of each kernel set's loop (its row's fma_peak),
 *              best of many 2 ms runs on every thread asked for (peak.c); with
 *              --type int8, also the int8 throughput of the set's int8
 *              kernel's instructions (its description's peak loop,
 *              simd/SET/i8-peak*.c), measured alike;
 *   bandwidth  a streaming read of a buffer several times the last-level
 *              cache, timed in chunks of 4 MiB, best chunk of several sweeps:
 *              what a decode step that streams the weights of the whole model
 *              can hope for. Read both as one sequential stream per thread
 *              and as 4 streams side by side; the better is the ceiling.
 * Both are measured by the library's code (threads/limits.c), which tessera
 * bench's pct_limit= also divides by.
 */
#include <stdio.h>
#include <stdlib.h>

#include "tessera-config.h"
#include "perf/perf.h"
#include "simd/gemm/gemm.h"
#include "simd/sets.h"
#include "threads/limits.h"

perf_fma_loop_fn perf_fma_loop_for(const char *isa)
{
    const tsr_kernel_set *set = tsr_kernel_set_find(isa);
    return set && set->init ? set->fma_peak : NULL;
}

perf_fma_loop_fn perf_int8_loop_for(const tsr_kernels *set)
{
    return set->gemm && set->gemm->i8 ? set->gemm->i8->peak : NULL;
}

size_t perf_stream_bytes(void) { return tsr_memory_stream_bytes(); }

double perf_measure_bandwidth(size_t bytes, int threads, int quick, double *one_stream)
{
    double rate = tsr_measure_bandwidth(bytes, threads, quick ? 3 : 6, one_stream);
    if (rate < 0) {
        fprintf(stderr, "tessera-perf: out of memory for the %zu-byte bandwidth buffer\n", bytes);
        exit(1);
    }
    return rate;
}
