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
} tsr_cpu_features;

/* The features of the running CPU, detected on first call. Thread-safe after
 * the first call returns (call it once before starting threads). */
const tsr_cpu_features *tsr_cpu_features_get(void);

/* Space-separated list of the features found, e.g. "avx avx2 fma f16c". */
void tsr_cpu_features_describe(const tsr_cpu_features *f, char *buf, size_t len);

#endif
