/* Runtimes (core/runtime/runtime.h): a leader thread per runtime that runs its calls,
 * its OpenMP team, bound as its share of a workers x threads plan; and the
 * process-wide defaults behind the functions that take no runtime (the
 * machine itself is threads/machine.c's).
 *
 * Why a leader thread rather than the caller's: OpenMP makes the thread that
 * opens a parallel region the team's thread 0, and binding that thread would
 * bind the application's thread (whose affinity the threads it creates later
 * inherit). Every call is handed to the leader instead: the caller waits on a
 * condition variable, the leader runs the call with its own team, bound once
 * when the runtime starts. The hand-over costs two wake-ups per call (tens of
 * microseconds; measured in perf/RESULTS.md), against milliseconds for the
 * shortest translation. It also keeps N request threads from opening N
 * OpenMP teams: calls on one runtime queue on its lock. */
#include "core/runtime/runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/errors.h"
#include "base/memory.h"
#include "core/model/model.h"
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "threads/machine.h"
#include "threads/placement.h"
#include "threads/threads.h"
#include "threads/topology.h"

#ifdef _OPENMP
#include <omp.h>
#endif

const char *tessera_kernel_set(char *err, size_t err_len)
{
    const tsr_kernels *k = tsr_kernels_select(err, err_len);
    return k ? k->name : NULL;
}

const char *tessera_version(void) { return TESSERA_VERSION; }

/* ---- Runtimes ------------------------------------------------------------------- */

/* A call handed to the leader. */
typedef struct call {
    const tessera_model *m;
    tsr_call_fn fn;
    void *arg;
    char *err;
    size_t err_len;
    int rc;
    int done;
} call;

struct tessera_runtime {
    int threads;              /* K */
    int worker;
    int first;                /* its threads' indices in the plan: first .. first + K - 1 */
    tsr_placement plan;       /* every worker's threads */
    const tsr_topology *topo; /* the machine's, or NULL */
    int bind;                 /* its threads bind to the plan's PUs */
    char bind_note[200];      /* the first refusal, if any */
    int *copy_of_thread;      /* [K], rewritten per call for the call's model */
    double *arrived;          /* [K * TSR_WORK_STRIDE]: the call's barrier arrivals (work.h) */
    tsr_gemm_blocks blocks;
    size_t max_memory;        /* the memory budget of each call */
    tessera_runtime_stats stats; /* its calls' work, guarded by `lock` */

    pthread_mutex_t call_lock; /* one call at a time */
    pthread_mutex_t lock;      /* guards the hand-over below */
    pthread_cond_t cond;
    call *pending;
    int stop;
    pthread_t leader;
};

void tessera_runtime_options_init(tessera_runtime_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->workers = 1;
}

/* Each thread of the team binds itself to its PU of the plan, once, in a
 * first parallel region on the leader (OpenMP keeps a leader's team threads,
 * so the binding lasts). A refusal is noted, never fatal. */
static void bind_team(tessera_runtime *rt)
{
    if (!rt->bind)
        return;
#pragma omp parallel num_threads(rt->threads)
    {
        char msg[160];
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        if (tsr_placement_bind_thread(rt->topo, &rt->plan, rt->first + t, msg, sizeof msg) < 0) {
#pragma omp critical(tsr_bind_note)
            if (!rt->bind_note[0])
                snprintf(rt->bind_note, sizeof rt->bind_note, "thread %d not bound: %s", t, msg);
        }
    }
}

void tsr_runtime_exec(const tessera_runtime *rt, const tessera_model *m, tsr_kernels *table,
                      tsr_gemm_config *gemm, tsr_exec *ex)
{
    *table = *m->kernels;
    if (table->gemm) {
        *gemm = *table->gemm;
        const tsr_gemm_blocks *b = &rt->blocks;
        if (b->kc)
            gemm->kc = b->kc;
        if (b->a_block_floats)
            gemm->a_block_floats = b->a_block_floats;
        if (b->b_block_floats)
            gemm->b_block_floats = b->b_block_floats;
        if (b->i8_kc4)
            gemm->i8_kc4 = b->i8_kc4;
        if (b->decode_kc)
            gemm->decode_kc = b->decode_kc;
        table->gemm = gemm;
    }
    *ex = (tsr_exec){.m = m, .ks = table, .threads = rt->threads,
                     .copy_of_thread = rt->copy_of_thread, .memory_budget = rt->max_memory};
}

