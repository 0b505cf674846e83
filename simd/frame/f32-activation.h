/*
 * x = act(x) in place over a set's vector vocabulary (simd/<set>/vec.h):
 * whole vectors, then the tail of the row through a masked load and store,
 * whose masked-off lanes are neither read nor written.
 */
#ifndef TSR_SIMD_FRAME_F32_ACTIVATION_H
#define TSR_SIMD_FRAME_F32_ACTIVATION_H

#include "simd/frame/vec-activations.h"

/* Inlined with a constant f, so each activation gets its own loop with no
 * call and no switch inside. */
static inline __attribute__((always_inline)) void apply(float *x, size_t n, vec_t (*f)(vec_t))
{
    size_t i = 0;
    for (; i + VEC_WIDTH <= n; i += VEC_WIDTH)
        VEC_STOREU(x + i, f(VEC_LOADU(x + i)));
    if (i < n) {
        const vec_mask_t mask = VEC_TAIL_MASK(n - i);
        VEC_STORE_TAIL(x + i, mask, f(VEC_LOAD_TAIL(x + i, mask)));
    }
}

/* The set's activate kernel, tsr_f32_activate__<set>, is this. */
static void activation_frame(float *x, size_t n, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        apply(x, n, vec_relu);
        break;
    case TSR_ACT_GELU:
        apply(x, n, vec_gelu);
        break;
    case TSR_ACT_SILU:
        apply(x, n, vec_silu);
        break;
    case TSR_ACT_GELU_TANH:
        apply(x, n, vec_gelu_tanh);
        break;
    case TSR_ACT_GELU_SIGMOID:
        apply(x, n, vec_gelu_sigmoid);
        break;
    case TSR_ACT_NONE:
        break;
    }
}

#endif
