/* Process-wide runtime choices, for the library's own use. */
#ifndef TSR_CORE_RUNTIME_H
#define TSR_CORE_RUNTIME_H

/* Threads of every parallel region the library opens (tessera_threads():
 * --threads / tessera_set_threads, else the environment, else the cpuset).
 * Given explicitly to each region because OpenMP's own setting is per
 * calling thread. */
int tsr_team_threads(void);

#endif
