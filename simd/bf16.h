/*
 * bfloat16 <-> float32, one value at a time, portable: the definition every
 * kernel set's bf16 weights follow. bfloat16 is the top half of a float32, so
 * widening is exact (a shift); narrowing rounds to nearest, ties to even, as
 * PyTorch's .to(torch.bfloat16) does, and keeps NaNs NaN (quiet, same sign).
 */
#ifndef TSR_SIMD_BF16_H
#define TSR_SIMD_BF16_H

#include <stdint.h>
#include <string.h>

static inline float tsr_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint16_t tsr_f32_to_bf16(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: truncating could make it inf */
        return (uint16_t)((bits >> 16) | 0x40u);
    /* Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
     * into the exponent is the right result (up to infinity). */
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

#endif
