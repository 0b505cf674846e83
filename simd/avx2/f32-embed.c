/* Token embedding: out[i] = table[ids[i]] * scale + pos[i], one FMA per
 * element (the scalar set rounds twice; both are within the test's 2 ulp). */
#include "simd/avx2/avx2.h"

static void scale_row(const float *row, size_t d, __m256 scale, float *o)
{
    size_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(o + c, _mm256_mul_ps(_mm256_loadu_ps(row + c), scale));
    if (c < d) {
        __m256i mask = tsr_avx2_tail_mask(d - c);
        _mm256_maskstore_ps(o + c, mask, _mm256_mul_ps(_mm256_maskload_ps(row + c, mask), scale));
    }
}

static void scale_add_row(const float *row, size_t d, __m256 scale, const float *p, float *o)
{
    size_t c = 0;
    for (; c + 8 <= d; c += 8)
        _mm256_storeu_ps(o + c, _mm256_fmadd_ps(_mm256_loadu_ps(row + c), scale,
                                                _mm256_loadu_ps(p + c)));
    if (c < d) {
        __m256i mask = tsr_avx2_tail_mask(d - c);
        __m256 v = _mm256_fmadd_ps(_mm256_maskload_ps(row + c, mask), scale,
                                   _mm256_maskload_ps(p + c, mask));
        _mm256_maskstore_ps(o + c, mask, v);
    }
}

void tsr_f32_embed__avx2(const int32_t *ids, size_t count, const float *table, size_t d,
                         float scale, const float *pos, float *out, size_t ldo)
{
    const __m256 s = _mm256_set1_ps(scale);
    for (size_t i = 0; i < count; i++) {
        const float *row = table + (size_t)ids[i] * d;
        if (pos)
            scale_add_row(row, d, s, pos + i * d, out + i * ldo);
        else
            scale_row(row, d, s, out + i * ldo);
    }
}