/* The call's context: the model's kernel table with this runtime's GEMM
 * blocking, and the weight copy on each thread's node. */
static int execute(tessera_runtime *rt, call *c)
{
    tsr_kernels table;
    tsr_gemm_config gemm;
    tsr_exec ex;
    for (int t = 0; t < rt->threads; t++)
        rt->copy_of_thread[t] = tsr_model_copy_for_node(c->m, rt->plan.threads[rt->first + t].node);
    tsr_runtime_exec(rt, c->m, &table, &gemm, &ex);
    memset(rt->arrived, 0, (size_t)rt->threads * TSR_WORK_STRIDE * sizeof *rt->arrived);
    tsr_work work = {.arrived = rt->arrived};
    ex.work = &work;
    double began = tsr_seconds();
    int rc = c->fn(&ex, c->arg, c->err, c->err_len);
    double seconds = tsr_seconds() - began;
    pthread_mutex_lock(&rt->lock);
    rt->stats.calls++;
    rt->stats.seconds += seconds;
    rt->stats.divided_seconds += work.divided_seconds;
    rt->stats.waited_seconds += work.waited_seconds;
    rt->stats.f32_flops += work.f32_flops;
    rt->stats.i8_ops += work.i8_ops;
    rt->stats.bytes += work.bytes;
    pthread_mutex_unlock(&rt->lock);
    return rc;
}

int tessera_runtime_stats_get(tessera_runtime *rt, tessera_runtime_stats *stats, int reset)
{
    if (!rt || !stats)
        return TESSERA_ERR_INPUT;
    pthread_mutex_lock(&rt->lock);
    *stats = rt->stats;
    if (reset)
        memset(&rt->stats, 0, sizeof rt->stats);
    pthread_mutex_unlock(&rt->lock);
    return 0;
}

static void *leader_main(void *arg)
{
    tessera_runtime *rt = arg;
    bind_team(rt);
    pthread_mutex_lock(&rt->lock);
    for (;;) {
        while (!rt->stop && (!rt->pending || rt->pending->done))
            pthread_cond_wait(&rt->cond, &rt->lock);
        if (rt->stop)
            break;
        call *c = rt->pending;
        pthread_mutex_unlock(&rt->lock);
        int rc = execute(rt, c);
        pthread_mutex_lock(&rt->lock);
        c->rc = rc;
        c->done = 1;
        pthread_cond_broadcast(&rt->cond);
    }
    pthread_mutex_unlock(&rt->lock);
    return NULL;
}

int tsr_runtime_run(tessera_runtime *rt, const tessera_model *m, tsr_call_fn fn, void *arg,
                    char *err, size_t err_len)
{
    call c = {.m = m, .fn = fn, .arg = arg, .err = err, .err_len = err_len};
    pthread_mutex_lock(&rt->call_lock);
    pthread_mutex_lock(&rt->lock);
    rt->pending = &c;
    pthread_cond_broadcast(&rt->cond);
    while (!c.done)
        pthread_cond_wait(&rt->cond, &rt->lock);
    rt->pending = NULL;
    pthread_mutex_unlock(&rt->lock);
    pthread_mutex_unlock(&rt->call_lock);
    return c.rc;
}

void tsr_runtime_set_gemm_blocks(tessera_runtime *rt, const tsr_gemm_blocks *blocks)
{
    rt->blocks = *blocks;
}

/* Bytes this process may still use: MemAvailable (Linux: free memory and
 * what the kernel can reclaim for it), else the free pages, and no more
 * than an address-space limit (ulimit -v), which a process meets first;
 * SIZE_MAX when nothing tells. */
static size_t memory_available(void)
{
    size_t bytes = SIZE_MAX;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kib;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                bytes = kib > SIZE_MAX / 1024 ? SIZE_MAX : (size_t)kib * 1024;
                break;
            }
        fclose(f);
    }
