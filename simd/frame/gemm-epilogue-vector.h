/*
 * One vector of the GEMM epilogue, y = act(v + bias) + residual, over a
 * set's vector vocabulary (simd/<set>/vec.h). Every path that finishes GEMM
 * sums goes through epilogue_value: the f32 epilogue (v read back from the
 * finished block), the int8 one (v dequantized in registers) and a fused
 * final tile (v still in its accumulators), so all give the same bits for
 * the same v. The activations are vec_activate, the activate kernel's own.
 */
#ifndef TSR_SIMD_FRAME_GEMM_EPILOGUE_VECTOR_H
#define TSR_SIMD_FRAME_GEMM_EPILOGUE_VECTOR_H

#include "simd/frame/vec-activations.h"
#include "simd/frame/vec-parts.h"

/* The arithmetic, in this order: + bias (when given), activation,
 * + residual (when given). bias and residual are vectors the caller loaded
 * (a fused tile loads the bias once for all its rows). */
static inline __attribute__((always_inline)) vec_t
epilogue_value(vec_t v, const vec_t *bias, tsr_activation act, const vec_t *residual)
{
    if (bias)
        v = VEC_ADD(v, *bias);
    v = vec_activate(v, act);
    if (residual)
        v = VEC_ADD(*residual, v);
    return v;
}

/* A vector of outputs from memory to memory: VEC_WIDTH of them, or when
 * partial the `mask`ed fewer, masked-off lanes neither read nor written in
 * bias, residual or y. */
static inline __attribute__((always_inline)) void
epilogue_vector(vec_t v, const float *bias, const float *residual, float *y, tsr_activation act,
                int partial, vec_mask_t mask)
{
    const vec_t b = bias ? load_part(bias, partial, mask) : VEC_ZERO();
    /* The residual is read before y is written: they may be the same. */
    const vec_t r = residual ? load_part(residual, partial, mask) : VEC_ZERO();
    store_part(y, partial, mask, epilogue_value(v, bias ? &b : NULL, act, residual ? &r : NULL));
}

#endif
