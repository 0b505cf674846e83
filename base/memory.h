/* The library's one place for memory: every allocation it makes goes
 * through these functions and every release through tsr_free, so that a
 * test build can make any chosen allocation fail and count what is still
 * held (TSR_ALLOC_FAULTS, below). Memory from any of them, and NULL, may be
 * passed to tsr_free. Outside libraries (jansson, hwloc, libgomp) allocate
 * on their own. */
#ifndef TSR_BASE_MEMORY_H
#define TSR_BASE_MEMORY_H

#include <stddef.h>

#define TSR_ALIGN 64

/* Transparent huge pages come in 2 MiB on x86-64 and AArch64 (4 KiB base). */
#define TSR_HUGE_PAGE ((size_t)2 << 20)
/* tsr_alloc gives a block of at least this many bytes huge-page alignment
 * and the advice to use them: twice a huge page, so that at least one whole
 * huge page lies inside. */
#define TSR_HUGE_BLOCK (2 * TSR_HUGE_PAGE)

/* 64-byte aligned (2 MiB aligned and advised for transparent huge pages
 * from TSR_HUGE_BLOCK bytes), uninitialised; NULL on failure or overflow of
 * n * size. Release with tsr_free. */
void *tsr_alloc(size_t n, size_t size);
void tsr_free(void *p);

/* malloc, calloc, realloc and strdup through the one place: the same
 * contracts (calloc checks n * size for overflow; realloc's old block stays
 * valid when it fails). */
void *tsr_malloc(size_t bytes);
void *tsr_calloc(size_t n, size_t size);
void *tsr_realloc(void *p, size_t bytes);
char *tsr_strdup(const char *s);
/* An array *(T **)array of *cap elements of `size` bytes given room for
 * `need`: doubled (from 16) until it fits, kept on failure. 0, or
 * TESSERA_ERR_NOMEM (also when need * size overflows). */
int tsr_grow(void *array, size_t *cap, size_t need, size_t size);

/* Large blocks that live as long as a load or a model (a weights file read
 * whole): whole pages from the kernel, aligned to 2 MiB and advised for
 * transparent huge pages where the system offers them, because faulting
 * such a block in 4 KiB at a time costs more than filling it (a 228 MB
 * file: 0.8 s of page faults against 27 ms with huge pages, issue 16).
 * A block under 2 MiB is whole 4 KiB pages, unadvised. Zero-filled; NULL on
 * failure. Release with tsr_free_pages and the same
 * byte count. */
void *tsr_alloc_pages(size_t bytes);
void tsr_free_pages(void *p, size_t bytes);

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

#ifdef TSR_ALLOC_FAULTS
/* Fault injection, compiled only into the tests' library (libtessera-test):
 * after tsr_alloc_faults_arm(n, persistent), allocation number n (counting
 * from 0) fails, and with `persistent` every one after it too; n < 0 fails
 * none. Either way the calls count what they see: allocations asked for
 * since arming, and the blocks held (every successful allocation since the
 * process started minus every release of one: a leak shows as a balance
 * that does not come back). Safe from several threads. */
void tsr_alloc_faults_arm(long n, int persistent);
long tsr_alloc_faults_attempts(void);
long tsr_alloc_faults_live(void);
int tsr_alloc_faults_fired(void);
/* Bytes held (each block's usable size: its request and at most a page
 * more), and the most held since the last tsr_alloc_faults_reset_peak. */
size_t tsr_alloc_faults_bytes_live(void);
size_t tsr_alloc_faults_bytes_peak(void);
void tsr_alloc_faults_reset_peak(void);
#endif

#endif
