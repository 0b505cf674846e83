/* Reads an hwloc topology once into the plain arrays of tsr_topology. All the
 * hwloc calls of the threads/ folder live here and in numa_memory.c, so that
 * placement.c is ordinary C that builds and runs with or without hwloc. */
#include "threads/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/memory.h"
#include "tessera-config.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

void tsr_topology_free(tsr_topology *topo)
{
    if (!topo)
        return;
#ifdef HAVE_HWLOC
    if (topo->hwloc)
        hwloc_topology_destroy((hwloc_topology_t)topo->hwloc);
#endif
    tsr_free(topo->nodes);
    tsr_free(topo->cores);
    tsr_free(topo->pus);
    tsr_free(topo);
}

int tsr_topology_allowed_pus(const tsr_topology *topo)
{
    int n = 0;
    for (int i = 0; i < topo->n_pus; i++)
        n += topo->pus[i].allowed != 0;
    return n;
}

int tsr_topology_allowed_cores(const tsr_topology *topo)
{
    int n = 0;
    for (int i = 0; i < topo->n_cores; i++)
        n += topo->cores[i].n_allowed_pus > 0;
    return n;
}

/* "48 KiB", "1 MiB", "1.5 MiB", "64.0 GiB": exact units when they divide. */
static void format_bytes(uint64_t bytes, char *buf, size_t len)
{
    const uint64_t kib = 1024, mib = kib * 1024, gib = mib * 1024;
    if (bytes >= gib)
        snprintf(buf, len, "%.1f GiB", (double)bytes / (double)gib);
    else if (bytes >= mib && bytes % mib == 0)
        snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes / mib));
    else if (bytes >= mib)
        snprintf(buf, len, "%.1f MiB", (double)bytes / (double)mib);
    else if (bytes >= kib && bytes % kib == 0)
        snprintf(buf, len, "%llu KiB", (unsigned long long)(bytes / kib));
    else
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

void tsr_topology_summary(const tsr_topology *topo, char *buf, size_t len)
{
    uint64_t memory = 0;
    for (int i = 0; i < topo->n_nodes; i++)
        memory += topo->nodes[i].memory_bytes;
    char mem[32], l1[32], l2[32], l3[32];
    format_bytes(memory, mem, sizeof mem);
    format_bytes(topo->l1d.bytes, l1, sizeof l1);
    format_bytes(topo->l2.bytes, l2, sizeof l2);
    format_bytes(topo->l3.bytes, l3, sizeof l3);
    int cores = tsr_topology_allowed_cores(topo), pus = tsr_topology_allowed_pus(topo);
    char allowed[64] = "";
    if (cores != topo->n_cores || pus != topo->n_pus)
        snprintf(allowed, sizeof allowed, " (%d core%s, %d PU%s allowed)", cores, plural(cores),
                 pus, plural(pus));
    snprintf(buf, len,
             "%d package%s, %d NUMA node%s (%s), %d core%s, %d PU%s%s; L1d %s, L2 %s, L3 %s",
             topo->n_packages, plural(topo->n_packages), topo->n_nodes, plural(topo->n_nodes),
             memory ? mem : "memory unknown", topo->n_cores, plural(topo->n_cores), topo->n_pus,
             plural(topo->n_pus), allowed, topo->l1d.bytes ? l1 : "-", topo->l2.bytes ? l2 : "-",
             topo->l3.bytes ? l3 : "-");
    size_t used = strlen(buf);
    if (topo->caches_from_cpuid && used < len)
        snprintf(buf + used, len - used, " (%d level%s from CPUID)", topo->caches_from_cpuid,
                 plural(topo->caches_from_cpuid));
}

int tsr_topology_fill_caches(tsr_topology *topo, const size_t known[3])
{
    tsr_topo_cache *level[3] = {&topo->l1d, &topo->l2, &topo->l3};
    int filled = 0;
    for (int i = 0; i < 3; i++)
        if (level[i]->bytes == 0 && known[i] > 0) {
            level[i]->bytes = known[i];
            level[i]->cores_sharing = 0; /* CPUID's count is the host's, not this guest's */
            filled++;
        }
    topo->caches_from_cpuid += filled;
    return filled;
}

#ifdef HAVE_HWLOC

/* What glibc's sysconf reads from CPUID (leaf 4 on Intel, 0x8000001D on
 * AMD) for the levels hwloc found no size for. */
static void fill_caches_from_cpuid(tsr_topology *topo)
{
    size_t known[3] = {0, 0, 0};
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE) && \
    defined(_SC_LEVEL3_CACHE_SIZE)
    long v[3] = {sysconf(_SC_LEVEL1_DCACHE_SIZE), sysconf(_SC_LEVEL2_CACHE_SIZE),
                 sysconf(_SC_LEVEL3_CACHE_SIZE)};
    for (int i = 0; i < 3; i++)
        known[i] = v[i] > 0 ? (size_t)v[i] : 0;
