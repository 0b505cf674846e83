/* Token embedding: out[i] = table[ids[i]] * scale + pos[i], row by row. */
#include "simd/scalar/scalar.h"

void tsr_f32_embed__scalar(const int32_t *ids, size_t count, const float *table, size_t d,
                           float scale, const float *pos, float *out, size_t ldo)
{
    for (size_t i = 0; i < count; i++) {
        const float *row = table + (size_t)ids[i] * d;
        float *o = out + i * ldo;
        if (pos) {
            const float *p = pos + i * d;
            for (size_t c = 0; c < d; c++)
                o[c] = row[c] * scale + p[c];
        } else {
            for (size_t c = 0; c < d; c++)
                o[c] = row[c] * scale;
        }
    }
}
