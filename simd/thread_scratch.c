/* Per-thread scratch buffers (simd/thread_scratch.h): one pthread key whose
 * value holds every slot of the thread. */
#include "simd/thread_scratch.h"

#include <pthread.h>

#include "base/memory.h"

typedef struct scratch {
    void *p[TSR_SCRATCH_SLOTS];
    size_t cap[TSR_SCRATCH_SLOTS];
} scratch;

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ready;

static void scratch_free(void *v)
{
    scratch *s = v;
    for (int i = 0; i < TSR_SCRATCH_SLOTS; i++)
        tsr_free(s->p[i]);
    tsr_free(s);
}

static void key_create(void)
{
    key_ready = pthread_key_create(&key, scratch_free) == 0;
}

void *tsr_thread_scratch(tsr_scratch_slot slot, size_t bytes)
{
    pthread_once(&key_once, key_create);
    if (!key_ready)
        return NULL;
    scratch *s = pthread_getspecific(key);
    if (!s) {
        s = tsr_calloc(1, sizeof *s);
        if (!s)
            return NULL;
        if (pthread_setspecific(key, s) != 0) {
            tsr_free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < bytes) {
        tsr_free(s->p[slot]);
        s->p[slot] = NULL;
        s->cap[slot] = 0;
        void *p = tsr_alloc(bytes, 1);
        if (!p)
            return NULL;
        s->p[slot] = p;
        s->cap[slot] = bytes;
    }
    return s->p[slot];
}
