/* How many threads to run: the first of --threads, TESSERA_NUM_THREADS,
 * OMP_NUM_THREADS; failing those the caller chooses (one per allowed core). */
#ifndef TSR_THREADS_THREADS_H
#define TSR_THREADS_THREADS_H

#include <stddef.h>

/* requested > 0 wins; 0 means "use the environment": *threads is 0 when it
 * sets nothing. A malformed value is an error naming the variable. */
int tsr_threads_resolve(int requested, int *threads, char *err, size_t err_len);

/* CPUs in this process's affinity mask (at least 1). */
int tsr_threads_allowed_cpus(void);

/* Runs fn(arg) on a thread of its own and waits for it (on the caller's
 * thread when no thread can be made: the same work, done there). For work
 * that opens an OpenMP team outside any runtime, such as a model load: the
 * team's idle threads then end with that thread. Left on the caller's
 * thread they would stay in its pool, and GNU OpenMP, which counts every
 * pooled thread against the CPUs, then makes every runtime's team give up
 * spinning at its barriers after a thousandth of the usual time and sleep
 * in the kernel instead (5 000 context switches more in a 2-second
 * translate on 2 cores). */
void tsr_threads_run_apart(void (*fn)(void *), void *arg);

#endif
