/* The machine's limits (threads/limits.h), measured at run time rather than
 * taken from a data sheet: a VM's clock and a shared socket's bandwidth are
 * whatever they are today. */
#include "threads/limits.h"

#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/memory.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Seconds per peak run at least: short enough that the best of many finds
 * one that no scheduler tick cut on a busy machine. */
#define MIN_RUN_SECONDS 0.002

/* Streams per thread for the bandwidth figure. One sequential stream leaves
 * bandwidth unused on Zen 3 (the prefetchers keep too few lines in flight:
 * about 2/3 of what 4 streams get there); a kernel that reads several weight
 * panels side by side gets the higher figure, so that is the ceiling. */
#define MAX_STREAMS 4
#define MAX_THREADS 256

/* While no run's threads ran together, up to this many times the runs
 * asked for (a host's steal of a virtual CPU lasts tens of ms to seconds). */
#define MAX_RUN_FACTOR 8

/* The overlap (tsr_parts_overlap) from which a run's parts ran together. */
#define TOGETHER 0.75

/* fn(ctx, part, parts) for parts 0 .. threads - 1, on a team of `threads`
 * (a smaller team runs the missing parts on its threads). Returns the
 * number of threads that ran them. */
static int on_team(int threads, void (*fn)(void *ctx, int part, int parts), void *ctx)
{
#ifdef _OPENMP
    if (threads > 1) {
        int team = 1;
#pragma omp parallel num_threads(threads)
        {
#pragma omp single nowait
            team = omp_get_num_threads();
            for (int part = omp_get_thread_num(); part < threads; part += omp_get_num_threads())
                fn(ctx, part, threads);
        }
        return team;
    }
#endif
    for (int part = 0; part < threads; part++)
        fn(ctx, part, threads);
    return 1;
}

/* A timed run of fn on a team: when each part started and ended. */
typedef struct team_run {
    void (*fn)(void *ctx, int part, int parts);
    void *ctx;
    double start[MAX_THREADS], end[MAX_THREADS];
} team_run;

static void timed_part(void *ctx, int part, int parts)
{
    team_run *run = ctx;
    run->start[part] = tsr_seconds();
    run->fn(run->ctx, part, parts);
    run->end[part] = tsr_seconds();
}

/* Runs fn on a team of `threads` (at most MAX_THREADS); its wall time in
 * *seconds. Returns whether the parts ran side by side: for at least 3/4
 * of the longest part's time, all of them at once (on a quiet 2-core Zen
 * 4, 96 % of one bench's 4 MiB bandwidth chunks and 50 of its 51 peak runs
 * did; a part that waits one whole run for its core gives 1/2). A virtual
 * CPU that the host takes away runs its part after the others' (or not at
 * all until they are done), and the run then measures fewer cores than it
 * claims: on a 2-core Zen 4 guest one bench's 2-thread FMA and int8 peaks
 * and cache rate came out at exactly the 1-thread figures, and two of its
 * cases at 101 and 124 % of that "limit". A smaller team than asked for
 * (its parts run one after another by design) always counts. */
static int team_ran_together(int threads, void (*fn)(void *ctx, int part, int parts), void *ctx,
                             double *seconds)
{
    team_run run; /* start and end are written by every part before they are read */
    run.fn = fn;
    run.ctx = ctx;
    double t0 = tsr_seconds();
    int team = on_team(threads, timed_part, &run);
    *seconds = tsr_seconds() - t0;
    if (team < threads)
        return 1;
    return tsr_parts_overlap(run.start, run.end, threads) >= TOGETHER;
}

double tsr_parts_overlap(const double *start, const double *end, int parts)
{
    double latest_start = start[0], earliest_end = end[0], longest = 0;
    for (int p = 0; p < parts; p++) {
        latest_start = start[p] > latest_start ? start[p] : latest_start;
        earliest_end = end[p] < earliest_end ? end[p] : earliest_end;
        longest = end[p] - start[p] > longest ? end[p] - start[p] : longest;
    }
    if (longest <= 0)
        return 1.0;
    double together = earliest_end - latest_start;
    return together > 0 ? together / longest : 0.0;
}

/* The best rate of the runs whose threads ran together, and of the others:
 * the second is what a measurement gives when the first never came. */
typedef struct best_rates {
    double together, apart;
} best_rates;

static void keep_rate(best_rates *b, double rate, int together)
{
    double *best = together ? &b->together : &b->apart;
    *best = rate > *best ? rate : *best;
}

static double best_rate(const best_rates *b)
{
    return b->together > 0 ? b->together : b->apart;
}

typedef struct peak_run {
    tsr_peak_loop_fn loop;
    uint64_t iterations;
} peak_run;

static void run_loop(void *ctx, int part, int parts)
{
    const peak_run *p = ctx;
    (void)part;
    (void)parts;
    p->loop(p->iterations);
}

uint64_t tsr_peak_iterations(tsr_peak_loop_fn loop, double seconds, double *ops_per_iteration)
{
    uint64_t iterations = 1u << 12;
    double ops, dt;
    for (;;) {
        double t0 = tsr_seconds();
        ops = loop(iterations);
        dt = tsr_seconds() - t0;
        if (dt >= seconds / 8)
            break;
        iterations *= 2;
    }
    *ops_per_iteration = ops / (double)iterations;
    return (uint64_t)((double)iterations * seconds / dt) + 1;
}

