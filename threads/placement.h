/* Where each thread runs and where the model's weights live.
 *
 * A plan is computed once from a topology and a request, then only read.
 * Thread i binds itself to plan->threads[i].pu_os once, inside a first
 * parallel region of plan->n_threads threads (tsr_placement_bind_thread;
 * OpenMP keeps its threads, so the binding lasts), and reads weights from the
 * copy of its group: plan->groups[plan->threads[i].group].copy.
 *
 * The rules, so that a reader can predict a plan by hand:
 * - Workers and threads: `workers` teams (0 or 1: one) of `threads` threads
 *   each; 0 threads means one per allowed core (one per allowed PU with
 *   use_smt; with an explicit count use_smt changes nothing) divided among
 *   the workers, at least one each. Worker w owns threads w*K .. w*K + K - 1
 *   (K threads per worker) of the numbering below.
 * - Threads are shared among the NUMA nodes that have allowed cores in
 *   proportion to each node's allowed cores (to its allowed PUs when more
 *   threads than cores are asked), largest remainder first, ties to the lower
 *   node, in whole workers (K threads at a time) when every such node has room
 *   for a worker's threads (K cores, or K PUs), so that a worker stays on one
 *   node; else thread by thread. Each node's threads are numbered
 *   consecutively, nodes in order.
 * - Within a node, distinct cores come before SMT siblings: the first PU of
 *   each core, then the second, and so on. When a round is only partly used,
 *   its threads are spread evenly over it (position floor(j * m / n) of the m
 *   cores when n threads remain), so 4 threads on 8 cores take cores 0, 2, 4, 6
 *   (spread over the L3 slices of chiplet parts). More threads than PUs wrap
 *   around.
 *   Threads of a node are numbered in PU (logical) order.
 * - Weights: replicate = one read-only copy on each node that has threads;
 *   interleave = one copy interleaved over those nodes; local = one copy on the
 *   first of them; off = one plain allocation, no memory binding.
 *   auto = replicate when more than one node has threads and one copy fits in
 *   half of each such node's memory; otherwise interleave when more than one
 *   node has threads (also when a node's memory size is unknown); otherwise
 *   local when the machine has several nodes and off when it has one. Off, too,
 *   when a node with threads is outside the allowed nodeset (cpuset.mems).
 *   The choice and its reason are recorded in plan->reason.
 * The same topology and request always give the same plan. */
#ifndef TSR_THREADS_PLACEMENT_H
#define TSR_THREADS_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "threads/topology.h"

typedef enum tsr_numa_policy {
    TSR_NUMA_AUTO,
    TSR_NUMA_REPLICATE,
    TSR_NUMA_INTERLEAVE,
    TSR_NUMA_LOCAL,
    TSR_NUMA_OFF
} tsr_numa_policy;

/* "auto", "replicate", "interleave", "local", "off". */
const char *tsr_numa_policy_name(tsr_numa_policy policy);
/* The inverse; -1 with a message naming the accepted words. */
int tsr_numa_policy_parse(const char *name, tsr_numa_policy *policy, char *err, size_t err_len);

typedef struct tsr_placement_request {
    int threads;            /* per worker; 0: the allowed cores (PUs with use_smt) divided
                               among the workers */
    int workers;            /* teams of `threads` threads; 0 or 1: one */
    int use_smt;            /* with threads == 0: one thread per PU, not per core */
    tsr_numa_policy numa;
    uint64_t weight_bytes;  /* size of one weight copy, for auto's choice */
} tsr_placement_request;

typedef struct tsr_thread_place {
    int pu_os;   /* OS index of its PU, -1 when unbound */
    int pu;      /* index into topology pus, -1 when unbound */
    int core;    /* index into topology cores, -1 when unbound */
    int node;    /* index into topology nodes, -1 when unbound */
    int group;   /* index into plan groups */
} tsr_thread_place;

/* The threads on one NUMA node: threads first .. first + n_threads - 1. */
typedef struct tsr_thread_group {
    int node;        /* index into topology nodes, -1 when unbound */
    int first_thread;
    int n_threads;
    int copy;        /* the weight copy these threads read */
} tsr_thread_group;

typedef enum tsr_copy_kind {
    TSR_COPY_PLAIN,        /* ordinary aligned memory, no binding */
    TSR_COPY_ON_NODE,      /* bound to one node */
    TSR_COPY_INTERLEAVED   /* pages interleaved over the nodes of all groups */
} tsr_copy_kind;

typedef struct tsr_weight_copy {
    tsr_copy_kind kind;
    int node;              /* for TSR_COPY_ON_NODE: index into topology nodes; else -1 */
} tsr_weight_copy;

typedef struct tsr_placement {
    int n_threads;              /* n_workers * threads_per_worker */
    int n_workers;
    int threads_per_worker;     /* worker w has threads w * this .. (w + 1) * this - 1 */
    int bound;                  /* 1 when threads have PUs to bind to */
    tsr_thread_place *threads;  /* n_threads entries */
    int n_groups;
    tsr_thread_group *groups;   /* one per node with threads, in node order */
    tsr_numa_policy policy;     /* as applied: never TSR_NUMA_AUTO */
    int n_copies;
    tsr_weight_copy *copies;
    char reason[512];           /* why this weight policy */
    char notes[256];            /* SMT use, oversubscription, restrictions; may be empty */
} tsr_placement;

/* Computes a plan. topo NULL gives the unbound plan (reason "no topology").
 * 0 on success (release with tsr_placement_free); -1 with a message for a
 * negative or absurd thread count (more than 4096) or out of memory. */
int tsr_placement_plan(const tsr_topology *topo, const tsr_placement_request *req,
                       tsr_placement *plan, char *err, size_t err_len);

/* The plan when there is no topology to place on: req->threads threads (0: the
 * CPUs this process may use), unbound, one plain weight copy, policy off;
 * `why` (e.g. the topology loader's message) becomes the reason. */
int tsr_placement_plan_unbound(const tsr_placement_request *req, const char *why,
                               tsr_placement *plan, char *err, size_t err_len);

void tsr_placement_free(tsr_placement *plan);

/* Called by thread `thread` itself (e.g. omp_get_thread_num() inside the
 * parallel region) to bind to its PU. Returns 0 when bound, 1 when the plan is
 * unbound (nothing to do), -1 with a message when binding was refused or the
 * index is out of range; a refusal is never fatal, the thread just runs where
 * the OS puts it. Safe to call from all threads at once. */
int tsr_placement_bind_thread(const tsr_topology *topo, const tsr_placement *plan, int thread,
                              char *err, size_t err_len);

/* A few lines for `tessera info`: threads -> cores -> nodes, the weight copies
 * per node, the policy and why, and the notes. Always NUL-terminates. */
void tsr_placement_describe(const tsr_topology *topo, const tsr_placement *plan, char *buf,
                            size_t len);

#endif
