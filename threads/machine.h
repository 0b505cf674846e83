/* The machine: its topology, read once per process, and the NUMA policy
 * that model loading and runtimes use when they are given none. Below the
 * model (which places its weight copies by it) and the runtimes (which bind
 * their threads by it). */
#ifndef TSR_THREADS_MACHINE_H
#define TSR_THREADS_MACHINE_H

#include <stddef.h>

#include "threads/placement.h"
#include "threads/topology.h"

/* The machine's topology (TESSERA_TOPOLOGY's instead, when set), read once
 * per process and read-only after; *topo is NULL when none can be read
 * (threads are then left unbound). A malformed TESSERA_TOPOLOGY is an error
 * every time it is asked for. */
int tsr_machine_topology(const tsr_topology **topo, char *err, size_t err_len);

/* The NUMA policy a model load uses when its options give none: the one
 * tessera_set_placement set, else TESSERA_NUMA's, else auto. */
int tsr_default_numa_policy(tsr_numa_policy *policy, char *err, size_t err_len);

/* Why the machine has no topology ("no topology" when nothing says), for an
 * unbound plan's reason. */
void tsr_machine_why(char *buf, size_t len);

/* TESSERA_NUMA's policy, else auto; a malformed value is bad input. */
int tsr_numa_policy_from_env(tsr_numa_policy *policy, char *err, size_t err_len);

/* tessera_set_placement's policy, which the default then is. */
void tsr_machine_set_numa_policy(tsr_numa_policy policy);

#endif
