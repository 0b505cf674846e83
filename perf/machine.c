/*
 * The two ceilings every result is compared with, measured at start on this
 * machine rather than taken from a data sheet (a VM's clock and a shared
 * socket's bandwidth are whatever they are today):
 *
 *   peak       the FMA throughput of each kernel set's loop (its row's fma_peak),
 *              best of many 2 ms runs on every thread asked for (peak.c); with
 *              --type int8, also the int8 throughput of the set's int8
 *              kernel's instructions (perf/peak-int8-*.c), measured alike;
 *   bandwidth  a streaming read of a buffer several times the last-level
 *              cache, timed in chunks of 4 MiB, best chunk of several sweeps:
 *              what a decode step that streams the weights of the whole model
 *              can hope for. Read both as one sequential stream per thread
 *              and as MAX_STREAMS streams side by side; the better is the
 *              ceiling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tessera-config.h"
#include "base/memory.h"
#include "perf/perf.h"
#include "simd/gemm/gemm.h"
#include "simd/sets.h"

/* Streams per thread for the bandwidth figure. One sequential stream leaves
 * bandwidth unused on Zen 3 (the prefetchers keep too few lines in flight:
 * about 2/3 of what 4 streams get here); a kernel that reads several weight
 * panels side by side gets the higher figure, so that is the ceiling. */
#define MAX_STREAMS 4

perf_fma_loop_fn perf_fma_loop_for(const char *isa)
{
    const tsr_kernel_set *set = tsr_kernel_set_find(isa);
    return set && set->init ? set->fma_peak : NULL;
}

perf_fma_loop_fn perf_int8_loop_for(const tsr_kernels *set)
{
    if (!set->gemm || !set->gemm->i8)
        return NULL;
    const char *name = set->gemm->i8->name;
    static const struct {
        const char *instructions;
        perf_fma_loop_fn loop;
    } loops[] = {
#ifdef HAVE_KERNELS_AVX512_VNNI
        {"avx512-vnni", perf_int8_loop__avx512vnni},
#endif
#ifdef HAVE_KERNELS_AVX_VNNI
        {"avx-vnni", perf_int8_loop__avxvnni},
#endif
#ifdef HAVE_KERNELS_AVX2
        {"avx2", perf_int8_loop__avx2},
#endif
#ifdef HAVE_KERNELS_NEON_DOT
        {"neon-dotprod", perf_int8_loop__neondot},
#endif
#ifdef HAVE_KERNELS_NEON
        {"neon", perf_int8_loop__neon},
#endif
        {NULL, NULL},
    };
    size_t len = strcspn(name, " ");
    for (size_t i = 0; loops[i].instructions; i++)
        if (strlen(loops[i].instructions) == len && strncmp(name, loops[i].instructions, len) == 0)
            return loops[i].loop;
    return NULL;
}

/* The size of the largest cache of CPU 0 as sysfs gives it (one instance,
 * as lscpu shows it: glibc's sysconf reports the whole socket's L3 on some
 * VMs, 256 MiB on this one), or sysconf's, or 0. */
static size_t last_level_cache_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        unsigned long v = 0;
        char unit = 0;
        if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
            size_t bytes = v * (unit == 'K' ? 1024ul : unit == 'M' ? 1024ul * 1024 : 1ul);
            best = bytes > best ? bytes : best;
        }
        fclose(f);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best == 0) {
        long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
        best = l3 > 0 ? (size_t)l3 : 0;
    }
#endif
    return best;
}

size_t perf_stream_bytes(void)
{
    const size_t floor_bytes = (size_t)64 << 20, ceiling_bytes = (size_t)512 << 20;
    size_t bytes = 4 * last_level_cache_bytes();
    return bytes < floor_bytes ? floor_bytes : bytes > ceiling_bytes ? ceiling_bytes : bytes;
}

typedef struct stream_job {
    uint64_t *buf;
    size_t words;
    size_t first, count; /* the chunk being read */
    size_t streams;      /* sequential streams each thread reads side by side */
    uint64_t sums[256];
} stream_job;

static void stream_fill(void *ctx, int t, int threads)
{
    stream_job *j = ctx;
    size_t b, e;
    perf_split(j->words, 8, t, threads, &b, &e);
    for (size_t i = b; i < e; i++)
        j->buf[i] = i;
}

/* The thread's part of the chunk is cut into j->streams parts read in
 * lockstep, one cache line (8 words) of each in turn, with a sum per stream:
 * the adds are far faster than memory, so the loop waits on memory alone. */
static void stream_read(void *ctx, int t, int threads)
{
    stream_job *j = ctx;
    size_t b, e;
    perf_split(j->count, 8, t, threads, &b, &e);
    const uint64_t *base = j->buf + j->first + b;
    size_t per = (e - b) / j->streams / 8 * 8;
    uint64_t sum[MAX_STREAMS] = {0};
    for (size_t i = 0; i < per; i += 8)
        for (size_t s = 0; s < j->streams; s++) {
            const uint64_t *p = base + s * per + i;
            sum[s] += (p[0] + p[1]) + (p[2] + p[3]) + (p[4] + p[5]) + (p[6] + p[7]);
        }
    uint64_t total = 0;
    for (size_t s = 0; s < j->streams; s++)
        total += sum[s];
    j->sums[t] = total;
}

/* One sweep over the whole buffer, timed chunk by chunk: every chunk comes
 * from memory (the sweep evicts it before it comes round again), and a
 * chunk short enough to run between two scheduler ticks shows the bandwidth
 * of an undisturbed core. Returns the best chunk's bytes/s. */
static double best_chunk_of_sweep(stream_job *j, int threads)
{
    const size_t chunk_words = ((size_t)4 << 20) / sizeof(uint64_t);
    double best = 0;
    volatile uint64_t sink = 0;
    for (j->first = 0; j->first + chunk_words <= j->words; j->first += chunk_words) {
        j->count = chunk_words;
        double t0 = perf_now();
        perf_parallel(threads, stream_read, j);
        double dt = perf_now() - t0;
        for (int t = 0; t < threads; t++)
            sink += j->sums[t];
        double rate = (double)(j->count / j->streams / 8 * 8 * j->streams) * sizeof(uint64_t) / dt;
        best = rate > best ? rate : best;
    }
    (void)sink;
    return best;
}

double perf_measure_bandwidth(size_t bytes, int threads, int quick, double *one_stream)
{
    stream_job j = {.words = bytes / sizeof(uint64_t)};
    j.buf = tsr_alloc(j.words, sizeof(uint64_t));
    if (!j.buf) {
        fprintf(stderr, "tessera-perf: out of memory for the %zu-byte bandwidth buffer\n", bytes);
        exit(1);
    }
    if (threads > 256)
        threads = 256;
    perf_parallel(threads, stream_fill, &j);

    /* Sweeps alternate between the two patterns so that both see the same
     * conditions. */
    const int rounds = quick ? 3 : 6;
    double best_one = 0, best_many = 0;
    for (int r = 0; r < rounds; r++) {
        j.streams = 1;
        double one = best_chunk_of_sweep(&j, threads);
        j.streams = MAX_STREAMS;
        double many = best_chunk_of_sweep(&j, threads);
        best_one = one > best_one ? one : best_one;
        best_many = many > best_many ? many : best_many;
    }
    tsr_free(j.buf);
    *one_stream = best_one;
    return best_many > best_one ? best_many : best_one;
}
