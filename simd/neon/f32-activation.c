/*
 * x = act(x) in place, four floats at a time (vecmath.h). The last 1..3
 * elements go through the same vector code via a partial load and store, so
 * every element gets exactly the same arithmetic wherever it sits.
 */
#include "simd/neon/neon.h"
#include "simd/neon/vecmath.h"

typedef float32x4_t (*vector_fn)(float32x4_t);

/* Called with a constant fn, so each call site becomes its own loop with fn
 * inlined: the activation is chosen once per row, not per vector. */
static inline void apply(float *x, size_t n, vector_fn fn)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(x + i, fn(vld1q_f32(x + i)));
    if (i < n)
        tsr_neon_store_partial(x + i, fn(tsr_neon_load_partial(x + i, n - i)), n - i);
}

void tsr_f32_activate__neon(float *x, size_t n, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        apply(x, n, tsr_neon_relu);
        break;
    case TSR_ACT_GELU:
        apply(x, n, tsr_neon_gelu);
        break;
    case TSR_ACT_SILU:
        apply(x, n, tsr_neon_silu);
        break;
    case TSR_ACT_GELU_TANH:
        apply(x, n, tsr_neon_gelu_tanh);
        break;
    case TSR_ACT_GELU_SIGMOID:
        apply(x, n, tsr_neon_gelu_sigmoid);
        break;
    case TSR_ACT_NONE:
        break;
    }
}
