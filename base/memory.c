#include "base/memory.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/tessera.h"

#ifdef TSR_ALLOC_FAULTS
#include <malloc.h>
#include <stdatomic.h>

static atomic_long fail_at = -1;      /* the attempt that fails; -1: none */
static atomic_int fail_on;            /* nonzero: every attempt from fail_at on fails */
static atomic_long attempts;          /* attempts since arming */
static atomic_long live;              /* blocks held */
static atomic_int fired;              /* an attempt failed since arming */

void tsr_alloc_faults_arm(long n, int persistent)
{
    atomic_store(&attempts, 0);
    atomic_store(&fired, 0);
    atomic_store(&fail_on, persistent);
    atomic_store(&fail_at, n);
}

long tsr_alloc_faults_attempts(void) { return atomic_load(&attempts); }
long tsr_alloc_faults_live(void) { return atomic_load(&live); }
int tsr_alloc_faults_fired(void) { return atomic_load(&fired); }

/* Whether this attempt is to fail (and counts it). */
static int fault(void)
{
    long n = atomic_fetch_add(&attempts, 1);
    long at = atomic_load(&fail_at);
    if (at < 0 || n < at || (n > at && !atomic_load(&fail_on)))
        return 0;
    atomic_store(&fired, 1);
    return 1;
}

/* Bytes held, counted as the allocator's usable size of each block (the
 * request and at most a page more: the memory plans' per-block slack), and
 * the most held since the peak was last reset. */
static atomic_size_t bytes_live, bytes_peak;

size_t tsr_alloc_faults_bytes_live(void) { return atomic_load(&bytes_live); }
size_t tsr_alloc_faults_bytes_peak(void) { return atomic_load(&bytes_peak); }
void tsr_alloc_faults_reset_peak(void) { atomic_store(&bytes_peak, atomic_load(&bytes_live)); }

static void bytes_add(size_t n)
{
    size_t now = atomic_fetch_add(&bytes_live, n) + n;
    size_t peak = atomic_load(&bytes_peak);
    while (now > peak && !atomic_compare_exchange_weak(&bytes_peak, &peak, now))
        ;
}

static void bytes_sub(size_t n) { atomic_fetch_sub(&bytes_live, n); }

static void *held_bytes(void *p, size_t bytes)
{
    if (p) {
        atomic_fetch_add(&live, 1);
        bytes_add(bytes);
    }
    return p;
}

static void *held(void *p) { return held_bytes(p, p ? malloc_usable_size(p) : 0); }

static void released(void *p, size_t bytes)
{
    if (p) {
        atomic_fetch_sub(&live, 1);
        bytes_sub(bytes);
    }
}
#else
static inline int fault(void) { return 0; }
static inline void *held(void *p) { return p; }
static inline void *held_bytes(void *p, size_t bytes) { (void)bytes; return p; }
#endif

void *tsr_malloc(size_t bytes) { return fault() ? NULL : held(malloc(bytes ? bytes : 1)); }

void *tsr_calloc(size_t n, size_t size)
{
    return fault() ? NULL : held(calloc(n ? n : 1, size ? size : 1));
}

void *tsr_realloc(void *p, size_t bytes)
{
    if (!p)
        return tsr_malloc(bytes);
    if (fault())
        return NULL;
#ifdef TSR_ALLOC_FAULTS
    size_t before = malloc_usable_size(p);
    void *q = realloc(p, bytes ? bytes : 1);
    if (q) {
        bytes_sub(before);
        bytes_add(malloc_usable_size(q));
    }
    return q;
#else
    return realloc(p, bytes ? bytes : 1);
#endif
}

int tsr_grow(void *array, size_t *cap, size_t need, size_t size)
{
    void **block = array;
    if (need <= *cap)
        return 0;
    size_t want = *cap ? *cap : 16;
    while (want < need && want <= SIZE_MAX / 2)
        want *= 2;
    if (want < need || want > SIZE_MAX / size)
        return TESSERA_ERR_NOMEM;
    void *bigger = tsr_realloc(*block, want * size);
    if (!bigger)
        return TESSERA_ERR_NOMEM;
    *block = bigger;
    *cap = want;
    return 0;
}

char *tsr_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = tsr_malloc(len);
    if (copy)
        memcpy(copy, s, len);
    return copy;
}

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
    /* A large block (a batch's activations, the cross-attention keys and
     * values, a staging buffer) starts on a huge-page boundary and is
     * advised for transparent huge pages: malloc gives such blocks fresh
     * pages from the kernel on every call, and faulting them in 4 KiB at a
     * time was 6 % of a batch-16 translate's samples on 2 threads, more
     * than the kernel's zeroing of 2 MiB pages costs (issue 16). */
    size_t align = bytes >= TSR_HUGE_BLOCK ? TSR_HUGE_PAGE : TSR_ALIGN;
#ifdef TSR_ALLOC_FAULTS
    /* The tests' library counts each block's usable size, which a 2 MiB
     * alignment would inflate by up to 2 MiB: it keeps 64 bytes. */
    align = TSR_ALIGN;
#endif
    void *p = NULL;
    if (fault() || posix_memalign(&p, align, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Advice only, on the whole huge pages the block covers. */
    if (align == TSR_HUGE_PAGE)
        (void)madvise(p, bytes / TSR_HUGE_PAGE * TSR_HUGE_PAGE, MADV_HUGEPAGE);
#endif
    return held(p);
}

void tsr_free(void *p)
{
#ifdef TSR_ALLOC_FAULTS
    released(p, p ? malloc_usable_size(p) : 0);
#endif
    free(p);
}

#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON /* the BSDs' and macOS's older name */
#endif

#define SMALL_PAGE ((size_t)4096)

/* A block smaller than a huge page is left in small pages: a huge one would
 * make each small model's few blocks 2 MiB of resident memory apiece. */
static size_t block_len(size_t bytes)
{
    size_t page = bytes >= TSR_HUGE_PAGE ? TSR_HUGE_PAGE : SMALL_PAGE;
    return (bytes + page - 1) / page * page;
}

void *tsr_alloc_pages(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - 2 * TSR_HUGE_PAGE || fault())
        return NULL;
    size_t len = block_len(bytes);
    if (len < TSR_HUGE_PAGE) {
        void *small = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return small == MAP_FAILED ? NULL : held_bytes(small, len);
    }
    /* Map one huge page more than needed and give back the ends, so that
     * the block starts on a huge-page boundary. */
    unsigned char *raw = mmap(NULL, len + TSR_HUGE_PAGE, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t start = ((uintptr_t)raw + TSR_HUGE_PAGE - 1) & ~(uintptr_t)(TSR_HUGE_PAGE - 1);
    unsigned char *p = (unsigned char *)start;
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    /* p < raw + TSR_HUGE_PAGE: the tail past the block is never empty. */
    munmap(p + len, (size_t)(raw + TSR_HUGE_PAGE - p));
#ifdef MADV_HUGEPAGE
    /* Advice only: where THP is off or absent this fails and 4 KiB pages do. */
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return held_bytes(p, len);
}

void tsr_free_pages(void *p, size_t bytes)
{
    if (!p)
        return;
#ifdef TSR_ALLOC_FAULTS
    released(p, block_len(bytes));
#endif
    munmap(p, block_len(bytes));
}

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
