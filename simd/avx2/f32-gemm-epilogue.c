/*
 * The GEMM epilogue, AVX2 + FMA (a tsr_gemm_epilogue_fn, see simd/gemm/gemm.h):
 * y = act(c + bias) + residual over a finished block, 8 columns at a time,
 * the last partial vector of each row with masked loads and stores (masked
 * lanes are neither read nor written, so nothing past the row is touched).
 *
 * The activations are the set's own vector functions (vecmath.h), the same
 * ones the activate kernel uses.
 */
#include <immintrin.h>
#include <stdint.h>

#include "simd/avx2/gemm-avx2.h"
#include "simd/avx2/vecmath.h"

/* ---- The epilogue ----------------------------------------------------------- */

/* Lanes [0, count) on, count <= 8. */
static inline __m256i lanes(size_t count)
{
    static const int32_t ones_then_zeros[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                0,  0,  0,  0,  0,  0,  0,  0};
    return _mm256_loadu_si256((const __m256i *)(ones_then_zeros + 8 - count));
}

/* One vector of 8 (or `mask`ed fewer) outputs. */
static inline __attribute__((always_inline)) void finish(const float *c, const float *bias,
                                                         const float *residual, float *y,
                                                         tsr_activation act, int partial,
                                                         __m256i mask)
{
    __m256 v = _mm256_loadu_ps(c);
    if (bias)
        v = _mm256_add_ps(v, partial ? _mm256_maskload_ps(bias, mask) : _mm256_loadu_ps(bias));
    v = tsr_avx2_activate(v, act);
    /* The residual is read before y is written: they may be the same. */
    if (residual)
        v = _mm256_add_ps(partial ? _mm256_maskload_ps(residual, mask) : _mm256_loadu_ps(residual),
                          v);
    if (partial)
        _mm256_maskstore_ps(y, mask, v);
    else
        _mm256_storeu_ps(y, v);
}

static inline __attribute__((always_inline)) void finish_block(
    const float *c, size_t ldc, size_t m, size_t n, const float *bias, tsr_activation act,
    const float *residual, size_t ldr, float *y, size_t ldy)
{
    const size_t full = n / 8 * 8;
    const __m256i mask = lanes(n - full);

    for (size_t i = 0; i < m; i++) {
        const float *c_row = c + i * ldc;
        const float *r_row = residual ? residual + i * ldr : NULL;
        float *y_row = y + i * ldy;
        size_t j = 0;
        for (; j < full; j += 8)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 0,
                   mask);
        if (j < n)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 1,
                   mask);
    }
}

void tsr_f32_gemm_epilogue__avx2(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                                 tsr_activation act, const float *residual, size_t ldr, float *y,
                                 size_t ldy)
{
    /* One copy of the loops per activation, so the switch is not per vector. */
    switch (act) {
    case TSR_ACT_RELU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_RELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_GELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_SILU:
        finish_block(c, ldc, m, n, bias, TSR_ACT_SILU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_TANH:
        finish_block(c, ldc, m, n, bias, TSR_ACT_GELU_TANH, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_SIGMOID:
        finish_block(c, ldc, m, n, bias, TSR_ACT_GELU_SIGMOID, residual, ldr, y, ldy);
        break;
    case TSR_ACT_NONE:
        finish_block(c, ldc, m, n, bias, TSR_ACT_NONE, residual, ldr, y, ldy);
        break;
    }
}
