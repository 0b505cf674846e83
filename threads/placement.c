/* The placement plan: plain arithmetic over the arrays of tsr_topology (no
 * hwloc here, so the same rules hold in builds without it). The rules are
 * listed in placement.h. */
#include "threads/placement.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "base/text.h"
#include "threads/threads.h"

#define MAX_THREADS 4096

static const char *const policy_names[] = {"auto", "replicate", "interleave", "local", "off"};

const char *tsr_numa_policy_name(tsr_numa_policy policy)
{
    return (unsigned)policy < sizeof policy_names / sizeof *policy_names ? policy_names[policy]
                                                                          : "?";
}

int tsr_numa_policy_parse(const char *name, tsr_numa_policy *policy, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof policy_names / sizeof *policy_names; i++)
        if (strcmp(name, policy_names[i]) == 0) {
            *policy = (tsr_numa_policy)i;
            return 0;
        }
    return tsr_fail(err, err_len,
                    "NUMA policy '%s': expected auto, replicate, interleave, local or off", name);
}

void tsr_placement_free(tsr_placement *plan)
{
    tsr_free(plan->threads);
    tsr_free(plan->groups);
    tsr_free(plan->copies);
    memset(plan, 0, sizeof *plan);
}

/* Allocates the three arrays; -1 (plan freed) when memory runs out. */
static int plan_alloc(tsr_placement *plan, int n_threads, int n_groups, int n_copies)
{
    plan->n_threads = n_threads;
    plan->n_groups = n_groups;
    plan->n_copies = n_copies;
    if (plan->n_workers == 0) {
        plan->n_workers = 1;
        plan->threads_per_worker = n_threads;
    }
    plan->threads = tsr_calloc((size_t)n_threads, sizeof *plan->threads);
    plan->groups = tsr_calloc((size_t)n_groups, sizeof *plan->groups);
    plan->copies = tsr_calloc((size_t)n_copies, sizeof *plan->copies);
    if (plan->threads && plan->groups && plan->copies)
        return 0;
    tsr_placement_free(plan);
    return -1;
}

/* Checks the request's counts; *workers gets the worker count (at least 1). */
static int check_request(const tsr_placement_request *req, int *workers, char *err,
                         size_t err_len)
{
    if (req->threads < 0 || req->threads > MAX_THREADS)
        return tsr_fail(err, err_len, "%d threads: expected 0 (automatic) to %d", req->threads,
                        MAX_THREADS);
    if (req->workers < 0 || req->workers > MAX_THREADS)
        return tsr_fail(err, err_len, "%d workers: expected 1 to %d", req->workers, MAX_THREADS);
    *workers = req->workers > 0 ? req->workers : 1;
    if (req->threads > 0 && (long)*workers * req->threads > MAX_THREADS)
        return tsr_fail(err, err_len, "%d workers x %d threads: more than %d threads in all",
                        *workers, req->threads, MAX_THREADS);
    return 0;
}

/* Threads per worker: the request's, or `available` (cores or PUs) shared
 * among the workers, at least one each. */
static int threads_per_worker(const tsr_placement_request *req, int workers, int available)
{
    if (req->threads > 0)
        return req->threads;
    return available / workers > 0 ? available / workers : 1;
}

int tsr_placement_plan_unbound(const tsr_placement_request *req, const char *why,
                               tsr_placement *plan, char *err, size_t err_len)
{
    memset(plan, 0, sizeof *plan);
    int workers;
    TSR_TRY(check_request(req, &workers, err, err_len));
    int per = threads_per_worker(req, workers, tsr_threads_allowed_cpus());
    int n = workers * per;
    plan->n_workers = workers;
    plan->threads_per_worker = per;
    if (plan_alloc(plan, n, 1, 1) != 0)
        return tsr_fail_oom(err, err_len, "placement: out of memory");
    for (int i = 0; i < n; i++)
        plan->threads[i] = (tsr_thread_place){.pu_os = -1, .pu = -1, .core = -1, .node = -1};
    plan->groups[0] = (tsr_thread_group){.node = -1, .first_thread = 0, .n_threads = n};
    plan->copies[0] = (tsr_weight_copy){.kind = TSR_COPY_PLAIN, .node = -1};
    plan->policy = TSR_NUMA_OFF;
    snprintf(plan->reason, sizeof plan->reason, "unbound: %s", why);
    return 0;
}

/* Shares `total` among the entries of `weight` in proportion to it: floors
 * first, then one more each to the largest remainders, ties to the lower
 * index (largest remainder method). An entry is topped up at most once. */
