#include "threads/topology.h"

#include <stdio.h>

#include "tessera-config.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>

static int count(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);
    return n > 0 ? n : 0;
}

void tsr_topology_describe(char *buf, size_t len)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t) != 0 || hwloc_topology_load(t) != 0) {
        snprintf(buf, len, "unknown (hwloc could not read the topology)");
        return;
    }
    int packages = count(t, HWLOC_OBJ_PACKAGE), nodes = count(t, HWLOC_OBJ_NUMANODE);
    int cores = count(t, HWLOC_OBJ_CORE), pus = count(t, HWLOC_OBJ_PU);
    unsigned v = hwloc_get_api_version();
    snprintf(buf, len, "%d package%s, %d NUMA node%s, %d core%s, %d PU%s (hwloc %u.%u.%u)",
             packages, packages == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", cores,
             cores == 1 ? "" : "s", pus, pus == 1 ? "" : "s", v >> 16, (v >> 8) & 0xff, v & 0xff);
    hwloc_topology_destroy(t);
}
#else
void tsr_topology_describe(char *buf, size_t len)
{
    snprintf(buf, len, "unknown (this tessera was built without hwloc)");
}
#endif
