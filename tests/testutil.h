/* Helpers shared by the Criterion tests. */
#ifndef TSR_TESTS_TESTUTIL_H
#define TSR_TESTS_TESTUTIL_H

/* TEST_UNDER_SANITIZER: built with AddressSanitizer or ThreadSanitizer,
 * which reserve terabytes of address space (no RLIMIT_AS or ulimit -v test
 * can run) and keep freed memory in quarantine (resident sizes are theirs,
 * not the program's). Tests of those skip, by name, in such builds. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TEST_UNDER_SANITIZER 1
#endif
#endif

#include <stddef.h>

/* $TESSERA_TEST_SRCDIR / $TESSERA_TEST_BUILDDIR (set by make check), or "." */
const char *test_srcdir(void);
const char *test_builddir(void);

/* A fresh empty directory under $TMPDIR (or /tmp); returns a malloc'd path.
 * Aborts the test on failure. */
char *test_make_temp_dir(void);
/* rm -r of a directory made by test_make_temp_dir. */
void test_remove_dir(const char *path);

/* Writes `len` bytes to path (aborts the test on failure). */
void test_write_file(const char *path, const void *data, size_t len);
/* Reads a whole file into a malloc'd NUL-terminated buffer; NULL if absent. */
char *test_read_file(const char *path, size_t *len);

typedef struct test_run {
    int exit_status;   /* exit code, or 128 + signal number when killed */
    char *out;         /* captured stdout, NUL-terminated, malloc'd */
    size_t out_len;    /* its bytes (binary output may hold NULs) */
    char *err;         /* captured stderr, NUL-terminated, malloc'd */
} test_run;

/* Runs argv (argv[0] a path; behind the words of $TESSERA_TEST_RUNNER when set,
 * e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu" for a cross build) with `input` on stdin and `env` ("NAME=value"
 * strings added to the environment, NULL-terminated, may be NULL). */
test_run test_run_command(char *const argv[], const char *input, char *const env[]);
/* The same with input_len bytes of input, which may hold NULs. */
test_run test_run_command_bytes(char *const argv[], const char *input, size_t input_len,
                                char *const env[]);
void test_run_free(test_run *r);

/* Path of tests/command/tessera: the command as installed (linked with
 * libtessera), built so that it runs without libtool's wrapper script. */
const char *test_tessera_path(void);
/* Path of tests/tessera-test: the same command linked with the tests' library,
 * which also offers the emulated kernel sets (TESSERA_ISA=avx512-emulated). */
const char *test_tessera_all_sets_path(void);

/* The working memory tessera_translate_memory plans for n sentences of
 * `tokens` source tokens with options o, on a runtime of one thread over the
 * model in model_dir: what a command run with --threads 1 (or
 * TESSERA_NUM_THREADS=1) holds its --max-memory against. Aborts the test
 * when the model does not load. */
struct tessera_translate_options;
size_t test_translate_memory(const char *model_dir, size_t n, size_t tokens,
                             const struct tessera_translate_options *o);

/* The table of kernel set `name`, or the current test ends as skipped,
 * saying why: the build or CPU cannot run the set, or $TESSERA_TEST_SETS
 * (comma-separated names; unset: every set) does not select it. */
struct tsr_kernels;
const struct tsr_kernels *test_kernel_set_or_skip(const char *name);
/* Whether $TESSERA_TEST_SETS selects kernel set `name` (unset: every set).
 * The per-set programs make cases only for the selected sets: Criterion
 * starts a process for every case, and one that would only say it is not
 * selected costs as much to start as one that runs (tests/run-set.sh runs
 * each program once per set, so most cases would be such). */
int test_kernel_set_selected(const char *name);
/* The rows of simd/sets.c that $TESSERA_TEST_SETS selects, in table order,
 * as pointers to their names (at most TEST_MAX_KERNEL_SETS); returns how
 * many. Unusable ones are kept: their cases skip, naming why. */
#define TEST_MAX_KERNEL_SETS 16
size_t test_selected_kernel_sets(const char *names[TEST_MAX_KERNEL_SETS]);

/* Deterministic pseudo-random floats in [lo, hi). */
void test_fill_uniform(float *x, size_t n, unsigned seed, float lo, float hi);

#endif
