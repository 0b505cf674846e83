/* CPU feature detection: what the processor and the operating system allow.
 * Detection runs once; nothing here uses an instruction beyond the baseline. */
#ifndef TSR_SIMD_CPU_H
#define TSR_SIMD_CPU_H

#include <stddef.h>

typedef struct tsr_cpu_features {
    const char *arch; /* "x86_64", "aarch64", ... */
    /* x86: set only when the OS also saves the register state (XGETBV). */
    int avx, avx2, fma, f16c;
    int avx512f, avx512bw, avx512dq, avx512vl, avx512vnni;
    int avxvnni; /* VEX-encoded vpdpbusd on ymm (Alder Lake, Zen 5) */
    /* AArch64 Advanced SIMD, and its ARMv8.2 dot product (sdot/udot). */
    int neon, neon_dot;
    /* x86: CPUID's vendor ("GenuineIntel", "AuthenticAMD"; "" elsewhere) and
     * its display family and model (base + extended), which name the
     * microarchitecture simd/tuning.c tunes for. */
    char vendor[13];
    unsigned family, model;
} tsr_cpu_features;

/* The features of the running CPU, detected on first call. Thread-safe after
 * the first call returns (call it once before starting threads). */
const tsr_cpu_features *tsr_cpu_features_get(void);

/* A feature by name: the words kernel sets list as their needs
 * (simd/sets.c) and tsr_cpu_features_describe prints. */
typedef struct tsr_cpu_feature {
    const char *name;  /* "avx2", "avx512bw", "dotprod", ... */
    size_t offset;     /* of its int in tsr_cpu_features */
    const char *what;  /* a longer name for messages, or NULL */
} tsr_cpu_feature;

/* Every feature tsr_cpu_features has, in the order describe lists them. */
extern const tsr_cpu_feature tsr_cpu_feature_list[];
extern const size_t tsr_cpu_feature_count;

/* The feature whose name is the `len` characters at name, or NULL. */
const tsr_cpu_feature *tsr_cpu_feature_find(const char *name, size_t len);

/* Whether f has the feature. */
int tsr_cpu_has(const tsr_cpu_features *f, const tsr_cpu_feature *feature);

/* Space-separated list of the features found, e.g. "avx avx2 fma f16c". */
void tsr_cpu_features_describe(const tsr_cpu_features *f, char *buf, size_t len);

#endif
