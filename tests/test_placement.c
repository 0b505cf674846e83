/* threads/topology, threads/placement, threads/numa_memory on topologies that
 * are not this machine's: hwloc synthetic descriptions and the XML files in
 * tests/topologies. Every expected PU, core and node below was worked out by
 * hand from the rules in placement.h, not by running the code.
 *
 * The fixtures: two-socket-smt.xml and epyc-nps4.xml are hwloc exports
 * (hwloc_topology_export_xml) of the synthetic descriptions
 *   "pack:2 numa:1(memory=64GiB) l3:1(size=32MiB) l2:8(size=1MiB) l1d:1(size=48KiB)
 *    core:1 pu:2(indexes=0,16,1,17,...,15,31)"       (siblings are c and c+16)
 *   "pack:1 numa:4(memory=32GiB) l3:2(size=32MiB) l2:4(size=512KiB) l1d:1(size=32KiB)
 *    core:1 pu:2(indexes=0,32,1,33,...,31,63)"       (siblings are c and c+32)
 * odd-layout.xml is hand-written; its Description info says what is odd. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera-config.h"
#include "tests/testutil.h"
#include "threads/numa_memory.h"
#include "threads/placement.h"
#include "threads/topology.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

static char err[512];

/* ---- helpers ------------------------------------------------------------- */

static tsr_placement plan_of(const tsr_topology *topo, int threads, int use_smt,
                             tsr_numa_policy numa, uint64_t weight_bytes)
{
    tsr_placement plan;
    tsr_placement_request req = {.threads = threads, .use_smt = use_smt, .numa = numa,
                                 .weight_bytes = weight_bytes};
    cr_assert_eq(tsr_placement_plan(topo, &req, &plan, err, sizeof err), 0, "%s", err);
    return plan;
}

static void expect_contains(const char *text, const char *needle)
{
    cr_expect(strstr(text, needle) != NULL, "'%s' not found in:\n%s", needle, text);
}

/* The tests of this machine's own topology skip, by name, where it cannot be
 * read: a Linux root without sysfs mounted (a chroot), which the loader
 * refuses in one line rather than let hwloc print to stderr. */
static void need_this_machine(void)
{
#ifdef __linux__
    if (access("/sys/devices/system/cpu", F_OK) != 0)
        cr_skip_test("/sys/devices/system/cpu is not there (sysfs not mounted): this machine's "
                     "topology cannot be read");
#endif
}

static tsr_topology *this_machine(void)
{
    need_this_machine();
    tsr_topology *topo = NULL;
    cr_assert_eq(tsr_topology_load_system(&topo, err, sizeof err), 0, "%s", err);
    return topo;
}

/* ---- no topology (also what a build without hwloc does) ------------------ */

Test(unbound, null_topology_gives_unbound_threads_and_one_plain_copy)
{
    tsr_placement plan = plan_of(NULL, 3, 0, TSR_NUMA_REPLICATE, GIB);
    cr_assert_eq(plan.n_threads, 3);
    cr_expect_eq(plan.bound, 0);
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(plan.threads[i].pu_os, -1);
        cr_expect_eq(plan.threads[i].core, -1);
        cr_expect_eq(plan.threads[i].node, -1);
        cr_expect_eq(plan.threads[i].group, 0);
    }
    cr_assert_eq(plan.n_groups, 1);
    cr_expect_eq(plan.groups[0].n_threads, 3);
    cr_assert_eq(plan.n_copies, 1);
    cr_expect_eq(plan.copies[0].kind, TSR_COPY_PLAIN);
    cr_expect_eq(plan.policy, TSR_NUMA_OFF);
    expect_contains(plan.reason, "no topology");
    cr_expect_eq(tsr_placement_bind_thread(NULL, &plan, 2, err, sizeof err), 1);
    cr_expect_eq(tsr_placement_bind_thread(NULL, &plan, 3, err, sizeof err), -1);
    char text[1024];
    tsr_placement_describe(NULL, &plan, text, sizeof text);
    expect_contains(text, "3 threads, unbound");
    expect_contains(text, "weights: off, 1 copy (plain)");
    tsr_placement_free(&plan);
}

Test(unbound, zero_threads_means_the_cpus_this_process_may_use)
{
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    tsr_placement plan;
    tsr_placement_request req = {.numa = TSR_NUMA_AUTO};
    cr_assert_eq(tsr_placement_plan_unbound(&req, "built without hwloc", &plan, err, sizeof err), 0);
    cr_expect_eq(plan.n_threads, CPU_COUNT(&set));
    cr_expect_str_eq(plan.reason, "unbound: built without hwloc");
    tsr_placement_free(&plan);
}

Test(unbound, bad_thread_counts_and_policy_names_are_errors)
{
    tsr_placement plan;
    tsr_placement_request req = {.threads = -1, .numa = TSR_NUMA_AUTO};
    cr_expect_eq(tsr_placement_plan(NULL, &req, &plan, err, sizeof err), -1);
    expect_contains(err, "-1 threads");
    req.threads = 5000;
    cr_expect_eq(tsr_placement_plan(NULL, &req, &plan, err, sizeof err), -1);
    tsr_numa_policy p;
    cr_expect_eq(tsr_numa_policy_parse("interleave", &p, err, sizeof err), 0);
    cr_expect_eq(p, TSR_NUMA_INTERLEAVE);
    cr_expect_eq(tsr_numa_policy_parse("auto", &p, err, sizeof err), 0);
    cr_expect_eq(p, TSR_NUMA_AUTO);
    cr_expect_eq(tsr_numa_policy_parse("spread", &p, err, sizeof err), -1);
    expect_contains(err, "'spread'");
}