#ifdef _SC_AVPHYS_PAGES
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (bytes == SIZE_MAX && pages > 0 && page > 0)
        bytes = (size_t)pages > SIZE_MAX / (size_t)page ? SIZE_MAX : (size_t)pages * (size_t)page;
#endif
    struct rlimit as;
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
        (uintmax_t)as.rlim_cur < (uintmax_t)bytes)
        bytes = (size_t)as.rlim_cur;
    return bytes;
}

/* The default memory budget: half of what is available, shared by the
 * workers (the other half is the weights', the results', the caller's). */
static size_t default_memory_budget(int workers)
{
    size_t available = memory_available();
    if (available == SIZE_MAX)
        return SIZE_MAX;
    return available / 2 / (size_t)(workers > 0 ? workers : 1);
}

/* More threads than CPUs only slow a run down (and GNU OpenMP's waiting
 * threads spin): a count asked for may pass the CPUs this process may use
 * up to this many times, no more. */
#define THREADS_PER_CPU_MAX 8

/* A thread count asked for (threads per worker x workers) that the machine
 * and the process's limits can take: at most THREADS_PER_CPU_MAX per CPU
 * it may use, and within ulimit -u (RLIMIT_NPROC, which counts threads;
 * GNU OpenMP exits the process when it cannot start one, so it is checked
 * first, with the leader threads and the caller's counted too). */
static int check_thread_count(int threads, int asked, int workers, char *err, size_t err_len)
{
    /* Who asked: the options, or the variable tsr_threads_resolve read. */
    const char *who = "threads ";
    if (!asked) {
        const char *own = getenv("TESSERA_NUM_THREADS");
        who = own && *own ? "TESSERA_NUM_THREADS=" : "OMP_NUM_THREADS=";
    }
    long total = (long)threads * workers, cpus = tsr_threads_allowed_cpus();
    if (total > THREADS_PER_CPU_MAX * cpus)
        return tsr_fail(err, err_len,
                        "%s%d x %d worker%s: more than %d threads per CPU this process may use "
                        "(%ld CPUs)", who, threads, workers, workers == 1 ? "" : "s",
                        THREADS_PER_CPU_MAX, cpus);
    struct rlimit nproc;
    if (getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY &&
        (uintmax_t)(total + workers + 1) > (uintmax_t)nproc.rlim_cur)
        return tsr_fail(err, err_len,
                        "%s%d x %d worker%s: %ld threads with the workers' own and the "
                        "caller's, more than the process limit (ulimit -u %ju)", who, threads, workers,
                        workers == 1 ? "" : "s", total + workers + 1, (uintmax_t)nproc.rlim_cur);
    return 0;
}

/* The plan this runtime is a worker of. */
static int make_plan(const tessera_runtime_options *o, tessera_runtime *rt, char *err,
                     size_t err_len)
{
    int threads;
    TSR_TRY(tsr_threads_resolve(o->threads, &threads, err, err_len));
    if (threads > 0)
        TSR_TRY(check_thread_count(threads, o->threads > 0, o->workers, err, err_len));
    tsr_placement_request req = {.threads = threads, .workers = o->workers,
                                 .use_smt = o->use_smt};
    if (o->numa)
        TSR_TRY(tsr_numa_policy_parse(o->numa, &req.numa, err, err_len));
    else
        TSR_TRY(tsr_default_numa_policy(&req.numa, err, err_len));
    TSR_TRY(tsr_machine_topology(&rt->topo, err, err_len));
    if (rt->topo)
        return tsr_placement_plan(rt->topo, &req, &rt->plan, err, err_len);
    char why[256];
    tsr_machine_why(why, sizeof why);
    return tsr_placement_plan_unbound(&req, why, &rt->plan, err, err_len);
}

