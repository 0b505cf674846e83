/* tessera_runtime_limits: the machine's limits for a model's kernel set and
 * compute type, measured on a runtime's own threads (threads/limits.c), as
 * tessera-perf measures them. */
#include <string.h>

#include "base/errors.h"
#include "core/model/model.h"
#include "core/runtime/runtime.h"
#include "simd/sets.h"
#include "threads/limits.h"

#define PEAK_RUNS 25
#define BANDWIDTH_ROUNDS 4

static int measure(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    tessera_limits *out = arg;
    const tsr_kernel_set *set = tsr_kernel_set_find(ex->ks->name);
    if (set && set->fma_peak)
        out->f32_flops_per_s = tsr_measure_peak(set->fma_peak, ex->threads, PEAK_RUNS);
    const tsr_gemm_i8_kernel *i8 = ex->ks->gemm ? ex->ks->gemm->i8 : NULL;
    if (i8 && i8->peak)
        out->i8_ops_per_s = tsr_measure_peak(i8->peak, ex->threads, PEAK_RUNS);
    out->cache_bytes = tsr_last_level_cache_bytes();
    out->memory_bytes_per_s =
        tsr_measure_bandwidth(tsr_memory_stream_bytes(), ex->threads, BANDWIDTH_ROUNDS, NULL);
    /* A quarter of the cache, swept again and again, stays in it. */
    if (out->cache_bytes >= ((size_t)1 << 20))
        out->cache_bytes_per_s =
            tsr_measure_bandwidth(out->cache_bytes / 4, ex->threads, 4 * BANDWIDTH_ROUNDS, NULL);
    if (out->memory_bytes_per_s < 0 || out->cache_bytes_per_s < 0)
        return tsr_fail_oom(err, err_len, "out of memory for the bandwidth buffer");
    return 0;
}

int tessera_runtime_limits(tessera_runtime *rt, const tessera_model *m, tessera_limits *limits,
                           char *err, size_t err_len)
{
    if (!rt || !m || !limits)
        return tsr_fail(err, err_len, "runtime limits: a NULL argument");
    memset(limits, 0, sizeof *limits);
    return tsr_runtime_run(rt, m, measure, limits, err, err_len);
}