Test(unbound, plain_memory_block)
{
    tsr_numa_block b;
    cr_assert_eq(tsr_numa_alloc_plain(1000, &b, err, sizeof err), 0);
    cr_expect_eq((uintptr_t)b.data % 64, 0);
    cr_expect_str_eq(b.where, "plain");
    memset(b.data, 0x5a, 1000);
    tsr_numa_free(&b);
    cr_expect_null(b.data);
}

#ifndef HAVE_HWLOC

Test(no_hwloc, loaders_say_hwloc_is_missing)
{
    tsr_topology *topo = NULL;
    cr_expect_eq(tsr_topology_load_system(&topo, err, sizeof err), -1);
    expect_contains(err, "without hwloc");
    cr_expect_eq(tsr_topology_load_synthetic("pack:1 core:2 pu:1", &topo, err, sizeof err), -1);
    cr_expect_null(topo);
    char text[256];
    tsr_topology_describe(text, sizeof text);
    expect_contains(text, "without hwloc");
}

#else /* HAVE_HWLOC */

static int node_os(const tsr_topology *topo, int node) { return topo->nodes[node].os_index; }

/* Thread i must run on PU pu_os[i] of core core[i] on the node with OS index
 * node[i]; the plan's own fields must agree with each other too. */
static void expect_threads(const tsr_topology *topo, const tsr_placement *plan, int n,
                           const int *pu_os, const int *core, const int *node)
{
    cr_assert_eq(plan->n_threads, n);
    cr_assert(plan->bound);
    for (int i = 0; i < n; i++) {
        const tsr_thread_place *t = &plan->threads[i];
        cr_expect_eq(t->pu_os, pu_os[i], "thread %d: PU %d, expected %d", i, t->pu_os, pu_os[i]);
        cr_expect_eq(t->core, core[i], "thread %d: core %d, expected %d", i, t->core, core[i]);
        cr_expect_eq(node_os(topo, t->node), node[i], "thread %d: node %d, expected %d", i,
                     node_os(topo, t->node), node[i]);
        cr_expect_eq(topo->pus[t->pu].os_index, t->pu_os, "thread %d: pu index disagrees", i);
        cr_expect_eq(topo->pus[t->pu].core, t->core, "thread %d: PU not on its core", i);
        cr_expect_eq(plan->groups[t->group].node, t->node, "thread %d: group on another node", i);
        const tsr_thread_group *g = &plan->groups[t->group];
        cr_expect(i >= g->first_thread && i < g->first_thread + g->n_threads,
                  "thread %d outside its group", i);
    }
}

/* Groups by node OS index with their thread counts (consecutive from 0). */
static void expect_groups(const tsr_topology *topo, const tsr_placement *plan, int n,
                          const int *node, const int *count)
{
    cr_assert_eq(plan->n_groups, n, "%d groups, expected %d", plan->n_groups, n);
    int first = 0;
    for (int g = 0; g < n; g++) {
        cr_expect_eq(node_os(topo, plan->groups[g].node), node[g], "group %d node", g);
        cr_expect_eq(plan->groups[g].first_thread, first, "group %d first thread", g);
        cr_expect_eq(plan->groups[g].n_threads, count[g], "group %d: %d threads, expected %d", g,
                     plan->groups[g].n_threads, count[g]);
        first += count[g];
    }
}

/* One copy per group on the group's own node. */
static void expect_replicated(const tsr_topology *topo, const tsr_placement *plan,
                              const int *node, int n)
{
    cr_assert_eq(plan->policy, TSR_NUMA_REPLICATE, "policy %s: %s",
                 tsr_numa_policy_name(plan->policy), plan->reason);
    cr_assert_eq(plan->n_copies, n);
    for (int c = 0; c < n; c++) {
        cr_expect_eq(plan->copies[c].kind, TSR_COPY_ON_NODE);
        cr_expect_eq(node_os(topo, plan->copies[c].node), node[c], "copy %d node", c);
        cr_expect_eq(plan->groups[c].copy, c, "group %d reads copy %d", c, plan->groups[c].copy);
    }
}

/* A single copy of `kind` (on node OS index `node` for TSR_COPY_ON_NODE) read by all. */
static void expect_single_copy(const tsr_topology *topo, const tsr_placement *plan,
                               tsr_numa_policy policy, tsr_copy_kind kind, int node)
{
    cr_assert_eq(plan->policy, policy, "policy %s, expected %s: %s",
                 tsr_numa_policy_name(plan->policy), tsr_numa_policy_name(policy), plan->reason);
    cr_assert_eq(plan->n_copies, 1);
    cr_expect_eq(plan->copies[0].kind, kind);
    if (kind == TSR_COPY_ON_NODE)
        cr_expect_eq(node_os(topo, plan->copies[0].node), node);
    else
        cr_expect_eq(plan->copies[0].node, -1);
    for (int g = 0; g < plan->n_groups; g++)
        cr_expect_eq(plan->groups[g].copy, 0);
}

static tsr_topology *synthetic(const char *description)
{
    tsr_topology *topo = NULL;
    cr_assert_eq(tsr_topology_load_synthetic(description, &topo, err, sizeof err), 0, "%s", err);
    return topo;
}

static tsr_topology *fixture(const char *name)
{
    char path[4096];
    tsr_topology *topo = NULL;
    snprintf(path, sizeof path, "%s/tests/topologies/%s", test_srcdir(), name);
    cr_assert_eq(tsr_topology_load_xml(path, &topo, err, sizeof err), 0, "%s", err);
    return topo;
}

/* ---- workers x threads ------------------------------------------------------ */

static tsr_placement workers_plan(const tsr_topology *topo, int workers, int threads, int use_smt)
{
    tsr_placement plan;
    tsr_placement_request req = {.threads = threads, .workers = workers, .use_smt = use_smt,
                                 .numa = TSR_NUMA_AUTO};
    cr_assert_eq(tsr_placement_plan(topo, &req, &plan, err, sizeof err), 0, "%s", err);
    return plan;
}

