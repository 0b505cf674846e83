/* The rule by which the machine's limits (threads/limits.c) keep a team's
 * run: its parts must have run side by side. A run in which one virtual
 * CPU ran its part only after the others had finished measures one core's
 * rate under the name of two, and a bound that low lets a case exceed it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

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
 * when a host takes its core for one whole run). Not a deterministic
 * rejection: should the holder be preempted while the other waits, their
 * overlap grows past 3/4 and that run counts (seen in make distcheck
 * under load), so the test asks only for a rate, and counts no retries. */
static pthread_mutex_t one_at_a_time = PTHREAD_MUTEX_INITIALIZER;

static double serialized_loop(uint64_t iterations)
{
    volatile double x = 0;
    pthread_mutex_lock(&one_at_a_time);
    for (uint64_t i = 0; i < iterations; i++)
        x = x + 1.0;
    pthread_mutex_unlock(&one_at_a_time);
    return (double)iterations;
}

Test(limits, a_team_that_never_runs_together_still_gets_its_best_rate)
{
    /* Most or all runs are rejected; the retries end and the best is
     * returned (no timing is asserted: only that a rate comes back). */
    cr_expect_gt(tsr_measure_peak(serialized_loop, 2, 2), 0.0);
    cr_expect_gt(tsr_measure_peak(serialized_loop, 1, 2), 0.0);
}
