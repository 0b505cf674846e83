/* tessera bench --case load: the time to load a model against the time to
 * read its weights file from the page cache into fresh memory, measured in
 * the same run. The read is the floor any load that copies the file pays
 * (tessera reads rather than maps, issue 14), so their ratio says how much
 * the checking, converting and packing add to it, whatever the machine. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif

#define HUGE_PAGE ((size_t)2 << 20)
#define READ_CHUNK ((size_t)64 << 20)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Reads the whole file at `path` into fresh 2 MiB-aligned memory advised
 * for transparent huge pages, as the loader gives its copy; returns the
 * milliseconds taken (allocation, faults and release included), or -1 with
 * a message. */
static double timed_read(const char *path, size_t *bytes, char *err, size_t err_len)
{
    double start = now_ms();
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t len = (size_t)sb.st_size, mapped = (len + 2 * HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    unsigned char *raw = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);
    if (raw == MAP_FAILED) {
        snprintf(err, err_len, "%s: out of memory for a copy of %zu bytes", path, len);
        close(fd);
        return -1;
    }
    unsigned char *p = (unsigned char *)(((uintptr_t)raw + HUGE_PAGE - 1) &
                                         ~(uintptr_t)(HUGE_PAGE - 1));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, mapped - (size_t)(p - raw), MADV_HUGEPAGE);
#endif
    size_t done = 0;
    while (done < len) {
        size_t want = len - done < READ_CHUNK ? len - done : READ_CHUNK;
        ssize_t got = pread(fd, p + done, want, (off_t)done);
        if (got <= 0) {
            if (got < 0 && errno == EINTR)
                continue;
            snprintf(err, err_len, "%s: %s", path, got < 0 ? strerror(errno) : "file shrank");
            munmap(raw, mapped);
            close(fd);
            return -1;
        }
        done += (size_t)got;
    }
    munmap(raw, mapped);
    close(fd);
    *bytes = len;
    return now_ms() - start;
}

int cli_bench_load(const char *dir, const char *label, const tessera_load_options *load,
                   int threads, int repeat)
{
    char path[4096], err[4608];
    /* The weights file: tessera's, or a CTranslate2 directory's model.bin. */
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (access(path, F_OK) != 0)
        snprintf(path, sizeof path, "%s/model.bin", dir);
    double load_best = -1, read_best = -1;
    size_t bytes = 0;
    tessera_compute_type type = TESSERA_COMPUTE_F32;
    /* One untimed round brings the file into the page cache; then the two
     * alternate, so that both see the same machine. */
    for (int r = -1; r < repeat; r++) {
        double read_ms = timed_read(path, &bytes, err, sizeof err);
        if (read_ms < 0)
            return cli_error("bench: %s", err);
        tessera_model *m;
        double start = now_ms();
        if (tessera_model_load_with(dir, load, &m, err, sizeof err) != 0)
            return cli_error("bench: %s", err);
        double load_ms = now_ms() - start;
        type = tessera_model_compute_type(m);
        start = now_ms();
        tessera_model_free(m);
        load_ms += now_ms() - start; /* the read's time includes its release too */
        if (r < 0)
            continue;
        if (load_best < 0 || load_ms < load_best)
            load_best = load_ms;
        if (read_best < 0 || read_ms < read_best)
            read_best = read_ms;
    }
    printf("case=load config=%s isa=%s compute_type=%s threads=%d file_mb=%.1f load_ms=%.3f "
           "read_ms=%.3f ratio=%.2f\n",
           label, tessera_kernel_set(err, sizeof err), tessera_compute_type_name(type), threads,
           (double)bytes / 1e6, load_best, read_best, load_best / read_best);
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}
