/* The plain main of a fuzz target (fuzz.h): feeds it every file of the
 * directories and files given, or of tests/fuzz/corpus/NAME under
 * $TESSERA_TEST_SRCDIR (make check sets it; else the current directory) when
 * none is given. Arguments that start with '-' are options of a runner
 * (libFuzzer's -runs=N, Criterion's --ignore-warnings that .ci/neon passes
 * to every test) and are skipped. A missing or empty corpus is a failure: make check must
 * never pass a target that replayed nothing. A crash, an assertion or a
 * sanitizer report in the target fails the run as it would the fuzzer. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

static int replay_file(const char *path, size_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_%s: cannot open %s\n", fuzz_target_name, path);
        return 1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        if (len < cap)
            continue;
        unsigned char *bigger = realloc(buf, cap *= 2);
        if (!bigger)
            free(buf);
        buf = bigger;
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "fuzz_%s: out of memory reading %s\n", fuzz_target_name, path);
        return 1;
    }
    /* An exact-size copy, so that a read past the input is a read past an
     * allocation (for ASan), as under libFuzzer. */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) {
        free(buf);
        return 1;
    }
    memcpy(exact, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    (*count)++;
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a directory, in name order (so that runs are repeatable). */
static int replay_dir(const char *path, size_t *count)
{
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "fuzz_%s: cannot open the corpus %s\n", fuzz_target_name, path);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!more)
                break;
            names = more;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, compare_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char file[8192];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        rc |= replay_file(file, count);
        free(names[i]);
    }
    free(names);
    return rc;
}

static int replay(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_%s: %s does not exist\n", fuzz_target_name, path);
        return 1;
    }
    return S_ISDIR(st.st_mode) ? replay_dir(path, count) : replay_file(path, count);
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int rc = 0, paths = 0;
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-') {
            rc |= replay(argv[i], &count);
            paths++;
        }
    if (paths == 0) {
        const char *srcdir = getenv("TESSERA_TEST_SRCDIR");
        char corpus[4096];
        snprintf(corpus, sizeof corpus, "%s/tests/fuzz/corpus/%s",
                 srcdir && *srcdir ? srcdir : ".", fuzz_target_name);
        rc = replay(corpus, &count);
    }
    if (rc == 0 && count == 0) {
        fprintf(stderr, "fuzz_%s: the corpus is empty\n", fuzz_target_name);
        rc = 1;
    }
    printf("fuzz_%s: replayed %zu inputs%s\n", fuzz_target_name, count, rc ? ", with errors" : "");
    return rc;
}