static void split_proportionally(int total, const int *weight, int n, int *share)
{
    long long sum = 0;
    int given = 0;
    for (int k = 0; k < n; k++)
        sum += weight[k];
    for (int k = 0; k < n; k++) {
        share[k] = (int)((long long)total * weight[k] / sum);
        given += share[k];
    }
    for (; given < total; given++) {
        int best = -1;
        long long best_rem = -1;
        for (int k = 0; k < n; k++) {
            long long floor_share = (long long)total * weight[k] / sum;
            long long rem = (long long)total * weight[k] % sum;
            if (weight[k] > 0 && share[k] == floor_share && rem > best_rem) {
                best = k;
                best_rem = rem;
            }
        }
        share[best]++;
    }
}

/* The r-th allowed PU of a core (index into topo->pus). */
static int allowed_pu_of(const tsr_topology *topo, const tsr_topo_core *core, int r)
{
    for (int p = core->first_pu; p < core->first_pu + core->n_pus; p++)
        if (topo->pus[p].allowed && r-- == 0)
            return p;
    return -1;
}

typedef struct slot {
    int pu;     /* index into topo->pus */
    int cycle;  /* > 0 only when threads outnumber the node's PUs */
} slot;

static int slot_order(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->pu != y->pu)
        return x->pu < y->pu ? -1 : 1;
    return (x->cycle > y->cycle) - (x->cycle < y->cycle);
}

/* Chooses the PUs of node `node`'s n threads into out[0..n): rounds of one PU
 * per core (first PUs, then second PUs, ...), a partly used round spread
 * evenly, wrapping round when PUs run out; then sorted into PU order.
 * `scratch` holds at least n_cores ints. */
static void place_on_node(const tsr_topology *topo, int node, int n, slot *out, int *scratch)
{
    int max_pus = 0, placed = 0;
    for (int c = 0; c < topo->n_cores; c++)
        if (topo->cores[c].node == node && topo->cores[c].n_allowed_pus > max_pus)
            max_pus = topo->cores[c].n_allowed_pus;
    for (int cycle = 0; placed < n; cycle++) {
        for (int r = 0; r < max_pus && placed < n; r++) {
            int m = 0;
            for (int c = 0; c < topo->n_cores; c++)
                if (topo->cores[c].node == node && topo->cores[c].n_allowed_pus > r)
                    scratch[m++] = c;
            int take = n - placed < m ? n - placed : m;
            for (int j = 0; j < take; j++) {
                const tsr_topo_core *core = &topo->cores[scratch[(long long)j * m / take]];
                out[placed++] = (slot){allowed_pu_of(topo, core, r), cycle};
            }
        }
    }
    qsort(out, (size_t)n, sizeof *out, slot_order);
}

/* Appends "a, b, c" (node OS indexes of all groups) to buf. */
static void group_node_list(const tsr_topology *topo, const tsr_placement *plan, char *buf,
                            size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int g = 0; g < plan->n_groups && used < len; g++) {
        int w = snprintf(buf + used, len - used, "%s%d", g ? ", " : "",
                         topo->nodes[plan->groups[g].node].os_index);
        used += w > 0 ? (size_t)w : 0;
    }
}

/* "512.0 MiB", "64.0 GiB": sizes in reasons and descriptions. */
static void size_text(uint64_t bytes, char *buf, size_t len)
{
    const double mib = 1024.0 * 1024.0, gib = mib * 1024.0;
    if ((double)bytes >= gib)
        snprintf(buf, len, "%.1f GiB", (double)bytes / gib);
    else
        snprintf(buf, len, "%.1f MiB", (double)bytes / mib);
}

