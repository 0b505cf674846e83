/* Helpers shared by the Criterion tests: temporary directories, files, running
 * a command with captured output, and reproducible random data. */
#define _GNU_SOURCE
#include "tests/testutil.h"

#include "core/tessera.h"

#include "simd/dispatch.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *env_or_dot(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : ".";
}

const char *test_srcdir(void) { return env_or_dot("TESSERA_TEST_SRCDIR"); }

const char *test_builddir(void) { return env_or_dot("TESSERA_TEST_BUILDDIR"); }

const char *test_tessera_path(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tests/command/tessera", test_builddir());
    return path;
}

const char *test_tessera_all_sets_path(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tests/tessera-test", test_builddir());
    return path;
}

int test_kernel_set_selected(const char *name)
{
    const char *list = getenv("TESSERA_TEST_SETS");
    if (!list || !*list)
        return 1;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t word = strcspn(p, ",");
        if (word == len && strncmp(p, name, len) == 0)
            return 1;
        p += word;
        p += *p == ',';
    }
    return 0;
}

size_t test_selected_kernel_sets(const char *names[TEST_MAX_KERNEL_SETS])
{
    cr_assert(tsr_kernel_set_count <= TEST_MAX_KERNEL_SETS,
              "%zu kernel sets, room for %d: raise TEST_MAX_KERNEL_SETS", tsr_kernel_set_count,
              TEST_MAX_KERNEL_SETS);
    size_t n = 0;
    for (size_t s = 0; s < tsr_kernel_set_count; s++)
        if (test_kernel_set_selected(tsr_kernel_sets[s].name))
            names[n++] = tsr_kernel_sets[s].name;
    return n;
}

const struct tsr_kernels *test_kernel_set_or_skip(const char *name)
{
    char why[200];
    if (!test_kernel_set_selected(name))
        cr_skip_test("kernel set %s: not selected by TESSERA_TEST_SETS", name);
    const tsr_kernels *ks = tsr_kernels_lookup(name, why, sizeof why);
    if (!ks)
        cr_skip_test("kernel set %s: %s", name, why);
    return ks;
}

static const char *temp_base(void)
{
    const char *tmp = getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    return remove(path);
}

void test_remove_dir(const char *path)
{
    if (path)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The directories this process made, removed again when it exits: a test
 * that skips in its body never reaches its suite's .fini (Criterion), which
 * left one empty directory in $TMPDIR per skipped test. Only the process
 * that made a directory removes it (a Criterion worker is a fork). */
#define TEMP_DIRS_MAX 256
static struct {
    char *path;
    pid_t owner;
} temp_dirs[TEMP_DIRS_MAX];
static size_t n_temp_dirs;

static void remove_leftover_dirs(void)
{
    for (size_t i = 0; i < n_temp_dirs; i++)
        if (temp_dirs[i].owner == getpid())
            test_remove_dir(temp_dirs[i].path);
}

char *test_make_temp_dir(void)
{
    char *path = NULL;
    if (asprintf(&path, "%s/tessera-test-XXXXXX", temp_base()) < 0)
        cr_assert_fail("asprintf failed");
    if (!mkdtemp(path))
        cr_assert_fail("mkdtemp(%s): %s", path, strerror(errno));
    if (n_temp_dirs == 0)
        atexit(remove_leftover_dirs);
    if (n_temp_dirs < TEMP_DIRS_MAX) {
        temp_dirs[n_temp_dirs].path = strdup(path);
        temp_dirs[n_temp_dirs++].owner = getpid();
    }
    return path;
}

void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        cr_assert_fail("cannot create %s: %s", path, strerror(errno));
    size_t written = len ? fwrite(data, 1, len, f) : 0;
    int closed = fclose(f);
    if (written != len || closed != 0)
        cr_assert_fail("cannot write %s: %s", path, strerror(errno));
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);
    cr_assert_not_null(buf);
    size_t got;
    while ((got = fread(buf + used, 1, cap - used, f)) > 0) {
        used += got;
        if (used == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
            cr_assert_not_null(buf);
        }
    }
    fclose(f);
    buf[used] = '\0';
    if (len)
        *len = used;
    return buf;
}

/* environ with `extra` ("NAME=value") added; an extra entry replaces an
 * existing variable of the same name. The strings are borrowed. */
static char **merged_environment(char *const extra[])
{
    size_t n_env = 0, n_extra = 0;
    while (environ[n_env])
        n_env++;
    while (extra && extra[n_extra])
        n_extra++;
    char **env = calloc(n_env + n_extra + 1, sizeof *env);
    cr_assert_not_null(env);
    size_t n = 0;
    for (size_t i = 0; i < n_env; i++) {
        int replaced = 0;
        for (size_t j = 0; j < n_extra && !replaced; j++) {
            const char *eq = strchr(extra[j], '=');
            size_t name_len = eq ? (size_t)(eq - extra[j]) : strlen(extra[j]);
            replaced = strncmp(environ[i], extra[j], name_len) == 0 && environ[i][name_len] == '=';
        }
        if (!replaced)
            env[n++] = environ[i];
    }
    for (size_t j = 0; j < n_extra; j++)
        env[n++] = extra[j];
    return env;
}

