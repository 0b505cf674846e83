/*
 * Reference loops for the kernel tests: the definitions written out in
 * double, as plainly as possible, with no blocking, no online softmax and no
 * bit tricks, so they share no idea (and no bug) with the kernels.
 */
#include "tests/kernel_reference.h"

#include <math.h>
#include <stdlib.h>

void ref_rng_seed(ref_rng *rng, uint64_t seed)
{
    rng->state = seed;
}

uint32_t ref_rng_u32(ref_rng *rng)
{
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

float ref_rng_uniform(ref_rng *rng, float lo, float hi)
{
    double u = ref_rng_u32(rng) / 4294967296.0;
    float v = (float)(lo + (hi - (double)lo) * u);
    return v < hi ? v : lo;
}

void ref_fill_uniform(ref_rng *rng, float *x, size_t rows, size_t cols, size_t ld, float lo,
                      float hi)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            x[i * ld + j] = ref_rng_uniform(rng, lo, hi);
}

double ref_activation(double x, tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        return x > 0 ? x : 0;
    case TSR_ACT_GELU:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case TSR_ACT_SILU:
        return x / (1 + exp(-x));
    case TSR_ACT_GELU_TANH: /* as written: the kernels use x sigmoid(2u) */
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case TSR_ACT_GELU_SIGMOID:
        return x / (1 + exp(-1.702 * x));
    case TSR_ACT_NONE:
        break;
    }
    return x;
}

/* ReLU, the GELUs and SiLU all have |slope| <= 1.13. */
static const double activation_slope = 1.2;

/* The pre-activation value, its sum of absolute terms and the error scale of
 * one output of a linear layer. */
static double linear_one(const float *x, const float *w_row, size_t k, const float *bias,
                         size_t j, double *abs_terms)
{
    double sum = 0, abs_sum = 0;
    for (size_t t = 0; t < k; t++) {
        double term = (double)x[t] * w_row[t];
        sum += term;
        abs_sum += fabs(term);
    }
    if (bias) {
        sum += bias[j];
        abs_sum += fabs(bias[j]);
    }
    *abs_terms = abs_sum;
    return sum;
}

void ref_linear(const float *x, size_t ldx, size_t m, const float *w, size_t n, size_t k,
                const float *bias, tsr_activation act, const float *residual, size_t ldr,
                double *y, double *err)
{
    for (size_t i = 0; i < m; i++) {
        for (size_t j = 0; j < n; j++) {
            double abs_terms;
            double pre = linear_one(x + i * ldx, w + j * k, k, bias, j, &abs_terms);
            double v = ref_activation(pre, act);
            double e = activation_slope * (sqrt((double)k + 1) * abs_terms + fabs(pre)) +
                       4 * fabs(v);
            if (residual) {
                v += residual[i * ldr + j];
                e += fabs(v) + fabs(residual[i * ldr + j]);
            }
            y[i * n + j] = v;
            err[i * n + j] = e;
        }
    }
}

void ref_ffn(const float *x, size_t ldx, size_t m, size_t d_model, size_t d_ff, const float *w1,
             const float *b1, const float *w2, const float *b2, tsr_activation act,
             const float *residual, size_t ldr, double *y, double *err)
{
    double *h = malloc(d_ff * sizeof *h);
    double *h_err = malloc(d_ff * sizeof *h_err);
    if (!h || !h_err)
        abort();
    for (size_t i = 0; i < m; i++) {
        const float *xi = x + i * ldx;
        for (size_t j = 0; j < d_ff; j++) {
            double abs_terms;
            double pre = linear_one(xi, w1 + j * d_model, d_model, b1, j, &abs_terms);
            h[j] = ref_activation(pre, act);
            h_err[j] = activation_slope * (sqrt((double)d_model + 1) * abs_terms + fabs(pre)) +
                       4 * fabs(h[j]);
        }
        for (size_t c = 0; c < d_model; c++) {
            const float *w_row = w2 + c * d_ff;
            double sum = b2 ? b2[c] : 0, abs_terms = b2 ? fabs(b2[c]) : 0, carried = 0;
            for (size_t j = 0; j < d_ff; j++) {
                sum += h[j] * w_row[j];
                abs_terms += fabs(h[j] * w_row[j]);
                carried += h_err[j] * fabs(w_row[j]);
            }
            double e = sqrt((double)d_ff + 1) * abs_terms + carried + fabs(sum);
            if (residual) {
                sum += residual[i * ldr + c];
                e += fabs(sum) + fabs(residual[i * ldr + c]);
            }
            y[i * d_model + c] = sum;
            err[i * d_model + c] = e;
        }
    }
    free(h);
    free(h_err);
}

