/* x = act(x) in place, 8 lanes at a time with vecmath.h; the tail of a row
 * through a masked load and store. */
#include "simd/avx2/avx2.h"
#include "simd/avx2/vecmath.h"

/* Inlined with a constant f, so each activation gets its own loop with no
 * call and no switch inside. */
static inline __attribute__((always_inline)) void apply(float *x, size_t n,
                                                        __m256 (*f)(__m256))
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, f(_mm256_loadu_ps(x + i)));
    if (i < n) {
        __m256i mask = tsr_avx2_tail_mask(n - i);
        _mm256_maskstore_ps(x + i, mask, f(_mm256_maskload_ps(x + i, mask)));
    }
}

void tsr_f32_activate__avx2(float *x, size_t n, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        apply(x, n, tsr_avx2_relu);
        break;
    case TSR_ACT_GELU:
        apply(x, n, tsr_avx2_gelu);
        break;
    case TSR_ACT_SILU:
        apply(x, n, tsr_avx2_silu);
        break;
    case TSR_ACT_GELU_TANH:
        apply(x, n, tsr_avx2_gelu_tanh);
        break;
    case TSR_ACT_GELU_SIGMOID:
        apply(x, n, tsr_avx2_gelu_sigmoid);
        break;
    case TSR_ACT_NONE:
        break;
    }
}
