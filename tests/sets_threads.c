/* The first calls into dispatch made from many threads at once: the CPU
 * probe (simd/cpu.c, once under pthread_once), every set's lookup (each
 * table built once under a lock) and the automatic choice (once). Every
 * thread must get the same features, the same tables and the same choice as
 * the others. A plain program, not Criterion, so that .ci/tsan can run it
 * under ThreadSanitizer (which cannot run Criterion's runner); make check
 * runs it too. Exit 0 when all agree, 1 otherwise, 99 when the setup fails. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "simd/cpu.h"
#include "simd/dispatch.h"

enum { THREADS = 8, MAX_ROWS = 16 };

typedef struct answers {
    const tsr_cpu_features *features;
    const tsr_kernels *table[MAX_ROWS];
    char why[MAX_ROWS][200];
    const tsr_kernels *chosen;
    char chosen_err[200];
} answers;

static pthread_barrier_t start;

static void *ask(void *arg)
{
    answers *a = arg;
    /* All threads leave the barrier together, so that their first calls
     * meet, in a different order in each. */
    pthread_barrier_wait(&start);
    a->features = tsr_cpu_features_get();
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        a->table[i] = tsr_kernels_lookup(tsr_kernel_sets[i].name, a->why[i], sizeof a->why[i]);
    a->chosen = tsr_kernels_select(a->chosen_err, sizeof a->chosen_err);
    return NULL;
}

int main(void)
{
    static answers got[THREADS];
    pthread_t threads[THREADS];
    if (tsr_kernel_set_count > MAX_ROWS) {
        fprintf(stderr, "sets_threads: %zu kernel sets, room for %d\n", tsr_kernel_set_count,
                MAX_ROWS);
        return 99;
    }
    if (pthread_barrier_init(&start, NULL, THREADS) != 0)
        return 99;
    for (int t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, ask, &got[t]) != 0) {
            fprintf(stderr, "sets_threads: pthread_create failed\n");
            return 99;
        }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);

    int wrong = 0;
    for (int t = 1; t < THREADS; t++) {
        wrong += got[t].features != got[0].features || got[t].chosen != got[0].chosen;
        for (size_t i = 0; i < tsr_kernel_set_count; i++)
            wrong += got[t].table[i] != got[0].table[i] ||
                     (!got[0].table[i] && strcmp(got[t].why[i], got[0].why[i]) != 0);
    }
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        const char *name = tsr_kernel_sets[i].name;
        if (got[0].table[i] && strcmp(got[0].table[i]->name, name) != 0) {
            fprintf(stderr, "sets_threads: the %s row's table calls itself %s\n", name,
                    got[0].table[i]->name);
            wrong++;
        }
        printf("kernel set %s: %s\n", name, got[0].table[i] ? "usable" : got[0].why[i]);
    }
    if (!got[0].chosen) {
        fprintf(stderr, "sets_threads: no set chosen: %s\n", got[0].chosen_err);
        wrong++;
    }
    if (wrong) {
        fprintf(stderr, "sets_threads: %d answers differ between %d threads\n", wrong, THREADS);
        return 1;
    }
    printf("%d threads at once: the same CPU features, tables and choice (%s)\n", THREADS,
           got[0].chosen->name);
    return 0;
}
