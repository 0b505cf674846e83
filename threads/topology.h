/* The machine's topology as hwloc sees it (a one-line summary for now). */
#ifndef TSR_THREADS_TOPOLOGY_H
#define TSR_THREADS_TOPOLOGY_H

#include <stddef.h>

/* e.g. "1 package, 1 NUMA node, 2 cores, 2 PUs (hwloc 2.9.0)", or a note that
 * this build has no hwloc. */
void tsr_topology_describe(char *buf, size_t len);

#endif
