/* The kernel sets: one row each (simd/sets.c). Dispatch, `tessera info`, the
 * error messages, the tests' list of sets and perf's FMA peaks all read this
 * table; nothing else names the sets. README's "Adding a kernel set" says
 * what else a new set needs (its folder, configure, Makefile.am). */
#ifndef TSR_SIMD_SETS_H
#define TSR_SIMD_SETS_H

#include <stddef.h>
#include <stdint.h>

#include "simd/cpu.h"
#include "simd/kernels.h"

typedef struct tsr_kernel_set {
    /* TESSERA_ISA's word, the table's t->name, tests/sets/NAME.set. */
    const char *name;
    /* The CPU features it runs on, space-separated names of
     * tsr_cpu_feature_list ("avx2 fma f16c"); "" for none. */
    const char *needs;
    /* Fills the kernel table; NULL when configure did not build the set. */
    void (*init)(tsr_kernels *t);
    /* Whether the automatic choice may take it (otherwise only TESSERA_ISA). */
    int automatic;
    /* A test-only set: in the tests' library only (TSR_WITH_EMULATED_SETS). */
    int emulated;
    /* perf's FMA loop compiled with the set's flags (its folder's
     * fma-peak.c): runs `iterations` rounds over independent accumulators
     * and returns the floating-point operations done; NULL if none. */
    double (*fma_peak)(uint64_t iterations);
} tsr_kernel_set;

/* Every set this library knows, worst first: the automatic choice takes the
 * last usable one that is `automatic`. Sets configure did not build are
 * rows too (init NULL), so that they can say so. */
extern const tsr_kernel_set tsr_kernel_sets[];
extern const size_t tsr_kernel_set_count;

/* The row called `name`, or NULL. */
const tsr_kernel_set *tsr_kernel_set_find(const char *name);

/* The first feature set s needs that f lacks, written into buf (with its
 * longer name, e.g. "neon (AArch64 Advanced SIMD)"); NULL when f has them
 * all. A name cpu.c does not know counts as lacking (tests/test_sets.c
 * checks there is none). */
const char *tsr_kernel_set_missing(const tsr_kernel_set *s, const tsr_cpu_features *f, char *buf,
                                   size_t len);

/* The names of every row, comma-separated ("scalar, avx2, ..."), for
 * messages. */
void tsr_kernel_set_list(char *buf, size_t len);

/* Table initialisers and FMA loops, one per set. A set's table starts from
 * the scalar entries and overrides those it has. */
void tsr_kernels_init_scalar(tsr_kernels *t);
void tsr_kernels_init_avx2(tsr_kernels *t);
void tsr_kernels_init_avx512(tsr_kernels *t);
void tsr_kernels_init_neon(tsr_kernels *t);
/* The test-only emulated avx512 set (simd/avx512/intrinsics.h). */
void tsr_kernels_init_avx512_emulated(tsr_kernels *t);

double tsr_fma_peak__scalar(uint64_t iterations);
double tsr_fma_peak__avx2(uint64_t iterations);
double tsr_fma_peak__avx512(uint64_t iterations);
double tsr_fma_peak__neon(uint64_t iterations);

/* The int8 kernels' peak loops, one per kernel's instructions, in the
 * kernel's library (named by its tsr_gemm_i8_kernel's peak): int8
 * multiply-adds x 2. */
double tsr_i8_peak__avx2(uint64_t iterations);
double tsr_i8_peak__avxvnni(uint64_t iterations);
double tsr_i8_peak__avx512vnni(uint64_t iterations);
double tsr_i8_peak__neon(uint64_t iterations);
double tsr_i8_peak__neondot(uint64_t iterations);

#endif
