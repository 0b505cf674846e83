/*
 * The int8 frame's vector steps around the microkernel (simd/gemm/gemm.h:
 * tsr_gemm_i8_abs_max_fn, tsr_gemm_i8_quantize_fn, tsr_gemm_i8_dequantize_fn)
 * with AVX2: the same arithmetic as simd/int8.h, 8 lanes at a time, so the
 * bits are the portable ones. The avx512 set uses these too: they run once
 * per row of x (quantizing) and once per output (dequantizing), against k
 * multiply-adds per output in the microkernel, so wider vectors would buy
 * nothing measurable.
 */
#include <immintrin.h>
#include <math.h>

#include "simd/avx2/gemm-avx2.h"
#include "simd/int8.h"

float tsr_i8_abs_max__avx2(const float *x, size_t k)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    size_t p = 0;
    /* vmaxps gives its second operand when either is NaN: NaNs of x are
     * passed over, as fmaxf does. */
    for (; p + 8 <= k; p += 8)
        m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + p)), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    float r = _mm_cvtss_f32(h);
    for (; p < k; p++)
        r = fmaxf(r, fabsf(x[p]));
    return r;
}

void tsr_i8_quantize__avx2(const float *x, size_t k, float inv, int offset, uint8_t *q)
{
    const __m256 vinv = _mm256_set1_ps(inv);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m128i off = _mm_set1_epi8((char)offset);
    size_t p = 0;
    for (; p + 8 <= k; p += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + p), vinv);
        /* Clamp first (NaN becomes -127: max's second operand), then round
         * to nearest even: exact integers, so the conversion is exact. */
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256i i32 = _mm256_cvtps_epi32(v);
        const __m128i i16 = _mm_packs_epi32(_mm256_castsi256_si128(i32),
                                            _mm256_extracti128_si256(i32, 1));
        /* Within [-127, 127]: the signed packs are exact; the offset is
         * added modulo 256, which is xq + offset as a byte. */
        const __m128i i8 = _mm_add_epi8(_mm_packs_epi16(i16, i16), off);
        _mm_storel_epi64((__m128i *)(q + p), i8);
    }
    for (; p < k; p++)
        q[p] = (uint8_t)(tsr_i8_round(x[p] * inv) + offset);
}

void tsr_i8_dequantize__avx2(const int32_t *acc, size_t n, int32_t offset, const int32_t *sums,
                             const float *w_scales, float x_scale, float *out)
{
    const __m256i off = _mm256_set1_epi32(offset);
    const __m256 xs = _mm256_set1_ps(x_scale);
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256i v = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(acc + c)),
                                     _mm256_mullo_epi32(off, _mm256_loadu_si256(
                                                                 (const __m256i *)(sums + c))));
        __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(w_scales + c));
        _mm256_storeu_ps(out + c, _mm256_mul_ps(f, xs));
    }
    for (; c < n; c++)
        out[c] = ((float)(acc[c] - offset * sums[c]) * w_scales[c]) * x_scale;
}
