/*
 * Widening of float16 (vcvtph2ps) and bfloat16 (a 16-bit shift) to float32,
 * sixteen elements at a time. Both conversions are exact, subnormal halves
 * included; NaN payloads are kept, except that vcvtph2ps sets the quiet bit
 * of a signalling half NaN (the scalar set copies it unchanged). The source
 * may sit at any byte address: full groups use unaligned loads, and the last
 * partial group an opmask load of 16-bit elements (AVX-512 BW + VL), which
 * reads nothing past the source, and an opmask store.
 */
#include "simd/avx512/avx512.h"

void tsr_f16_to_f32__avx512(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i,
                         _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 2 * i))));
    if (i < n) {
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, mask,
                              _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p + 2 * i)));
    }
}

/* bfloat16 is the top half of a float32: zero-extend to 32 bits, shift up. */
static __m512 bf16_widen(__m256i h)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

void tsr_bf16_to_f32__avx512(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, bf16_widen(_mm256_loadu_si256((const __m256i *)(p + 2 * i))));
    if (i < n) {
        __mmask16 mask = tsr_avx512_tail_mask(n - i);
        _mm512_mask_storeu_ps(dst + i, mask, bf16_widen(_mm256_maskz_loadu_epi16(mask, p + 2 * i)));
    }
}
