/* Criterion's start in every worker, made cheaper.
 *
 * Criterion runs each test in a worker process of its own, and each worker
 * starts libgit2 (git_libgit2_init: OpenSSL, its configuration and locks),
 * which Criterion uses only to print the diff of a failed string assertion.
 * That cost 6 ms of each of make check's ~700 workers on an AMD Zen 4, and
 * several times that where process starts are slow (Zen 5) or emulated
 * (qemu). These definitions, in the test program itself, come before
 * libgit2's in the dynamic linker's search: the start is put off until a
 * diff is first asked for, and made then. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <stddef.h>

#ifdef RTLD_NEXT
typedef int (*libgit2_start_fn)(void);
typedef int (*libgit2_diff_fn)(const void *, size_t, const char *, const void *, size_t,
                               const char *, const void *, void *, void *, void *, void *,
                               void *);
static int libgit2_started;

int git_libgit2_init(void);
int git_libgit2_shutdown(void);
int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path,
                     const void *new_buffer, size_t new_len, const char *new_as_path,
                     const void *options, void *file_cb, void *binary_cb, void *hunk_cb,
                     void *line_cb, void *payload);

int git_libgit2_init(void) { return 1; /* libgit2's "started once" */ }

int git_libgit2_shutdown(void)
{
    libgit2_start_fn shutdown = (libgit2_start_fn)dlsym(RTLD_NEXT, "git_libgit2_shutdown");
    return libgit2_started && shutdown ? shutdown() : 0;
}

int git_diff_buffers(const void *old_buffer, size_t old_len, const char *old_as_path,
                     const void *new_buffer, size_t new_len, const char *new_as_path,
                     const void *options, void *file_cb, void *binary_cb, void *hunk_cb,
                     void *line_cb, void *payload)
{
    libgit2_start_fn start = (libgit2_start_fn)dlsym(RTLD_NEXT, "git_libgit2_init");
    libgit2_diff_fn diff = (libgit2_diff_fn)dlsym(RTLD_NEXT, "git_diff_buffers");
    if (!diff)
        return -1;
    if (!libgit2_started && start && start() >= 0)
        libgit2_started = 1;
    return diff(old_buffer, old_len, old_as_path, new_buffer, new_len, new_as_path, options,
                file_cb, binary_cb, hunk_cb, line_cb, payload);
}
#endif
