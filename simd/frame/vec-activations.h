/*
 * The activations over a set's vector vocabulary (VEC_*, simd/<set>/vec.h),
 * written once for every x86 set: the activate kernel, the GEMM epilogues
 * and the fused GEMM tile all call vec_activate, so act(v) is the same bits
 * in each. What differs between sets lives in the set's vecmath.h, reached
 * through the vocabulary: VEC_EXP (e^x for every x) and VEC_GELU (the erf
 * form, whose lane selections are the set's own: blends or opmasks).
 *
 * The sigmoid forms are computed as x / (1 + e^-g(x)), the way the scalar
 * set computes them: e^-g overflows to inf far out, giving 0 (or -0), and
 * NaN stays NaN.
 */
#ifndef TSR_SIMD_FRAME_VEC_ACTIVATIONS_H
#define TSR_SIMD_FRAME_VEC_ACTIVATIONS_H

#include "simd/kernels.h"

/* x * sigmoid(x), as x / (1 + e^-x). */
static inline vec_t vec_silu(vec_t x)
{
    vec_t e = VEC_EXP(VEC_NEGATE(x));
    return VEC_DIV(x, VEC_ADD(VEC_SET1(1.0f), e));
}

/* x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3): the tanh GELU as
 * x / (1 + e^(-2u)). */
static inline vec_t vec_gelu_tanh(vec_t x)
{
    vec_t inner = VEC_FMA(VEC_MUL(x, x), VEC_SET1(0.044715f), VEC_SET1(1.0f));
    vec_t e = VEC_EXP(VEC_MUL(VEC_MUL(x, VEC_SET1(-1.5957691216f)), inner));
    return VEC_DIV(x, VEC_ADD(VEC_SET1(1.0f), e));
}

/* x sigmoid(1.702 x), as x / (1 + e^(-1.702 x)). */
static inline vec_t vec_gelu_sigmoid(vec_t x)
{
    vec_t e = VEC_EXP(VEC_MUL(x, VEC_SET1(-1.702f)));
    return VEC_DIV(x, VEC_ADD(VEC_SET1(1.0f), e));
}

/* max(0, x) keeping NaN: max returns its second operand, x, on NaN (and on
 * -0, which the scalar set also keeps). */
static inline vec_t vec_relu(vec_t x)
{
    return VEC_MAX(VEC_ZERO(), x);
}

static inline vec_t vec_activate(vec_t x, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        return vec_relu(x);
    case TSR_ACT_GELU:
        return VEC_GELU(x);
    case TSR_ACT_SILU:
        return vec_silu(x);
    case TSR_ACT_GELU_TANH:
        return vec_gelu_tanh(x);
    case TSR_ACT_GELU_SIGMOID:
        return vec_gelu_sigmoid(x);
    case TSR_ACT_NONE:
        break;
    }
    return x;
}

#endif
