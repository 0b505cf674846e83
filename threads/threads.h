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

#endif
