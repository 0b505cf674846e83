/*
 * The NEON epilogue of the GEMM frame (simd/gemm/gemm.h): for a finished
 * block of partial sums, y = act(c + bias) + residual, four columns at a
 * time, the activation from vecmath.h. A row's last 1..3 columns use partial
 * loads and stores, so nothing past column n of c, bias, residual or y is
 * touched. residual may equal y: each vector of it is loaded before the same
 * vector of y is stored.
 */
#include "simd/neon/neon.h"
#include "simd/neon/vecmath.h"

typedef float32x4_t (*vector_fn)(float32x4_t);

/* One vector of `width` (1..4) columns at column j of row i. */
static inline __attribute__((always_inline)) void
finish_vector(const float *c_row, const float *bias, const float *residual_row, float *y_row,
              size_t j, size_t width, vector_fn act)
{
    float32x4_t v = width == 4 ? vld1q_f32(c_row + j) : tsr_neon_load_partial(c_row + j, width);
    if (bias)
        v = vaddq_f32(v, width == 4 ? vld1q_f32(bias + j) : tsr_neon_load_partial(bias + j, width));
    v = act(v);
    if (residual_row)
        v = vaddq_f32(width == 4 ? vld1q_f32(residual_row + j)
                                 : tsr_neon_load_partial(residual_row + j, width),
                      v);
    if (width == 4)
        vst1q_f32(y_row + j, v);
    else
        tsr_neon_store_partial(y_row + j, v, width);
}

static inline __attribute__((always_inline)) void
finish_block(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
             const float *residual, size_t ldr, float *y, size_t ldy, vector_fn act)
{
    const size_t n_vec = n & ~(size_t)3;
    for (size_t i = 0; i < m; i++) {
        const float *c_row = c + i * ldc;
        const float *residual_row = residual ? residual + i * ldr : NULL;
        float *y_row = y + i * ldy;
        for (size_t j = 0; j < n_vec; j += 4)
            finish_vector(c_row, bias, residual_row, y_row, j, 4, act);
        if (n_vec < n)
            finish_vector(c_row, bias, residual_row, y_row, n_vec, n - n_vec, act);
    }
}

static inline float32x4_t identity(float32x4_t x)
{
    return x;
}

void tsr_f32_gemm_epilogue__neon(const float *c, size_t ldc, size_t m, size_t n,
                                 const float *bias, tsr_activation act, const float *residual,
                                 size_t ldr, float *y, size_t ldy)
{
    switch (act) {
    case TSR_ACT_RELU:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, tsr_neon_relu);
        break;
    case TSR_ACT_GELU:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, tsr_neon_gelu);
        break;
    case TSR_ACT_SILU:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, tsr_neon_silu);
        break;
    case TSR_ACT_GELU_TANH:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, tsr_neon_gelu_tanh);
        break;
    case TSR_ACT_GELU_SIGMOID:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, tsr_neon_gelu_sigmoid);
        break;
    case TSR_ACT_NONE:
        finish_block(c, ldc, m, n, bias, residual, ldr, y, ldy, identity);
        break;
    }
}
