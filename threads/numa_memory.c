/* NUMA-placed buffers through hwloc_alloc_membind, with plain aligned memory
 * as the fallback whenever binding is impossible (see numa_memory.h). */
#include "threads/numa_memory.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "tessera-config.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif

static void note_where(tsr_numa_block *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_where(tsr_numa_block *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->where, sizeof b->where, fmt, ap);
    va_end(ap);
}

int tsr_numa_alloc_plain(size_t bytes, tsr_numa_block *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    out->data = tsr_alloc(bytes ? bytes : 1, 1);
    if (!out->data)
        return tsr_fail_oom(err, err_len, "out of memory allocating %zu bytes", bytes);
    out->bytes = bytes;
    note_where(out, "plain");
    return 0;
}

/* Plain memory standing in for bound memory, with why in `where`. */
static int plain_instead(const char *what, const char *why, size_t bytes, tsr_numa_block *out,
                         char *err, size_t err_len)
{
    if (tsr_numa_alloc_plain(bytes, out, err, err_len) != 0)
        return -1;
    note_where(out, "plain (%s: %s)", what, why);
    return 0;
}

static int check_nodes(const tsr_topology *topo, const int *nodes, int n, char *err, size_t err_len)
{
    if (!topo || n < 1)
        return tsr_fail(err, err_len, "NUMA allocation: no topology or no node given");
    for (int i = 0; i < n; i++)
        if (nodes[i] < 0 || nodes[i] >= topo->n_nodes)
            return tsr_fail(err, err_len, "NUMA allocation: node index %d is not in 0..%d",
                            nodes[i], topo->n_nodes - 1);
    return 0;
}

#ifdef HAVE_HWLOC

/* "node 1" or "nodes 0, 1" (OS indexes). */
static void nodes_text(const tsr_topology *topo, const int *nodes, int n, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "node%s ", n == 1 ? "" : "s");
    for (int i = 0; i < n && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%d", i ? ", " : "", topo->nodes[nodes[i]].os_index);
        used += w > 0 ? (size_t)w : 0;
    }
}

static int alloc_bound(const tsr_topology *topo, const int *nodes, int n, int interleave,
                       size_t bytes, tsr_numa_block *out, char *err, size_t err_len)
{
    char what[160], where[112];
    nodes_text(topo, nodes, n, where, sizeof where);
    snprintf(what, sizeof what, "%s %s", interleave ? "interleaving over" : "binding to", where);
    if (!topo->this_system)
        return plain_instead(what, "the topology is not this machine's", bytes, out, err, err_len);
    hwloc_topology_t t = (hwloc_topology_t)topo->hwloc;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return tsr_fail_oom(err, err_len, "out of memory allocating %zu bytes", bytes);
    for (int i = 0; i < n; i++)
        hwloc_bitmap_set(set, (unsigned)topo->nodes[nodes[i]].os_index);
    hwloc_membind_policy_t policy = interleave ? HWLOC_MEMBIND_INTERLEAVE : HWLOC_MEMBIND_BIND;
    void *p = hwloc_alloc_membind(t, bytes ? bytes : 1, set, policy,
                                  HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    int saved = errno;
    hwloc_bitmap_free(set);
    if (!p)
        return plain_instead(what, strerror(saved), bytes, out, err, err_len);
    memset(out, 0, sizeof *out);
    out->data = p;
    out->bytes = bytes;
    out->hwloc = t;
    note_where(out, "%s %s", interleave ? "interleaved over" : "bound to", where);
    return 0;
}

void tsr_numa_free(tsr_numa_block *block)
{
    if (block->data && block->hwloc)
        hwloc_free((hwloc_topology_t)block->hwloc, block->data, block->bytes ? block->bytes : 1);
    else
        tsr_free(block->data);
    memset(block, 0, sizeof *block);
}

#else /* !HAVE_HWLOC */

static int alloc_bound(const tsr_topology *topo, const int *nodes, int n, int interleave,
                       size_t bytes, tsr_numa_block *out, char *err, size_t err_len)
{
    (void)topo;
    (void)nodes;
    (void)n;
    return plain_instead(interleave ? "interleaving" : "binding",
                         "this tessera was built without hwloc", bytes, out, err, err_len);
}

void tsr_numa_free(tsr_numa_block *block)
{
    tsr_free(block->data);
    memset(block, 0, sizeof *block);
}

#endif

int tsr_numa_alloc_on_node(const tsr_topology *topo, int node, size_t bytes,
                           tsr_numa_block *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (check_nodes(topo, &node, 1, err, err_len) != 0)
        return -1;
    return alloc_bound(topo, &node, 1, 0, bytes, out, err, err_len);
}

int tsr_numa_alloc_interleaved(const tsr_topology *topo, const int *nodes, int n_nodes,
                               size_t bytes, tsr_numa_block *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (check_nodes(topo, nodes, n_nodes, err, err_len) != 0)
        return -1;
    return alloc_bound(topo, nodes, n_nodes, 1, bytes, out, err, err_len);
}

int tsr_numa_alloc_copy(const tsr_topology *topo, const tsr_placement *plan, int copy,
                        size_t bytes, tsr_numa_block *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    if (copy < 0 || copy >= plan->n_copies)
        return tsr_fail(err, err_len, "weight copy %d: the plan has copies 0 to %d", copy,
                        plan->n_copies - 1);
    const tsr_weight_copy *c = &plan->copies[copy];
    if (c->kind == TSR_COPY_ON_NODE)
        return tsr_numa_alloc_on_node(topo, c->node, bytes, out, err, err_len);
    if (c->kind == TSR_COPY_PLAIN)
        return tsr_numa_alloc_plain(bytes, out, err, err_len);
    int *nodes = tsr_malloc((size_t)plan->n_groups * sizeof *nodes);
    if (!nodes)
        return tsr_fail_oom(err, err_len, "out of memory allocating %zu bytes", bytes);
    for (int g = 0; g < plan->n_groups; g++)
        nodes[g] = plan->groups[g].node;
    int rc = tsr_numa_alloc_interleaved(topo, nodes, plan->n_groups, bytes, out, err, err_len);
    tsr_free(nodes);
    return rc;
}