/* Node OS index of each worker's threads when all its threads share one node,
 * else -1; and no core holds threads of two workers. */
static void expect_workers(const tsr_topology *topo, const tsr_placement *plan, int workers,
                           int per, const int *node_of_worker)
{
    cr_assert_eq(plan->n_workers, workers);
    cr_assert_eq(plan->threads_per_worker, per);
    cr_assert_eq(plan->n_threads, workers * per);
    int *owner = malloc((size_t)topo->n_cores * sizeof *owner);
    cr_assert(owner);
    for (int c = 0; c < topo->n_cores; c++)
        owner[c] = -1;
    for (int w = 0; w < workers; w++) {
        int node = plan->threads[w * per].node;
        for (int t = w * per; t < (w + 1) * per; t++) {
            const tsr_thread_place *p = &plan->threads[t];
            if (p->node != node)
                node = -1;
            cr_expect(owner[p->core] == -1 || owner[p->core] == w,
                      "core %d runs threads of workers %d and %d", p->core, owner[p->core], w);
            owner[p->core] = w;
        }
        int want = node_of_worker[w];
        cr_expect_eq(node < 0 ? -1 : node_os(topo, node), want,
                     "worker %d: on node %d, expected %d (-1: several)", w,
                     node < 0 ? -1 : node_os(topo, node), want);
    }
    free(owner);
}

/* 2 nodes x 8 cores x 2 PUs: whole workers go to a node while they fit, on
 * cores no other worker uses, SMT siblings kept within a worker. */
Test(workers, two_nodes_eight_cores_smt)
{
    tsr_topology *topo = synthetic("pack:2 numa:1 core:8 pu:2");

    tsr_placement plan = workers_plan(topo, 4, 4, 0);
    expect_workers(topo, &plan, 4, 4, (const int[]){0, 0, 1, 1});
    tsr_placement_free(&plan);

    /* Threads 0: the 16 cores shared among the workers. */
    plan = workers_plan(topo, 2, 0, 0);
    expect_workers(topo, &plan, 2, 8, (const int[]){0, 1});
    char text[2048];
    tsr_placement_describe(topo, &plan, text, sizeof text);
    expect_contains(text, "workers: 2 x 8 threads: worker 0 -> threads 0-7; worker 1 -> threads 8-15");
    tsr_placement_free(&plan);

    /* Workers that do not divide evenly: 2 on node 0, 1 on node 1. */
    plan = workers_plan(topo, 3, 4, 0);
    expect_workers(topo, &plan, 3, 4, (const int[]){0, 0, 1});
    tsr_placement_free(&plan);

    /* More threads than cores: a worker's 8 threads on 4 cores and their
     * siblings, no core shared with another worker. */
    plan = workers_plan(topo, 4, 8, 0);
    expect_workers(topo, &plan, 4, 8, (const int[]){0, 0, 1, 1});
    tsr_placement_free(&plan);

    /* With use_smt and threads 0: the 32 PUs shared, 16 per worker. */
    plan = workers_plan(topo, 2, 0, 1);
    expect_workers(topo, &plan, 2, 16, (const int[]){0, 1});
    tsr_placement_free(&plan);

    /* A worker larger than a node spans both: threads go one by one. */
    plan = workers_plan(topo, 1, 12, 0);
    expect_workers(topo, &plan, 1, 12, (const int[]){-1});
    expect_groups(topo, &plan, 2, (const int[]){0, 1}, (const int[]){6, 6});
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(workers, counts_are_checked)
{
    tsr_topology *topo = synthetic("pack:1 numa:1 core:4 pu:1");
    tsr_placement plan;
    tsr_placement_request req = {.threads = 1, .workers = -2};
    cr_expect_eq(tsr_placement_plan(topo, &req, &plan, err, sizeof err), -1);
    expect_contains(err, "-2 workers");
    req = (tsr_placement_request){.threads = 64, .workers = 128};
    cr_expect_eq(tsr_placement_plan(topo, &req, &plan, err, sizeof err), -1);
    expect_contains(err, "128 workers x 64 threads");
    /* More workers than cores: one thread each, wrapping round the cores. */
    plan = workers_plan(topo, 6, 0, 0);
    cr_expect_eq(plan.n_threads, 6);
    cr_expect_eq(plan.threads_per_worker, 1);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* ---- synthetic: 2 packages x 2 NUMA nodes x 8 cores x 2 PUs -------------- */
/* hwloc numbers the PUs of core c as 2c and 2c+1; cores 8k..8k+7 are on node k,
 * each node has 1 GiB (the synthetic default). */

Test(synthetic_4node_smt, structure)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    cr_expect_eq(topo->n_packages, 2);
    cr_expect_eq(topo->n_nodes, 4);
    cr_expect_eq(topo->n_cores, 32);
    cr_expect_eq(topo->n_pus, 64);
    cr_expect_eq(topo->this_system, 0);
    for (int c = 0; c < 32; c++) {
        cr_expect_eq(topo->cores[c].n_pus, 2);
        cr_expect_eq(node_os(topo, topo->cores[c].node), c / 8, "core %d", c);
        cr_expect_eq(topo->cores[c].package, c / 16, "core %d", c);
        cr_expect_eq(topo->pus[topo->cores[c].first_pu + 1].os_index, 2 * c + 1);
    }
    for (int k = 0; k < 4; k++)
        cr_expect_eq(topo->nodes[k].memory_bytes, GIB);
    tsr_topology_free(topo);
}

Test(synthetic_4node_smt, one_thread_per_core_by_default)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 100 * MIB);
    int pu[32], core[32], node[32];
    for (int i = 0; i < 32; i++) {
        pu[i] = 2 * i;
        core[i] = i;
        node[i] = i / 8;
    }
    expect_threads(topo, &plan, 32, pu, core, node);
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){8, 8, 8, 8});
    expect_replicated(topo, &plan, (int[]){0, 1, 2, 3}, 4);
    cr_expect_str_eq(plan.notes, "");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* 13 threads over 4 nodes of 8 cores: 3.25 each, the extra one to node 0 (ties
 * go to the lower node); 4 threads on 8 cores take cores 0,2,4,6 and 3 take
 * floor(j*8/3) = 0,2,5. */
