/*
 * The GEMM epilogue, AVX-512 (a tsr_gemm_epilogue_fn, see simd/gemm/gemm.h):
 * the shared one (simd/frame/f32-gemm-epilogue.h) over the avx512
 * vocabulary, 16 columns a zmm vector, partial vectors through opmask loads
 * and stores.
 */
#include "simd/avx512/gemm-avx512.h"
#include "simd/avx512/vec.h"
#include "simd/frame/f32-gemm-epilogue.h"

void tsr_f32_gemm_epilogue__avx512(const float *c, size_t ldc, size_t m, size_t n,
                                   const float *bias, tsr_activation act, const float *residual,
                                   size_t ldr, float *y, size_t ldy)
{
    epilogue_frame(c, ldc, m, n, bias, act, residual, ldr, y, ldy);
}
