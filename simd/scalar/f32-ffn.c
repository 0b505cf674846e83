/*
 * Position-wise FFN, y = residual + act(x W1^T + b1) W2^T + b2: the frame's
 * block loop (tsr_ffn_in_blocks, simd/gemm/gemm.h) over the scalar linear
 * kernel, TSR_SCALAR_FFN_BLOCK_ROWS rows at a time through the scratch
 * buffer. The scalar linear's results do not depend on how many rows it is
 * given, so this is bit-identical to two whole linear calls.
 */
#include "simd/gemm/gemm.h"
#include "simd/scalar/scalar.h"

static void scalar_linear(const void *ctx, const tsr_linear_args *a)
{
    (void)ctx;
    tsr_f32_linear__scalar(a);
}

void tsr_f32_ffn__scalar(const tsr_ffn_args *a)
{
    tsr_ffn_in_blocks(a, TSR_SCALAR_FFN_BLOCK_ROWS, scalar_linear, NULL);
}