Test(synthetic_4node_smt, threads_not_a_multiple_of_nodes)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 13, 0, TSR_NUMA_REPLICATE, 0);
    int core[13] = {0, 2, 4, 6, 8, 10, 13, 16, 18, 21, 24, 26, 29};
    int pu[13], node[13];
    for (int i = 0; i < 13; i++) {
        pu[i] = 2 * core[i];
        node[i] = core[i] / 8;
    }
    expect_threads(topo, &plan, 13, pu, core, node);
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){4, 3, 3, 3});
    expect_replicated(topo, &plan, (int[]){0, 1, 2, 3}, 4);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* 40 threads > 32 cores: shared by PUs (10 per node); each node fills its 8
 * cores, then 2 siblings spread over the 8 cores: cores 0 and 4 of the node. */
Test(synthetic_4node_smt, more_threads_than_cores_uses_siblings)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 40, 0, TSR_NUMA_AUTO, 0);
    const int node_pu[10] = {0, 1, 2, 4, 6, 8, 9, 10, 12, 14};
    const int node_core[10] = {0, 0, 1, 2, 3, 4, 4, 5, 6, 7};
    int pu[40], core[40], node[40];
    for (int i = 0; i < 40; i++) {
        pu[i] = node_pu[i % 10] + 16 * (i / 10);
        core[i] = node_core[i % 10] + 8 * (i / 10);
        node[i] = i / 10;
    }
    expect_threads(topo, &plan, 40, pu, core, node);
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){10, 10, 10, 10});
    expect_contains(plan.notes, "SMT siblings used: more threads than cores");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(synthetic_4node_smt, use_smt_gives_one_thread_per_pu)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 0, 1, TSR_NUMA_AUTO, 0);
    int pu[64], core[64], node[64];
    for (int i = 0; i < 64; i++) {
        pu[i] = i;
        core[i] = i / 2;
        node[i] = i / 16;
    }
    expect_threads(topo, &plan, 64, pu, core, node);
    expect_contains(plan.notes, "SMT siblings used: use_smt");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(synthetic_4node_smt, each_policy)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 13, 0, TSR_NUMA_INTERLEAVE, 0);
    expect_single_copy(topo, &plan, TSR_NUMA_INTERLEAVE, TSR_COPY_INTERLEAVED, -1);
    expect_contains(plan.reason, "interleave (asked)");
    tsr_placement_free(&plan);
    plan = plan_of(topo, 13, 0, TSR_NUMA_LOCAL, 0);
    expect_single_copy(topo, &plan, TSR_NUMA_LOCAL, TSR_COPY_ON_NODE, 0);
    tsr_placement_free(&plan);
    plan = plan_of(topo, 13, 0, TSR_NUMA_OFF, 0);
    expect_single_copy(topo, &plan, TSR_NUMA_OFF, TSR_COPY_PLAIN, -1);
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){4, 3, 3, 3});
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* auto replicates while one copy fits in half of the smallest node (1 GiB). */
Test(synthetic_4node_smt, auto_replicates_small_weights_and_interleaves_big_ones)
{
    tsr_topology *topo = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 512 * MIB);
    expect_replicated(topo, &plan, (int[]){0, 1, 2, 3}, 4);
    expect_contains(plan.reason, "auto chose replicate");
    tsr_placement_free(&plan);
    plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 512 * MIB + 1);
    expect_single_copy(topo, &plan, TSR_NUMA_INTERLEAVE, TSR_COPY_INTERLEAVED, -1);
    expect_contains(plan.reason, "auto chose interleave");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(synthetic_4node_smt, same_inputs_same_plan)
{
    tsr_topology *a = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_topology *b = synthetic("pack:2 numa:2 core:8 pu:2");
    tsr_placement p = plan_of(a, 27, 0, TSR_NUMA_AUTO, GIB);
    tsr_placement q = plan_of(b, 27, 0, TSR_NUMA_AUTO, GIB);
    cr_assert_eq(p.n_threads, q.n_threads);
    cr_expect_eq(memcmp(p.threads, q.threads, sizeof *p.threads * (size_t)p.n_threads), 0);
    cr_assert_eq(p.n_groups, q.n_groups);
    cr_expect_eq(memcmp(p.groups, q.groups, sizeof *p.groups * (size_t)p.n_groups), 0);
    cr_expect_str_eq(p.reason, q.reason);
    tsr_placement_free(&p);
    tsr_placement_free(&q);
    tsr_topology_free(a);
    tsr_topology_free(b);
}

/* ---- synthetic: 1 package x 6 cores x 2 PUs, one NUMA node ---------------- */