#endif
    tsr_topology_fill_caches(topo, known);
}

static int count_of(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);
    return n > 0 ? n : 0;
}

/* The NUMA node with the smallest cpuset that still covers `set`: a core's own
 * node rather than a machine-wide memory (CXL, or a node hwloc attached to
 * the Machine). Ties go to the lower logical index. hwloc 2 gives every PU a
 * local node; the fallback to node 0 only guards against odd XML files. */
static int closest_node(hwloc_topology_t t, hwloc_const_cpuset_t set)
{
    int best = -1, best_weight = 0;
    for (int i = 0; i < count_of(t, HWLOC_OBJ_NUMANODE); i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        if (hwloc_bitmap_iszero(node->cpuset) || !hwloc_bitmap_isincluded(set, node->cpuset))
            continue;
        int weight = hwloc_bitmap_weight(node->cpuset);
        if (best < 0 || (weight >= 0 && weight < best_weight)) {
            best = i;
            best_weight = weight;
        }
    }
    return best >= 0 || count_of(t, HWLOC_OBJ_NUMANODE) == 0 ? best : 0;
}

/* The first data (or unified) cache of `level` above obj. */
static tsr_topo_cache cache_above(hwloc_topology_t t, hwloc_obj_t obj, unsigned level)
{
    tsr_topo_cache c = {0, 0};
    for (hwloc_obj_t o = obj; o; o = o->parent) {
        if (!hwloc_obj_type_is_dcache(o->type) || o->attr->cache.depth != level)
            continue;
        c.bytes = (size_t)o->attr->cache.size;
        c.cores_sharing = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_CORE);
        if (c.cores_sharing <= 0)
            c.cores_sharing = 1;
        break;
    }
    return c;
}

static void read_nodes(hwloc_topology_t t, tsr_topology *topo)
{
    hwloc_const_nodeset_t allowed = hwloc_topology_get_allowed_nodeset(t);
    for (int i = 0; i < topo->n_nodes; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
        topo->nodes[i].os_index = (int)node->os_index;
        topo->nodes[i].memory_bytes = node->attr->numanode.local_memory;
        topo->nodes[i].memory_allowed = hwloc_bitmap_isset(allowed, node->os_index);
    }
}

/* PUs in logical order; a new core starts whenever the Core above changes, which
 * keeps siblings adjacent because logical order walks the tree depth first. */
static void read_cores_and_pus(hwloc_topology_t t, hwloc_const_cpuset_t allowed, tsr_topology *topo)
{
    hwloc_obj_t previous_core = NULL;
    topo->n_cores = 0;
    for (int i = 0; i < topo->n_pus; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, (unsigned)i);
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_CORE, pu);
        if (!core || core != previous_core) {
            hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, pu);
            tsr_topo_core *c = &topo->cores[topo->n_cores++];
            c->first_pu = i;
            c->n_pus = 0;
            c->n_allowed_pus = 0;
            c->node = closest_node(t, core ? core->cpuset : pu->cpuset);
            c->package = package ? (int)package->logical_index : -1;
        }
        previous_core = core;
        tsr_topo_core *c = &topo->cores[topo->n_cores - 1];
        tsr_topo_pu *p = &topo->pus[i];
        p->os_index = (int)pu->os_index;
        p->core = topo->n_cores - 1;
        p->allowed = hwloc_bitmap_isset(allowed, pu->os_index);
        c->n_pus++;
        c->n_allowed_pus += p->allowed != 0;
    }
}

static void read_caches(hwloc_topology_t t, tsr_topology *topo)
{
    for (int i = 0; i < topo->n_pus; i++) {
        if (!topo->pus[i].allowed)
            continue;
        hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, (unsigned)i);
        topo->l1d = cache_above(t, pu, 1);
        topo->l2 = cache_above(t, pu, 2);
        topo->l3 = cache_above(t, pu, 3);
        return;
    }
}

/* Allowed PUs: hwloc's allowed cpuset (cgroups, or the XML's allowed_cpuset),
 * and for this machine also the calling thread's affinity mask, which is what
 * taskset or a batch scheduler set and every new thread inherits. (The
 * process binding would be the union over all threads, widened by any helper
 * thread that is not bound.) */
