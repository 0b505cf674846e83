/* Test data for the measurements: reproducible values, aligned buffers, and
 * the number of operand copies a memory-bound case cycles through. */
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "perf/perf.h"
#include "simd/bf16.h"

void perf_fill_random(float *x, size_t n, uint32_t seed)
{
    /* xorshift32: any fixed sequence will do; values in [-1, 1) keep sums of
     * thousands of products far from overflow and from subnormals. */
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

float *perf_random_floats(size_t n, uint32_t seed)
{
    float *x = tsr_alloc_floats(n);
    if (!x) {
        fprintf(stderr, "tessera-perf: out of memory for %zu floats\n", n);
        exit(1);
    }
    perf_fill_random(x, n, seed);
    return x;
}

size_t perf_copies_for(const perf_machine *mc, size_t bytes, int streamed)
{
    if (!streamed || bytes == 0)
        return 1;
    return (mc->stream_bytes + bytes - 1) / bytes;
}

/* Floats between copies, rounded up so every copy stays 64-byte aligned. */
static size_t aligned_stride(size_t floats)
{
    const size_t per_line = TSR_ALIGN / sizeof(float);
    return (floats + per_line - 1) / per_line * per_line;
}

static float *alloc_or_exit(size_t n)
{
    float *p = tsr_alloc_floats(n);
    if (!p) {
        fprintf(stderr, "tessera-perf: out of memory for %zu floats\n", n);
        exit(1);
    }
    return p;
}

void perf_pack_copies(const tsr_kernels *t, tsr_weight_type type, const float *w,
                      const float *bias, size_t n, size_t k, size_t copies, perf_packed *out)
{
    out->bytes = t->pack_bytes(t, type, n, k);
    out->stride = aligned_stride((out->bytes + sizeof(float) - 1) / sizeof(float));
    out->copies = copies;
    out->store = alloc_or_exit(out->stride * copies);
    out->w = malloc(copies * sizeof *out->w);
    if (!out->w) {
        fprintf(stderr, "tessera-perf: out of memory\n");
        exit(1);
    }
    t->pack_linear(t, type, w, n, k, out->store);
    for (size_t c = 0; c < copies; c++) {
        if (c > 0)
            memcpy(out->store + c * out->stride, out->store, out->bytes);
        out->w[c] = (tsr_packed_linear){
            .n = n, .k = k, .bias = bias, .panels = out->store + c * out->stride, .type = type,
        };
    }
}

void perf_round_weights(tsr_weight_type type, float *w, size_t n)
{
    if (type == TSR_WEIGHTS_BF16)
        for (size_t i = 0; i < n; i++)
            w[i] = tsr_bf16_to_f32(tsr_f32_to_bf16(w[i]));
}

const char *perf_type_name(tsr_weight_type type)
{
    return type == TSR_WEIGHTS_BF16 ? "bf16" : type == TSR_WEIGHTS_INT8 ? "int8" : "f32";
}

void perf_packed_free(perf_packed *p)
{
    tsr_free(p->store);
    free(p->w);
    *p = (perf_packed){0};
}

float *perf_copies_of(const float *src, size_t n, size_t copies, size_t *stride)
{
    *stride = aligned_stride(n);
    float *store = alloc_or_exit(*stride * copies);
    for (size_t c = 0; c < copies; c++)
        memcpy(store + c * *stride, src, n * sizeof *src);
    return store;
}

double perf_relative_error(const float *ref, const float *y, size_t n)
{
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        double a = fabs((double)ref[i]), d = fabs((double)y[i] - (double)ref[i]);
        if (a > scale)
            scale = a;
        /* NaN compares false: catch it explicitly. */
        if (d > worst || d != d)
            worst = d != d ? INFINITY : d;
    }
    return worst / (scale > 0 ? scale : 1.0);
}

void perf_check_result(const char *what, const char *who, const char *ref_who, const float *ref,
                       const float *y, size_t n)
{
    const double tolerance = 1e-3;
    double e = perf_relative_error(ref, y, n);
    if (!(e <= tolerance))
        fprintf(stderr,
                "tessera-perf: warning: %s: %s differs from %s by %.3g of the largest value\n",
                what, who, ref_who, e);
}
