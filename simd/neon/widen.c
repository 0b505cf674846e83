/*
 * Widening of float16 and bfloat16 tensors to float32 at load, eight values
 * per step. float16 goes through the hardware conversion (FCVTL), which is
 * exact for every value, subnormals included; a signalling NaN comes out
 * quiet (its top mantissa bit set) with sign and the rest of its payload
 * kept. bfloat16 is the top half of a float32: a 16-bit shift.
 *
 * The source points into a mapped file and may have any alignment, so it is
 * read as bytes (vld1q_u8 needs none) and reinterpreted. A length that is not
 * a multiple of 8 ends with one more step: over the last 8 values again when
 * there are that many (rewriting some outputs with the same values), or
 * through a zero-padded copy of the few values there are.
 */
#include <string.h>

#include "simd/neon/neon.h"

static void store_widened(float *dst, float32x4_t lo, float32x4_t hi, size_t count)
{
    if (count == 8) {
        vst1q_f32(dst, lo);
        vst1q_f32(dst + 4, hi);
    } else if (count > 4) {
        vst1q_f32(dst, lo);
        tsr_neon_store_partial(dst + 4, hi, count - 4);
    } else if (count == 4) {
        vst1q_f32(dst, lo);
    } else {
        tsr_neon_store_partial(dst, lo, count);
    }
}

static void f16x8(const unsigned char *src, float *dst, size_t count)
{
    float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(src));
    store_widened(dst, vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h), count);
}

static void bf16x8(const unsigned char *src, float *dst, size_t count)
{
    uint16x8_t b = vreinterpretq_u16_u8(vld1q_u8(src));
    store_widened(dst, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16)),
                  vreinterpretq_f32_u32(vshll_high_n_u16(b, 16)), count);
}

typedef void (*widen8_fn)(const unsigned char *src, float *dst, size_t count);

static inline void widen(const void *src, size_t n, float *dst, widen8_fn step)
{
    const unsigned char *p = src;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        step(p + 2 * i, dst + i, 8);
    if (i == n)
        return;
    if (n >= 8) {
        step(p + 2 * (n - 8), dst + n - 8, 8);
    } else {
        unsigned char padded[16] = {0};
        memcpy(padded, p, 2 * n);
        step(padded, dst, n);
    }
}

void tsr_f16_to_f32__neon(const void *src, size_t n, float *dst)
{
    widen(src, n, dst, f16x8);
}

void tsr_bf16_to_f32__neon(const void *src, size_t n, float *dst)
{
    widen(src, n, dst, bf16x8);
}
