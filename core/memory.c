#include "core/memory.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/tessera.h"

void *tsr_alloc(size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    /* Round up so the kernels may read whole vectors past a row's end
     * within the allocation, and never ask for zero bytes. */
    bytes = (bytes + TSR_ALIGN - 1) / TSR_ALIGN * TSR_ALIGN;
    if (bytes == 0)
        bytes = TSR_ALIGN;
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
