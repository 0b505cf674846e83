/*
 * The GEMM epilogue, NEON (a tsr_gemm_epilogue_fn, see simd/gemm/gemm.h): the
 * shared one (simd/frame/f32-gemm-epilogue.h) over the neon vocabulary, 4
 * columns a vector, partial vectors through partial loads and stores.
 */
#include "simd/neon/vec.h"
#include "simd/frame/f32-gemm-epilogue.h"

void tsr_f32_gemm_epilogue__neon(const float *c, size_t ldc, size_t m, size_t n, const float *bias,
                                 tsr_activation act, const float *residual, size_t ldr, float *y,
                                 size_t ldy)
{
    epilogue_frame(c, ldc, m, n, bias, act, residual, ldr, y, ldy);
}
