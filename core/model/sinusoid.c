/* The computed position tables (core/model/sinusoid.h). Each column is sin
 * or cos of p x its pair's frequency. Interleaved (Vaswani et al.): columns
 * 2i, 2i+1 at 10000^(-2i/d). Halves: columns i and d/2 + i at
 * 10000^(-2i/d) (transformers' MarianMT) or exp(-i ln(10000) / (d/2 - 1))
 * (Marian C++, tensor2tensor). */
#include "core/model/sinusoid.h"

#include <math.h>

void tsr_sinusoid_columns(float *pe, size_t rows, size_t d, tessera_position_encoding form,
                          size_t j0, size_t j1)
{
    size_t half = d / 2;
    /* Column by column: one pow per column, not per value. */
    for (size_t j = j0; j < j1; j++) {
        double frequency;
        int is_cos;
        if (form == TESSERA_POSITIONS_SINUSOID) {
            frequency = 1.0 / pow(10000.0, (double)(j & ~(size_t)1) / (double)d);
            is_cos = (int)(j & 1);
        } else {
            size_t i = j < half ? j : j - half;
            frequency = form == TESSERA_POSITIONS_SINUSOID_HALVES
                            ? 1.0 / pow(10000.0, (double)(2 * i) / (double)d)
                            : exp(-(double)i * log(10000.0) / ((double)half - 1.0));
            is_cos = j >= half;
        }
        for (size_t p = 0; p < rows; p++) {
            double angle = (double)p * frequency;
            pe[p * d + j] = (float)(is_cos ? cos(angle) : sin(angle));
        }
    }
}