Test(synthetic_1node_smt, default_smt_more_threads_and_oversubscription)
{
    tsr_topology *topo = synthetic("pack:1 core:6 pu:2");
    cr_expect_eq(topo->n_nodes, 1);
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 100 * GIB);
    expect_threads(topo, &plan, 6, (int[]){0, 2, 4, 6, 8, 10}, (int[]){0, 1, 2, 3, 4, 5},
                   (int[]){0, 0, 0, 0, 0, 0});
    expect_single_copy(topo, &plan, TSR_NUMA_OFF, TSR_COPY_PLAIN, -1);
    expect_contains(plan.reason, "one NUMA node");
    tsr_placement_free(&plan);

    plan = plan_of(topo, 0, 1, TSR_NUMA_LOCAL, 0);
    int pu[12], core[12], node[12] = {0};
    for (int i = 0; i < 12; i++) {
        pu[i] = i;
        core[i] = i / 2;
    }
    expect_threads(topo, &plan, 12, pu, core, node);
    expect_single_copy(topo, &plan, TSR_NUMA_LOCAL, TSR_COPY_ON_NODE, 0);
    tsr_placement_free(&plan);

    /* 8 threads: 6 cores, then siblings on floor(j*6/2) = cores 0 and 3. */
    plan = plan_of(topo, 8, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 8, (int[]){0, 1, 2, 4, 6, 7, 8, 10},
                   (int[]){0, 0, 1, 2, 3, 3, 4, 5}, node);
    tsr_placement_free(&plan);

    /* use_smt with fewer threads than cores still uses distinct cores:
     * floor(j*6/4) = 0, 1, 3, 4. */
    plan = plan_of(topo, 4, 1, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 4, (int[]){0, 2, 6, 8}, (int[]){0, 1, 3, 4}, node);
    cr_expect_str_eq(plan.notes, "");
    tsr_placement_free(&plan);

    /* 15 threads on 12 PUs: all PUs once, then cores floor(j*6/3) = 0, 2, 4 again. */
    plan = plan_of(topo, 15, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 15, (int[]){0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8, 9, 10, 11},
                   (int[]){0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 5, 5},
                   (int[15]){0});
    expect_contains(plan.notes, "oversubscribed: 15 threads on 12 PUs");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* ---- synthetic: 4 packages x 1 NUMA node x 4 cores, no SMT ---------------- */

Test(synthetic_4node_nosmt, spread_single_node_and_wrap)
{
    tsr_topology *topo = synthetic("pack:4 numa:1 core:4 pu:1");
    cr_expect_eq(topo->n_nodes, 4);
    /* 6 threads: 1.5 per node, the two extras to nodes 0 and 1. */
    tsr_placement plan = plan_of(topo, 6, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 6, (int[]){0, 2, 4, 6, 8, 12}, (int[]){0, 2, 4, 6, 8, 12},
                   (int[]){0, 0, 1, 1, 2, 3});
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){2, 2, 1, 1});
    expect_replicated(topo, &plan, (int[]){0, 1, 2, 3}, 4);
    tsr_placement_free(&plan);

    /* no SMT: use_smt changes nothing, and no note claims siblings */
    plan = plan_of(topo, 0, 1, TSR_NUMA_AUTO, 0);
    cr_expect_eq(plan.n_threads, 16);
    cr_expect_str_eq(plan.notes, "");
    tsr_placement_free(&plan);

    /* one thread: one node with threads on a 4-node machine -> local */
    plan = plan_of(topo, 1, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 1, (int[]){0}, (int[]){0}, (int[]){0});
    expect_single_copy(topo, &plan, TSR_NUMA_LOCAL, TSR_COPY_ON_NODE, 0);
    expect_contains(plan.reason, "auto chose local");
    tsr_placement_free(&plan);

    /* 20 threads on 16 PUs: 5 per node, the fifth back on the node's first core */
    plan = plan_of(topo, 20, 0, TSR_NUMA_AUTO, 0);
    int pu[20], node[20];
    for (int i = 0; i < 20; i++) {
        int k = i / 5, j = i % 5;
        pu[i] = 4 * k + (j == 0 ? 0 : j - 1);
        node[i] = k;
    }
    expect_threads(topo, &plan, 20, pu, pu, node);
    expect_contains(plan.notes, "oversubscribed");
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* ---- a restricted cpuset --------------------------------------------------- */
/* 2 nodes x 4 cores x 2 PUs (PUs 2c, 2c+1; cores 0-3 on node 0). Allowed:
 * 0-5,8,10-11 -> node 0: cores 0,1,2 with both PUs; node 1: core 4 with PU 8
 * only, core 5 with PUs 10,11. */

Test(restricted, placement_uses_only_allowed_pus)
{
    tsr_topology *topo = synthetic("pack:2 numa:1 core:4 pu:2");
    cr_assert_eq(tsr_topology_restrict(topo, "0-5,8,10-11", err, sizeof err), 0, "%s", err);
    cr_expect_eq(tsr_topology_allowed_cores(topo), 5);
    cr_expect_eq(tsr_topology_allowed_pus(topo), 9);
    cr_expect_eq(topo->cores[4].n_allowed_pus, 1);
    cr_expect_eq(topo->cores[3].n_allowed_pus, 0);

    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 5, (int[]){0, 2, 4, 8, 10}, (int[]){0, 1, 2, 4, 5},
                   (int[]){0, 0, 0, 1, 1});
    expect_groups(topo, &plan, 2, (int[]){0, 1}, (int[]){3, 2});
    expect_contains(plan.notes, "restricted: 5 of 8 cores allowed");
    tsr_placement_free(&plan);

    /* 8 threads > 5 cores: by allowed PUs 6:3 -> 5.33 and 2.67, the extra to
     * node 1 (larger remainder). Node 0: 3 cores, then siblings of cores
     * floor(j*3/2) = 0, 1. Node 1: PUs 8, 10, then 11 (core 5's sibling). */
    plan = plan_of(topo, 8, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 8, (int[]){0, 1, 2, 3, 4, 8, 10, 11},
                   (int[]){0, 0, 1, 1, 2, 4, 5, 5}, (int[]){0, 0, 0, 0, 0, 1, 1, 1});
    tsr_placement_free(&plan);

    /* a failed restriction leaves the topology as it was */
    cr_expect_eq(tsr_topology_restrict(topo, "6-7", err, sizeof err), -1);
    expect_contains(err, "no allowed PU");
    cr_expect_eq(tsr_topology_restrict(topo, "zero", err, sizeof err), -1);
    expect_contains(err, "'zero'");
    cr_expect_eq(tsr_topology_allowed_pus(topo), 9);
    tsr_topology_free(topo);
}

