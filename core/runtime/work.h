/* What a call's work was, counted as it runs, for tessera_runtime_stats
 * (tessera bench's serial_pct= and its check of the modeled work):
 *   - the time thread 0 of the team (the runtime's leader) spends in work
 *     divided among the threads: every `omp for` of the model's code is
 *     bracketed by tsr_work_begin / tsr_work_end. The rest of a call (the
 *     search's bookkeeping, a vocabulary's softmax and choice where they are
 *     not divided, opening teams) does not shrink with more threads: it is
 *     the serial share that decides how a call scales (Amdahl);
 *   - the arithmetic of the linear layers and attention, and the bytes they
 *     must stream: weights, keys and values, logits.
 *   - the imbalance: each divided loop ends without its barrier (nowait)
 *     and tsr_work_end is that barrier, timed: every thread notes when it
 *     arrives, and thread 0 adds the team's mean wait for the last one,
 *     counted from the loop's start on thread 0 (so within divided_seconds).
 * Thread 0 writes the counters and each thread its own arrival slots (two
 * that alternate: a thread can run at most one loop ahead of thread 0, which
 * reads them after the barrier), so nothing is locked; with no counters
 * (ex->work NULL) each bracket costs a branch and the barrier. */
#ifndef TSR_CORE_RUNTIME_WORK_H
#define TSR_CORE_RUNTIME_WORK_H

#include <stddef.h>

#include "base/clock.h"
#include "core/runtime/runtime.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static inline int tsr_work_counted(const tsr_exec *ex)
{
#ifdef _OPENMP
    return ex->work && omp_get_thread_num() == 0;
#else
    return ex->work != NULL;
#endif
}

/* Before a divided loop (every thread calls it; thread 0 reads the clock). */
static inline double tsr_work_begin(const tsr_exec *ex)
{
    return tsr_work_counted(ex) ? tsr_seconds() : 0.0;
}

/* After it (a `#pragma omp for ... nowait`): its barrier, timed. Every
 * thread of the team calls it. */
static inline void tsr_work_end(const tsr_exec *ex, double began)
{
    tsr_work *w = ex->work;
#ifdef _OPENMP
    int team = omp_get_num_threads();
    double *mine = w && w->arrived ? w->arrived + (size_t)omp_get_thread_num() * TSR_WORK_STRIDE
                                   : NULL;
    size_t slot = 0;
    if (mine && team > 1) {
        slot = 1 + ((size_t)mine[0] & 1);
        mine[slot] = tsr_seconds();
        mine[0] += 1;
    }
#pragma omp barrier
    if (tsr_work_counted(ex)) {
        double now = tsr_seconds();
        w->divided_seconds += now - began;
        if (mine && team > 1) {
            /* A thread that ran its part while thread 0 was still outside the
             * loop (serial work, counted as such) waits from the loop's start
             * on thread 0, no sooner: the waits stay within the divided time. */
            double last = began, sum = 0;
            for (int t = 0; t < team; t++) {
                double at = w->arrived[(size_t)t * TSR_WORK_STRIDE + slot];
                at = at > began ? at : began;
                last = at > last ? at : last;
                sum += at;
            }
            w->waited_seconds += last - sum / team;
        }
    }
#else
    if (w)
        w->divided_seconds += tsr_seconds() - began;
#endif
}

/* Work of one whole op (not one thread's share), counted once. */
static inline void tsr_work_add(const tsr_exec *ex, double f32_flops, double i8_ops, double bytes)
{
    if (tsr_work_counted(ex)) {
        ex->work->f32_flops += f32_flops;
        ex->work->i8_ops += i8_ops;
        ex->work->bytes += bytes;
    }
}

#endif
