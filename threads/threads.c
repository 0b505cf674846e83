#define _GNU_SOURCE
#include "threads/threads.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int tsr_threads_allowed_cpus(void)
{
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* A positive integer of at most 4096 from the environment, 0 when unset. */
static int env_count(const char *name, int *value, char *err, size_t err_len)
{
    const char *s = getenv(name);
    *value = 0;
    if (!s || !*s)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > 4096) {
        /* OMP_NUM_THREADS may be a list ("4,2"): its first entry counts. */
        if (end != s && *end == ',' && v >= 1 && v <= 4096 && name[0] == 'O') {
            *value = (int)v;
            return 0;
        }
        snprintf(err, err_len, "%s=%s: expected a thread count between 1 and 4096", name, s);
        return -1;
    }
    *value = (int)v;
    return 0;
}

int tsr_threads_resolve(int requested, int *threads, char *err, size_t err_len)
{
    int v;
    if (requested > 0) {
        *threads = requested;
        return 0;
    }
    if (env_count("TESSERA_NUM_THREADS", &v, err, err_len) != 0)
        return -1;
    if (v == 0 && env_count("OMP_NUM_THREADS", &v, err, err_len) != 0)
        return -1;
    *threads = v;
    return 0;
}

typedef struct apart {
    void (*fn)(void *);
    void *arg;
} apart;

static void *run_apart(void *p)
{
    apart *a = p;
    a->fn(a->arg);
    return NULL;
}

void tsr_threads_run_apart(void (*fn)(void *), void *arg)
{
    apart a = {fn, arg};
    pthread_t t;
    if (pthread_create(&t, NULL, run_apart, &a) != 0) {
        fn(arg);
        return;
    }
    pthread_join(t, NULL);
}