/* ---- XML: Intel-like two sockets, siblings numbered c and c+16 ------------ */

Test(xml_two_socket, structure_and_caches)
{
    tsr_topology *topo = fixture("two-socket-smt.xml");
    cr_expect_eq(topo->n_packages, 2);
    cr_expect_eq(topo->n_nodes, 2);
    cr_expect_eq(topo->n_cores, 16);
    cr_expect_eq(topo->n_pus, 32);
    cr_expect_eq(topo->nodes[0].memory_bytes, 64 * GIB);
    cr_expect_eq(topo->nodes[1].memory_bytes, 64 * GIB);
    cr_expect_eq(topo->l1d.bytes, 48 * 1024);
    cr_expect_eq(topo->l1d.cores_sharing, 1);
    cr_expect_eq(topo->l2.bytes, MIB);
    cr_expect_eq(topo->l3.bytes, 32 * MIB);
    cr_expect_eq(topo->l3.cores_sharing, 8);
    cr_expect_eq(topo->this_system, 0);
    char text[512];
    tsr_topology_summary(topo, text, sizeof text);
    cr_expect_str_eq(text, "2 packages, 2 NUMA nodes (128.0 GiB), 16 cores, 32 PUs; "
                           "L1d 48 KiB, L2 1 MiB, L3 32 MiB");
    tsr_topology_free(topo);
}

/* Levels a topology leaves unknown are filled (the system loader's CPUID
 * fallback) and the summary says how many; a level it knows is kept. */
Test(xml_two_socket, unknown_caches_are_filled_and_named)
{
    tsr_topology *topo = synthetic("pack:1 numa:1 core:2 pu:1");
    cr_assert_eq(topo->l1d.bytes + topo->l2.bytes + topo->l3.bytes, 0);
    size_t known[3] = {48 * 1024, 2 * MIB, 0};
    cr_expect_eq(tsr_topology_fill_caches(topo, known), 2);
    cr_expect_eq(topo->l1d.bytes, 48 * 1024);
    cr_expect_eq(topo->l2.bytes, 2 * MIB);
    cr_expect_eq(topo->l3.bytes, 0);
    char text[512];
    tsr_topology_summary(topo, text, sizeof text);
    cr_expect(strstr(text, "; L1d 48 KiB, L2 2 MiB, L3 - (2 levels from CPUID)") != NULL, "%s", text);
    tsr_topology_free(topo);

    topo = fixture("two-socket-smt.xml");
    size_t host[3] = {32 * 1024, 4 * MIB, 480 * MIB};
    cr_expect_eq(tsr_topology_fill_caches(topo, host), 0);
    cr_expect_eq(topo->l3.bytes, 32 * MIB);
    tsr_topology_summary(topo, text, sizeof text);
    cr_expect(strstr(text, "CPUID") == NULL, "%s", text);
    tsr_topology_free(topo);
}

Test(xml_two_socket, placements)
{
    tsr_topology *topo = fixture("two-socket-smt.xml");
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 32 * GIB);
    int pu[32], core[32], node[32];
    for (int i = 0; i < 16; i++) {
        pu[i] = core[i] = i;
        node[i] = i / 8;
    }
    expect_threads(topo, &plan, 16, pu, core, node);
    expect_replicated(topo, &plan, (int[]){0, 1}, 2);
    char text[2048];
    tsr_placement_describe(topo, &plan, text, sizeof text);
    expect_contains(text, "16 threads bound to PUs of xml: ");
    expect_contains(text, "  node 0 (64.0 GiB): threads 0-7 -> cores 0-7 -> PUs 0-7; weight copy 0\n");
    expect_contains(text, "  node 1 (64.0 GiB): threads 8-15 -> cores 8-15 -> PUs 8-15; weight copy 1\n");
    expect_contains(text, "weights: replicate, 2 copies (node 0, node 1); auto chose replicate");
    tsr_placement_free(&plan);

    /* one per PU: siblings adjacent, so OS numbers go 0,16,1,17,... */
    plan = plan_of(topo, 0, 1, TSR_NUMA_AUTO, 32 * GIB + 1);
    for (int i = 0; i < 32; i++) {
        core[i] = i / 2;
        pu[i] = core[i] + (i % 2 ? 16 : 0);
        node[i] = i / 16;
    }
    expect_threads(topo, &plan, 32, pu, core, node);
    expect_single_copy(topo, &plan, TSR_NUMA_INTERLEAVE, TSR_COPY_INTERLEAVED, -1);
    tsr_placement_free(&plan);

    /* 20 threads: 10 per node, siblings on the node's cores 0 and 4 */
    plan = plan_of(topo, 20, 0, TSR_NUMA_AUTO, 0);
    expect_threads(topo, &plan, 20,
                   (int[]){0, 16, 1, 2, 3, 4, 20, 5, 6, 7, 8, 24, 9, 10, 11, 12, 28, 13, 14, 15},
                   (int[]){0, 0, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 12, 13, 14, 15},
                   (int[]){0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1});
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* ---- XML: 1 package in 4 NUMA nodes of 8 cores, an L3 per 4 cores ---------- */

