/* Process-wide runtime choices, for the library's own use. */
#ifndef TSR_CORE_RUNTIME_H
#define TSR_CORE_RUNTIME_H

#include <stdint.h>

#include "threads/placement.h"
#include "threads/topology.h"

/* Threads of every parallel region the library opens (tessera_threads():
 * --threads / tessera_set_threads, else the environment, else the cpuset).
 * Given explicitly to each region because OpenMP's own setting is per
 * calling thread. */
int tsr_team_threads(void);

/* The placement plan, made on first call from the topology (this machine's,
 * or TESSERA_TOPOLOGY's), the thread count, the NUMA policy (TESSERA_NUMA or
 * tessera_set_placement) and, for the automatic policy, the size of one
 * weight copy; the pool's threads bind themselves then. Later calls return
 * the same plan until the thread count or placement settings change. *topo
 * receives the topology (NULL when none could be read). NULL with a message
 * on error. */
const tsr_placement *tsr_runtime_placement(uint64_t weight_bytes, const tsr_topology **topo,
                                           char *err, size_t err_len);

/* The weight copy thread `thread` of a team reads (0 without a plan). */
int tsr_thread_copy(int thread);

#endif
