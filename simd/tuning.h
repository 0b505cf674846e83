/* What the kernels tune by the microarchitecture found at run time, beyond
 * the features a kernel set needs: one row of a table per known family,
 * chosen once from CPUID's vendor, family and model (simd/cpu.h), or named
 * by TESSERA_TUNING (for A/B runs of one binary on one machine). A row
 * holds only choices that were measured to differ between machines; every
 * choice is a speed choice: results are the same bits under every row. */
#ifndef TSR_SIMD_TUNING_H
#define TSR_SIMD_TUNING_H

#include <stddef.h>

#include "simd/cpu.h"

typedef struct tsr_tuning {
    const char *name;   /* "zen4", "intel", ... (TESSERA_TUNING takes these) */
    const char *family; /* what the row covers, for tessera info */
    /* The avx512 set's f32 tiles of more than 4 rows prefetch the weight
     * lines ahead into L2 (T1) instead of L1 (T0) (simd/avx512/f32-gemm-
     * 12x32.c). On an Intel, T0 prefetches held 16 decode rows of f32
     * weights from memory to about 9 GB/s of the 19 one core streams (L1
     * has few fill buffers); T1 gave base f32 greedy-batch 8 %. The AMD rows
     * keep T0, the choice measured on Zen 4 and Zen 5 (T1 not tried there:
     * TESSERA_TUNING=intel does). */
    int prefetch_to_l2;
} tsr_tuning;

/* The rows, generic last. */
extern const tsr_tuning tsr_tunings[];
extern const size_t tsr_tuning_count;

/* The row for these features (generic when no row knows the CPU). */
const tsr_tuning *tsr_tuning_for(const tsr_cpu_features *f);

/* The row in use: TESSERA_TUNING's when set and known, else the CPU's;
 * decided on first call, thread-safe after it. *forced (when not NULL) says
 * whether TESSERA_TUNING chose it. */
const tsr_tuning *tsr_tuning_chosen(int *forced);

/* 0, or -1 with a one-line message when TESSERA_TUNING names no row (the
 * row in use is then the CPU's): bad input, reported where the kernel set
 * is chosen. */
int tsr_tuning_check(char *err, size_t err_len);

#endif