Test(xml_epyc_nps4, ten_threads_over_four_nodes)
{
    tsr_topology *topo = fixture("epyc-nps4.xml");
    cr_expect_eq(topo->n_nodes, 4);
    cr_expect_eq(topo->l3.bytes, 32 * MIB);
    cr_expect_eq(topo->l3.cores_sharing, 4);
    /* 2.5 per node, extras to nodes 0 and 1; 3 of 8 cores -> 0, 2, 5; 2 of 8
     * -> 0, 4 (one per L3). */
    tsr_placement plan = plan_of(topo, 10, 0, TSR_NUMA_AUTO, 16 * GIB);
    int core[10] = {0, 2, 5, 8, 10, 13, 16, 20, 24, 28};
    expect_threads(topo, &plan, 10, core, core, (int[]){0, 0, 0, 1, 1, 1, 2, 2, 3, 3});
    expect_groups(topo, &plan, 4, (int[]){0, 1, 2, 3}, (int[]){3, 3, 2, 2});
    expect_replicated(topo, &plan, (int[]){0, 1, 2, 3}, 4);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* ---- XML: the hand-written odd layout ---------------------------------------- */
/* Package 0: node P#0 (16 GiB), cores 0-3 with PUs {0,8} {1,9} {2,10} {3,11}.
 * Package 1: node P#2 (8 GiB), cores 4-6 with PUs {4} {5} {6,12}.
 * Machine: a CPU-less node P#5 (32 GiB) whose memory is not allowed.
 * Allowed PUs: 0,2-6,8,10 (core 1 and PUs 11, 12 are not). */

Test(xml_odd_layout, structure)
{
    tsr_topology *topo = fixture("odd-layout.xml");
    cr_expect_eq(topo->n_packages, 2);
    cr_assert_eq(topo->n_nodes, 3);
    cr_expect_eq(topo->n_cores, 7);
    cr_expect_eq(topo->n_pus, 12);
    cr_expect_eq(tsr_topology_allowed_cores(topo), 6);
    cr_expect_eq(tsr_topology_allowed_pus(topo), 8);
    const int expected_node[7] = {0, 0, 0, 0, 2, 2, 2};
    const int expected_pus[7] = {2, 2, 2, 2, 1, 1, 2};
    const int expected_allowed[7] = {2, 0, 2, 1, 1, 1, 1};
    for (int c = 0; c < 7; c++) {
        cr_expect_eq(node_os(topo, topo->cores[c].node), expected_node[c], "core %d", c);
        cr_expect_eq(topo->cores[c].n_pus, expected_pus[c], "core %d", c);
        cr_expect_eq(topo->cores[c].n_allowed_pus, expected_allowed[c], "core %d", c);
    }
    int seen_cxl = 0;
    for (int k = 0; k < 3; k++) {
        const tsr_topo_node *n = &topo->nodes[k];
        if (n->os_index == 5) {
            seen_cxl = 1;
            cr_expect_eq(n->memory_bytes, 32 * GIB);
            cr_expect_eq(n->memory_allowed, 0);
        } else {
            cr_expect_eq(n->memory_bytes, n->os_index == 0 ? 16 * GIB : 8 * GIB);
            cr_expect_eq(n->memory_allowed, 1);
        }
    }
    cr_expect(seen_cxl);
    cr_expect_eq(topo->l3.bytes, 16 * MIB);
    cr_expect_eq(topo->l3.cores_sharing, 4);
    cr_expect_eq(topo->l1d.bytes, 0);
    tsr_topology_free(topo);
}

Test(xml_odd_layout, placements)
{
    tsr_topology *topo = fixture("odd-layout.xml");
    /* 6 allowed cores, 3 per node; 3 GiB fits in half of the 8 GiB node */
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 3 * GIB);
    expect_threads(topo, &plan, 6, (int[]){0, 2, 3, 4, 5, 6}, (int[]){0, 2, 3, 4, 5, 6},
                   (int[]){0, 0, 0, 2, 2, 2});
    expect_replicated(topo, &plan, (int[]){0, 2}, 2);
    expect_contains(plan.notes, "restricted: 6 of 7 cores allowed");
    tsr_placement_free(&plan);

    /* 8 threads (all allowed PUs): by PUs 5:3; node 0 takes its 3 cores then
     * the siblings of cores 0 and 2; 5 GiB is more than half of 8 GiB */
    plan = plan_of(topo, 8, 0, TSR_NUMA_AUTO, 5 * GIB);
    expect_threads(topo, &plan, 8, (int[]){0, 8, 2, 10, 3, 4, 5, 6},
                   (int[]){0, 0, 2, 2, 3, 4, 5, 6}, (int[]){0, 0, 0, 0, 0, 2, 2, 2});
    expect_single_copy(topo, &plan, TSR_NUMA_INTERLEAVE, TSR_COPY_INTERLEAVED, -1);
    expect_contains(plan.reason, "node 2's memory (8.0 GiB)");
    tsr_placement_free(&plan);

    /* 10 threads on 8 PUs: 6.25 and 3.75 -> the extra to node P#2 (remainder
     * 6 of 8 against 2 of 8): 6 and 4; each node wraps to its first core */
    plan = plan_of(topo, 10, 0, TSR_NUMA_REPLICATE, 0);
    expect_threads(topo, &plan, 10, (int[]){0, 0, 8, 2, 10, 3, 4, 4, 5, 6},
                   (int[]){0, 0, 0, 2, 2, 3, 4, 4, 5, 6}, (int[]){0, 0, 0, 0, 0, 0, 2, 2, 2, 2});
    expect_replicated(topo, &plan, (int[]){0, 2}, 2);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(xml_odd_layout, other_machines_cannot_bind_or_place_memory)
{
    tsr_topology *topo = fixture("odd-layout.xml");
    tsr_placement plan = plan_of(topo, 2, 0, TSR_NUMA_REPLICATE, 0);
    cr_expect_eq(tsr_placement_bind_thread(topo, &plan, 0, err, sizeof err), -1);
    expect_contains(err, "not this machine's");
    tsr_numa_block b;
    cr_assert_eq(tsr_numa_alloc_copy(topo, &plan, 0, 4096, &b, err, sizeof err), 0, "%s", err);
    expect_contains(b.where, "plain (binding to node 0: the topology is not this machine's)");
    memset(b.data, 1, 4096);
    tsr_numa_free(&b);
    cr_expect_eq(tsr_numa_alloc_on_node(topo, 3, 64, &b, err, sizeof err), -1);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

Test(xml, missing_or_malformed_files_are_errors)
{
    tsr_topology *topo = NULL;
    cr_expect_eq(tsr_topology_load_xml("/nonexistent/topology.xml", &topo, err, sizeof err), -1);
    expect_contains(err, "/nonexistent/topology.xml");
    cr_expect_null(topo);
    cr_expect_eq(tsr_topology_load_synthetic("pack:2 bogus:3", &topo, err, sizeof err), -1);
    expect_contains(err, "synthetic: pack:2 bogus:3");
}

/* ---- this machine ------------------------------------------------------------ */

Test(system, thread_zero_binds_to_its_pu)
{
    tsr_topology *topo = this_machine();
    cr_expect_eq(topo->this_system, 1);
    tsr_placement plan = plan_of(topo, 1, 0, TSR_NUMA_AUTO, 0);
    int rc = tsr_placement_bind_thread(topo, &plan, 0, err, sizeof err);
    if (rc != 0) {
        cr_expect_eq(rc, -1);
        cr_expect(strlen(err) > 0);
        tsr_placement_free(&plan);
        tsr_topology_free(topo);
        cr_skip_test("binding not permitted here: %s", err);
    }
    cpu_set_t set;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    cr_expect_eq(CPU_COUNT(&set), 1);
    cr_expect(CPU_ISSET(plan.threads[0].pu_os, &set), "not bound to PU %d", plan.threads[0].pu_os);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

/* The system loader must honour the affinity mask the process starts with
 * (taskset, a batch scheduler): pin to the last allowed CPU, then load. */
Test(system, affinity_mask_limits_the_allowed_pus)
{
    cpu_set_t set, only;
    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    int last = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, &set))
            last = cpu;
    CPU_ZERO(&only);
    CPU_SET(last, &only);
    cr_assert_eq(sched_setaffinity(0, sizeof only, &only), 0);
    tsr_topology *topo = this_machine();
    cr_expect_eq(tsr_topology_allowed_pus(topo), 1);
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 0);
    cr_assert_eq(plan.n_threads, 1);
    cr_expect_eq(plan.threads[0].pu_os, last);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}