/* auto: see placement.h. Sets plan->reason. */
static tsr_numa_policy choose_auto(const tsr_topology *topo, const tsr_placement *plan,
                                   uint64_t weight_bytes, char *reason, size_t len)
{
    char nodes[160], size[32], mem[32];
    group_node_list(topo, plan, nodes, sizeof nodes);
    size_text(weight_bytes, size, sizeof size);
    for (int g = 0; g < plan->n_groups; g++) {
        const tsr_topo_node *node = &topo->nodes[plan->groups[g].node];
        if (!node->memory_allowed) {
            snprintf(reason, len, "auto chose off: node %d's memory is not allowed to this process",
                     node->os_index);
            return TSR_NUMA_OFF;
        }
    }
    if (plan->n_groups == 1) {
        if (topo->n_nodes > 1) {
            snprintf(reason, len, "auto chose local: all threads are on node %s", nodes);
            return TSR_NUMA_LOCAL;
        }
        snprintf(reason, len, "auto chose off: one NUMA node, nothing to place");
        return TSR_NUMA_OFF;
    }
    int smallest = -1;
    for (int g = 0; g < plan->n_groups; g++) {
        const tsr_topo_node *node = &topo->nodes[plan->groups[g].node];
        if (node->memory_bytes == 0) {
            snprintf(reason, len,
                     "auto chose interleave over nodes %s: node %d's memory size is unknown",
                     nodes, node->os_index);
            return TSR_NUMA_INTERLEAVE;
        }
        if (smallest < 0 || node->memory_bytes < topo->nodes[smallest].memory_bytes)
            smallest = plan->groups[g].node;
    }
    size_text(topo->nodes[smallest].memory_bytes, mem, sizeof mem);
    if (weight_bytes <= topo->nodes[smallest].memory_bytes / 2) {
        snprintf(reason, len,
                 "auto chose replicate on nodes %s: one copy (%s) fits in half of the smallest "
                 "node's memory (node %d, %s)",
                 nodes, size, topo->nodes[smallest].os_index, mem);
        return TSR_NUMA_REPLICATE;
    }
    snprintf(reason, len,
             "auto chose interleave over nodes %s: one copy (%s) is more than half of node %d's "
             "memory (%s)",
             nodes, size, topo->nodes[smallest].os_index, mem);
    return TSR_NUMA_INTERLEAVE;
}

/* Fills plan->copies and each group's copy for plan->policy. */
static int make_copies(tsr_placement *plan, char *err, size_t err_len)
{
    int n = plan->policy == TSR_NUMA_REPLICATE ? plan->n_groups : 1;
    plan->n_copies = n;
    plan->copies = tsr_calloc((size_t)n, sizeof *plan->copies);
    if (!plan->copies)
        return tsr_fail_oom(err, err_len, "placement: out of memory");
    for (int g = 0; g < plan->n_groups; g++) {
        plan->groups[g].copy = plan->policy == TSR_NUMA_REPLICATE ? g : 0;
        if (plan->policy == TSR_NUMA_REPLICATE)
            plan->copies[g] = (tsr_weight_copy){TSR_COPY_ON_NODE, plan->groups[g].node};
    }
    if (plan->policy == TSR_NUMA_INTERLEAVE)
        plan->copies[0] = (tsr_weight_copy){TSR_COPY_INTERLEAVED, -1};
    else if (plan->policy == TSR_NUMA_LOCAL)
        plan->copies[0] = (tsr_weight_copy){TSR_COPY_ON_NODE, plan->groups[0].node};
    else if (plan->policy == TSR_NUMA_OFF)
        plan->copies[0] = (tsr_weight_copy){TSR_COPY_PLAIN, -1};
    return 0;
}

static void choose_policy(const tsr_topology *topo, tsr_placement *plan,
                          const tsr_placement_request *req)
{
    char nodes[160];
    group_node_list(topo, plan, nodes, sizeof nodes);
    plan->policy = req->numa;
    switch (req->numa) {
    case TSR_NUMA_AUTO:
        plan->policy = choose_auto(topo, plan, req->weight_bytes, plan->reason, sizeof plan->reason);
        break;
    case TSR_NUMA_REPLICATE:
        snprintf(plan->reason, sizeof plan->reason, "replicate (asked): one copy on each of nodes %s",
                 nodes);
        break;
    case TSR_NUMA_INTERLEAVE:
        snprintf(plan->reason, sizeof plan->reason, "interleave (asked): one copy over nodes %s",
                 nodes);
        break;
    case TSR_NUMA_LOCAL:
        snprintf(plan->reason, sizeof plan->reason, "local (asked): one copy on node %d",
                 topo->nodes[plan->groups[0].node].os_index);
        break;
    case TSR_NUMA_OFF:
        snprintf(plan->reason, sizeof plan->reason, "off (asked): plain memory, no NUMA binding");
        break;
    }
}

