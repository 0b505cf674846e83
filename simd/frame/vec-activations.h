/*
 * The activations over a set's vector vocabulary (VEC_*, simd/<set>/vec.h),
 * written once for every vector set: the activate kernel, the GEMM epilogues
 * and the fused GEMM tile all call vec_activate, so act(v) is the same bits
 * in each. What differs between sets is e^x (VEC_EXP, the set's
 * vecmath.h) and how lanes are selected (VEC_SELECT_*: blends or opmasks).
 *
 * The sigmoid forms are computed as x / (1 + e^-g(x)), the way the scalar
 * set computes them: e^-g overflows to inf far out, giving 0 (or -0), and
 * NaN stays NaN.
 */
#ifndef TSR_SIMD_FRAME_VEC_ACTIVATIONS_H
#define TSR_SIMD_FRAME_VEC_ACTIVATIONS_H

#include "simd/kernels.h"

/* Where erf switches from the series-like fit to the erfc tail fit. */
#define ERF_SPLIT 1.25f
/* From 3.9192 on, erf(x) rounds to 1 in float (erfc(x) < 2^-25). */
#define ERF_ONE 3.92f

/*
 * erf(z) = z * P(z^2) for |z| < 1.25, P of degree 7 in z^2: minimax for the
 * relative error of erf on [0, 1.25], max 6.5e-9. (Split at 1.25 rather
 * than higher because P's terms alternate in sign and grow with z^2, so the
 * float evaluation loses more bits the wider the interval.) The constant
 * term 1.12837917 is applied as z + z * 0.12837917: rounded to float, the
 * smaller number keeps 3 more bits of the coefficient. (Fits: a linear
 * Remez exchange in 50-digit arithmetic, rounded to float; see
 * simd/avx2/vecmath.h.)
 */
static inline vec_t vec_erf_near_zero(vec_t z)
{
    vec_t s = VEC_MUL(z, z);
    vec_t p = VEC_SET1(-8.315454e-6f);
    p = VEC_FMA(p, s, VEC_SET1(1.07936045e-4f));
    p = VEC_FMA(p, s, VEC_SET1(-8.4230566e-4f));
    p = VEC_FMA(p, s, VEC_SET1(5.21751e-3f));
    p = VEC_FMA(p, s, VEC_SET1(-2.6864571e-2f));
    p = VEC_FMA(p, s, VEC_SET1(1.1283776e-1f));
    p = VEC_FMA(p, s, VEC_SET1(-3.7612638e-1f));
    p = VEC_FMA(p, s, VEC_SET1(1.2837917e-1f));
    return VEC_FMA(z, p, z);
}

/*
 * erfc(a) for a >= 1.25 as e^(-a^2) Q(a - 1.25), Q of degree 8: minimax on
 * [1.25, 3.92] for the absolute error of e^(-a^2) Q, which is the absolute
 * error of erf: max 1.6e-8. Past 3.92 the result is 0 (erf is 1 in float
 * there). NaN stays NaN (the compare is false for NaN, and min passes it
 * through). Lanes with a < 1.25 hold meaningless values.
 */
static inline vec_t vec_erfc_tail(vec_t a)
{
    vec_t ac = VEC_MIN(VEC_SET1(ERF_ONE), a);
    vec_t u = VEC_SUB(ac, VEC_SET1(ERF_SPLIT));
    vec_t q = VEC_SET1(2.4094044e-5f);
    q = VEC_FMA(q, u, VEC_SET1(-3.1933765e-4f));
    q = VEC_FMA(q, u, VEC_SET1(1.9321039e-3f));
    q = VEC_FMA(q, u, VEC_SET1(-7.3554832e-3f));
    q = VEC_FMA(q, u, VEC_SET1(2.0884847e-2f));
    q = VEC_FMA(q, u, VEC_SET1(-4.9811505e-2f));
    q = VEC_FMA(q, u, VEC_SET1(1.0672799e-1f));
    q = VEC_FMA(q, u, VEC_SET1(-2.0881855e-1f));
    q = VEC_FMA(q, u, VEC_SET1(3.6782292e-1f));
    vec_t e = VEC_EXP(VEC_MUL(VEC_NEGATE(ac), ac));
    return VEC_SELECT_GT(a, VEC_SET1(ERF_ONE), VEC_ZERO(), VEC_MUL(e, q));
}

/*
 * GELU, erf form: x/2 (1 + erf(x / sqrt 2)). For x < 0 the factor
 * 1 + erf(z) is taken as erfc(|z|) itself rather than 1 - (1 - erfc), so
 * the small negative outputs keep their relative precision down to z = -3.92.
 * erf within 1.1e-7 absolute (relative near 0), measured on a 1e-5 grid over
 * [-12, 12] against double erf.
 */
static inline vec_t vec_gelu(vec_t x)
{
    vec_t z = VEC_MUL(x, VEC_SET1(0.70710678f));
    vec_t a = VEC_ABS(z);
    vec_t tail = vec_erfc_tail(a);
    vec_t one_plus_tail = VEC_SELECT_GT(z, VEC_ZERO(), VEC_SUB(VEC_SET1(2.0f), tail), tail);
    vec_t one_plus_near = VEC_ADD(VEC_SET1(1.0f), vec_erf_near_zero(z));
    vec_t one_plus_erf = VEC_SELECT_LT(a, VEC_SET1(ERF_SPLIT), one_plus_near, one_plus_tail);
    return VEC_MUL(VEC_MUL(x, VEC_SET1(0.5f)), one_plus_erf);
}

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
        return vec_gelu(x);
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
