/* The one place a kernel set is chosen. Each set is usable when it was built
 * (configure's link test passed) and the CPU and OS support it; the choice is
 * made once and TESSERA_ISA may force any usable set.
 *
 * Compiled twice: into libtessera, and with TSR_WITH_EMULATED_SETS into the
 * tests' libtessera-test, where one more set follows the real ones:
 * "avx512-emulated", the avx512 sources built against SIMDe
 * (simd/avx512/intrinsics.h). It runs wherever the avx2 set does, and only
 * when TESSERA_ISA names it: the automatic choice never takes it. */
#include "simd/dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-config.h"
#include "simd/cpu.h"

/* The sets dispatch may choose on its own: the first four. */
#define DISPATCHED_SETS 4
#ifdef TSR_WITH_EMULATED_SETS
const char *const tsr_kernel_set_names[] = {"scalar", "avx2", "avx512", "neon",
                                            "avx512-emulated"};
#define SET_COUNT 5
#else
const char *const tsr_kernel_set_names[] = {"scalar", "avx2", "avx512", "neon"};
#define SET_COUNT 4
#endif
const size_t tsr_kernel_set_count = SET_COUNT;

typedef struct set_entry {
    int built;
    void (*init)(tsr_kernels *t);
    tsr_kernels table;
    int ready;
} set_entry;

/* Which sets configure built, and their initialisers. */
#ifdef HAVE_KERNELS_AVX2
#define AVX2_BUILT 1
#define AVX2_INIT tsr_kernels_init_avx2
#else
#define AVX2_BUILT 0
#define AVX2_INIT NULL
#endif
#ifdef HAVE_KERNELS_AVX512
#define AVX512_BUILT 1
#define AVX512_INIT tsr_kernels_init_avx512
#else
#define AVX512_BUILT 0
#define AVX512_INIT NULL
#endif
#ifdef HAVE_KERNELS_NEON
#define NEON_BUILT 1
#define NEON_INIT tsr_kernels_init_neon
#else
#define NEON_BUILT 0
#define NEON_INIT NULL
#endif

static set_entry sets[SET_COUNT] = {
    {1, tsr_kernels_init_scalar, {0}, 0},
    {AVX2_BUILT, AVX2_INIT, {0}, 0},
    {AVX512_BUILT, AVX512_INIT, {0}, 0},
    {NEON_BUILT, NEON_INIT, {0}, 0},
#ifdef TSR_WITH_EMULATED_SETS
    {1, tsr_kernels_init_avx512_emulated, {0}, 0},
#endif
};

/* What the CPU lacks for set i, or NULL when it can run it. */
static const char *missing_feature(size_t i)
{
    const tsr_cpu_features *f = tsr_cpu_features_get();
    switch (i) {
    case 1:
    case 4: /* avx512-emulated: built at the avx2 set's flags */
        if (!f->avx2) return "avx2";
        if (!f->fma) return "fma";
        if (!f->f16c) return "f16c";
        return NULL;
    case 2:
        if (!f->avx512f) return "avx512f";
        if (!f->avx512bw) return "avx512bw";
        if (!f->avx512dq) return "avx512dq";
        if (!f->avx512vl) return "avx512vl";
        if (!f->fma) return "fma";
        if (!f->f16c) return "f16c";
        return NULL;
    case 3:
        return f->neon ? NULL : "neon (AArch64 Advanced SIMD)";
    default:
        return NULL;
    }
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

const tsr_kernels *tsr_kernels_lookup(const char *name, char *why, size_t why_len)
{
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        if (strcmp(name, tsr_kernel_set_names[i]) != 0)
            continue;
        if (!sets[i].built) {
            if (why_len)
                snprintf(why, why_len, "the %s kernel set is not built into this tessera", name);
            return NULL;
        }
        const char *lack = missing_feature(i);
        if (lack) {
            if (why_len)
                snprintf(why, why_len, "this CPU (or OS) lacks %s, needed by the %s kernel set",
                         lack, name);
            return NULL;
        }
        pthread_mutex_lock(&init_lock);
        if (!sets[i].ready) {
            sets[i].init(&sets[i].table);
            sets[i].ready = 1;
        }
        pthread_mutex_unlock(&init_lock);
        return &sets[i].table;
    }
    if (why_len)
        snprintf(why, why_len, "unknown kernel set '%s' (known: scalar, avx2, avx512, neon)", name);
    return NULL;
}

static const tsr_kernels *chosen;
static char chosen_err[256];
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const char *forced = getenv("TESSERA_ISA");
    char why[200];
    if (forced && *forced) {
        chosen = tsr_kernels_lookup(forced, why, sizeof why);
        if (!chosen)
            snprintf(chosen_err, sizeof chosen_err, "TESSERA_ISA=%s: %s", forced, why);
        return;
    }
    /* Best first: the last usable set in the list wins. */
    for (size_t i = DISPATCHED_SETS; i-- > 0 && !chosen;)
        chosen = tsr_kernels_lookup(tsr_kernel_set_names[i], why, sizeof why);
}

const tsr_kernels *tsr_kernels_select(char *err, size_t err_len)
{
    pthread_once(&chosen_once, choose);
    if (!chosen && err_len)
        snprintf(err, err_len, "%s", chosen_err);
    return chosen;
}