static hwloc_bitmap_t allowed_cpuset(hwloc_topology_t t, int is_system)
{
    hwloc_bitmap_t allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t));
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (allowed && bound && is_system &&
        (hwloc_get_cpubind(t, bound, HWLOC_CPUBIND_THREAD) == 0 ||
         hwloc_get_cpubind(t, bound, HWLOC_CPUBIND_PROCESS) == 0) &&
        hwloc_bitmap_intersects(allowed, bound))
        hwloc_bitmap_and(allowed, allowed, bound);
    hwloc_bitmap_free(bound);
    return allowed;
}

/* Takes ownership of t (destroyed on failure). */
static int extract(hwloc_topology_t t, int is_system, const char *source, tsr_topology **out,
                   char *err, size_t err_len)
{
    tsr_topology *topo = tsr_calloc(1, sizeof *topo);
    hwloc_bitmap_t allowed = allowed_cpuset(t, is_system);
    if (topo) {
        topo->hwloc = t;
        topo->n_packages = count_of(t, HWLOC_OBJ_PACKAGE);
        topo->n_nodes = count_of(t, HWLOC_OBJ_NUMANODE);
        topo->n_pus = count_of(t, HWLOC_OBJ_PU);
        topo->nodes = tsr_calloc((size_t)topo->n_nodes + 1, sizeof *topo->nodes);
        topo->cores = tsr_calloc((size_t)topo->n_pus + 1, sizeof *topo->cores);
        topo->pus = tsr_calloc((size_t)topo->n_pus + 1, sizeof *topo->pus);
    }
    if (!topo || !allowed || !topo->nodes || !topo->cores || !topo->pus) {
        hwloc_bitmap_free(allowed);
        if (topo)
            tsr_topology_free(topo);
        else
            hwloc_topology_destroy(t);
        return tsr_fail_oom(err, err_len, "%s: out of memory reading the topology", source);
    }
    read_nodes(t, topo);
    read_cores_and_pus(t, allowed, topo);
    hwloc_bitmap_free(allowed);
    read_caches(t, topo);
    topo->this_system = hwloc_topology_is_thissystem(t);
    if (is_system)
        fill_caches_from_cpuid(topo);
    snprintf(topo->source, sizeof topo->source, "%s", source);
    if (topo->n_pus == 0 || tsr_topology_allowed_pus(topo) == 0) {
        tsr_topology_free(topo);
        return tsr_fail(err, err_len, "%s: the topology has no allowed PU", source);
    }
    *out = topo;
    return 0;
}

enum topology_source { FROM_SYSTEM, FROM_SYNTHETIC, FROM_XML };

static int load(enum topology_source kind, const char *arg, tsr_topology **out, char *err,
                size_t err_len)
{
    char source[160];
    hwloc_topology_t t;
    *out = NULL;
    if (kind == FROM_SYSTEM)
        snprintf(source, sizeof source, "this machine");
    else
        snprintf(source, sizeof source, "%s: %s", kind == FROM_XML ? "xml" : "synthetic", arg);
    if (hwloc_topology_init(&t) != 0)
        return tsr_fail(err, err_len, "%s: hwloc_topology_init failed", source);
    unsigned long flags = HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED;
    if (kind == FROM_SYSTEM)
        flags |= HWLOC_TOPOLOGY_FLAG_DONT_CHANGE_BINDING;
    int rc = hwloc_topology_set_flags(t, flags);
    if (rc == 0 && kind == FROM_SYNTHETIC)
        rc = hwloc_topology_set_synthetic(t, arg);
    if (rc == 0 && kind == FROM_XML)
        rc = hwloc_topology_set_xml(t, arg);
    if (rc == 0)
        rc = hwloc_topology_load(t);
    if (rc != 0) {
        int saved = errno;
        hwloc_topology_destroy(t);
        return tsr_fail(err, err_len, "%s: hwloc could not %s it (%s)", source,
                        kind == FROM_SYSTEM ? "read" : "parse", strerror(saved));
    }
    return extract(t, kind == FROM_SYSTEM, source, out, err, err_len);
}

int tsr_topology_load_system(tsr_topology **out, char *err, size_t err_len)
{
#ifdef __linux__
    /* hwloc reads Linux's topology from sysfs; without it (a chroot that
     * mounts none) it prints "failed to find sysfs cpu topology directory"
     * on the process's stderr, where a command's errors go. Seen first. */
    if (access("/sys/devices/system/cpu", F_OK) != 0) {
        *out = NULL;
        return tsr_fail(err, err_len, "this machine: /sys/devices/system/cpu is not there (is "
                                      "sysfs mounted?), so hwloc cannot read the topology");
    }
#endif
    return load(FROM_SYSTEM, NULL, out, err, err_len);
}

int tsr_topology_load_synthetic(const char *description, tsr_topology **out, char *err,
                                size_t err_len)
{
    return load(FROM_SYNTHETIC, description, out, err, err_len);
}