/* stdin comes from an unlinked temporary file so the child can never block
 * us by not reading it; stdout and stderr are drained together with poll. */
static int input_file(const char *input, size_t len)
{
    char *path = NULL;
    if (asprintf(&path, "%s/tessera-stdin-XXXXXX", temp_base()) < 0)
        cr_assert_fail("asprintf failed");
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        cr_assert_fail("mkstemp(%s): %s", path, strerror(errno));
    unlink(path);
    free(path);
    if (len && write(fd, input, len) != (ssize_t)len)
        cr_assert_fail("writing the child's stdin: %s", strerror(errno));
    lseek(fd, 0, SEEK_SET);
    return fd;
}

typedef struct capture {
    char *data;
    size_t len, cap;
} capture;

static void append(capture *c, const char *bytes, size_t n)
{
    if (c->len + n + 1 > c->cap) {
        c->cap = (c->len + n + 1) * 2;
        c->data = realloc(c->data, c->cap);
        cr_assert_not_null(c->data);
    }
    memcpy(c->data + c->len, bytes, n);
    c->len += n;
    c->data[c->len] = '\0';
}

static void drain(int out_fd, int err_fd, capture *out, capture *err)
{
    struct pollfd fds[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
    capture *dst[2] = {out, err};
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            cr_assert_fail("poll: %s", strerror(errno));
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            } else {
                append(dst[i], buf, (size_t)got);
            }
        }
    }
}

/* argv behind the words of $TESSERA_TEST_RUNNER (for example
 * "qemu-aarch64 -L /usr/aarch64-linux-gnu" in a cross build), or argv itself.
 * The result and its words are malloc'd in one block. */
static char **with_runner(char *const argv[])
{
    const char *runner = getenv("TESSERA_TEST_RUNNER");
    size_t n_args = 0, words = 0;
    while (argv[n_args])
        n_args++;
    if (!runner || !*runner)
        runner = "";
    for (const char *p = runner; *p;) {
        while (*p == ' ')
            p++;
        if (*p)
            words++;
        while (*p && *p != ' ')
            p++;
    }
    size_t slots = words + n_args + 1;
    char **out = malloc(slots * sizeof *out + strlen(runner) + 1);
    cr_assert(out, "out of memory");
    char *copy = (char *)(out + slots);
    strcpy(copy, runner);
    size_t i = 0;
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
        out[i++] = tok;
    for (size_t a = 0; a < n_args; a++)
        out[i++] = argv[a];
    out[i] = NULL;
    return out;
}

test_run test_run_command(char *const argv_in[], const char *input, char *const env[])
{
    return test_run_command_bytes(argv_in, input, input ? strlen(input) : 0, env);
}

test_run test_run_command_bytes(char *const argv_in[], const char *input, size_t input_len,
                                char *const env[])
{
    char **argv = with_runner(argv_in);
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        cr_assert_fail("pipe: %s", strerror(errno));
    int in_fd = input_file(input, input_len);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_fd, STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    char **envp = merged_environment(env);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    char *program = strdup(argv[0]);
    free(argv);
    close(in_fd);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        cr_assert_fail("cannot run %s: %s", program, strerror(rc));
    }
    free(program);

    capture out = {0}, err = {0};
    append(&out, "", 0);
    append(&err, "", 0);
    drain(out_pipe[0], err_pipe[0], &out, &err);

    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            cr_assert_fail("waitpid: %s", strerror(errno));
    }
    test_run r = {.out = out.data, .out_len = out.len, .err = err.data};
    if (WIFEXITED(status))
        r.exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        r.exit_status = 128 + WTERMSIG(status);
    else
        r.exit_status = -1;
    return r;
}

void test_run_free(test_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* splitmix64: tiny, good enough for test data, identical everywhere. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void test_fill_uniform(float *x, size_t n, unsigned seed, float lo, float hi)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++) {
        double u = (double)(splitmix64(&state) >> 40) / (double)(1u << 24);
        float v = (float)(lo + (hi - lo) * u);
        x[i] = v < hi ? v : lo;
    }
}

size_t test_translate_memory(const char *model_dir, size_t n, size_t tokens,
                             const tessera_translate_options *o)
{
    char err[512];
    tessera_model *m;
    tessera_runtime *rt;
    tessera_runtime_options ro;
    tessera_runtime_options_init(&ro);
    ro.threads = 1;
    cr_assert_eq(tessera_model_load(model_dir, &m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(tessera_runtime_create(&ro, &rt, err, sizeof err), 0, "%s", err);
    size_t bytes = tessera_translate_memory(rt, m, n, tokens, o);
    tessera_runtime_free(rt);
    tessera_model_free(m);
    return bytes;
}
