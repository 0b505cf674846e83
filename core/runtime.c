/* Process-wide choices: the kernel set, the thread count, and where threads
 * run and weights live (the placement plan, made once from the hwloc
 * topology when the first model is loaded). */
#include "core/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/tessera.h"
#include "simd/dispatch.h"
#include "threads/placement.h"
#include "threads/threads.h"
#include "threads/topology.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static struct runtime {
    pthread_mutex_t lock;
    int threads;   /* resolved count, 0 until first needed */
    int use_smt;
    int numa_set;  /* numa given by tessera_set_placement */
    tsr_numa_policy numa;
    tsr_topology *topo;
    tsr_placement plan;
    int have_plan;
    int *copy_of_thread;
    char bind_note[256];
} rt = {.lock = PTHREAD_MUTEX_INITIALIZER};

const char *tessera_kernel_set(char *err, size_t err_len)
{
    const tsr_kernels *k = tsr_kernels_select(err, err_len);
    return k ? k->name : NULL;
}

/* A plan made for other settings no longer holds. Call with the lock. */
static void forget_plan(void)
{
    if (rt.have_plan)
        tsr_placement_free(&rt.plan);
    free(rt.copy_of_thread);
    rt.copy_of_thread = NULL;
    rt.have_plan = 0;
}

static int load_topology(tsr_topology **topo, char *err, size_t err_len);

/* One thread per allowed core (per allowed PU with use_smt) of this
 * machine's topology, else per CPU of the affinity mask. Call with the lock. */
static int default_threads(void)
{
    char why[256];
    if (!rt.topo && load_topology(&rt.topo, why, sizeof why) != 0)
        rt.topo = NULL;
    if (rt.topo && !getenv("TESSERA_TOPOLOGY")) {
        int n = rt.use_smt ? tsr_topology_allowed_pus(rt.topo) : tsr_topology_allowed_cores(rt.topo);
        if (n > 0)
            return n;
    }
    return tsr_threads_allowed_cpus();
}

int tessera_set_threads(int n, char *err, size_t err_len)
{
    if (n < 0 || n > 4096)
        return tsr_fail(err, err_len, "thread count %d: expected 1 to 4096, or 0 for the default", n);
    int resolved;
    if (tsr_threads_resolve(n, &resolved, err, err_len) != 0)
        return -1;
    pthread_mutex_lock(&rt.lock);
    if (resolved == 0)
        resolved = default_threads();
    rt.threads = resolved;
    forget_plan();
    pthread_mutex_unlock(&rt.lock);
#ifdef _OPENMP
    omp_set_num_threads(resolved);
#endif
    return 0;
}

int tessera_threads(void)
{
    pthread_mutex_lock(&rt.lock);
    int n = rt.threads;
    pthread_mutex_unlock(&rt.lock);
    if (n == 0) {
        if (tessera_set_threads(0, NULL, 0) != 0)
            tessera_set_threads(1, NULL, 0);
        pthread_mutex_lock(&rt.lock);
        n = rt.threads;
        pthread_mutex_unlock(&rt.lock);
    }
    return n;
}

int tsr_team_threads(void) { return tessera_threads(); }

/* TESSERA_NUMA when tessera_set_placement gave no policy. */
static int numa_from_env(tsr_numa_policy *policy, char *err, size_t err_len)
{
    const char *env = getenv("TESSERA_NUMA");
    *policy = TSR_NUMA_AUTO;
    if (!env || !*env)
        return 0;
    if (tsr_numa_policy_parse(env, policy, err, err_len) != 0)
        return tsr_fail_prefix(err, err_len, "TESSERA_NUMA");
    return 0;
}

/* The policy tessera_set_placement chose, else TESSERA_NUMA's. */
static int numa_policy(tsr_numa_policy *policy, char *err, size_t err_len)
{
    *policy = rt.numa;
    return rt.numa_set ? 0 : numa_from_env(policy, err, err_len);
}

int tessera_set_placement(const char *numa, int use_smt, char *err, size_t err_len)
{
    tsr_numa_policy policy;
    if (numa ? tsr_numa_policy_parse(numa, &policy, err, err_len)
             : numa_from_env(&policy, err, err_len))
        return -1;
    pthread_mutex_lock(&rt.lock);
    rt.numa = policy;
    rt.numa_set = 1;
    rt.use_smt = use_smt != 0;
    forget_plan();
    /* Read the topology now, so that a bad TESSERA_TOPOLOGY is reported
     * here rather than in the middle of loading a model. */
    int rc = rt.topo ? 0 : load_topology(&rt.topo, err, err_len);
    if (rc != 0 && !getenv("TESSERA_TOPOLOGY")) {
        rt.topo = NULL; /* no hwloc view of this machine: plans are unbound */
        rc = 0;
    }
    pthread_mutex_unlock(&rt.lock);
    return rc;
}

