/* The kernel-set table: one row per set (simd/sets.h says what each field
 * means). Compiled with the dispatcher, twice: into libtessera, and with
 * TSR_WITH_EMULATED_SETS into the tests' libtessera-test, whose table has
 * the test-only emulated sets after the real ones. */
#include "simd/sets.h"

#include <stdio.h>
#include <string.h>

#include "tessera-config.h"

/* A set configure did not build has no code: its row stays, so that
 * tessera info and TESSERA_ISA can say "not built", without it. */
#ifndef HAVE_KERNELS_AVX2
#define tsr_kernels_init_avx2 NULL
#define tsr_fma_peak__avx2 NULL
#endif
#ifndef HAVE_KERNELS_AVX512
#define tsr_kernels_init_avx512 NULL
#define tsr_fma_peak__avx512 NULL
#endif
#ifndef HAVE_KERNELS_NEON
#define tsr_kernels_init_neon NULL
#define tsr_fma_peak__neon NULL
#endif
#ifndef HAVE_KERNELS_AVX512_EMULATED
#define tsr_kernels_init_avx512_emulated NULL
#endif

#define AVX2_NEEDS "avx2 fma f16c"

const tsr_kernel_set tsr_kernel_sets[] = {
    {.name = "scalar", .needs = "", .init = tsr_kernels_init_scalar, .automatic = 1,
     .fma_peak = tsr_fma_peak__scalar},
    {.name = "avx2", .needs = AVX2_NEEDS, .init = tsr_kernels_init_avx2, .automatic = 1,
     .fma_peak = tsr_fma_peak__avx2},
    {.name = "avx512", .needs = "avx512f avx512bw avx512dq avx512vl fma f16c",
     .init = tsr_kernels_init_avx512, .automatic = 1, .fma_peak = tsr_fma_peak__avx512},
    {.name = "neon", .needs = "neon", .init = tsr_kernels_init_neon, .automatic = 1,
     .fma_peak = tsr_fma_peak__neon},
#ifdef TSR_WITH_EMULATED_SETS
    /* The avx512 sources against SIMDe at the avx2 set's flags: runs where
     * avx2 does, only when TESSERA_ISA names it. */
    {.name = "avx512-emulated", .needs = AVX2_NEEDS, .init = tsr_kernels_init_avx512_emulated,
     .emulated = 1},
#endif
};
const size_t tsr_kernel_set_count = sizeof tsr_kernel_sets / sizeof tsr_kernel_sets[0];

const tsr_kernel_set *tsr_kernel_set_find(const char *name)
{
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        if (strcmp(name, tsr_kernel_sets[i].name) == 0)
            return &tsr_kernel_sets[i];
    return NULL;
}

const char *tsr_kernel_set_missing(const tsr_kernel_set *s, const tsr_cpu_features *f, char *buf,
                                   size_t len)
{
    for (const char *p = s->needs; *p;) {
        size_t word = strcspn(p, " ");
        const tsr_cpu_feature *feature = tsr_cpu_feature_find(p, word);
        if (!feature || !tsr_cpu_has(f, feature)) {
            if (feature && feature->what)
                snprintf(buf, len, "%s (%s)", feature->name, feature->what);
            else
                snprintf(buf, len, "%.*s%s", (int)word, p, feature ? "" : " (unknown to cpu.c)");
            return buf;
        }
        p += word;
        p += strspn(p, " ");
    }
    return NULL;
}

void tsr_kernel_set_list(char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", tsr_kernel_sets[i].name);
        if (n < 0 || (size_t)n >= len - used)
            break;
        used += (size_t)n;
    }
}