/* Everything a runtime holds once its locks exist, its thread stopped. */
static void release(tessera_runtime *rt)
{
    pthread_cond_destroy(&rt->cond);
    pthread_mutex_destroy(&rt->lock);
    pthread_mutex_destroy(&rt->call_lock);
    tsr_free(rt->copy_of_thread);
    tsr_free(rt->arrived);
    tsr_placement_free(&rt->plan);
    tsr_free(rt);
}

int tessera_runtime_create(const tessera_runtime_options *options, tessera_runtime **out,
                           char *err, size_t err_len)
{
    tessera_runtime_options o;
    if (!out)
        return tsr_fail(err, err_len, "runtime: the result pointer is NULL");
    *out = NULL;
    if (options)
        o = *options;
    else
        tessera_runtime_options_init(&o);
    if (o.workers < 0 || o.workers > 4096)
        return tsr_fail(err, err_len, "workers %d: expected 1 to 4096", o.workers);
    if (o.workers == 0)
        o.workers = 1;
    if (o.worker < 0 || o.worker >= o.workers)
        return tsr_fail(err, err_len, "worker %d: expected 0 to %d (workers %d)", o.worker,
                        o.workers - 1, o.workers);
    if (o.threads < 0 || o.threads > 4096)
        return tsr_fail(err, err_len, "threads %d: expected 1 to 4096, or 0 for the default",
                        o.threads);

    tessera_runtime *rt = tsr_calloc(1, sizeof *rt);
    if (!rt)
        return tsr_fail_oom(err, err_len, "out of memory for a runtime");
    int rc = make_plan(&o, rt, err, err_len);
    if (rc != 0) {
        tsr_free(rt);
        return rc;
    }
    rt->threads = rt->plan.threads_per_worker;
    rt->worker = o.worker;
    rt->first = o.worker * rt->threads;
    rt->bind = rt->plan.bound && rt->topo && rt->topo->this_system;
    rt->max_memory = o.max_memory ? o.max_memory : default_memory_budget(o.workers);
    rt->copy_of_thread = tsr_calloc((size_t)rt->threads, sizeof *rt->copy_of_thread);
    rt->arrived = tsr_calloc((size_t)rt->threads * TSR_WORK_STRIDE, sizeof *rt->arrived);
    if (!rt->copy_of_thread || !rt->arrived) {
        tsr_free(rt->copy_of_thread);
        tsr_free(rt->arrived);
        tsr_placement_free(&rt->plan);
        tsr_free(rt);
        return tsr_fail_oom(err, err_len, "out of memory for a runtime");
    }
    pthread_mutex_init(&rt->call_lock, NULL);
    pthread_mutex_init(&rt->lock, NULL);
    pthread_cond_init(&rt->cond, NULL);
    rc = pthread_create(&rt->leader, NULL, leader_main, rt);
    if (rc != 0) {
        release(rt);
        return tsr_fail_internal(err, err_len, "cannot start a runtime's thread: %s",
                                 strerror(rc));
    }
    *out = rt;
    return 0;
}

void tessera_runtime_free(tessera_runtime *rt)
{
    if (!rt)
        return;
    pthread_mutex_lock(&rt->lock);
    rt->stop = 1;
    pthread_cond_broadcast(&rt->cond);
    pthread_mutex_unlock(&rt->lock);
    pthread_join(rt->leader, NULL);
    release(rt);
}

int tessera_runtime_threads(const tessera_runtime *rt) { return rt ? rt->threads : 0; }

size_t tessera_runtime_memory_budget(const tessera_runtime *rt) { return rt ? rt->max_memory : 0; }

int tessera_cpus(void) { return tsr_threads_allowed_cpus(); }

int tessera_runtime_describe(const tessera_runtime *rt, char *buf, size_t len)
{
    if (len == 0)
        return 0;
    if (!rt || !buf)
        return TESSERA_ERR_INPUT;
    tsr_placement_describe(rt->topo, &rt->plan, buf, len);
    size_t used = strlen(buf);
    if (rt->plan.n_workers > 1 && used < len)
        used += (size_t)snprintf(buf + used, len - used,
                                 "this runtime: worker %d, threads %d-%d of the plan\n",
                                 rt->worker, rt->first, rt->first + rt->threads - 1);
    if (rt->bind_note[0] && used < len)
        snprintf(buf + used, len - used, "%s\n", rt->bind_note);
    return 0;
}

