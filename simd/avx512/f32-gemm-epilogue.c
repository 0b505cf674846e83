/*
 * The GEMM epilogue, AVX-512 (a tsr_gemm_epilogue_fn, see simd/gemm/gemm.h):
 * y = act(c + bias) + residual over a finished block, 16 columns at a time
 * (simd/avx512/epilogue.h); the last partial vector of each row goes through
 * opmask loads and stores (masked-off lanes are neither read nor written, so
 * nothing past the row is touched, in c, bias, residual or y).
 */
#include "simd/avx512/avx512.h"
#include "simd/avx512/epilogue.h"
#include "simd/avx512/gemm-avx512.h"

/* One vector of 16 (or, when partial, the `mask`ed fewer) outputs. */
static inline __attribute__((always_inline)) void finish(const float *c, const float *bias,
                                                         const float *residual, float *y,
                                                         tsr_activation act, int partial,
                                                         __mmask16 mask)
{
    tsr_avx512_epilogue_vector(partial ? _mm512_maskz_loadu_ps(mask, c) : _mm512_loadu_ps(c), bias,
                               residual, y, act, partial, mask);
}

static inline __attribute__((always_inline)) void finish_block(
    const float *c, size_t ldc, size_t m, size_t n, const float *bias, tsr_activation act,
    const float *residual, size_t ldr, float *y, size_t ldy)
{
    const size_t full = n / 16 * 16;
    const __mmask16 mask = tsr_avx512_tail_mask(n - full);

    for (size_t i = 0; i < m; i++) {
        const float *c_row = c + i * ldc;
        const float *r_row = residual ? residual + i * ldr : NULL;
        float *y_row = y + i * ldy;
        size_t j = 0;
        for (; j < full; j += 16)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 0,
                   mask);
        if (j < n)
            finish(c_row + j, bias ? bias + j : NULL, r_row ? r_row + j : NULL, y_row + j, act, 1,
                   mask);
    }
}

void tsr_f32_gemm_epilogue__avx512(const float *c, size_t ldc, size_t m, size_t n,
                                   const float *bias, tsr_activation act, const float *residual,
                                   size_t ldr, float *y, size_t ldy)
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
