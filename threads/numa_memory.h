/* Memory placed on NUMA nodes: where a weight copy of a placement plan lives.
 *
 * Binding is only possible on this machine's topology (tsr_topology_load_system).
 * Synthetic and XML topologies describe other machines; asking them for bound
 * memory gives plain memory with a note in `where`, as does a build without
 * hwloc or an OS that refuses the binding (e.g. a node outside cpuset.mems).
 * Pages of bound memory land on their node when first touched, whichever
 * thread touches them, so one thread may fill every copy. */
#ifndef TSR_THREADS_NUMA_MEMORY_H
#define TSR_THREADS_NUMA_MEMORY_H

#include <stddef.h>

#include "threads/placement.h"
#include "threads/topology.h"

typedef struct tsr_numa_block {
    void *data;        /* at least 64-byte aligned (page aligned when bound); uninitialised */
    size_t bytes;
    void *hwloc;       /* the hwloc topology that allocated it, NULL for plain memory */
    char where[192];   /* "bound to node 1", "interleaved over nodes 0, 1", "plain",
                        * or "plain (binding to node 1 refused: ...)" */
} tsr_numa_block;

/* Each returns 0 with a usable block (bound as asked, or plain with the reason
 * in `where`), or -1 with a message when no memory could be had at all or the
 * arguments name no node of the topology. `node` and `nodes` are indexes into
 * topo->nodes. The topology must outlive the block. Thread-safe. */
int tsr_numa_alloc_on_node(const tsr_topology *topo, int node, size_t bytes,
                           tsr_numa_block *out, char *err, size_t err_len);
int tsr_numa_alloc_interleaved(const tsr_topology *topo, const int *nodes, int n_nodes,
                               size_t bytes, tsr_numa_block *out, char *err, size_t err_len);
int tsr_numa_alloc_plain(size_t bytes, tsr_numa_block *out, char *err, size_t err_len);

/* Memory for weight copy `copy` of a plan, as its kind says (on its node,
 * interleaved over the nodes of all the plan's groups, or plain). topo may be
 * NULL for an unbound plan. */
int tsr_numa_alloc_copy(const tsr_topology *topo, const tsr_placement *plan, int copy,
                        size_t bytes, tsr_numa_block *out, char *err, size_t err_len);

/* Releases a block from any of the above and empties it; an empty block is fine. */
void tsr_numa_free(tsr_numa_block *block);

#endif