/* ---- Process-wide defaults ----------------------------------------------------- */

static struct defaults {
    pthread_mutex_t lock;
    int threads;   /* resolved count, 0 until first needed */
    int use_smt;
    tessera_runtime *runtime; /* made on first use */
} defaults = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* One thread per allowed core (per allowed PU with use_smt) of this machine's
 * topology, else per CPU of the affinity mask. */
static int default_threads(int use_smt)
{
    const tsr_topology *topo;
    if (!getenv("TESSERA_TOPOLOGY") && tsr_machine_topology(&topo, NULL, 0) == 0 && topo) {
        int n = use_smt ? tsr_topology_allowed_pus(topo) : tsr_topology_allowed_cores(topo);
        if (n > 0)
            return n;
    }
    return tsr_threads_allowed_cpus();
}

/* The settings changed: the default runtime is made anew on its next use.
 * Call with the lock. */
static void forget_default_runtime(void)
{
    tessera_runtime_free(defaults.runtime);
    defaults.runtime = NULL;
}

int tessera_set_threads(int n, char *err, size_t err_len)
{
    if (n < 0 || n > 4096)
        return tsr_fail(err, err_len, "thread count %d: expected 1 to 4096, or 0 for the default", n);
    int resolved;
    if (tsr_threads_resolve(n, &resolved, err, err_len) != 0)
        return -1;
    pthread_mutex_lock(&defaults.lock);
    defaults.threads = resolved ? resolved : default_threads(defaults.use_smt);
    forget_default_runtime();
    pthread_mutex_unlock(&defaults.lock);
    return 0;
}

int tessera_threads(void)
{
    pthread_mutex_lock(&defaults.lock);
    int n = defaults.threads;
    pthread_mutex_unlock(&defaults.lock);
    if (n == 0) {
        if (tessera_set_threads(0, NULL, 0) != 0)
            tessera_set_threads(1, NULL, 0);
        pthread_mutex_lock(&defaults.lock);
        n = defaults.threads;
        pthread_mutex_unlock(&defaults.lock);
    }
    return n;
}

int tessera_set_placement(const char *numa, int use_smt, char *err, size_t err_len)
{
    tsr_numa_policy policy;
    if (numa ? tsr_numa_policy_parse(numa, &policy, err, err_len)
             : tsr_numa_policy_from_env(&policy, err, err_len))
        return -1;
    /* Read the topology now, so that a bad TESSERA_TOPOLOGY is reported
     * here rather than in the middle of loading a model. */
    const tsr_topology *topo;
    if (tsr_machine_topology(&topo, err, err_len) != 0)
        return -1;
    tsr_machine_set_numa_policy(policy);
    pthread_mutex_lock(&defaults.lock);
    defaults.use_smt = use_smt != 0;
    forget_default_runtime();
    pthread_mutex_unlock(&defaults.lock);
    return 0;
}

tessera_runtime *tsr_default_runtime(char *err, size_t err_len)
{
    /* Both take the lock themselves: asked before it is held. */
    int threads = tessera_threads();
    tsr_numa_policy policy;
    if (tsr_default_numa_policy(&policy, err, err_len) != 0)
        return NULL;
    pthread_mutex_lock(&defaults.lock);
    if (!defaults.runtime) {
        tessera_runtime_options o;
        tessera_runtime_options_init(&o);
        o.threads = threads;
        o.use_smt = defaults.use_smt;
        o.numa = tsr_numa_policy_name(policy);
        if (tessera_runtime_create(&o, &defaults.runtime, err, err_len) != 0)
            defaults.runtime = NULL;
    }
    tessera_runtime *rt = defaults.runtime;
    pthread_mutex_unlock(&defaults.lock);
    return rt;
}

int tessera_describe_placement(char *buf, size_t len, char *err, size_t err_len)
{
    tessera_runtime *rt = tsr_default_runtime(err, err_len);
    if (!rt)
        return -1;
    return tessera_runtime_describe(rt, buf, len);
}