double tsr_measure_peak(tsr_peak_loop_fn loop, int threads, int runs)
{
    double per_iteration;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    peak_run p = {loop, tsr_peak_iterations(loop, MIN_RUN_SECONDS, &per_iteration)};
    /* Every thread runs as many iterations. */
    double per_run = per_iteration * (double)p.iterations * (double)threads;
    /* The best run whose threads ran together; while there is none, more
     * runs (up to MAX_RUN_FACTOR times as many), then the best of all. */
    best_rates best = {0, 0};
    for (int r = 0; r < runs || (best.together == 0 && r < MAX_RUN_FACTOR * runs); r++) {
        double dt;
        int together = team_ran_together(threads, run_loop, &p, &dt);
        keep_rate(&best, per_run / dt, together);
    }
    return best_rate(&best);
}

/* One instance, as lscpu shows it: glibc's sysconf reports the whole
 * socket's L3 on some VMs (256 MiB on one), so sysfs comes first. */
size_t tsr_last_level_cache_bytes(void)
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

size_t tsr_memory_stream_bytes(void)
{
    const size_t floor_bytes = (size_t)64 << 20, ceiling_bytes = (size_t)512 << 20;
    size_t bytes = 4 * tsr_last_level_cache_bytes();
    return bytes < floor_bytes ? floor_bytes : bytes > ceiling_bytes ? ceiling_bytes : bytes;
}

typedef struct stream_job {
    uint64_t *buf;
    size_t words;
    size_t first, count; /* the chunk being read */
    size_t streams;      /* sequential streams each thread reads side by side */
    uint64_t sums[MAX_THREADS];
} stream_job;

/* [begin, end) of part t of `count` words cut in cache lines (8 words). */
static void split_lines(size_t count, int t, int parts, size_t *begin, size_t *end)
{
    size_t lines = (count + 7) / 8, per = lines / (size_t)parts, extra = lines % (size_t)parts;
    size_t ut = (size_t)t, b = ut * per + (ut < extra ? ut : extra);
    size_t e = b + per + (ut < extra ? 1 : 0);
    *begin = b * 8 < count ? b * 8 : count;
    *end = e * 8 < count ? e * 8 : count;
}

static void stream_fill(void *ctx, int t, int parts)
{
    stream_job *j = ctx;
    size_t b, e;
    split_lines(j->words, t, parts, &b, &e);
    for (size_t i = b; i < e; i++)
        j->buf[i] = i;
}

/* The thread's part of the chunk is cut into j->streams parts read in
 * lockstep, one cache line (8 words) of each in turn, with a sum per stream:
 * the adds are far faster than memory, so the loop waits on memory alone. */
static void stream_read(void *ctx, int t, int parts)
{
    stream_job *j = ctx;
    size_t b, e;
    split_lines(j->count, t, parts, &b, &e);
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

/* One sweep over the whole buffer, timed chunk by chunk: a chunk short
 * enough to run between two scheduler ticks shows the bandwidth of an
 * undisturbed core. Each chunk's rate (bytes/s) goes to *best. */
static void best_chunk_of_sweep(stream_job *j, int threads, best_rates *best)
{
    size_t chunk_words = ((size_t)4 << 20) / sizeof(uint64_t);
    if (chunk_words > j->words)
        chunk_words = j->words;
    volatile uint64_t sink = 0;
    for (j->first = 0; j->first + chunk_words <= j->words; j->first += chunk_words) {
        j->count = chunk_words;
        double dt;
        int together = team_ran_together(threads, stream_read, j, &dt);
        for (int t = 0; t < threads; t++)
            sink += j->sums[t];
        double rate = (double)(j->count / j->streams / 8 * 8 * j->streams) * sizeof(uint64_t) / dt;
        keep_rate(best, rate, together);
    }
    (void)sink;
}

int tsr_bandwidth_buffer_init(tsr_bandwidth_buffer *b, size_t bytes, int threads)
{
    stream_job j = {.words = bytes / sizeof(uint64_t)};
    b->bytes = 0;
    b->words = j.buf = tsr_alloc(j.words, sizeof(uint64_t));
    if (!j.buf)
        return -1;
    on_team(threads > MAX_THREADS ? MAX_THREADS : threads, stream_fill, &j);
    b->bytes = j.words * sizeof(uint64_t);
    return 0;
}

void tsr_bandwidth_buffer_free(tsr_bandwidth_buffer *b)
{
    tsr_free(b->words);
    b->words = NULL;
    b->bytes = 0;
}

double tsr_bandwidth_of_prefix(const tsr_bandwidth_buffer *b, size_t bytes, int threads,
                               int rounds, double *one_stream)
{
    stream_job j = {.buf = b->words, .words = (bytes < b->bytes ? bytes : b->bytes) /
                                              sizeof(uint64_t)};
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    /* Sweeps alternate between the two patterns so that both see the same
     * conditions; while neither has a chunk whose threads ran together,
     * more sweeps (up to MAX_RUN_FACTOR times as many), then each
     * pattern's best of the others. */
    best_rates one = {0, 0}, many = {0, 0};
    for (int r = 0;
         r < rounds || (one.together == 0 && many.together == 0 && r < MAX_RUN_FACTOR * rounds);
         r++) {
        j.streams = 1;
        best_chunk_of_sweep(&j, threads, &one);
        j.streams = MAX_STREAMS;
        best_chunk_of_sweep(&j, threads, &many);
    }
    double best_one = best_rate(&one), best_many = best_rate(&many);
    if (one_stream)
        *one_stream = best_one;
    return best_many > best_one ? best_many : best_one;
}

double tsr_measure_bandwidth(size_t bytes, int threads, int rounds, double *one_stream)
{
    tsr_bandwidth_buffer b;
    if (tsr_bandwidth_buffer_init(&b, bytes, threads) != 0)
        return -1.0;
    double rate = tsr_bandwidth_of_prefix(&b, bytes, threads, rounds, one_stream);
    tsr_bandwidth_buffer_free(&b);
    return rate;
}
