/* The machine's limits, measured on a team of threads: the peak of an
 * arithmetic loop (a kernel set's FMA loop, an int8 kernel's dot-product
 * loop) and the read bandwidth of memory or of the cache. tessera-perf's
 * pct_peak= and pct_bw= and tessera bench's pct_limit= divide by these, so
 * both measure them one way. Each opens its own OpenMP team of `threads`
 * (on a runtime's leader, its bound team). */
#ifndef TSR_THREADS_LIMITS_H
#define TSR_THREADS_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* A loop that runs `iterations` rounds over independent accumulators and
 * returns the operations it did (simd/SET/fma-peak.c and the int8 loops). */
typedef double (*tsr_peak_loop_fn)(uint64_t iterations);

/* How many iterations of loop make a run of about `seconds` on one thread
 * (sized on the calling thread alone, so that the start of a parallel
 * region, slow on a busy machine, cannot shrink a run), and the operations
 * one iteration does (*ops_per_iteration). */
uint64_t tsr_peak_iterations(tsr_peak_loop_fn loop, double seconds, double *ops_per_iteration);

/* The best rate (operations per second, all threads together) of `runs`
 * runs of about 2 ms, every thread running the loop: a ceiling is a best
 * case, and on a busy machine short runs are the ones that escape
 * preemption. */
double tsr_measure_peak(tsr_peak_loop_fn loop, int threads, int runs);

/* How much of a team's run its parts ran side by side: the time all of
 * them ran at once (from the latest start to the earliest end) over the
 * longest part's time, 0 when some part started after another ended. The
 * peaks and bandwidths keep only runs where this is at least 3/4. */
double tsr_parts_overlap(const double *start, const double *end, int parts);

/* The largest cache of CPU 0 (sysfs, else sysconf), 0 when unknown. */
size_t tsr_last_level_cache_bytes(void);

/* A buffer that must come from memory: four times the last-level cache,
 * at least 64 MiB, at most 512 MiB. */
size_t tsr_memory_stream_bytes(void);

/* The read bandwidth (bytes per second, all threads) of a buffer of `bytes`
 * swept `rounds` times, summing 64-bit words, timed in chunks of 4 MiB
 * (or the whole buffer when smaller), the best chunk kept; each thread
 * reads one sequential stream, then 4 side by side, and the better is
 * returned (*one_stream: the first, when not NULL). A buffer four times the
 * last-level cache measures memory; one a quarter of it, swept again and
 * again, the cache. -1 when the buffer cannot be allocated. */
double tsr_measure_bandwidth(size_t bytes, int threads, int rounds, double *one_stream);

/* One buffer for several measurements (the bench's bounds: a size, its half
 * and its quarter): allocated and written once, its prefixes swept as
 * tsr_measure_bandwidth sweeps a buffer of their size, without a fresh
 * buffer's page faults and clearing each time (a base bench run on an
 * Intel guest: 0.79 s against 0.86 s with a buffer per size). */
typedef struct tsr_bandwidth_buffer {
    uint64_t *words;
    size_t bytes;
} tsr_bandwidth_buffer;

/* 0, or -1 when the buffer cannot be allocated. */
int tsr_bandwidth_buffer_init(tsr_bandwidth_buffer *b, size_t bytes, int threads);
/* The rate of the first `bytes` (at most b->bytes), as tsr_measure_bandwidth. */
double tsr_bandwidth_of_prefix(const tsr_bandwidth_buffer *b, size_t bytes, int threads,
                               int rounds, double *one_stream);
void tsr_bandwidth_buffer_free(tsr_bandwidth_buffer *b);

#endif