#ifdef _OPENMP
#include <omp.h>

/* What the model's parallel regions will do: each thread binds itself once. */
Test(system, each_openmp_thread_binds_itself)
{
    tsr_topology *topo = this_machine();
    tsr_placement plan = plan_of(topo, 0, 0, TSR_NUMA_AUTO, 0);
    int n = plan.n_threads, team = 0;
    int *results = calloc((size_t)n, sizeof *results);
    int *running_on = calloc((size_t)n, sizeof *running_on);
    cr_assert(results && running_on);
#pragma omp parallel num_threads(n)
    {
        int i = omp_get_thread_num();
        char why[256];
        results[i] = tsr_placement_bind_thread(topo, &plan, i, why, sizeof why);
        cpu_set_t set;
        running_on[i] = -1;
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1)
            for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
                if (CPU_ISSET(cpu, &set))
                    running_on[i] = cpu;
#pragma omp single
        team = omp_get_num_threads();
    }
    cr_assert_eq(team, n);
    for (int i = 0; i < n; i++) {
        if (results[i] != 0)
            cr_skip_test("binding not permitted here (thread %d)", i);
        cr_expect_eq(running_on[i], plan.threads[i].pu_os, "thread %d on %d, planned %d", i,
                     running_on[i], plan.threads[i].pu_os);
    }
    free(results);
    free(running_on);
    tsr_placement_free(&plan);
    tsr_topology_free(topo);
}
#endif

/* Bound memory must carry the policy asked for, as the kernel reports it. */
Test(system, memory_on_a_node_and_interleaved)
{
    tsr_topology *topo = this_machine();
    hwloc_topology_t hw = (hwloc_topology_t)topo->hwloc;
    const size_t bytes = 1 << 20;
    for (int interleave = 0; interleave < 2; interleave++) {
        tsr_numa_block b;
        int node = 0;
        int rc = interleave ? tsr_numa_alloc_interleaved(topo, &node, 1, bytes, &b, err, sizeof err)
                            : tsr_numa_alloc_on_node(topo, 0, bytes, &b, err, sizeof err);
        cr_assert_eq(rc, 0, "%s", err);
        memset(b.data, 0x3c, bytes);
        if (strncmp(b.where, "plain (", 7) == 0) {
            cr_log_info("NUMA binding refused here: %s", b.where);
        } else {
            cr_expect_str_eq(b.where, interleave ? "interleaved over node 0" : "bound to node 0");
            cr_expect_not_null(b.hwloc);
            hwloc_bitmap_t set = hwloc_bitmap_alloc();
            hwloc_membind_policy_t policy;
            cr_assert_eq(hwloc_get_area_membind(hw, b.data, bytes, set, &policy,
                                                HWLOC_MEMBIND_BYNODESET), 0);
            cr_expect_eq(policy, interleave ? HWLOC_MEMBIND_INTERLEAVE : HWLOC_MEMBIND_BIND);
            cr_expect(hwloc_bitmap_isset(set, (unsigned)topo->nodes[0].os_index));
            hwloc_bitmap_free(set);
        }
        tsr_numa_free(&b);
    }
    tsr_topology_free(topo);
}

Test(system, describe_names_hwloc)
{
    need_this_machine();
    char text[512];
    tsr_topology_describe(text, sizeof text);
    expect_contains(text, "(hwloc 2.");
    expect_contains(text, "NUMA node");
}

#endif
