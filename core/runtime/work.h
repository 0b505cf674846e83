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
 * Only thread 0 writes, so nothing is locked; with no counters (ex->work
 * NULL) each bracket costs one branch. */
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

/* After it, its implicit barrier included. */
static inline void tsr_work_end(const tsr_exec *ex, double began)
{
    if (tsr_work_counted(ex))
        ex->work->divided_seconds += tsr_seconds() - began;
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
