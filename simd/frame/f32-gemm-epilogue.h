/*
 * The GEMM epilogue over a finished block (a tsr_gemm_epilogue_fn, see
 * simd/gemm/gemm.h): y = act(c + bias) + residual, a vector of columns at a
 * time, the last partial vector of each row with masked loads and stores
 * (masked lanes are neither read nor written, so nothing past the row is
 * touched, in c, bias, residual or y). Written once over a set's vector
 * vocabulary, one vector through epilogue_value like every GEMM path.
 */
#ifndef TSR_SIMD_FRAME_F32_GEMM_EPILOGUE_H
#define TSR_SIMD_FRAME_F32_GEMM_EPILOGUE_H

#include "simd/frame/gemm-epilogue-vector.h"

static inline __attribute__((always_inline)) void epilogue_block(
    const float *c, size_t ldc, size_t m, size_t n, const float *bias, tsr_activation act,
    const float *residual, size_t ldr, float *y, size_t ldy)
{
    const size_t full = n / VEC_WIDTH * VEC_WIDTH;
    const vec_mask_t mask = VEC_TAIL_MASK(n - full); /* used only when n > full */

    for (size_t i = 0; i < m; i++) {
        const float *c_row = c + i * ldc;
        const float *r_row = residual ? residual + i * ldr : NULL;
        float *y_row = y + i * ldy;
        size_t j = 0;
        for (; j < full; j += VEC_WIDTH)
            epilogue_vector(VEC_LOADU(c_row + j), bias ? bias + j : NULL,
                            r_row ? r_row + j : NULL, y_row + j, act, 0, mask);
        if (j < n)
            epilogue_vector(VEC_LOAD_TAIL(c_row + j, mask), bias ? bias + j : NULL,
                            r_row ? r_row + j : NULL, y_row + j, act, 1, mask);
    }
}

/* The set's epilogue, tsr_f32_gemm_epilogue__<set>, is this. */
static void epilogue_frame(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                           tsr_activation act, const float *residual, size_t ldr, float *y,
                           size_t ldy)
{
    /* One copy of the loops per activation, so the switch is not per vector. */
    switch (act) {
    case TSR_ACT_RELU:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_RELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_GELU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_SILU:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_SILU, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_TANH:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_GELU_TANH, residual, ldr, y, ldy);
        break;
    case TSR_ACT_GELU_SIGMOID:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_GELU_SIGMOID, residual, ldr, y, ldy);
        break;
    case TSR_ACT_NONE:
        epilogue_block(c, ldc, m, n, bias, TSR_ACT_NONE, residual, ldr, y, ldy);
        break;
    }
}

#endif
