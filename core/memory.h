/* Aligned allocation for activations and packed weights. */
#ifndef TSR_CORE_MEMORY_H
#define TSR_CORE_MEMORY_H

#include <stddef.h>

#define TSR_ALIGN 64

/* 64-byte aligned, uninitialised; NULL on failure or overflow of n * size.
 * Release with tsr_free. */
void *tsr_alloc(size_t n, size_t size);
void tsr_free(void *p);

/* n floats, 64-byte aligned; NULL on failure. */
static inline float *tsr_alloc_floats(size_t n) { return (float *)tsr_alloc(n, sizeof(float)); }

/* A float buffer that grows to the largest size asked of it and is reused,
 * so per-step work does not allocate once the sizes settle. */
typedef struct tsr_buffer {
    float *p;
    size_t cap;
} tsr_buffer;

/* Ensures room for n floats (contents are not preserved). 0, or
 * TESSERA_ERR_NOMEM on allocation failure. */
int tsr_buffer_reserve(tsr_buffer *b, size_t n);
void tsr_buffer_free(tsr_buffer *b);

#endif
