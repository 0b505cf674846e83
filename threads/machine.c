/* The machine (threads/machine.h): its topology, read once, and the
 * process-wide NUMA policy that model loading and runtimes default to. */
#include "threads/machine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"

static struct machine {
    pthread_mutex_t lock;
    int loaded;
    int rc;               /* a malformed TESSERA_TOPOLOGY, reported every time */
    tsr_topology *topo;   /* NULL when none could be read */
    char why[256];        /* why there is none, or TESSERA_TOPOLOGY's error */
    int numa_set;         /* numa given by tessera_set_placement */
    tsr_numa_policy numa;
} machine = {.lock = PTHREAD_MUTEX_INITIALIZER};

int tsr_machine_topology(const tsr_topology **topo, char *err, size_t err_len)
{
    pthread_mutex_lock(&machine.lock);
    if (!machine.loaded) {
        machine.loaded = 1;
        const char *what = getenv("TESSERA_TOPOLOGY");
        if (what && *what) {
            int rc = strchr(what, ':')
                         ? tsr_topology_load_synthetic(what, &machine.topo, machine.why,
                                                       sizeof machine.why)
                         : tsr_topology_load_xml(what, &machine.topo, machine.why,
                                                 sizeof machine.why);
            if (rc != 0)
                machine.rc =
                    tsr_fail_prefix(TESSERA_ERR_INPUT, machine.why, sizeof machine.why,
                                    "TESSERA_TOPOLOGY");
        } else if (tsr_topology_load_system(&machine.topo, machine.why, sizeof machine.why) != 0) {
            machine.topo = NULL; /* no hwloc view of this machine: plans are unbound */
        }
    }
    int rc = machine.rc;
    *topo = machine.topo;
    if (rc != 0)
        tsr_fail(err, err_len, "%s", machine.why);
    pthread_mutex_unlock(&machine.lock);
    return rc;
}

/* Why the machine has no topology, for an unbound plan's reason. */
void tsr_machine_why(char *buf, size_t len)
{
    pthread_mutex_lock(&machine.lock);
    snprintf(buf, len, "%s", machine.why[0] ? machine.why : "no topology");
    pthread_mutex_unlock(&machine.lock);
}

/* TESSERA_NUMA, else auto. */
int tsr_numa_policy_from_env(tsr_numa_policy *policy, char *err, size_t err_len)
{
    const char *env = getenv("TESSERA_NUMA");
    *policy = TSR_NUMA_AUTO;
    if (!env || !*env)
        return 0;
    if (tsr_numa_policy_parse(env, policy, err, err_len) != 0)
        return tsr_fail_prefix(TESSERA_ERR_INPUT, err, err_len, "TESSERA_NUMA");
    return 0;
}

int tsr_default_numa_policy(tsr_numa_policy *policy, char *err, size_t err_len)
{
    pthread_mutex_lock(&machine.lock);
    int set = machine.numa_set;
    *policy = machine.numa;
    pthread_mutex_unlock(&machine.lock);
    return set ? 0 : tsr_numa_policy_from_env(policy, err, err_len);
}

void tsr_machine_set_numa_policy(tsr_numa_policy policy)
{
    pthread_mutex_lock(&machine.lock);
    machine.numa = policy;
    machine.numa_set = 1;
    pthread_mutex_unlock(&machine.lock);
}
