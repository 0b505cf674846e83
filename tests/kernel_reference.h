/*
 * Naive double-precision reference loops for every kernel of simd/kernels.h,
 * and the small PRNG the kernel tests draw their data from.
 *
 * Besides the value, the loops that reduce (linear, ffn, attention,
 * layernorm) give an error scale per output, in units of FLT_EPSILON: the
 * size of the error a correct float32 computation may make, whatever its
 * summation order (SIMD lanes, FMA). A dot product of k terms contributes
 * sqrt(k) * sum|terms| (rounding errors of a float sum grow like a random
 * walk), each later float operation contributes the magnitude of its result,
 * and errors of an input are carried through the operation's slope. Tests
 * allow a small multiple of FLT_EPSILON * scale; an off-by-one, a missing
 * term or a missing rescale is orders of magnitude larger.
 */
#ifndef TSR_TESTS_KERNEL_REFERENCE_H
#define TSR_TESTS_KERNEL_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

/* Deterministic pseudo-random numbers (splitmix64), the same on every
 * platform so a failing shape can be reproduced. */
typedef struct ref_rng {
    uint64_t state;
} ref_rng;

void ref_rng_seed(ref_rng *rng, uint64_t seed);
uint32_t ref_rng_u32(ref_rng *rng);
/* Uniform in [lo, hi). */
float ref_rng_uniform(ref_rng *rng, float lo, float hi);
/* rows x cols uniform values into a matrix with leading dimension ld (the
 * padding between rows is left alone). */
void ref_fill_uniform(ref_rng *rng, float *x, size_t rows, size_t cols, size_t ld, float lo,
                      float hi);

double ref_activation(double x, tsr_activation act);

/* y[i][j] = residual[i][j] + act(sum_t x[i][t] w[j][t] + bias[j]) for i < m,
 * j < n; w is [n][k] dense; bias and residual may be NULL. y and err are
 * m x n dense. */
void ref_linear(const float *x, size_t ldx, size_t m, const float *w, size_t n, size_t k,
                const float *bias, tsr_activation act, const float *residual, size_t ldr,
                double *y, double *err);

/* y = residual + act(x w1^T + b1) w2^T + b2, with w1 [d_ff][d_model] and w2
 * [d_model][d_ff] dense, biases and residual may be NULL. y and err are
 * m x d_model dense. */
void ref_ffn(const float *x, size_t ldx, size_t m, size_t d_model, size_t d_ff, const float *w1,
             const float *b1, const float *w2, const float *b2, tsr_activation act,
             const float *residual, size_t ldr, double *y, double *err);

/* Attention as in tsr_attention_args (its out/ldo are ignored) with the full
 * softmax over the keys each query sees. out and err are n_q x d dense. */
void ref_attention(const tsr_attention_args *a, double *out, double *err);

/* One row of LayerNorm: (x - mean) / d * gamma + beta, d by the form:
 * sqrt(var + eps) with the biased variance, sqrt(var) + eps, or s + eps with
 * the N - 1 estimate s. out and err have n elements. */
void ref_layernorm_row(const float *x, size_t n, const float *gamma, const float *beta,
                       tsr_layernorm_form form, float eps, double *out, double *err);

double ref_logsumexp(const float *x, size_t n);
void ref_log_softmax(const float *x, size_t n, double *y);
/* First index of the largest non-NaN element; 0 when all are NaN. */
size_t ref_argmax(const float *x, size_t n);

/* out[i][c] = table[ids[i]][c] * scale + pos[i][c] (pos may be NULL); out is
 * count x d dense. */
void ref_embed(const int32_t *ids, size_t count, const float *table, size_t d, float scale,
               const float *pos, double *out);

/* The int8 definitions of simd/int8.h, written here from its text.
 * ref_quantize_weights_i8: w [n][k] (leading dimension ldw) per output row,
 * scale[j] = max|w[j]| / 127 (1 for a zero row), wq [n][k] dense = the
 * values / scale rounded to nearest even within [-127, 127].
 * ref_linear_i8: pre[i][j] = ((float)acc * scale[j]) * s_x[i] + bias[j]
 * (bias may be NULL), acc = sum_p xq[i][p] wq[j][p] summed exactly, x
 * quantized per row as the definition says; pre is m x n dense. Returns -1
 * when a sum would not fit the int32 the kernels use, else 0. */
void ref_quantize_weights_i8(const float *w, size_t ldw, size_t n, size_t k, int8_t *wq,
                             float *scale);
int ref_linear_i8(const float *x, size_t ldx, size_t m, const int8_t *wq, const float *scale,
                  size_t n, size_t k, const float *bias, float *pre);

/* The value of an IEEE binary16 / bfloat16 bit pattern, computed
 * arithmetically (NaN for NaN patterns, +-inf for infinities). */
double ref_f16_value(uint16_t h);
double ref_bf16_value(uint16_t h);

#endif
