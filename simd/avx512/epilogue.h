/*
 * One vector of the GEMM epilogue, y = act(v + bias) + residual, shared by the
 * f32 epilogue (v from the finished block) and the int8 one (v dequantized in
 * registers from the int32 sums), so that both give the same bits for the
 * same v. 16 outputs, or, when partial, the `mask`ed fewer: masked-off lanes
 * are neither read nor written in bias, residual or y.
 *
 * The activations are the set's own vector functions (vecmath.h), the same
 * ones the activate kernel uses, so act(v) is the same bits in all three.
 */
#ifndef TSR_SIMD_AVX512_EPILOGUE_H
#define TSR_SIMD_AVX512_EPILOGUE_H

#include "simd/avx512/intrinsics.h"
#include "simd/avx512/vecmath.h"
#include "simd/kernels.h"

static inline __attribute__((always_inline)) void tsr_avx512_epilogue_vector(
    __m512 v, const float *bias, const float *residual, float *y, tsr_activation act,
    int partial, __mmask16 mask)
{
    if (bias)
        v = _mm512_add_ps(v, partial ? _mm512_maskz_loadu_ps(mask, bias) : _mm512_loadu_ps(bias));
    v = tsr_avx512_activate(v, act);
    /* The residual is read before y is written: they may be the same. */
    if (residual)
        v = _mm512_add_ps(partial ? _mm512_maskz_loadu_ps(mask, residual)
                                  : _mm512_loadu_ps(residual),
                          v);
    if (partial)
        _mm512_mask_storeu_ps(y, mask, v);
    else
        _mm512_storeu_ps(y, v);
}

#endif
