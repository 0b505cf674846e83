/*
 * Widening of float16 (F16C's vcvtph2ps) and bfloat16 (a 16-bit shift) to
 * float32, eight elements at a time. Both conversions are exact, subnormal
 * halves included; NaN payloads are kept, except that vcvtph2ps sets the
 * quiet bit of a signalling half NaN (the scalar set copies it unchanged).
 * The source may sit at any byte address: full groups use
 * unaligned loads, and the last partial group is copied into a zeroed
 * 8-element buffer first so nothing past the source is read.
 */
#include <string.h>

#include "simd/avx2/avx2.h"

static __m128i load_tail(const unsigned char *p, size_t count)
{
    uint16_t tmp[8] = {0};
    memcpy(tmp, p, count * sizeof *tmp);
    return _mm_loadu_si128((const __m128i *)tmp);
}

void tsr_f16_to_f32__avx2(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    if (i < n)
        _mm256_maskstore_ps(dst + i, tsr_avx2_tail_mask(n - i),
                            _mm256_cvtph_ps(load_tail(p + 2 * i, n - i)));
}

/* bfloat16 is the top half of a float32: zero-extend to 32 bits, shift up. */
static __m256 bf16_widen(__m128i h)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

void tsr_bf16_to_f32__avx2(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, bf16_widen(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    if (i < n)
        _mm256_maskstore_ps(dst + i, tsr_avx2_tail_mask(n - i),
                            bf16_widen(load_tail(p + 2 * i, n - i)));
}
