/*
 * Position-wise FFN, y = residual + act(x W1^T + b1) W2^T + b2, ffn_block_rows
 * rows at a time through the scratch buffer so the m x d_ff intermediate is
 * never whole. Both halves are the scalar linear kernel, and linear's results
 * do not depend on how many rows it is given, so this is bit-identical to two
 * whole linear calls.
 */
#include "simd/scalar/scalar.h"

void tsr_f32_ffn__scalar(const tsr_ffn_args *a)
{
    const size_t d_ff = a->w1->n;

    for (size_t r0 = 0; r0 < a->m; r0 += TSR_SCALAR_FFN_BLOCK_ROWS) {
        size_t rows = a->m - r0 < TSR_SCALAR_FFN_BLOCK_ROWS ? a->m - r0 : TSR_SCALAR_FFN_BLOCK_ROWS;

        tsr_linear_args up = {
            .x = a->x + r0 * a->ldx, .ldx = a->ldx, .m = rows,
            .w = a->w1, .n_begin = 0, .n_end = d_ff, .act = a->act,
            .residual = NULL, .ldr = 0,
            .y = a->scratch, .ldy = d_ff,
        };
        tsr_f32_linear__scalar(&up);

        tsr_linear_args down = {
            .x = a->scratch, .ldx = d_ff, .m = rows,
            .w = a->w2, .n_begin = 0, .n_end = a->w2->n, .act = TSR_ACT_NONE,
            .residual = a->residual ? a->residual + r0 * a->ldr : NULL, .ldr = a->ldr,
            .y = a->y + r0 * a->ldy, .ldy = a->ldy,
        };
        tsr_f32_linear__scalar(&down);
    }
}
