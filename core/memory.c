#include "core/memory.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/tessera.h"

void *tsr_alloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    /* Round up, and add one more vector (TSR_ALIGN, 64 bytes): the kernels'
     * masked loads of a row's tail (vmaskmovps, AVX-512 masked loads) may
     * touch bytes past the buffer's end in their masked-off lanes. The
     * architecture promises no fault there, but not every implementation
     * keeps the promise (AMD documents that it may fault; qemu's TCG did,
     * reading a KV cache that ended at a page boundary under
     * .ci/no-avx512), so those bytes are always ours. */
    if (bytes > SIZE_MAX - 2 * TSR_ALIGN)
        return NULL;
    bytes = (bytes + TSR_ALIGN - 1) / TSR_ALIGN * TSR_ALIGN + TSR_ALIGN;
    void *p = NULL;
    if (posix_memalign(&p, TSR_ALIGN, bytes) != 0)
        return NULL;
    return p;
}

void tsr_free(void *p) { free(p); }

int tsr_buffer_reserve(tsr_buffer *b, size_t n)
{
    if (n <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < n)
        cap *= 2;
    float *p = tsr_alloc_floats(cap);
    if (!p)
        return TESSERA_ERR_NOMEM;
    tsr_free(b->p);
    b->p = p;
    b->cap = cap;
    return 0;
}

void tsr_buffer_free(tsr_buffer *b)
{
    tsr_free(b->p);
    b->p = NULL;
    b->cap = 0;
}
