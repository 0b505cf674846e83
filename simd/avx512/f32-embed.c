/* Token embedding: out[i] = table[ids[i]] * scale + pos[i], one FMA per
 * element (the scalar set rounds twice; both are within the test's 2 ulp),
 * 16 floats at a time; the last partial vector of a row through opmask loads
 * and stores, so nothing past a row is read or written. */
#include "simd/avx512/avx512.h"

static void scale_row(const float *row, size_t d, __m512 scale, float *o)
{
    size_t c = 0;
    for (; c + 16 <= d; c += 16)
        _mm512_storeu_ps(o + c, _mm512_mul_ps(_mm512_loadu_ps(row + c), scale));
    if (c < d) {
        __mmask16 mask = tsr_avx512_tail_mask(d - c);
        _mm512_mask_storeu_ps(o + c, mask,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, row + c), scale));
    }
}

static void scale_add_row(const float *row, size_t d, __m512 scale, const float *p, float *o)
{
    size_t c = 0;
    for (; c + 16 <= d; c += 16)
        _mm512_storeu_ps(o + c, _mm512_fmadd_ps(_mm512_loadu_ps(row + c), scale,
                                                _mm512_loadu_ps(p + c)));
    if (c < d) {
        __mmask16 mask = tsr_avx512_tail_mask(d - c);
        __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, row + c), scale,
                                   _mm512_maskz_loadu_ps(mask, p + c));
        _mm512_mask_storeu_ps(o + c, mask, v);
    }
}

void tsr_f32_embed__avx512(const int32_t *ids, size_t count, const float *table, size_t d,
                           float scale, const float *pos, float *out, size_t ldo)
{
    const __m512 s = _mm512_set1_ps(scale);
    for (size_t i = 0; i < count; i++) {
        const float *row = table + (size_t)ids[i] * d;
        if (pos)
            scale_add_row(row, d, s, pos + i * d, out + i * ldo);
        else
            scale_row(row, d, s, out + i * ldo);
    }
}
