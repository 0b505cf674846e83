/* Process-wide choices: the kernel set and the thread count. */
#include "core/errors.h"
#include "core/runtime.h"
#include "core/tessera.h"
#include "simd/dispatch.h"
#include "threads/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static int thread_count;

const char *tessera_kernel_set(char *err, size_t err_len)
{
    const tsr_kernels *k = tsr_kernels_select(err, err_len);
    return k ? k->name : NULL;
}

int tessera_set_threads(int n, char *err, size_t err_len)
{
    if (n < 0 || n > 4096)
        return tsr_fail(err, err_len, "thread count %d: expected 1 to 4096, or 0 for the default", n);
    int resolved;
    if (tsr_threads_resolve(n, &resolved, err, err_len) != 0)
        return -1;
    thread_count = resolved;
#ifdef _OPENMP
    omp_set_num_threads(resolved);
#endif
    return 0;
}

int tessera_threads(void)
{
    if (thread_count == 0 && tessera_set_threads(0, NULL, 0) != 0)
        thread_count = 1;
    return thread_count;
}

int tsr_team_threads(void) { return tessera_threads(); }
