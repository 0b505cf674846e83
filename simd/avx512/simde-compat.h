/*
 * Intrinsics the emulated avx512 build uses that Debian 12's SIMDe (0.7.4)
 * does not implement, written from the semantics Intel's intrinsics guide
 * documents for them, on SIMDe's types. Included by
 * simd/avx512/intrinsics.h in the emulated build only: the native build
 * uses the compiler's own. Each one is redirected with a macro, the way
 * SIMDe's native aliases are, so kernel code names the Intel intrinsic.
 */
#ifndef TSR_SIMD_AVX512_SIMDE_COMPAT_H
#define TSR_SIMD_AVX512_SIMDE_COMPAT_H

#include <stdint.h>
#include <string.h>

/* ---- used by f32-attention.c */
/* Each is defined only if no earlier section (nor SIMDe) already has it. */

#ifndef _mm512_maskz_loadu_ps
/* Lanes whose bit of k is set are read from p (unaligned); the others are 0
 * and their memory is not touched. */
static inline __attribute__((always_inline)) simde__m512
tsr_emu__mm512_maskz_loadu_ps(simde__mmask16 k, const void *p)
{
    simde__m512_private r;
    for (int i = 0; i < 16; i++) {
        r.f32[i] = 0.0f;
        if ((k >> i) & 1)
            memcpy(&r.f32[i], (const char *)p + 4 * i, 4);
    }
    return simde__m512_from_private(r);
}
#define _mm512_maskz_loadu_ps(...) tsr_emu__mm512_maskz_loadu_ps(__VA_ARGS__)
#endif

#ifndef _mm512_mask_storeu_ps
/* Lanes whose bit of k is set are written to p (unaligned); the others' memory
 * is not touched. */
static inline __attribute__((always_inline)) void
tsr_emu__mm512_mask_storeu_ps(void *p, simde__mmask16 k, simde__m512 a)
{
    simde__m512_private v = simde__m512_to_private(a);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy((char *)p + 4 * i, &v.f32[i], 4);
}
#define _mm512_mask_storeu_ps(...) tsr_emu__mm512_mask_storeu_ps(__VA_ARGS__)
#endif

#ifndef _mm512_extractf32x8_ps
/* Lanes 8 * (imm8 & 1) .. + 7 of a. */
static inline __attribute__((always_inline)) simde__m256
tsr_emu__mm512_extractf32x8_ps(simde__m512 a, int imm8)
{
    simde__m512_private v = simde__m512_to_private(a);
    return v.m256[imm8 & 1];
}
#define _mm512_extractf32x8_ps(...) tsr_emu__mm512_extractf32x8_ps(__VA_ARGS__)
#endif

#ifndef _mm512_shuffle_f32x4
/* 128-bit lanes 0 and 1 of the result are lanes imm8[1:0] and imm8[3:2] of a,
 * lanes 2 and 3 are lanes imm8[5:4] and imm8[7:6] of b. */
static inline __attribute__((always_inline)) simde__m512
tsr_emu__mm512_shuffle_f32x4(simde__m512 a, simde__m512 b, int imm8)
{
    simde__m512_private x = simde__m512_to_private(a), y = simde__m512_to_private(b), r;
    for (int lane = 0; lane < 4; lane++) {
        const simde__m512_private *src = lane < 2 ? &x : &y;
        int from = (imm8 >> (2 * lane)) & 3;
        memcpy(&r.f32[4 * lane], &src->f32[4 * from], 16);
    }
    return simde__m512_from_private(r);
}
#define _mm512_shuffle_f32x4(...) tsr_emu__mm512_shuffle_f32x4(__VA_ARGS__)
#endif

/* ---- used by the vector kernels */
/* Each is defined only if no earlier section (nor SIMDe) already has it. The
 * conversions apply SIMDe's 256-bit ones to each half, which is what Intel
 * documents for the 512-bit forms (lane i of the result from lane i of a). */

#include <math.h>
#include <simde/x86/f16c.h>

#ifndef _mm512_cvtps_pd
/* The 8 floats of a, each widened (exactly) to double. */
static inline __attribute__((always_inline)) simde__m512d tsr_emu__mm512_cvtps_pd(simde__m256 a)
{
    simde__m256_private a_ = simde__m256_to_private(a);
    simde__m512d_private r;
    r.m256d[0] = simde_mm256_cvtps_pd(a_.m128[0]);
    r.m256d[1] = simde_mm256_cvtps_pd(a_.m128[1]);
    return simde__m512d_from_private(r);
}
#define _mm512_cvtps_pd(...) tsr_emu__mm512_cvtps_pd(__VA_ARGS__)
#endif

#ifndef _mm512_cvtpd_ps
/* The 8 doubles of a, each rounded to float in the current rounding mode. */
static inline __attribute__((always_inline)) simde__m256 tsr_emu__mm512_cvtpd_ps(simde__m512d a)
{
    simde__m512d_private a_ = simde__m512d_to_private(a);
    simde__m256_private r;
    r.m128[0] = simde_mm256_cvtpd_ps(a_.m256d[0]);
    r.m128[1] = simde_mm256_cvtpd_ps(a_.m256d[1]);
    return simde__m256_from_private(r);
}
#define _mm512_cvtpd_ps(...) tsr_emu__mm512_cvtpd_ps(__VA_ARGS__)
#endif