static void add_note(tsr_placement *plan, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_note(tsr_placement *plan, const char *fmt, ...)
{
    size_t used = strlen(plan->notes);
    if (used && used + 2 < sizeof plan->notes) {
        memcpy(plan->notes + used, "; ", 3);
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(plan->notes + used, sizeof plan->notes - used, fmt, ap);
    va_end(ap);
}

static void write_notes(const tsr_topology *topo, tsr_placement *plan, int use_smt,
                        int requested, int cores, int pus)
{
    if (cores < topo->n_cores)
        add_note(plan, "restricted: %d of %d cores allowed", cores, topo->n_cores);
    if (plan->n_threads > cores && plan->n_threads <= pus)
        add_note(plan, "SMT siblings used: %s", use_smt && requested == 0
                     ? "use_smt asked for one thread per PU" : "more threads than cores");
    if (plan->n_threads > pus)
        add_note(plan, "oversubscribed: %d threads on %d PUs", plan->n_threads, pus);
}

/* `per` (a worker's threads) when every node with allowed cores has room for
 * them (per cores, or per PUs when placing by PUs), so that whole workers go
 * to nodes; else 1. */
static int worker_unit(const tsr_topology *topo, int per, int by_pus)
{
    int *room = tsr_calloc((size_t)topo->n_nodes, sizeof *room);
    if (!room)
        return 1;
    for (int c = 0; c < topo->n_cores; c++)
        if (topo->cores[c].node >= 0 && topo->cores[c].n_allowed_pus > 0)
            room[topo->cores[c].node] += by_pus ? topo->cores[c].n_allowed_pus : 1;
    int unit = per;
    for (int k = 0; k < topo->n_nodes; k++)
        if (room[k] > 0 && room[k] < per)
            unit = 1;
    tsr_free(room);
    return unit;
}

/* Threads per node, in whole units of `unit` threads (a worker's), then each
 * node's PUs; groups in node order. */
static int place_threads(const tsr_topology *topo, tsr_placement *plan, int by_pus, int unit)
{
    int *weight = tsr_calloc((size_t)topo->n_nodes, sizeof *weight);
    int *share = tsr_calloc((size_t)topo->n_nodes, sizeof *share);
    int *scratch = tsr_calloc((size_t)topo->n_cores, sizeof *scratch);
    slot *slots = tsr_calloc((size_t)plan->n_threads, sizeof *slots);
    plan->groups = tsr_calloc((size_t)topo->n_nodes, sizeof *plan->groups);
    int ok = weight && share && scratch && slots && plan->groups;
    if (ok) {
        for (int c = 0; c < topo->n_cores; c++)
            if (topo->cores[c].node >= 0 && topo->cores[c].n_allowed_pus > 0)
                weight[topo->cores[c].node] += by_pus ? topo->cores[c].n_allowed_pus : 1;
        split_proportionally(plan->n_threads / unit, weight, topo->n_nodes, share);
        for (int k = 0; k < topo->n_nodes; k++)
            share[k] *= unit;
        int next = 0;
        for (int k = 0; k < topo->n_nodes; k++) {
            if (share[k] == 0)
                continue;
            int g = plan->n_groups++;
            plan->groups[g] = (tsr_thread_group){.node = k, .first_thread = next,
                                                 .n_threads = share[k]};
            place_on_node(topo, k, share[k], slots + next, scratch);
            for (int i = next; i < next + share[k]; i++) {
                int pu = slots[i].pu;
                plan->threads[i] = (tsr_thread_place){.pu_os = topo->pus[pu].os_index, .pu = pu,
                                                      .core = topo->pus[pu].core, .node = k,
                                                      .group = g};
            }
            next += share[k];
        }
    }
    tsr_free(weight);
    tsr_free(share);
    tsr_free(scratch);
    tsr_free(slots);
    return ok ? 0 : -1;
}

int tsr_placement_plan(const tsr_topology *topo, const tsr_placement_request *req,
                       tsr_placement *plan, char *err, size_t err_len)
{
    if (!topo)
        return tsr_placement_plan_unbound(req, "no topology", plan, err, err_len);
    memset(plan, 0, sizeof *plan);
    int workers;
    TSR_TRY(check_request(req, &workers, err, err_len));
    int cores = 0, pus = 0;
    for (int c = 0; c < topo->n_cores; c++)
        if (topo->cores[c].node >= 0 && topo->cores[c].n_allowed_pus > 0) {
            cores++;
            pus += topo->cores[c].n_allowed_pus;
        }
    if (cores == 0)
        return tsr_fail(err, err_len, "placement: %s has no allowed core", topo->source);
    int per = threads_per_worker(req, workers, req->use_smt ? pus : cores);
    plan->n_workers = workers;
    plan->threads_per_worker = per;
    plan->n_threads = workers * per;
    plan->bound = 1;
    int by_pus = plan->n_threads > cores;
    plan->threads = tsr_calloc((size_t)plan->n_threads, sizeof *plan->threads);
    if (!plan->threads ||
        place_threads(topo, plan, by_pus, worker_unit(topo, per, by_pus)) != 0) {
        tsr_placement_free(plan);
        return tsr_fail_oom(err, err_len, "placement: out of memory");
    }
    choose_policy(topo, plan, req);
    int rc = make_copies(plan, err, err_len);
    if (rc != 0) {
        tsr_placement_free(plan);
        return rc;
    }
    write_notes(topo, plan, req->use_smt, req->threads, cores, pus);
    return 0;
}

int tsr_placement_bind_thread(const tsr_topology *topo, const tsr_placement *plan, int thread,
                              char *err, size_t err_len)
{
    if (thread < 0 || thread >= plan->n_threads)
        return tsr_fail(err, err_len, "thread %d: the plan has threads 0 to %d", thread,
                        plan->n_threads - 1);
    if (!plan->bound || !topo)
        return 1;
    return tsr_topology_bind_thread(topo, plan->threads[thread].pu_os, err, err_len);
}

enum listed { LIST_CORES, LIST_PUS };

static int listed_value(const tsr_thread_place *p, enum listed what)
{
    return what == LIST_CORES ? p->core : p->pu_os;
}

/* "0-7,16,18-19" for the cores or PUs of n threads: runs of consecutive values
 * joined, repeats of the previous value skipped (SMT siblings share a core). */
static void text_ranges(tsr_text *t, const tsr_thread_place *threads, int n, enum listed what)
{
    for (int i = 0; i < n;) {
        int start = listed_value(&threads[i], what), end = start, j = i + 1;
        for (; j < n; j++) {
            int v = listed_value(&threads[j], what);
            if (v != end && v != end + 1)
                break;
            end = v;
        }
        if (end == start)
            tsr_text_add(t, "%s%d", i ? "," : "", start);
        else
            tsr_text_add(t, "%s%d-%d", i ? "," : "", start, end);
        i = j;
    }
}

void tsr_placement_describe(const tsr_topology *topo, const tsr_placement *plan, char *buf,
                            size_t len)
{
    tsr_text t = {buf, len, 0};
    if (len == 0)
        return;
    buf[0] = '\0';
    if (!plan->bound || !topo) {
        tsr_text_add(&t, "placement: %d thread%s, unbound\n", plan->n_threads,
                 plan->n_threads == 1 ? "" : "s");
    } else {
        tsr_text_add(&t, "placement: %d thread%s bound to PUs of %s\n", plan->n_threads,
                 plan->n_threads == 1 ? "" : "s", topo->source);
        for (int g = 0; g < plan->n_groups; g++) {
            const tsr_thread_group *grp = &plan->groups[g];
            const tsr_thread_place *first = &plan->threads[grp->first_thread];
            char mem[32];
            size_text(topo->nodes[grp->node].memory_bytes, mem, sizeof mem);
            tsr_text_add(&t, "  node %d (%s): thread%s ", topo->nodes[grp->node].os_index, mem,
                     grp->n_threads == 1 ? "" : "s");
            if (grp->n_threads == 1)
                tsr_text_add(&t, "%d", grp->first_thread);
            else
                tsr_text_add(&t, "%d-%d", grp->first_thread, grp->first_thread + grp->n_threads - 1);
            tsr_text_add(&t, " -> cores ");
            text_ranges(&t, first, grp->n_threads, LIST_CORES);
            tsr_text_add(&t, " -> PUs ");
            text_ranges(&t, first, grp->n_threads, LIST_PUS);
            tsr_text_add(&t, "; weight copy %d\n", grp->copy);
        }
    }
    if (plan->n_workers > 1) {
        const int per = plan->threads_per_worker;
        tsr_text_add(&t, "workers: %d x %d thread%s:", plan->n_workers, per, per == 1 ? "" : "s");
        for (int w = 0; w < plan->n_workers && w < 16; w++)
            if (per == 1)
                tsr_text_add(&t, "%s worker %d -> thread %d", w ? ";" : "", w, w);
            else
                tsr_text_add(&t, "%s worker %d -> threads %d-%d", w ? ";" : "", w, w * per,
                         w * per + per - 1);
        tsr_text_add(&t, "%s\n", plan->n_workers > 16 ? "; ..." : "");
    }
    tsr_text_add(&t, "weights: %s, %d cop%s (", tsr_numa_policy_name(plan->policy), plan->n_copies,
             plan->n_copies == 1 ? "y" : "ies");
    for (int c = 0; c < plan->n_copies; c++) {
        const tsr_weight_copy *copy = &plan->copies[c];
        tsr_text_add(&t, "%s", c ? ", " : "");
        if (copy->kind == TSR_COPY_ON_NODE)
            tsr_text_add(&t, "node %d", topo->nodes[copy->node].os_index);
        else
            tsr_text_add(&t, "%s", copy->kind == TSR_COPY_INTERLEAVED ? "interleaved" : "plain");
    }
    tsr_text_add(&t, "); %s\n", plan->reason);
    if (plan->notes[0])
        tsr_text_add(&t, "notes: %s\n", plan->notes);
}
