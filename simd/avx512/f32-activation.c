/* x = act(x) in place, 16 lanes at a time with vecmath.h; the tail of a row
 * (fewer than 16 elements) through an opmask load and store, whose
 * masked-off lanes are neither read nor written. */
#include "simd/avx512/avx512.h"
#include "simd/avx512/vecmath.h"

/* Inlined with a constant f, so each activation gets its own loop with no
 * call and no switch inside. */
static inline __attribute__((always_inline)) void apply(float *x, size_t n,
                                                        __m512 (*f)(__m512))
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, f(_mm512_loadu_ps(x + i)));
    if (i < n) {
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        _mm512_mask_storeu_ps(x + i, mask, f(_mm512_maskz_loadu_ps(mask, x + i)));
    }
}

void tsr_f32_activate__avx512(float *x, size_t n, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        apply(x, n, tsr_avx512_relu);
        break;
    case TSR_ACT_GELU:
        apply(x, n, tsr_avx512_gelu);
        break;
    case TSR_ACT_SILU:
        apply(x, n, tsr_avx512_silu);
        break;
    case TSR_ACT_GELU_TANH:
        apply(x, n, tsr_avx512_gelu_tanh);
        break;
    case TSR_ACT_GELU_SIGMOID:
        apply(x, n, tsr_avx512_gelu_sigmoid);
        break;
    case TSR_ACT_NONE:
        break;
    }
}