#ifndef _mm512_cvtph_ps
/* The 16 halves of a, each widened (exactly) to float; a signalling NaN
 * comes out quiet, as vcvtph2ps makes it. */
static inline __attribute__((always_inline)) simde__m512 tsr_emu__mm512_cvtph_ps(simde__m256i a)
{
    simde__m256i_private a_ = simde__m256i_to_private(a);
    simde__m512_private r;
    r.m256[0] = simde_mm256_cvtph_ps(a_.m128i[0]);
    r.m256[1] = simde_mm256_cvtph_ps(a_.m128i[1]);
    return simde__m512_from_private(r);
}
#define _mm512_cvtph_ps(...) tsr_emu__mm512_cvtph_ps(__VA_ARGS__)
#endif

#ifndef _mm512_cvtepu16_epi32
/* The 16 unsigned 16-bit lanes of a, zero-extended to 32 bits. */
static inline __attribute__((always_inline)) simde__m512i
tsr_emu__mm512_cvtepu16_epi32(simde__m256i a)
{
    simde__m256i_private a_ = simde__m256i_to_private(a);
    simde__m512i_private r;
    r.m256i[0] = simde_mm256_cvtepu16_epi32(a_.m128i[0]);
    r.m256i[1] = simde_mm256_cvtepu16_epi32(a_.m128i[1]);
    return simde__m512i_from_private(r);
}
#define _mm512_cvtepu16_epi32(...) tsr_emu__mm512_cvtepu16_epi32(__VA_ARGS__)
#endif

/* ---- used by i8-gemm-epilogue.c */

#ifndef _mm512_cvtepi32_ps
/* The 16 signed 32-bit lanes of a converted to float, rounded to nearest
 * even (the default MXCSR mode, as vcvtdq2ps). */
static inline __attribute__((always_inline)) simde__m512 tsr_emu__mm512_cvtepi32_ps(simde__m512i a)
{
    simde__m512i_private a_ = simde__m512i_to_private(a);
    simde__m512_private r;
    r.m256[0] = simde_mm256_cvtepi32_ps(a_.m256i[0]);
    r.m256[1] = simde_mm256_cvtepi32_ps(a_.m256i[1]);
    return simde__m512_from_private(r);
}
#define _mm512_cvtepi32_ps(...) tsr_emu__mm512_cvtepi32_ps(__VA_ARGS__)
#endif

#ifndef _mm256_maskz_loadu_epi16
/* Lanes whose bit of k is set are read from p (any byte address); the others
 * are 0 and their memory is not touched. */
static inline __attribute__((always_inline)) simde__m256i
tsr_emu__mm256_maskz_loadu_epi16(simde__mmask16 k, const void *p)
{
    simde__m256i_private r;
    for (int i = 0; i < 16; i++) {
        r.u16[i] = 0;
        if ((k >> i) & 1)
            memcpy(&r.u16[i], (const char *)p + 2 * i, 2);
    }
    return simde__m256i_from_private(r);
}
#define _mm256_maskz_loadu_epi16(...) tsr_emu__mm256_maskz_loadu_epi16(__VA_ARGS__)
#endif

/* Not missing but wrong for tsr_avx512_exp: SIMDe 0.7.4's _mm512_scalef_ps
 * is a * exp2(floor(b)) with the power of two itself a float, so a scale
 * outside float's range gives inf or 0 where vscalefps rounds a * 2^floor(b)
 * once (e^88.5 = 0.7 * 2^128 came out inf, e^-100 a subnormal came out 0),
 * and it flushes subnormal operands. Replaced lane by lane: ldexpf rounds
 * once; NaN, and infinite b (a * inf or a * 0, so 0 * 2^inf and
 * inf * 2^-inf are NaN), as Intel's table gives them. */
#ifndef TSR_EMU_SCALEF_PS
#define TSR_EMU_SCALEF_PS
static inline __attribute__((always_inline)) simde__m512 tsr_emu__mm512_scalef_ps(simde__m512 a,
                                                                                 simde__m512 b)
{
    simde__m512_private a_ = simde__m512_to_private(a), b_ = simde__m512_to_private(b), r;
    for (int i = 0; i < 16; i++) {
        float x = a_.f32[i], e = b_.f32[i];
        if (isnan(x) || isnan(e)) {
            r.f32[i] = x + e;
        } else if (isinf(e)) {
            r.f32[i] = x * (e > 0 ? INFINITY : 0.0f);
        } else {
            /* Past +-400 every finite nonzero x overflows or underflows. */
            float f = floorf(e);
            r.f32[i] = ldexpf(x, f > 400.0f ? 400 : f < -400.0f ? -400 : (int)f);
        }
    }
    return simde__m512_from_private(r);
}
#undef _mm512_scalef_ps
#define _mm512_scalef_ps(...) tsr_emu__mm512_scalef_ps(__VA_ARGS__)
#endif

#endif
