/* tessera_runtime_limits and tessera_runtime_read_bandwidth: the machine's
 * limits for a model's kernel set and compute type, measured on a runtime's
 * own threads (threads/limits.c), as tessera-perf measures them. */
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
    /* One buffer: memory's rate from the whole, the cache's from a quarter
     * of the cache, swept again and again so that it stays there. */
    tsr_bandwidth_buffer buf;
    size_t stream = tsr_memory_stream_bytes();
    if (tsr_bandwidth_buffer_init(&buf, stream, ex->threads) != 0)
        return tsr_fail_oom(err, err_len, "out of memory for the bandwidth buffer");
    out->memory_bytes_per_s =
        tsr_bandwidth_of_prefix(&buf, stream, ex->threads, BANDWIDTH_ROUNDS, NULL);
    if (out->cache_bytes >= ((size_t)1 << 20))
        out->cache_bytes_per_s = tsr_bandwidth_of_prefix(&buf, out->cache_bytes / 4, ex->threads,
                                                         4 * BANDWIDTH_ROUNDS, NULL);
    tsr_bandwidth_buffer_free(&buf);
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

typedef struct read_bandwidth {
    size_t bytes;
    double bytes_per_s;
} read_bandwidth;

/* Sweeps enough to read about 1 GiB, 4 to 16 of them: a small buffer's
 * sweep is short, and the best of many is the one no tick cut. */
static double sweep_rate(const tsr_exec *ex, const tsr_bandwidth_buffer *buf, size_t bytes)
{
    size_t rounds = ((size_t)1 << 30) / bytes;
    rounds = rounds < 4 ? 4 : rounds > 16 ? 16 : rounds;
    return tsr_bandwidth_of_prefix(buf, bytes, ex->threads, (int)rounds, NULL);
}

/* The best of the buffer, its half and its quarter. A cyclic sweep of a
 * buffer a little larger than the last level finds none of it there (each
 * line is evicted just before it comes round again), while a decoding step,
 * reading its layers in another order each time the keys and values come
 * between, keeps part: 1-thread base f32 greedy, 100 MiB a step on an Intel
 * whose sweep fell from 30 to 21 GB/s between 32 and 100 MiB, ran at 116 %
 * of the buffer's own rate. Data up to 4x a level's size is taken at that
 * level's rate: a bound no run beats. */
static int measure_read(const tsr_exec *ex, void *arg, char *err, size_t err_len)
{
    read_bandwidth *r = arg;
    size_t most = tsr_memory_stream_bytes(), bytes = r->bytes < most ? r->bytes : most;
    r->bytes_per_s = 0;
    tsr_bandwidth_buffer buf; /* the half and the quarter are its prefixes */
    if (tsr_bandwidth_buffer_init(&buf, bytes, ex->threads) != 0)
        return tsr_fail_oom(err, err_len, "out of memory for a %zu-byte bandwidth buffer", bytes);
    for (int part = 0; part < 3 && bytes >> part > 0; part++) {
        double rate = sweep_rate(ex, &buf, bytes >> part);
        r->bytes_per_s = rate > r->bytes_per_s ? rate : r->bytes_per_s;
    }
    tsr_bandwidth_buffer_free(&buf);
    return 0;
}

int tessera_runtime_read_bandwidth(tessera_runtime *rt, const tessera_model *m, size_t bytes,
                                   double *bytes_per_s, char *err, size_t err_len)
{
    if (!rt || !m || !bytes_per_s)
        return tsr_fail(err, err_len, "runtime read bandwidth: a NULL argument");
    if (bytes == 0)
        return tsr_fail(err, err_len, "runtime read bandwidth: a buffer of 0 bytes");
    read_bandwidth r = {bytes, 0};
    int rc = tsr_runtime_run(rt, m, measure_read, &r, err, err_len);
    *bytes_per_s = rc == 0 ? r.bytes_per_s : 0;
    return rc;
}