int tsr_topology_load_xml(const char *path, tsr_topology **out, char *err, size_t err_len)
{
    return load(FROM_XML, path, out, err, err_len);
}

int tsr_topology_restrict(tsr_topology *topo, const char *pu_list, char *err, size_t err_len)
{
    hwloc_bitmap_t keep = hwloc_bitmap_alloc();
    if (!keep)
        return tsr_fail_oom(err, err_len, "restrict: out of memory");
    if (hwloc_bitmap_list_sscanf(keep, pu_list) != 0) {
        hwloc_bitmap_free(keep);
        return tsr_fail(err, err_len, "restrict: '%s' is not a PU list such as 0-3,8", pu_list);
    }
    int remaining = 0;
    for (int i = 0; i < topo->n_pus; i++)
        remaining += topo->pus[i].allowed && hwloc_bitmap_isset(keep, (unsigned)topo->pus[i].os_index);
    if (remaining == 0) {
        hwloc_bitmap_free(keep);
        return tsr_fail(err, err_len, "restrict: no allowed PU is in '%s'", pu_list);
    }
    for (int i = 0; i < topo->n_cores; i++)
        topo->cores[i].n_allowed_pus = 0;
    for (int i = 0; i < topo->n_pus; i++) {
        tsr_topo_pu *p = &topo->pus[i];
        p->allowed = p->allowed && hwloc_bitmap_isset(keep, (unsigned)p->os_index);
        topo->cores[p->core].n_allowed_pus += p->allowed;
    }
    hwloc_bitmap_free(keep);
    read_caches((hwloc_topology_t)topo->hwloc, topo);
    topo->caches_from_cpuid = 0;
    if (topo->this_system)
        fill_caches_from_cpuid(topo);
    return 0;
}

int tsr_topology_bind_thread(const tsr_topology *topo, int pu_os, char *err, size_t err_len)
{
    if (!topo->this_system)
        return tsr_fail(err, err_len, "cannot bind to PU %d: the topology (%s) is not this machine's",
                        pu_os, topo->source);
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return tsr_fail_oom(err, err_len, "cannot bind to PU %d: out of memory", pu_os);
    hwloc_bitmap_only(set, (unsigned)pu_os);
    int rc = hwloc_set_cpubind((hwloc_topology_t)topo->hwloc, set, HWLOC_CPUBIND_THREAD);
    int saved = errno;
    hwloc_bitmap_free(set);
    if (rc != 0)
        return tsr_fail(err, err_len, "binding a thread to PU %d was refused: %s", pu_os,
                        strerror(saved));
    return 0;
}

void tsr_topology_describe(char *buf, size_t len)
{
    tsr_topology *topo;
    char err[256];
    if (tsr_topology_load_system(&topo, err, sizeof err) != 0) {
        snprintf(buf, len, "unknown (%s)", err);
        return;
    }
    /* The library's own version (hwloc_get_api_version gives the API level,
     * which lags behind: 2.8.0 for hwloc 2.9). */
    hwloc_obj_t root = hwloc_get_root_obj((hwloc_topology_t)topo->hwloc);
    const char *version = hwloc_obj_get_info_by_name(root, "hwlocVersion");
    char summary[384];
    tsr_topology_summary(topo, summary, sizeof summary);
    snprintf(buf, len, "%s (hwloc %s)", summary, version ? version : "version unknown");
    tsr_topology_free(topo);
}

#else /* !HAVE_HWLOC */

static int no_hwloc(tsr_topology **out, char *err, size_t err_len)
{
    *out = NULL;
    return tsr_fail(err, err_len, "no topology: this tessera was built without hwloc");
}

int tsr_topology_load_system(tsr_topology **out, char *err, size_t err_len)
{
    return no_hwloc(out, err, err_len);
}

int tsr_topology_load_synthetic(const char *description, tsr_topology **out, char *err,
                                size_t err_len)
{
    (void)description;
    return no_hwloc(out, err, err_len);
}

int tsr_topology_load_xml(const char *path, tsr_topology **out, char *err, size_t err_len)
{
    (void)path;
    return no_hwloc(out, err, err_len);
}

int tsr_topology_restrict(tsr_topology *topo, const char *pu_list, char *err, size_t err_len)
{
    (void)topo;
    (void)pu_list;
    return tsr_fail(err, err_len, "restrict: this tessera was built without hwloc");
}

int tsr_topology_bind_thread(const tsr_topology *topo, int pu_os, char *err, size_t err_len)
{
    (void)topo;
    return tsr_fail(err, err_len, "cannot bind to PU %d: this tessera was built without hwloc",
                    pu_os);
}

void tsr_topology_describe(char *buf, size_t len)
{
    snprintf(buf, len, "unknown (this tessera was built without hwloc)");
}

#endif
