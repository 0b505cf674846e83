/*
 * Widening of float16 and bfloat16 tensors to float32 at load. Both are exact
 * (every half and every bfloat16 is a float), so this is bit manipulation:
 * no rounding, NaN payloads kept. The source points into a mapped file and
 * may be unaligned, so each element is read with memcpy.
 */
#include <string.h>

#include "simd/scalar/scalar.h"

static uint16_t load_u16(const unsigned char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return h;
}

static float from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static float half_to_float(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;

    if (exponent == 0x1f) /* inf or NaN */
        return from_bits(sign | 0x7f800000u | (mantissa << 13));
    if (exponent != 0) /* normal: rebias 15 -> 127 */
        return from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
    if (mantissa == 0)
        return from_bits(sign);

    /* Subnormal, mantissa * 2^-24: shift the leading one up to the implicit
     * bit position; each shift lowers the float exponent by one. */
    uint32_t float_exponent = 113;
    while (!(mantissa & 0x400u)) {
        mantissa <<= 1;
        float_exponent--;
    }
    return from_bits(sign | (float_exponent << 23) | ((mantissa & 0x3ffu) << 13));
}

void tsr_f16_to_f32__scalar(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = half_to_float(load_u16(p + 2 * i));
}

/* bfloat16 is the top half of a float32. */
void tsr_bf16_to_f32__scalar(const void *src, size_t n, float *dst)
{
    const unsigned char *p = src;
    for (size_t i = 0; i < n; i++)
        dst[i] = from_bits((uint32_t)load_u16(p + 2 * i) << 16);
}