/* The topology to place on: this machine's, or TESSERA_TOPOLOGY (an hwloc
 * synthetic description such as "pack:2 numa:1 core:8 pu:2", or an XML file)
 * to see or test the plan of another machine; threads then stay unbound. */
static int load_topology(tsr_topology **topo, char *err, size_t err_len)
{
    const char *what = getenv("TESSERA_TOPOLOGY");
    if (!what || !*what)
        return tsr_topology_load_system(topo, err, err_len);
    int rc = strchr(what, ':') ? tsr_topology_load_synthetic(what, topo, err, err_len)
                               : tsr_topology_load_xml(what, topo, err, err_len);
    return rc != 0 ? tsr_fail_prefix(err, err_len, "TESSERA_TOPOLOGY") : 0;
}

/* Each thread of the pool binds itself once; a refusal is noted, not fatal. */
static void bind_pool(void)
{
    int n = rt.plan.n_threads;
    rt.bind_note[0] = '\0';
    if (!rt.plan.bound || getenv("TESSERA_TOPOLOGY"))
        return;
#pragma omp parallel num_threads(n)
    {
        char msg[200];
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        if (tsr_placement_bind_thread(rt.topo, &rt.plan, t, msg, sizeof msg) < 0) {
#pragma omp critical(tsr_bind_note)
            if (!rt.bind_note[0])
                snprintf(rt.bind_note, sizeof rt.bind_note, "thread %d not bound: %s", t, msg);
        }
    }
}

static int make_plan(uint64_t weight_bytes, char *err, size_t err_len)
{
    char why[256];
    tsr_placement_request req = {.threads = rt.threads, .use_smt = rt.use_smt,
                                 .weight_bytes = weight_bytes};
    if (numa_policy(&req.numa, err, err_len) != 0)
        return -1;
    if (!rt.topo && load_topology(&rt.topo, why, sizeof why) != 0) {
        if (getenv("TESSERA_TOPOLOGY"))
            return tsr_fail(err, err_len, "%s", why);
        rt.topo = NULL;
    }
    int rc = rt.topo ? tsr_placement_plan(rt.topo, &req, &rt.plan, err, err_len)
                     : tsr_placement_plan_unbound(&req, why, &rt.plan, err, err_len);
    if (rc != 0)
        return -1;
    rt.copy_of_thread = malloc((size_t)rt.plan.n_threads * sizeof *rt.copy_of_thread);
    if (!rt.copy_of_thread) {
        tsr_placement_free(&rt.plan);
        return tsr_fail(err, err_len, "out of memory for the placement plan");
    }
    for (int t = 0; t < rt.plan.n_threads; t++)
        rt.copy_of_thread[t] = rt.plan.groups[rt.plan.threads[t].group].copy;
    rt.have_plan = 1;
    bind_pool();
    return 0;
}

const tsr_placement *tsr_runtime_placement(uint64_t weight_bytes, const tsr_topology **topo,
                                           char *err, size_t err_len)
{
    tessera_threads();
    pthread_mutex_lock(&rt.lock);
    int rc = rt.have_plan ? 0 : make_plan(weight_bytes, err, err_len);
    *topo = rt.topo;
    pthread_mutex_unlock(&rt.lock);
    return rc == 0 ? &rt.plan : NULL;
}

int tsr_thread_copy(int thread)
{
    return rt.have_plan && thread < rt.plan.n_threads ? rt.copy_of_thread[thread] : 0;
}

int tessera_describe_placement(char *buf, size_t len, char *err, size_t err_len)
{
    const tsr_topology *topo;
    const tsr_placement *plan = tsr_runtime_placement(0, &topo, err, err_len);
    if (!plan)
        return -1;
    pthread_mutex_lock(&rt.lock);
    tsr_placement_describe(topo, plan, buf, len);
    if (rt.bind_note[0]) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used && buf[used - 1] != '\n' ? "\n" : "",
                 rt.bind_note);
    }
    pthread_mutex_unlock(&rt.lock);
    return 0;
}
