/*
 * Where the avx512 set's intrinsics come from. Every file of simd/avx512/
 * includes this instead of <immintrin.h>, because the same sources are built
 * twice:
 *
 *   - natively (the set dispatch chooses), with -mavx512f -mavx512bw
 *     -mavx512dq -mavx512vl -mfma -mf16c: <immintrin.h>, real instructions;
 *   - emulated (TSR_AVX512_EMULATED, a test-only set that is never installed
 *     nor chosen by dispatch), at the avx2 set's flags: the _mm512_* names
 *     are SIMDe's ("SIMD Everywhere") portable implementations, so the set's
 *     kernels run, and are tested, on a CPU without AVX-512. Debian 12's SIMDe
 *     (0.7.4) lacks a few intrinsics; simd/avx512/simde-compat.h supplies
 *     them, and simd/avx512/emulated-names.h renames the set's external
 *     symbols so that both builds can be linked into one test program.
 */
#ifndef TSR_SIMD_AVX512_INTRINSICS_H
#define TSR_SIMD_AVX512_INTRINSICS_H

#ifdef TSR_AVX512_EMULATED
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include "simd/avx512/emulated-names.h"
#include "simd/avx512/simde-compat.h"
#else
#include <immintrin.h>
#endif

#endif
