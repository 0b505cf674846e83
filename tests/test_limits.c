/* The rule by which the machine's limits (threads/limits.c) keep a team's
 * run: its parts must have run side by side. A run in which one virtual
 * CPU ran its part only after the others had finished measures one core's
 * rate under the name of two, and a bound that low lets a case exceed it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "threads/limits.h"

Test(limits, parts_that_ran_at_once_overlap_fully)
{
    const double start[2] = {1.000, 1.000}, end[2] = {1.002, 1.002};
    cr_expect_float_eq(tsr_parts_overlap(start, end, 2), 1.0, 1e-12);
}

Test(limits, parts_run_one_after_another_do_not_overlap)
{
    /* The second thread's core given back only when the first was done. */
    const double start[2] = {1.000, 1.0025}, end[2] = {1.002, 1.0045};
    cr_expect_eq(tsr_parts_overlap(start, end, 2), 0.0);
}

Test(limits, a_late_start_counts_the_shared_time_over_the_longest_part)
{
    /* Together from 1.001 to 1.002; the longest part took 0.002 s. */
    const double start[3] = {1.000, 1.001, 1.0005}, end[3] = {1.002, 1.003, 1.0025};
    cr_expect_float_eq(tsr_parts_overlap(start, end, 3), 0.5, 1e-9);
}

Test(limits, one_part_always_overlaps_itself)
{
    const double start[1] = {2.0}, end[1] = {2.5};
    cr_expect_float_eq(tsr_parts_overlap(start, end, 1), 1.0, 1e-12);
}

/* A loop that no two threads can run at once: every run's parts are one
 * after another, as under a host that lends one core at a time (the part
 * that waits starts its clock with the other, so its overlap is 1/2, as
 * when a host takes its core for one whole run). */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static int serialized_calls;

static double serialized_loop(uint64_t iterations)
{
    volatile double x = 0;
    pthread_mutex_lock(&one_at_a_time);
    serialized_calls++;
    for (uint64_t i = 0; i < iterations; i++)
        x = x + 1.0;
    pthread_mutex_unlock(&one_at_a_time);
    return (double)iterations;
}

static int team_of_two(void)
{
    int team = 1;
#ifdef _OPENMP
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        team = omp_get_num_threads();
    }
#endif
    return team == 2;
}

Test(limits, a_team_that_never_runs_together_still_gets_its_best_rate)
{
    /* Every run is rejected; the retries end and the best of them is
     * returned (no timing is asserted: only that a rate comes back). */
    serialized_calls = 0;
    cr_expect_gt(tsr_measure_peak(serialized_loop, 2, 2), 0.0);
    /* No run counted, so 8 times the 2 runs asked for were made, each by
     * both threads: 32 calls besides the sizing ones (a limit that kept
     * every run would make 4). Without a team of two (a build without
     * OpenMP), the parts run one after another by design and count. */
    if (team_of_two())
        cr_expect_geq(serialized_calls, 32);
    cr_expect_gt(tsr_measure_peak(serialized_loop, 1, 2), 0.0);
}