void ref_attention(const tsr_attention_args *a, double *out, double *err)
{
    double *score = malloc((a->n_k ? a->n_k : 1) * sizeof *score);
    double *score_err = malloc((a->n_k ? a->n_k : 1) * sizeof *score_err);
    if (!score || !score_err)
        abort();
    for (size_t i = 0; i < a->n_q; i++) {
        size_t n_seen = a->n_k;
        if (a->causal && a->q_pos + i + 1 < n_seen)
            n_seen = a->q_pos + i + 1;
        const float *q = a->q + i * a->ldq;

        double max = -INFINITY;
        for (size_t j = 0; j < n_seen; j++) {
            const float *k = a->k + j * a->ldk;
            double s = 0, abs_terms = 0;
            for (size_t t = 0; t < a->d; t++) {
                s += (double)q[t] * k[t];
                abs_terms += fabs((double)q[t] * k[t]);
            }
            score[j] = a->scale * s;
            score_err[j] = fabs(a->scale) * (sqrt((double)a->d + 1) * abs_terms + fabs(s));
            if (score[j] > max)
                max = score[j];
        }
        /* An error e in a score changes its weight by a factor e^e; an exp
         * of argument s - max has a relative error of about |s - max| ulp. */
        double worst_weight_err = 0, sum = 0;
        for (size_t j = 0; j < n_seen; j++) {
            double e = 2 * score_err[j] + fabs(score[j] - max) + 4;
            if (e > worst_weight_err)
                worst_weight_err = e;
            sum += exp(score[j] - max);
        }
        for (size_t c = 0; c < a->d; c++) {
            double acc = 0, v_max = 0;
            for (size_t j = 0; j < n_seen; j++) {
                double vc = a->v[j * a->ldv + c];
                acc += exp(score[j] - max) * vc;
                if (fabs(vc) > v_max)
                    v_max = fabs(vc);
            }
            out[i * a->d + c] = acc / sum;
            err[i * a->d + c] = v_max * (2 * worst_weight_err + sqrt((double)n_seen) + 4);
        }
    }
    free(score);
    free(score_err);
}

void ref_layernorm_row(const float *x, size_t n, const float *gamma, const float *beta,
                       tsr_layernorm_form form, float eps, double *out, double *err)
{
    double mean = 0;
    for (size_t c = 0; c < n; c++)
        mean += x[c];
    mean /= (double)n;
    double var = 0, abs_max = 0;
    for (size_t c = 0; c < n; c++) {
        var += (x[c] - mean) * (x[c] - mean);
        if (fabs(x[c]) > abs_max)
            abs_max = fabs(x[c]);
    }
    double sd;
    if (form == TSR_LAYERNORM_STD)
        sd = sqrt(var / (double)n) + eps;
    else if (form == TSR_LAYERNORM_STD_UNBIASED)
        sd = sqrt(var / (double)(n - 1)) + eps;
    else
        sd = sqrt(var / (double)n + eps);
    /* A float mean is off by about sqrt(n) ulp of the largest |x|, which
     * shifts every normalised value by that over sd; the variance's own
     * relative error moves x_hat by about sqrt(n) ulp of x_hat. */
    double stat_err = sqrt((double)n) + 2;
    for (size_t c = 0; c < n; c++) {
        double x_hat = (x[c] - mean) / sd;
        out[c] = x_hat * gamma[c] + beta[c];
        err[c] = fabs(gamma[c]) * stat_err * (1 + fabs(x_hat) + abs_max / sd) + 2 * fabs(out[c]) +
                 fabs(beta[c]);
    }
}

