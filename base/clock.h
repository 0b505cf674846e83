/* Seconds on a monotonic clock: what the library times its own work with
 * (a call's counters, the machine's limits). */
#ifndef TSR_BASE_CLOCK_H
#define TSR_BASE_CLOCK_H

#include <time.h>

static inline double tsr_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
