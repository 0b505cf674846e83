/* The machine's layout as hwloc sees it, read once into plain arrays so that
 * placement decisions are ordinary C over numbers (and testable on topologies
 * that are not this machine's: synthetic descriptions and XML files).
 *
 * Indexes: `core` and `node` fields below are positions in this struct's
 * arrays (hwloc logical order); `os_index` is what the OS calls the object
 * (the PU number of taskset/sched_setaffinity, the node number of numactl).
 *
 * Without hwloc (HAVE_HWLOC undefined) every loader fails with a message that
 * says so, and callers fall back to an unbound plan (placement.h). */
#ifndef TSR_THREADS_TOPOLOGY_H
#define TSR_THREADS_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

typedef struct tsr_topo_pu {
    int os_index;
    int core;      /* index into tsr_topology.cores */
    int allowed;   /* in the allowed cpuset (cgroup, process binding, restrict) */
} tsr_topo_pu;

typedef struct tsr_topo_core {
    int first_pu;  /* its PUs (SMT siblings) are pus[first_pu .. first_pu + n_pus) */
    int n_pus;
    int n_allowed_pus;
    int node;      /* the NUMA node closest to it (index into nodes), or -1 */
    int package;   /* index of its package, or -1 when the topology has none */
} tsr_topo_core;

typedef struct tsr_topo_node {
    int os_index;
    uint64_t memory_bytes;  /* local memory; 0 when unknown */
    int memory_allowed;     /* in the allowed nodeset (cpuset.mems) */
} tsr_topo_node;

typedef struct tsr_topo_cache {
    size_t bytes;           /* one instance; 0 when the level is absent or unknown */
    int cores_sharing;      /* cores under one instance */
} tsr_topo_cache;

typedef struct tsr_topology {
    int n_packages;
    int n_nodes;
    tsr_topo_node *nodes;   /* every NUMA node, including CPU-less ones */
    int n_cores;
    tsr_topo_core *cores;   /* every core, allowed or not (a PU without a
                             * Core object above it counts as its own core) */
    int n_pus;
    tsr_topo_pu *pus;       /* every PU, in logical order: siblings adjacent */
    /* Caches above the first allowed core (data/unified caches only). */
    tsr_topo_cache l1d, l2, l3;
    int caches_from_cpuid;  /* levels tsr_topology_fill_caches filled */
    /* 1 when binding and NUMA allocation act on this machine; 0 for
     * synthetic and XML topologies, whose binding calls are refused. */
    int this_system;
    char source[160];       /* "this machine", "synthetic: ...", "xml: path" */
    void *hwloc;            /* the hwloc_topology_t, owned; NULL without hwloc */
} tsr_topology;

/* Loaders. On success *out is a new topology (release with
 * tsr_topology_free) and 0 is returned; on failure -1 and a one-line
 * message in err. Not thread-safe with respect to the same *out; a loaded
 * topology may be read from any number of threads.
 *
 * The system loader marks as allowed the PUs this process may run on (its
 * cgroup cpuset and the calling thread's affinity mask): load from the main
 * thread before binding it, since binding narrows that mask. It never rebinds
 * the caller during discovery. */
int tsr_topology_load_system(tsr_topology **out, char *err, size_t err_len);
/* hwloc synthetic description, e.g. "pack:2 numa:2 core:8 pu:2" or with
 * attributes "pack:2 numa:1(memory=64GiB) l3:1(size=32MiB) core:8 pu:2". */
int tsr_topology_load_synthetic(const char *description, tsr_topology **out,
                                char *err, size_t err_len);
/* An hwloc v2 XML export. Its allowed_cpuset / allowed_nodeset attributes on
 * the Machine object are honoured (disallowed PUs stay listed, not allowed). */
int tsr_topology_load_xml(const char *path, tsr_topology **out, char *err, size_t err_len);

/* Narrows the allowed PUs to those whose OS index is in `pu_list`, a list in
 * taskset -c form ("0-3,8,10-11"); PUs already disallowed stay so. For tests
 * and for explicit user restriction. -1 with a message on a malformed list or
 * when no allowed PU would remain (the topology is then unchanged). */
int tsr_topology_restrict(tsr_topology *topo, const char *pu_list, char *err, size_t err_len);

/* Fills the cache levels the topology leaves unknown (0 bytes) from
 * known[0..2] (L1d, L2, L3 bytes of one instance; 0: unknown too); a level
 * the topology knows is kept. Returns how many it filled, which the summary
 * then names. The system loader does it with what the C library reads from
 * CPUID (sysconf), for machines whose hwloc finds no cache sizes (an AMD
 * Zen 5 guest showed "L1d -, L2 -, L3 -"). */
int tsr_topology_fill_caches(tsr_topology *topo, const size_t known[3]);

void tsr_topology_free(tsr_topology *topo);

/* Counts over the arrays above. */
int tsr_topology_allowed_pus(const tsr_topology *topo);
int tsr_topology_allowed_cores(const tsr_topology *topo);

/* Binds the calling thread to the PU with OS index pu_os. 0 on success; -1
 * with a message (the OS refused, the topology is not this machine's, or
 * there is no hwloc) - never fatal. Safe to call from several threads at once. */
int tsr_topology_bind_thread(const tsr_topology *topo, int pu_os, char *err, size_t err_len);

/* One line: "2 packages, 2 NUMA nodes (64.0 + 64.0 GiB), 16 cores, 32 PUs
 * (12 cores allowed); L1d 48 KiB, L2 1 MiB, L3 32 MiB", followed by
 * " (2 levels from CPUID)" when tsr_topology_fill_caches filled some. */
void tsr_topology_summary(const tsr_topology *topo, char *buf, size_t len);

/* The summary of this machine's topology followed by the hwloc version, or a
 * note that this build has no hwloc or that hwloc could not read it. */
void tsr_topology_describe(char *buf, size_t len);

#endif