double ref_logsumexp(const float *x, size_t n)
{
    double max = -INFINITY;
    for (size_t i = 0; i < n; i++)
        if (x[i] > max)
            max = x[i];
    if (isinf(max))
        return max;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += exp(x[i] - max);
    return max + log(sum);
}

void ref_log_softmax(const float *x, size_t n, double *y)
{
    double lse = ref_logsumexp(x, n);
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] - lse;
}

size_t ref_argmax(const float *x, size_t n)
{
    size_t best = n;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i]))
            continue;
        if (best == n || x[i] > x[best])
            best = i;
    }
    return best == n ? 0 : best;
}

void ref_embed(const int32_t *ids, size_t count, const float *table, size_t d, float scale,
               const float *pos, double *out)
{
    for (size_t i = 0; i < count; i++)
        for (size_t c = 0; c < d; c++)
            out[i * d + c] = (double)table[(size_t)ids[i] * d + c] * scale +
                             (pos ? pos[i * d + c] : 0.0);
}

/* Nearest, ties to even, within [-127, 127]. */
static int8_t quantize_i8(float v)
{
    long q = lrintf(v);
    return (int8_t)(q < -127 ? -127 : q > 127 ? 127 : q);
}

void ref_quantize_weights_i8(const float *w, size_t ldw, size_t n, size_t k, int8_t *wq,
                             float *scale)
{
    for (size_t j = 0; j < n; j++) {
        float amax = 0.0f;
        for (size_t p = 0; p < k; p++)
            amax = fmaxf(amax, fabsf(w[j * ldw + p]));
        scale[j] = amax > 0.0f ? amax / 127.0f : 1.0f;
        for (size_t p = 0; p < k; p++)
            wq[j * k + p] = quantize_i8(w[j * ldw + p] / scale[j]);
    }
}

int ref_linear_i8(const float *x, size_t ldx, size_t m, const int8_t *wq, const float *scale,
                  size_t n, size_t k, const float *bias, float *pre)
{
    int8_t *xq = malloc(k + 1);
    if (!xq)
        abort();
    int fits = 1;
    for (size_t i = 0; i < m; i++) {
        const float *row = x + i * ldx;
        float amax = 0.0f;
        for (size_t p = 0; p < k; p++)
            amax = fmaxf(amax, fabsf(row[p]));
        float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (size_t p = 0; p < k; p++)
            xq[p] = quantize_i8(row[p] * inv);
        for (size_t j = 0; j < n; j++) {
            int64_t acc = 0;
            for (size_t p = 0; p < k; p++)
                acc += (int64_t)xq[p] * wq[j * k + p];
            fits &= acc >= INT32_MIN && acc <= INT32_MAX;
            float v = ((float)(int32_t)acc * scale[j]) * (amax / 127.0f);
            pre[i * n + j] = bias ? v + bias[j] : v;
        }
    }
    free(xq);
    return fits ? 0 : -1;
}

double ref_f16_value(uint16_t h)
{
    int negative = h >> 15;
    int exponent = (h >> 10) & 31;
    int mantissa = h & 1023;
    double v;
    if (exponent == 31)
        v = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
        v = ldexp(mantissa, -24);
    else
        v = ldexp(1024 + mantissa, exponent - 25);
    return negative ? -v : v;
}

double ref_bf16_value(uint16_t h)
{
    int negative = h >> 15;
    int exponent = (h >> 7) & 255;
    int mantissa = h & 127;
    double v;
    if (exponent == 255)
        v = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
        v = ldexp(mantissa, -133);
    else
        v = ldexp(128 + mantissa, exponent - 134);
    return negative ? -v : v;
}
