/*
 * Every kernel of every kernel set against the double-precision reference
 * loops (tests/kernel_reference.c).
 *
 * One test body per kernel, parameterised over the sets listed in
 * simd/dispatch.h: a set this build or this CPU lacks is reported as skipped,
 * with the reason. Inside a body the shapes of that kernel are walked in
 * order; a failure message names the set, the kernel and the shape.
 *
 * Inputs sit at a pointer one float past 64-byte alignment on every other
 * shape, with leading dimensions larger than the row, and everything around
 * the data holds a NaN sentinel: reading it poisons the result, writing it is
 * checked. Beyond accuracy the bodies check the determinism kernels.h
 * promises (column ranges, single rows, query ranges and the blocked FFN are
 * bit-identical to the whole call) and the in-place forms.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/network/alignment.h"
#include "core/network/gathered_linear.h"
#include "simd/bf16.h"
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "tests/kernel_reference.h"
#include "tests/testutil.h"

/* ---- Which set ------------------------------------------------------------ */

#define MAX_SETS 8

typedef struct set_param {
    size_t index; /* into tsr_kernel_sets */
} set_param;

/* The sets $TESSERA_TEST_SETS selects (every set when it is unset): a case
 * for a set not selected would only start a process to skip. */
static set_param selected_sets[MAX_SETS];

static struct criterion_test_params each_set(void)
{
    size_t n = 0;
    for (size_t s = 0; s < tsr_kernel_set_count && s < MAX_SETS; s++)
        if (test_kernel_set_selected(tsr_kernel_sets[s].name))
            selected_sets[n++].index = s;
    return cr_make_param_array(set_param, selected_sets, n);
}

/* The table of the set, or the test ends as skipped saying why. */
static const tsr_kernels *set_or_skip(const set_param *p)
{
    return test_kernel_set_or_skip(tsr_kernel_sets[p->index].name);
}

/* ---- Buffers with a NaN sentinel around the data --------------------------- */

#define SENTINEL_BITS 0x7fc0deadu
#define TAIL_FLOATS 19

typedef struct buffer {
    float *base;
    float *p; /* first element */
    size_t rows, cols, ld;
    size_t len; /* floats from base */
} buffer;

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float sentinel(void)
{
    float f;
    uint32_t u = SENTINEL_BITS;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void *alloc_aligned(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0)
        cr_assert_fail("out of memory (%zu bytes)", bytes);
    return p;
}

/* rows x cols at leading dimension ld, `offset` floats past alignment,
 * everything set to the sentinel. */
static buffer buffer_new(size_t rows, size_t cols, size_t ld, size_t offset)
{
    buffer b = {.rows = rows, .cols = cols, .ld = ld};
    b.len = offset + rows * ld + TAIL_FLOATS;
    b.base = alloc_aligned(b.len * sizeof(float));
    for (size_t i = 0; i < b.len; i++)
        b.base[i] = sentinel();
    b.p = b.base + offset;
    return b;
}

static void buffer_free(buffer *b)
{
    free(b->base);
    b->base = b->p = NULL;
}

static void buffer_fill(buffer *b, ref_rng *rng, float lo, float hi)
{
    ref_fill_uniform(rng, b->p, b->rows, b->cols, b->ld, lo, hi);
}

static void buffer_copy_data(buffer *dst, const buffer *src)
{
    for (size_t i = 0; i < src->rows; i++)
        memcpy(dst->p + i * dst->ld, src->p + i * src->ld, src->cols * sizeof(float));
}

/* Position (from base) of the first element outside rows x [c0, c1) that no
 * longer holds the sentinel, or SIZE_MAX. */
static size_t first_clobbered(const buffer *b, size_t c0, size_t c1)
{
    size_t start = (size_t)(b->p - b->base);
    for (size_t i = 0; i < b->len; i++) {
        if (i >= start && i < start + b->rows * b->ld) {
            size_t col = (i - start) % b->ld;
            if (col >= c0 && col < c1)
                continue;
        }
        if (bits_of(b->base[i]) != SENTINEL_BITS)
            return i;
    }
    return SIZE_MAX;
}

static void expect_untouched_outside(const buffer *b, size_t c0, size_t c1, const char *set,
                                     const char *what, const char *shape)
{
    size_t at = first_clobbered(b, c0, c1);
    cr_assert(at == SIZE_MAX, "[%s] %s %s: wrote outside its output, %zu floats from the "
              "buffer start (output starts at %zu, ld %zu)",
              set, what, shape, at, (size_t)(b->p - b->base), b->ld);
}

/* Where a layout variant puts data: one float off alignment on odd shapes,
 * leading dimensions padded on two shapes of every three. */
static size_t layout_offset(size_t shape_index)
{
    return shape_index % 2;
}

static size_t layout_pad(size_t shape_index)
{
    static const size_t pads[] = {3, 0, 16};
    return pads[shape_index % 3];
}

/* ---- Comparisons ----------------------------------------------------------- */

/* Allowed error in units of the reference's error scale. */
#define ERR_SCALE_FACTOR (2.0 * FLT_EPSILON)

/* |got - ref| <= tol for rows x cols; NaN in got always fails. */
static void expect_close(const float *got, size_t ld, const double *ref, const double *tol,
                         size_t rows, size_t cols, const char *set, const char *what,
                         const char *shape)
{
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = 0; j < cols; j++) {
            double g = got[i * ld + j], r = ref[i * cols + j], t = tol[i * cols + j];
            if (g == r) /* also equal infinities */
                continue;
            if (!(fabs(g - r) <= t))
                cr_assert_fail("[%s] %s %s: element [%zu][%zu] is %.9g, reference %.9g "
                               "(difference %.3g, tolerance %.3g)",
                               set, what, shape, i, j, g, r, fabs(g - r), t);
        }
    }
}

/* Columns [c0, c1) of rows x of a and b are the same bits. */
static void expect_same_bits(const float *a, size_t lda, const float *b, size_t ldb, size_t rows,
                             size_t c0, size_t c1, const char *set, const char *what,
                             const char *shape)
{
    for (size_t i = 0; i < rows; i++) {
        for (size_t j = c0; j < c1; j++) {
            if (bits_of(a[i * lda + j]) != bits_of(b[i * ldb + j]))
                cr_assert_fail("[%s] %s %s: element [%zu][%zu] is %.9g, not %.9g bit for bit",
                               set, what, shape, i, j, (double)a[i * lda + j],
                               (double)b[i * ldb + j]);
        }
    }
}

static double *doubles(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert(p != NULL, "out of memory");
    return p;
}

static void scale_errors(double *err, size_t n)
{
    for (size_t i = 0; i < n; i++)
        err[i] *= ERR_SCALE_FACTOR;
}

static const char *activation_name(tsr_activation act)
{
    switch (act) {
    case TSR_ACT_RELU:
        return "relu";
    case TSR_ACT_GELU:
        return "gelu";
    case TSR_ACT_SILU:
        return "silu";
    case TSR_ACT_GELU_TANH:
        return "gelu_tanh";
    case TSR_ACT_GELU_SIGMOID:
        return "gelu_sigmoid";
    case TSR_ACT_NONE:
        break;
    }
    return "none";
}

/* ---- The table ------------------------------------------------------------- */

ParameterizedTestParameters(kernels, table)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, table)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;
    cr_assert_str_eq(ks->name, set, "[%s] table names itself '%s'", set, ks->name);
    cr_assert(ks->linear_n_align >= 1 && ks->ffn_block_rows >= 1,
              "[%s] linear_n_align %zu, ffn_block_rows %zu", set, ks->linear_n_align,
              ks->ffn_block_rows);
    cr_assert(ks->pack_bytes && ks->pack_linear && ks->linear && ks->ffn && ks->attention &&
                  ks->add_layernorm && ks->activate && ks->log_softmax && ks->logsumexp &&
                  ks->argmax && ks->embed && ks->embed_packed && ks->weight_rows && ks->f16_to_f32 &&
                  ks->bf16_to_f32,
              "[%s] table has an empty entry", set);
    cr_assert(ks->pack_bytes(ks, TSR_WEIGHTS_F32, 7, 5) >= 35 * sizeof(float),
              "[%s] pack_bytes(f32, 7, 5) = %zu < 35 floats", set,
              ks->pack_bytes(ks, TSR_WEIGHTS_F32, 7, 5));
}

/* ---- Linear ---------------------------------------------------------------- */

typedef struct linear_shape {
    size_t m, n, k;
    tsr_activation act;
    int bias, residual;
} linear_shape;

static const linear_shape linear_shapes[] = {
    {1, 1, 1, TSR_ACT_NONE, 0, 0},     {2, 2, 2, TSR_ACT_RELU, 1, 0},
    {3, 3, 3, TSR_ACT_GELU, 1, 1},     {5, 5, 5, TSR_ACT_SILU, 0, 1},
    {7, 7, 7, TSR_ACT_NONE, 1, 1},     {8, 8, 8, TSR_ACT_RELU, 1, 1},
    {13, 13, 13, TSR_ACT_GELU, 1, 0},  {16, 16, 16, TSR_ACT_SILU, 1, 1},
    {17, 17, 17, TSR_ACT_NONE, 0, 1},  {31, 31, 31, TSR_ACT_RELU, 1, 1},
    {33, 33, 33, TSR_ACT_GELU, 1, 1},  {64, 64, 64, TSR_ACT_NONE, 1, 1},
    {67, 67, 67, TSR_ACT_SILU, 1, 0},  {1, 67, 33, TSR_ACT_NONE, 1, 1},
    {3, 16, 129, TSR_ACT_RELU, 1, 1},  {13, 7, 64, TSR_ACT_GELU, 0, 1},
    {2, 31, 1, TSR_ACT_NONE, 1, 0},    {64, 1, 17, TSR_ACT_SILU, 1, 1},
    {5, 2, 300, TSR_ACT_NONE, 1, 1},   {37, 67, 129, TSR_ACT_RELU, 1, 1},
    {37, 67, 129, TSR_ACT_GELU, 0, 0}, {17, 300, 512, TSR_ACT_NONE, 1, 1},
    {100, 64, 256, TSR_ACT_RELU, 1, 1}, {1, 1000, 64, TSR_ACT_NONE, 1, 0},
    {33, 129, 3, TSR_ACT_SILU, 1, 1},
    /* 7..16 rows with k well past one decode turn of the GEMM frame, and more
     * than 16 rows with k past one cache block: both continue an FMA chain
     * across pieces of k. */
    {12, 40, 200, TSR_ACT_GELU, 1, 1}, {20, 40, 1100, TSR_ACT_RELU, 1, 1},
    {9, 23, 40, TSR_ACT_GELU_TANH, 1, 1}, {19, 45, 70, TSR_ACT_GELU_SIGMOID, 1, 0},
    {13, 33, 17, TSR_ACT_GELU_TANH, 0, 1}, {4, 64, 9, TSR_ACT_GELU_SIGMOID, 1, 1},
};

/* One linear layer's operands, laid out as a shape asks. */
typedef struct linear_case {
    const linear_shape *s;
    buffer x, w, bias, residual, y;
    float *panels;
    tsr_packed_linear packed;
    char shape[160];
} linear_case;

static linear_case linear_case_new(const tsr_kernels *ks, const linear_shape *s, size_t index)
{
    linear_case c = {.s = s};
    size_t off = layout_offset(index), pad = layout_pad(index);
    ref_rng rng;
    ref_rng_seed(&rng, 1000 + index);

    c.x = buffer_new(s->m, s->k, s->k + pad, off);
    c.w = buffer_new(s->n, s->k, s->k, off);
    c.bias = buffer_new(1, s->n, s->n, off);
    c.residual = buffer_new(s->m, s->n, s->n + 2 * pad, off);
    c.y = buffer_new(s->m, s->n, s->n + pad, off);
    buffer_fill(&c.x, &rng, -1, 1);
    buffer_fill(&c.w, &rng, -1, 1);
    buffer_fill(&c.bias, &rng, -0.5f, 0.5f);
    buffer_fill(&c.residual, &rng, -2, 2);

    c.panels = alloc_aligned(ks->pack_bytes(ks, TSR_WEIGHTS_F32, s->n, s->k));
    ks->pack_linear(ks, TSR_WEIGHTS_F32, c.w.p, s->n, s->k, c.panels);
    c.packed = (tsr_packed_linear){.n = s->n, .k = s->k, .bias = s->bias ? c.bias.p : NULL,
                                   .panels = c.panels, .type = TSR_WEIGHTS_F32};
    snprintf(c.shape, sizeof c.shape, "m=%zu n=%zu k=%zu act=%s bias=%d residual=%d offset=%zu "
             "pad=%zu", s->m, s->n, s->k, activation_name(s->act), s->bias, s->residual, off, pad);
    return c;
}

static void linear_case_free(linear_case *c)
{
    buffer_free(&c->x);
    buffer_free(&c->w);
    buffer_free(&c->bias);
    buffer_free(&c->residual);
    buffer_free(&c->y);
    free(c->panels);
}

/* Rows [i0, i0 + m) and columns [n_begin, n_end) of the case into out. */
static void run_linear(const tsr_kernels *ks, const linear_case *c, size_t i0, size_t m,
                       size_t n_begin, size_t n_end, const buffer *residual, buffer *out)
{
    tsr_linear_args a = {
        .x = c->x.p + i0 * c->x.ld, .ldx = c->x.ld, .m = m,
        .w = &c->packed, .n_begin = n_begin, .n_end = n_end, .act = c->s->act,
        .residual = residual ? residual->p + i0 * residual->ld : NULL,
        .ldr = residual ? residual->ld : 0,
        .y = out->p + i0 * out->ld, .ldy = out->ld,
    };
    ks->linear(ks, &a);
}

/* The column ranges threads would be given: cut at multiples of the set's
 * alignment, plus one range ending short of n. */
static void check_linear_column_ranges(const tsr_kernels *ks, linear_case *c, const char *set)
{
    const linear_shape *s = c->s;
    const buffer *res = s->residual ? &c->residual : NULL;
    size_t align = ks->linear_n_align;
    size_t cut1 = s->n / 3 / align * align, cut2 = 2 * s->n / 3 / align * align;
    size_t ranges[4][2] = {{0, cut1}, {cut1, cut2}, {cut2, s->n}, {cut1, s->n - 1}};

    for (size_t r = 0; r < 4; r++) {
        size_t b = ranges[r][0], e = ranges[r][1];
        if (e <= b)
            continue;
        char what[64];
        snprintf(what, sizeof what, "linear columns [%zu, %zu)", b, e);
        buffer part = buffer_new(s->m, s->n, c->y.ld, (size_t)(c->y.p - c->y.base));
        run_linear(ks, c, 0, s->m, b, e, res, &part);
        expect_same_bits(part.p, part.ld, c->y.p, c->y.ld, s->m, b, e, set, what, c->shape);
        expect_untouched_outside(&part, b, e, set, what, c->shape);
        buffer_free(&part);
    }
}

static void check_linear_rows_alone(const tsr_kernels *ks, linear_case *c, const char *set)
{
    const linear_shape *s = c->s;
    buffer alone = buffer_new(s->m, s->n, c->y.ld, (size_t)(c->y.p - c->y.base));
    for (size_t i = 0; i < s->m; i++)
        run_linear(ks, c, i, 1, 0, s->n, s->residual ? &c->residual : NULL, &alone);
    expect_same_bits(alone.p, alone.ld, c->y.p, c->y.ld, s->m, 0, s->n, set,
                     "linear one row at a time", c->shape);
    buffer_free(&alone);
}

static void check_linear_residual_in_place(const tsr_kernels *ks, linear_case *c, const char *set)
{
    const linear_shape *s = c->s;
    buffer inout = buffer_new(s->m, s->n, c->y.ld, (size_t)(c->y.p - c->y.base));
    buffer_copy_data(&inout, &c->residual);
    run_linear(ks, c, 0, s->m, 0, s->n, &inout, &inout);
    expect_same_bits(inout.p, inout.ld, c->y.p, c->y.ld, s->m, 0, s->n, set,
                     "linear with residual == y", c->shape);
    expect_untouched_outside(&inout, 0, s->n, set, "linear with residual == y", c->shape);
    buffer_free(&inout);
}

ParameterizedTestParameters(kernels, linear)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, linear)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof linear_shapes / sizeof *linear_shapes; si++) {
        const linear_shape *s = &linear_shapes[si];
        linear_case c = linear_case_new(ks, s, si);

        run_linear(ks, &c, 0, s->m, 0, s->n, s->residual ? &c.residual : NULL, &c.y);
        double *ref = doubles(s->m * s->n), *tol = doubles(s->m * s->n);
        ref_linear(c.x.p, c.x.ld, s->m, c.w.p, s->n, s->k, s->bias ? c.bias.p : NULL, s->act,
                   s->residual ? c.residual.p : NULL, c.residual.ld, ref, tol);
        scale_errors(tol, s->m * s->n);
        expect_close(c.y.p, c.y.ld, ref, tol, s->m, s->n, set, "linear", c.shape);
        expect_untouched_outside(&c.y, 0, s->n, set, "linear", c.shape);

        check_linear_column_ranges(ks, &c, set);
        check_linear_rows_alone(ks, &c, set);
        if (s->residual)
            check_linear_residual_in_place(ks, &c, set);

        free(ref);
        free(tol);
        linear_case_free(&c);
    }
}

/* ---- Linear layers with bf16 weights ------------------------------------------ */

/* w rounded to bfloat16, each value (as the packing of bf16 weights must). */
static void round_to_bf16(buffer *w)
{
    for (size_t i = 0; i < w->rows; i++)
        for (size_t j = 0; j < w->cols; j++) {
            float *v = &w->p[i * w->ld + j];
            *v = tsr_bf16_to_f32(tsr_f32_to_bf16(*v));
        }
}

ParameterizedTestParameters(kernels, linear_bf16)
{
    return each_set();
}

/* bf16 panels packed from the float32 weights give, bit for bit, what the
 * set's f32 linear gives on the rounded weights (the widening is exact and
 * the chains are the same), for whole calls, column ranges and single rows;
 * and that is close to the double-precision reference on the rounded weights. */
ParameterizedTest(set_param *p, kernels, linear_bf16)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof linear_shapes / sizeof *linear_shapes; si++) {
        const linear_shape *s = &linear_shapes[si];
        linear_case c = linear_case_new(ks, s, si);
        const buffer *res = s->residual ? &c.residual : NULL;

        void *bf16_panels = alloc_aligned(ks->pack_bytes(ks, TSR_WEIGHTS_BF16, s->n, s->k));
        ks->pack_linear(ks, TSR_WEIGHTS_BF16, c.w.p, s->n, s->k, bf16_panels);
        round_to_bf16(&c.w);
        ks->pack_linear(ks, TSR_WEIGHTS_F32, c.w.p, s->n, s->k, c.panels);
        run_linear(ks, &c, 0, s->m, 0, s->n, res, &c.y);

        c.packed.panels = bf16_panels;
        c.packed.type = TSR_WEIGHTS_BF16;
        buffer y = buffer_new(s->m, s->n, c.y.ld, (size_t)(c.y.p - c.y.base));
        run_linear(ks, &c, 0, s->m, 0, s->n, res, &y);
        expect_same_bits(y.p, y.ld, c.y.p, c.y.ld, s->m, 0, s->n, set,
                         "bf16 linear against f32 linear on the rounded weights", c.shape);
        expect_untouched_outside(&y, 0, s->n, set, "bf16 linear", c.shape);

        double *ref = doubles(s->m * s->n), *tol = doubles(s->m * s->n);
        ref_linear(c.x.p, c.x.ld, s->m, c.w.p, s->n, s->k, s->bias ? c.bias.p : NULL, s->act,
                   res ? c.residual.p : NULL, c.residual.ld, ref, tol);
        scale_errors(tol, s->m * s->n);
        expect_close(y.p, y.ld, ref, tol, s->m, s->n, set, "bf16 linear", c.shape);

        /* c.y now holds the bf16 result too: the same checks as f32 run on it. */
        check_linear_column_ranges(ks, &c, set);
        check_linear_rows_alone(ks, &c, set);

        free(ref);
        free(tol);
        buffer_free(&y);
        free(bf16_panels);
        linear_case_free(&c);
    }
}

/* ---- Linear layers with int8 weights ------------------------------------------- */

/* Weights as an I8 file may hold them: the definition's quantization, then
 * every value halved (toward zero) and every scale doubled, so that no row
 * reaches 127 and packing from floats would give other values: only a
 * packing that takes q and the scales as they are gives the bits of
 * ref_linear_i8 on them. */
static void quantize_like_a_file(const linear_case *c, int8_t *wq, float *scale)
{
    const linear_shape *s = c->s;
    ref_quantize_weights_i8(c->w.p, c->w.ld, s->n, s->k, wq, scale);
    for (size_t i = 0; i < s->n * s->k; i++)
        wq[i] = (int8_t)(wq[i] / 2);
    for (size_t j = 0; j < s->n; j++)
        scale[j] *= 2.0f;
}

/* Every int8 linear gives the bits of the definition (the integer part is
 * exact, and the few float roundings are fixed by it): compared bit for bit
 * without activation, through the double activation with a tolerance
 * otherwise; plus column ranges and single rows bit-identical to the whole
 * call. Weights packed from floats (pack_linear) and weights packed as
 * already quantized (pack_linear_i8, an I8 file) are both checked. */
static void check_linear_int8(const tsr_kernels *ks, const char *set)
{
    for (size_t si = 0; si < 2 * (sizeof linear_shapes / sizeof *linear_shapes); si++) {
        const size_t n_shapes = sizeof linear_shapes / sizeof *linear_shapes;
        const int from_file = si >= n_shapes;
        const linear_shape *s = &linear_shapes[si % n_shapes];
        linear_case c = linear_case_new(ks, s, si % n_shapes);
        const buffer *res = s->residual ? &c.residual : NULL;
        const char *what = from_file ? "int8 linear (packed from q and scales)" : "int8 linear";

        int8_t *wq = calloc(s->n * s->k + 1, 1);
        float *scale = calloc(s->n + 1, sizeof *scale);
        cr_assert(wq && scale);
        void *i8_panels = alloc_aligned(ks->pack_bytes(ks, TSR_WEIGHTS_INT8, s->n, s->k));
        if (from_file) {
            quantize_like_a_file(&c, wq, scale);
            ks->pack_linear_i8(ks, wq, scale, s->n, s->k, 0, s->n, i8_panels);
        } else {
            ref_quantize_weights_i8(c.w.p, c.w.ld, s->n, s->k, wq, scale);
            ks->pack_linear(ks, TSR_WEIGHTS_INT8, c.w.p, s->n, s->k, i8_panels);
        }
        c.packed.panels = i8_panels;
        c.packed.type = TSR_WEIGHTS_INT8;
        run_linear(ks, &c, 0, s->m, 0, s->n, res, &c.y);
        expect_untouched_outside(&c.y, 0, s->n, set, what, c.shape);

        float *pre = calloc(s->m * s->n + 1, sizeof *pre);
        cr_assert(pre);
        cr_assert(ref_linear_i8(c.x.p, c.x.ld, s->m, wq, scale, s->n, s->k,
                                s->bias ? c.bias.p : NULL, pre) == 0,
                  "[%s] %s %s: a sum overflows int32", set, what, c.shape);
        for (size_t i = 0; i < s->m; i++)
            for (size_t j = 0; j < s->n; j++) {
                double want = ref_activation(pre[i * s->n + j], s->act);
                if (res)
                    want += c.residual.p[i * c.residual.ld + j];
                float got = c.y.p[i * c.y.ld + j];
                if (s->act == TSR_ACT_NONE || s->act == TSR_ACT_RELU) {
                    float exact = s->act == TSR_ACT_RELU && pre[i * s->n + j] < 0.0f
                                      ? 0.0f
                                      : pre[i * s->n + j];
                    if (res)
                        exact = c.residual.p[i * c.residual.ld + j] + exact;
                    cr_assert(bits_of(got) == bits_of(exact),
                              "[%s] %s %s: element [%zu][%zu] is %.9g, not %.9g bit for bit", set,
                              what, c.shape, i, j, got, exact);
                } else {
                    cr_assert(fabs(got - want) <= 1e-5 * (1.0 + fabs(want)),
                              "[%s] %s %s: element [%zu][%zu] is %.9g, not %.9g", set, what,
                              c.shape, i, j, got, want);
                }
            }

        check_linear_column_ranges(ks, &c, set);
        check_linear_rows_alone(ks, &c, set);
        free(pre);
        free(i8_panels);
        free(wq);
        free(scale);
        linear_case_free(&c);
    }
}

ParameterizedTestParameters(kernels, linear_int8)
{
    return each_set();
}

/* The set's int8 linear as dispatched, then, for a set on the GEMM frame,
 * each int8 microkernel it has for this CPU (simd/gemm/gemm.h), put in
 * turn into a copy of its table: every one must give the definition's bits.
 * The kernels tested are named on stderr. */
ParameterizedTest(set_param *p, kernels, linear_int8)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    check_linear_int8(ks, set);
    if (!ks->gemm) {
        fprintf(stderr, "kernels/linear_int8 [%s]: the portable int8 layer\n", set);
        return;
    }
    cr_assert(ks->gemm->i8_variant_count > 0, "[%s] has the GEMM frame but no int8 kernel", set);
    for (size_t v = 0; v < ks->gemm->i8_variant_count; v++) {
        const tsr_gemm_i8_kernel *kernel = ks->gemm->i8_variants[v];
        tsr_gemm_config cfg = *ks->gemm;
        cfg.i8 = kernel;
        tsr_kernels table = *ks;
        table.gemm = &cfg;
        cr_assert(ks->linear_n_align % kernel->nr == 0,
                  "[%s] int8 kernel %s: nr %zu does not divide the column unit %zu", set,
                  kernel->name, kernel->nr, ks->linear_n_align);
        char name[96];
        snprintf(name, sizeof name, "%s, int8 kernel %s", set, kernel->name);
        check_linear_int8(&table, name);
        fprintf(stderr, "kernels/linear_int8 [%s]: int8 kernel %s: same bits as the definition\n",
                set, kernel->name);
    }
}

/* ---- The GEMM frame with the smallest blocks ------------------------------------ */

ParameterizedTestParameters(kernels, linear_small_blocks)
{
    return each_set();
}

/* The frame's blocking comes from the cache sizes, which in the test suite
 * make most shapes run each loop once. With block sizes injected as small as
 * the frame allows (k pieces of 8 steps, one row tile per row block, one
 * panel per column block, decode turns of 4 steps, int8 pieces of 2
 * groups), every loop of the frame runs several passes: the set's linear
 * layers must give the bits of its own blocking, in f32, bf16 and int8. */
ParameterizedTest(set_param *p, kernels, linear_small_blocks)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;
    if (!ks->gemm) {
        fprintf(stderr, "kernels/linear_small_blocks [%s]: not on the GEMM frame\n", set);
        return;
    }
    tsr_gemm_config cfg = *ks->gemm;
    cfg.kc = 8;
    cfg.a_block_floats = 1;
    cfg.b_block_floats = 1;
    cfg.decode_kc = 4;
    cfg.i8_kc4 = 2;
    tsr_kernels tiny = *ks;
    tiny.gemm = &cfg;
    static const tsr_weight_type types[] = {TSR_WEIGHTS_F32, TSR_WEIGHTS_BF16, TSR_WEIGHTS_INT8};
    for (size_t si = 0; si < sizeof linear_shapes / sizeof *linear_shapes; si++) {
        const linear_shape *s = &linear_shapes[si];
        linear_case c = linear_case_new(ks, s, si);
        const buffer *res = s->residual ? &c.residual : NULL;
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            void *panels = alloc_aligned(ks->pack_bytes(ks, types[ti], s->n, s->k));
            ks->pack_linear(ks, types[ti], c.w.p, s->n, s->k, panels);
            c.packed.panels = panels;
            c.packed.type = types[ti];
            buffer y = buffer_new(s->m, s->n, c.y.ld, (size_t)(c.y.p - c.y.base));
            run_linear(ks, &c, 0, s->m, 0, s->n, res, &c.y);
            run_linear(&tiny, &c, 0, s->m, 0, s->n, res, &y);
            char what[64];
            snprintf(what, sizeof what, "%s linear with the smallest blocks",
                     types[ti] == TSR_WEIGHTS_F32 ? "f32" : types[ti] == TSR_WEIGHTS_BF16 ? "bf16" : "int8");
            expect_same_bits(y.p, y.ld, c.y.p, c.y.ld, s->m, 0, s->n, set, what, c.shape);
            expect_untouched_outside(&y, 0, s->n, set, what, c.shape);
            buffer_free(&y);
            free(panels);
        }
        c.packed.panels = c.panels;
        c.packed.type = TSR_WEIGHTS_F32;
        linear_case_free(&c);
    }
}

/* f32 and bf16 packings hold the rows in order (simd/kernels.h): a weight
 * packed a block of rows at a time, each block at its rows' byte offset (as
 * the load packs a large one), is the whole's packing byte for byte, every
 * byte written; so is an int8 weight packed by blocks of rows
 * (pack_linear_i8's r0 and rows). Blocks of 1, 2 and 3 times
 * linear_n_align rows. */
ParameterizedTestParameters(kernels, pack_in_row_blocks)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, pack_in_row_blocks)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;
    static const size_t shapes[][2] = {{1, 1}, {7, 3}, {33, 17}, {67, 129}, {100, 64}, {300, 512}};
    static const tsr_weight_type types[] = {TSR_WEIGHTS_F32, TSR_WEIGHTS_BF16};
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        size_t n = shapes[si][0], k = shapes[si][1];
        ref_rng rng;
        ref_rng_seed(&rng, 9100 + si);
        buffer w = buffer_new(n, k, k, 0);
        buffer_fill(&w, &rng, -1, 1);
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            size_t bytes = ks->pack_bytes(ks, types[ti], n, k);
            size_t value = types[ti] == TSR_WEIGHTS_BF16 ? 2 : 4;
            unsigned char *whole = alloc_aligned(bytes), *blocks = alloc_aligned(bytes);
            memset(whole, 0xab, bytes);
            ks->pack_linear(ks, types[ti], w.p, n, k, whole);
            for (size_t times = 1; times <= 3; times++) {
                size_t block = times * ks->linear_n_align;
                memset(blocks, 0xcd, bytes);
                for (size_t r0 = 0; r0 < n; r0 += block)
                    ks->pack_linear(ks, types[ti], w.p + r0 * k, n - r0 < block ? n - r0 : block,
                                    k, blocks + r0 * k * value);
                for (size_t b = 0; b < bytes; b++)
                    cr_assert(whole[b] == blocks[b],
                              "[%s] %s packing of %zu x %zu in blocks of %zu rows: byte %zu of "
                              "%zu is 0x%02x, the whole's 0x%02x",
                              set, types[ti] == TSR_WEIGHTS_BF16 ? "bf16" : "f32", n, k, block, b,
                              bytes, blocks[b], whole[b]);
            }
            free(whole);
            free(blocks);
        }
        /* int8 rows already quantized (pack_linear_i8), the same way. */
        int8_t *q = malloc(n * k);
        float *scales = malloc(n * sizeof *scales);
        size_t bytes = ks->pack_bytes(ks, TSR_WEIGHTS_INT8, n, k);
        unsigned char *whole = alloc_aligned(bytes), *blocks = alloc_aligned(bytes);
        cr_assert(q && scales);
        for (size_t i = 0; i < n * k; i++)
            q[i] = (int8_t)((int)(ref_rng_u32(&rng) % 255) - 127);
        for (size_t r = 0; r < n; r++)
            scales[r] = (float)(1 + ref_rng_u32(&rng) % 1000) / 4096.0f;
        memset(whole, 0xab, bytes);
        ks->pack_linear_i8(ks, q, scales, n, k, 0, n, whole);
        for (size_t times = 1; times <= 3; times++) {
            size_t block = times * ks->linear_n_align;
            memset(blocks, 0xcd, bytes);
            for (size_t r0 = 0; r0 < n; r0 += block)
                ks->pack_linear_i8(ks, q + r0 * k, scales + r0, n, k, r0,
                                   n - r0 < block ? n - r0 : block, blocks);
            for (size_t b = 0; b < bytes; b++)
                cr_assert(whole[b] == blocks[b],
                          "[%s] int8 packing of %zu x %zu in blocks of %zu rows: byte %zu of %zu "
                          "is 0x%02x, the whole's 0x%02x",
                          set, n, k, block, b, bytes, blocks[b], whole[b]);
        }
        free(q);
        free(scales);
        free(whole);
        free(blocks);
        buffer_free(&w);
    }
}

/* The rounding every set's bf16 packing shares (simd/bf16.h), on the cases
 * that tell rounding modes apart, with the bit patterns written by hand from
 * the bfloat16 format (the top 16 bits of a float32). */
Test(kernels, bf16_rounding)
{
    static const struct {
        uint32_t in;
        uint16_t out;
        const char *what;
    } cases[] = {
        {0x3f800000u, 0x3f80, "1.0 exact"},
        {0x3f808000u, 0x3f80, "tie, even below: stays"},
        {0x3f818000u, 0x3f82, "tie, odd below: rounds up to even"},
        {0x3f808001u, 0x3f81, "just above the tie: up"},
        {0x3f807fffu, 0x3f80, "just below the tie: down"},
        {0xbf818000u, 0xbf82, "negative tie: magnitude to even"},
        {0x80000000u, 0x8000, "-0"},
        {0x00000001u, 0x0000, "smallest subnormal: down to 0"},
        {0x007fffffu, 0x0080, "largest subnormal: up to the smallest normal"},
        {0x7f7fffffu, 0x7f80, "largest float: up to infinity"},
        {0xff800000u, 0xff80, "-infinity"},
        {0x7f800001u, 0x7fc0, "signalling NaN, payload in the low bits: stays NaN"},
        {0xffc00000u, 0xffc0, "negative quiet NaN"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float f;
        memcpy(&f, &cases[i].in, sizeof f);
        uint16_t got = tsr_f32_to_bf16(f);
        cr_expect(got == cases[i].out, "bf16 of 0x%08x (%s): 0x%04x, expected 0x%04x",
                  cases[i].in, cases[i].what, got, cases[i].out);
        uint32_t back;
        float wide = tsr_bf16_to_f32(cases[i].out);
        memcpy(&back, &wide, sizeof back);
        cr_expect(back == (uint32_t)cases[i].out << 16, "widening 0x%04x gave 0x%08x",
                  cases[i].out, back);
    }
}

/* ---- FFN ------------------------------------------------------------------- */

typedef struct ffn_shape {
    size_t m, d_model, d_ff;
    tsr_activation act;
    int biases, residual;
} ffn_shape;

static const ffn_shape ffn_shapes[] = {
    {1, 1, 1, TSR_ACT_RELU, 1, 1},      {2, 3, 5, TSR_ACT_GELU, 0, 1},
    {5, 8, 16, TSR_ACT_SILU, 1, 0},     {7, 13, 31, TSR_ACT_RELU, 1, 1},
    {31, 16, 64, TSR_ACT_GELU, 1, 1},   {32, 17, 33, TSR_ACT_RELU, 1, 1},
    {33, 64, 256, TSR_ACT_RELU, 1, 1},  {67, 33, 67, TSR_ACT_SILU, 1, 0},
    {100, 64, 128, TSR_ACT_GELU, 1, 1}, {3, 512, 2048, TSR_ACT_RELU, 1, 1},
    {13, 16, 48, TSR_ACT_GELU_TANH, 1, 1}, {33, 24, 40, TSR_ACT_GELU_SIGMOID, 1, 0},
};

static float *packed_new(const tsr_kernels *ks, const buffer *w, tsr_packed_linear *out,
                         const float *bias)
{
    float *panels = alloc_aligned(ks->pack_bytes(ks, TSR_WEIGHTS_F32, w->rows, w->cols));
    ks->pack_linear(ks, TSR_WEIGHTS_F32, w->p, w->rows, w->cols, panels);
    *out = (tsr_packed_linear){.n = w->rows, .k = w->cols, .bias = bias, .panels = panels,
                               .type = TSR_WEIGHTS_F32};
    return panels;
}

static void run_ffn(const tsr_kernels *ks, const buffer *x, const tsr_packed_linear *w1,
                    const tsr_packed_linear *w2, tsr_activation act, const buffer *residual,
                    buffer *y)
{
    size_t scratch_len = ks->ffn_block_rows * w1->n;
    float *scratch = alloc_aligned(scratch_len * sizeof(float));
    tsr_ffn_args a = {
        .x = x->p, .ldx = x->ld, .m = x->rows, .w1 = w1, .w2 = w2, .act = act,
        .residual = residual ? residual->p : NULL, .ldr = residual ? residual->ld : 0,
        .y = y->p, .ldy = y->ld, .scratch = scratch,
    };
    ks->ffn(ks, &a);
    free(scratch);
}

/* The same FFN as two whole linear calls through an m x d_ff buffer. */
static void run_ffn_as_two_linears(const tsr_kernels *ks, const buffer *x,
                                   const tsr_packed_linear *w1, const tsr_packed_linear *w2,
                                   tsr_activation act, const buffer *residual, buffer *y)
{
    buffer h = buffer_new(x->rows, w1->n, w1->n, 0);
    tsr_linear_args up = {
        .x = x->p, .ldx = x->ld, .m = x->rows, .w = w1, .n_begin = 0, .n_end = w1->n,
        .act = act, .y = h.p, .ldy = h.ld,
    };
    ks->linear(ks, &up);
    tsr_linear_args down = {
        .x = h.p, .ldx = h.ld, .m = x->rows, .w = w2, .n_begin = 0, .n_end = w2->n,
        .act = TSR_ACT_NONE, .residual = residual ? residual->p : NULL,
        .ldr = residual ? residual->ld : 0, .y = y->p, .ldy = y->ld,
    };
    ks->linear(ks, &down);
    buffer_free(&h);
}

ParameterizedTestParameters(kernels, ffn)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, ffn)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof ffn_shapes / sizeof *ffn_shapes; si++) {
        const ffn_shape *s = &ffn_shapes[si];
        size_t off = layout_offset(si), pad = layout_pad(si);
        char shape[160];
        snprintf(shape, sizeof shape, "m=%zu d_model=%zu d_ff=%zu act=%s biases=%d residual=%d "
                 "offset=%zu pad=%zu", s->m, s->d_model, s->d_ff, activation_name(s->act),
                 s->biases, s->residual, off, pad);
        ref_rng rng;
        ref_rng_seed(&rng, 2000 + si);

        buffer x = buffer_new(s->m, s->d_model, s->d_model + pad, off);
        buffer w1 = buffer_new(s->d_ff, s->d_model, s->d_model, off);
        buffer b1 = buffer_new(1, s->d_ff, s->d_ff, off);
        buffer w2 = buffer_new(s->d_model, s->d_ff, s->d_ff, off);
        buffer b2 = buffer_new(1, s->d_model, s->d_model, off);
        buffer res = buffer_new(s->m, s->d_model, s->d_model + 2 * pad, off);
        buffer y = buffer_new(s->m, s->d_model, s->d_model + pad, off);
        buffer_fill(&x, &rng, -1, 1);
        buffer_fill(&w1, &rng, -1, 1);
        buffer_fill(&b1, &rng, -0.5f, 0.5f);
        buffer_fill(&w2, &rng, -1, 1);
        buffer_fill(&b2, &rng, -0.5f, 0.5f);
        buffer_fill(&res, &rng, -2, 2);
        const buffer *residual = s->residual ? &res : NULL;

        tsr_packed_linear pw1, pw2;
        float *panels1 = packed_new(ks, &w1, &pw1, s->biases ? b1.p : NULL);
        float *panels2 = packed_new(ks, &w2, &pw2, s->biases ? b2.p : NULL);

        run_ffn(ks, &x, &pw1, &pw2, s->act, residual, &y);
        double *ref = doubles(s->m * s->d_model), *tol = doubles(s->m * s->d_model);
        ref_ffn(x.p, x.ld, s->m, s->d_model, s->d_ff, w1.p, s->biases ? b1.p : NULL, w2.p,
                s->biases ? b2.p : NULL, s->act, residual ? res.p : NULL, res.ld, ref, tol);
        scale_errors(tol, s->m * s->d_model);
        expect_close(y.p, y.ld, ref, tol, s->m, s->d_model, set, "ffn", shape);
        expect_untouched_outside(&y, 0, s->d_model, set, "ffn", shape);

        buffer y2 = buffer_new(s->m, s->d_model, y.ld, off);
        run_ffn_as_two_linears(ks, &x, &pw1, &pw2, s->act, residual, &y2);
        expect_same_bits(y.p, y.ld, y2.p, y2.ld, s->m, 0, s->d_model, set,
                         "ffn against two linear calls", shape);

        if (residual) {
            buffer inout = buffer_new(s->m, s->d_model, y.ld, off);
            buffer_copy_data(&inout, &res);
            run_ffn(ks, &x, &pw1, &pw2, s->act, &inout, &inout);
            expect_same_bits(inout.p, inout.ld, y.p, y.ld, s->m, 0, s->d_model, set,
                             "ffn with residual == y", shape);
            buffer_free(&inout);
        }

        free(ref);
        free(tol);
        free(panels1);
        free(panels2);
        buffer *all[] = {&x, &w1, &b1, &w2, &b2, &res, &y, &y2};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            buffer_free(all[i]);
    }
}

/* ---- Attention -------------------------------------------------------------- */

typedef struct attention_shape {
    size_t n_q, n_k, d;
    int causal;
    size_t q_pos;
    float key_growth; /* key j scaled by 1 + key_growth * j / n_k: later maxima */
    float scale;      /* 0: 1 / sqrt(d) */
} attention_shape;

static const attention_shape attention_shapes[] = {
    {1, 1, 1, 0, 0, 0, 0},        {1, 1, 8, 1, 0, 0, 0},       {2, 3, 8, 0, 0, 0, 0},
    {3, 3, 12, 1, 0, 0, 0},       {5, 7, 6, 0, 0, 0, 0},       {7, 7, 64, 1, 0, 0, 0},
    {8, 13, 16, 0, 0, 0, 0},      {13, 13, 72, 1, 0, 0, 0},    {16, 17, 12, 0, 0, 0, 0},
    {17, 31, 64, 1, 14, 0, 0},    {31, 33, 8, 0, 0, 0, 0},     {33, 64, 64, 1, 31, 0, 0},
    {1, 65, 64, 1, 64, 0, 0},     {2, 67, 72, 1, 65, 0, 0},    {64, 64, 1, 1, 0, 0, 0},
    {67, 67, 12, 1, 0, 0, 0},     {5, 130, 64, 1, 100, 0, 0},  {4, 20, 8, 1, 30, 0, 0},
    {129, 257, 72, 0, 0, 0, 0},   {300, 300, 64, 1, 0, 0, 0},  {300, 300, 12, 0, 0, 0, 0},
    {3, 200, 64, 0, 0, 3.0f, 1},  {40, 190, 8, 1, 150, 4.0f, 2}, {2, 129, 1, 0, 0, 8.0f, 3},
    /* decoding steps of cross-attention (kt below): whole and partial vectors */
    {1, 30, 64, 0, 0, 0, 0},      {1, 47, 72, 1, 46, 0, 0},    {1, 131, 5, 0, 0, 2.0f, 0},
    {1, 16, 64, 0, 0, 0, 0},      {1, 9, 3, 0, 0, 0, 0},
};

static void run_attention(const tsr_kernels *ks, const tsr_attention_args *whole, size_t i0,
                          size_t n_q, float *out, size_t ldo)
{
    tsr_attention_args a = *whole;
    a.q += i0 * a.ldq;
    a.n_q = n_q;
    a.q_pos += i0;
    a.out = out + i0 * ldo;
    a.ldo = ldo;
    ks->attention(&a);
}

ParameterizedTestParameters(kernels, attention)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, attention)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof attention_shapes / sizeof *attention_shapes; si++) {
        const attention_shape *s = &attention_shapes[si];
        size_t off = layout_offset(si), pad = layout_pad(si);
        float scale = s->scale ? s->scale : 1.0f / sqrtf((float)s->d);
        char shape[200];
        snprintf(shape, sizeof shape, "n_q=%zu n_k=%zu d=%zu causal=%d q_pos=%zu key_growth=%g "
                 "scale=%g offset=%zu pad=%zu", s->n_q, s->n_k, s->d, s->causal, s->q_pos,
                 (double)s->key_growth, (double)scale, off, pad);
        ref_rng rng;
        ref_rng_seed(&rng, 3000 + si);

        buffer q = buffer_new(s->n_q, s->d, s->d + pad, off);
        buffer k = buffer_new(s->n_k, s->d, s->d + 2 * pad, off);
        buffer v = buffer_new(s->n_k, s->d, s->d + 3 * pad, off);
        buffer out = buffer_new(s->n_q, s->d, s->d + pad, off);
        buffer_fill(&q, &rng, -1, 1);
        buffer_fill(&k, &rng, -1, 1);
        buffer_fill(&v, &rng, -1, 1);
        for (size_t j = 0; j < s->n_k; j++)
            for (size_t c = 0; c < s->d; c++)
                k.p[j * k.ld + c] *= 1.0f + s->key_growth * (float)j / (float)s->n_k;

        tsr_attention_args a = {
            .q = q.p, .ldq = q.ld, .k = k.p, .ldk = k.ld, .v = v.p, .ldv = v.ld,
            .out = out.p, .ldo = out.ld, .n_q = s->n_q, .n_k = s->n_k, .d = s->d,
            .scale = scale, .causal = s->causal, .q_pos = s->q_pos,
        };
        ks->attention(&a);

        double *ref = doubles(s->n_q * s->d), *tol = doubles(s->n_q * s->d);
        ref_attention(&a, ref, tol);
        scale_errors(tol, s->n_q * s->d);
        expect_close(out.p, out.ld, ref, tol, s->n_q, s->d, set, "attention", shape);
        expect_untouched_outside(&out, 0, s->d, set, "attention", shape);

        /* Queries split in two calls, as threads might: the same bits. */
        buffer split = buffer_new(s->n_q, s->d, out.ld, off);
        size_t half = s->n_q / 2;
        run_attention(ks, &a, 0, half, split.p, split.ld);
        run_attention(ks, &a, half, s->n_q - half, split.p, split.ld);
        expect_same_bits(split.p, split.ld, out.p, out.ld, s->n_q, 0, s->d, set,
                         "attention with the queries split in two calls", shape);

        /* The keys also given transposed (kt), as the decoder gives its
         * cross-attention keys: the same bits, whichever the set reads. */
        buffer kt = buffer_new(s->d, s->n_k, s->n_k + pad, off);
        for (size_t j = 0; j < s->n_k; j++)
            for (size_t c = 0; c < s->d; c++)
                kt.p[c * kt.ld + j] = k.p[j * k.ld + c];
        buffer with_kt = buffer_new(s->n_q, s->d, out.ld, off);
        tsr_attention_args at = a;
        at.kt = kt.p;
        at.ldkt = kt.ld;
        at.out = with_kt.p;
        ks->attention(&at);
        expect_same_bits(with_kt.p, with_kt.ld, out.p, out.ld, s->n_q, 0, s->d, set,
                         "attention with the keys also given transposed", shape);
        expect_untouched_outside(&with_kt, 0, s->d, set, "attention with kt", shape);

        free(ref);
        free(tol);
        buffer *all[] = {&q, &k, &v, &out, &split, &kt, &with_kt};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            buffer_free(all[i]);
    }
}

/* ---- Alignment of a decoder row (core/network/alignment.c) ----------------------------
 * Not a kernel of the table, but built on two of them (logsumexp, argmax), so
 * it runs under every set: the argmax over keys of the softmax probabilities
 * averaged over heads, against the same in double. */

typedef struct alignment_shape {
    size_t n_k, heads, d_head, pad;
    float spread; /* q and k uniform in [-spread, spread) */
} alignment_shape;

static const alignment_shape alignment_shapes[] = {
    {1, 1, 1, 0, 1},  {2, 1, 3, 1, 2},   {3, 2, 4, 0, 1},   {7, 3, 5, 3, 2},
    {17, 8, 8, 0, 1}, {64, 4, 16, 5, 1}, {131, 2, 33, 1, 3}, {9, 16, 2, 7, 4},
};

/* (argmax, best minus second best) of the averaged probabilities, in double;
 * with max_over_heads, of the largest probability any head gives instead. */
static size_t ref_alignment(const float *q, const float *k, size_t ldk, const alignment_shape *s,
                            float scale, int max_over_heads, double *margin)
{
    double *w = doubles(s->n_k), *sc = doubles(s->n_k);
    for (size_t j = 0; j < s->n_k; j++)
        w[j] = 0;
    for (size_t h = 0; h < s->heads; h++) {
        double m = -INFINITY, sum = 0;
        for (size_t j = 0; j < s->n_k; j++) {
            double dot = 0;
            for (size_t t = 0; t < s->d_head; t++)
                dot += (double)q[h * s->d_head + t] * k[j * ldk + h * s->d_head + t];
            sc[j] = scale * dot;
            m = sc[j] > m ? sc[j] : m;
        }
        for (size_t j = 0; j < s->n_k; j++)
            sum += exp(sc[j] - m);
        for (size_t j = 0; j < s->n_k; j++) {
            double p = exp(sc[j] - m) / sum;
            w[j] = max_over_heads ? (p > w[j] ? p : w[j]) : w[j] + p / (double)s->heads;
        }
    }
    size_t best = 0;
    for (size_t j = 1; j < s->n_k; j++)
        if (w[j] > w[best])
            best = j;
    *margin = INFINITY;
    for (size_t j = 0; j < s->n_k; j++)
        if (j != best && w[best] - w[j] < *margin)
            *margin = w[best] - w[j];
    free(w);
    free(sc);
    return best;
}

ParameterizedTestParameters(kernels, alignment_of_row)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, alignment_of_row)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;
    size_t checked = 0;
    for (size_t si = 0; si < sizeof alignment_shapes / sizeof *alignment_shapes; si++) {
        const alignment_shape *s = &alignment_shapes[si];
        size_t d = s->heads * s->d_head, ldk = 2 * d + s->pad;
        float scale = 1.0f / sqrtf((float)s->d_head);
        float *q = malloc(d * sizeof *q), *k = malloc(s->n_k * ldk * sizeof *k),
              *by_head = malloc(s->n_k * d * sizeof *by_head),
              *work = malloc(2 * s->n_k * sizeof *work);
        cr_assert(q && k && by_head && work);
        for (int trial = 0; trial < 20; trial++) {
            ref_rng rng;
            ref_rng_seed(&rng, 4000 + 100 * si + (size_t)trial);
            ref_fill_uniform(&rng, q, 1, d, d, -s->spread, s->spread);
            ref_fill_uniform(&rng, k, s->n_k, ldk, ldk, -s->spread, s->spread);
            double margin;
            size_t want = ref_alignment(q, k, ldk, s, scale, 0, &margin);
            int32_t got = tsr_alignment_of_row(ks, q, k, ldk, s->d_head, s->n_k, s->heads,
                                               s->d_head, scale, work);
            /* The same keys head by head ([head][key][d_head], as the
             * decoder's cross memory holds them): the same position. */
            for (size_t h = 0; h < s->heads; h++)
                for (size_t j = 0; j < s->n_k; j++)
                    memcpy(by_head + (h * s->n_k + j) * s->d_head, k + j * ldk + h * s->d_head,
                           s->d_head * sizeof(float));
            cr_expect_eq(tsr_alignment_of_row(ks, q, by_head, s->d_head, s->n_k * s->d_head,
                                              s->n_k, s->heads, s->d_head, scale, work),
                         got, "%s: n_k=%zu heads=%zu d_head=%zu trial %d: keys head by head "
                         "align elsewhere", set, s->n_k, s->heads, s->d_head, trial);
            if (margin < 1e-5)
                continue; /* float rounding may pick either */
            checked++;
            cr_expect_eq(got, (int32_t)want,
                         "%s: n_k=%zu heads=%zu d_head=%zu trial %d: position %d, the double "
                         "reference %zu (margin %.3g)", set, s->n_k, s->heads, s->d_head, trial,
                         (int)got, want, margin);
        }
        free(q);
        free(k);
        free(by_head);
        free(work);
    }
    cr_expect_gt(checked, 100, "%s: only %zu rows away from a tie", set, checked);

    /* Averaged, not the strongest head: head 0 is sure of key 0, heads 1-3
     * lean to key 1, whose mean is the larger. */
    const alignment_shape s = {2, 4, 1, 0, 1};
    float q[4] = {10, 1, 1, 1}, k[2 * 8] = {0}, work[2 * 3]; /* room for 3 keys, the test after */
    k[0] = 1;                             /* key 0: head 0 */
    k[8 + 1] = k[8 + 2] = k[8 + 3] = 1; /* key 1: heads 1-3 */
    double margin;
    cr_assert_eq(ref_alignment(q, k, 8, &s, 1.0f, 1, &margin), 0, "the strongest head picks 0");
    cr_assert_eq(ref_alignment(q, k, 8, &s, 1.0f, 0, &margin), 1, "the mean picks 1");
    cr_expect_eq(tsr_alignment_of_row(ks, q, k, 8, 1, 2, 4, 1, 1.0f, work), 1,
                 "%s: the heads' mean picks key 1", set);
    /* Equal keys: the first position. */
    float same[3 * 2] = {1, 2, 1, 2, 1, 2}, q2[2] = {0.5f, -1};
    cr_expect_eq(tsr_alignment_of_row(ks, q2, same, 2, 1, 3, 2, 1, 1.0f, work), 0,
                 "%s: a tie goes to the first position", set);
}

/* ---- Add + LayerNorm --------------------------------------------------------- */

typedef struct layernorm_shape {
    size_t rows, n;
    int delta, in_place;
    float amplitude, mean, eps;
    tsr_layernorm_form form;
} layernorm_shape;

static const layernorm_shape layernorm_shapes[] = {
    {1, 1, 0, 0, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {2, 2, 1, 0, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {3, 3, 0, 1, 1, 0.5f, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {5, 5, 1, 1, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {7, 7, 0, 0, 2, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {1, 8, 1, 0, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {13, 13, 1, 1, 1, 3, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {4, 16, 0, 0, 0.01f, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {17, 17, 1, 0, 1, 0, 0.5f, TSR_LAYERNORM_VARIANCE},
    {2, 31, 0, 1, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {33, 33, 1, 1, 3, -1, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {5, 64, 1, 0, 1, 0, 1e-6f, TSR_LAYERNORM_VARIANCE},
    {67, 67, 0, 0, 1, 10, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {7, 512, 1, 1, 1, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {3, 1023, 1, 0, 0.003f, 0, 1e-5f, TSR_LAYERNORM_VARIANCE},
    {2, 1024, 0, 1, 1, 100, 1e-5f, TSR_LAYERNORM_VARIANCE},
    /* The other forms: eps outside the root, biased and N - 1 spreads. */
    {1, 2, 0, 0, 1, 0, 1e-5f, TSR_LAYERNORM_STD_UNBIASED},
    {3, 3, 1, 0, 1, 0, 1e-6f, TSR_LAYERNORM_STD},
    {5, 7, 0, 1, 2, 1, 1e-6f, TSR_LAYERNORM_STD_UNBIASED},
    {4, 16, 1, 0, 0.01f, 0, 1e-3f, TSR_LAYERNORM_STD},
    {2, 31, 1, 1, 1, 0, 0.5f, TSR_LAYERNORM_STD_UNBIASED},
    {6, 33, 0, 0, 3, -1, 1e-5f, TSR_LAYERNORM_STD},
    {3, 67, 1, 0, 1, 10, 1e-6f, TSR_LAYERNORM_STD_UNBIASED},
    {5, 512, 1, 1, 1, 0, 1e-6f, TSR_LAYERNORM_STD},
    {2, 1023, 0, 1, 0.003f, 0, 1e-6f, TSR_LAYERNORM_STD_UNBIASED},
};

ParameterizedTestParameters(kernels, add_layernorm)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, add_layernorm)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof layernorm_shapes / sizeof *layernorm_shapes; si++) {
        const layernorm_shape *s = &layernorm_shapes[si];
        size_t off = layout_offset(si), pad = layout_pad(si);
        char shape[200];
        snprintf(shape, sizeof shape, "rows=%zu n=%zu delta=%d in_place=%d amplitude=%g "
                 "mean=%g eps=%g form=%d offset=%zu pad=%zu", s->rows, s->n, s->delta, s->in_place,
                 (double)s->amplitude, (double)s->mean, (double)s->eps, (int)s->form, off, pad);
        ref_rng rng;
        ref_rng_seed(&rng, 4000 + si);

        buffer x = buffer_new(s->rows, s->n, s->n + pad, off);
        buffer delta = buffer_new(s->rows, s->n, s->n + 2 * pad, off);
        buffer gamma = buffer_new(1, s->n, s->n, off);
        buffer beta = buffer_new(1, s->n, s->n, off);
        buffer out = buffer_new(s->rows, s->n, s->n + 3 * pad, off);
        buffer_fill(&x, &rng, s->mean - s->amplitude, s->mean + s->amplitude);
        buffer_fill(&delta, &rng, -s->amplitude / 2, s->amplitude / 2);
        buffer_fill(&gamma, &rng, 0.5f, 1.5f);
        buffer_fill(&beta, &rng, -0.5f, 0.5f);

        /* The stream after x += delta, as float addition stores it. */
        buffer summed = buffer_new(s->rows, s->n, s->n, 0);
        for (size_t i = 0; i < s->rows; i++)
            for (size_t c = 0; c < s->n; c++)
                summed.p[i * s->n + c] = x.p[i * x.ld + c] +
                                         (s->delta ? delta.p[i * delta.ld + c] : 0.0f);

        float *dst = s->in_place ? x.p : out.p;
        size_t ldo = s->in_place ? x.ld : out.ld;
        ks->add_layernorm(x.p, x.ld, s->delta ? delta.p : NULL, delta.ld, s->rows, s->n,
                          gamma.p, beta.p, (tsr_layernorm_params){s->form, s->eps}, dst, ldo);

        double *ref = doubles(s->rows * s->n), *tol = doubles(s->rows * s->n);
        for (size_t i = 0; i < s->rows; i++)
            ref_layernorm_row(summed.p + i * s->n, s->n, gamma.p, beta.p, s->form, s->eps,
                              ref + i * s->n, tol + i * s->n);
        scale_errors(tol, s->rows * s->n);
        expect_close(dst, ldo, ref, tol, s->rows, s->n, set, "add_layernorm", shape);
        if (!s->in_place) {
            expect_same_bits(x.p, x.ld, summed.p, summed.ld, s->rows, 0, s->n, set,
                             "add_layernorm stream x + delta", shape);
            expect_untouched_outside(&out, 0, s->n, set, "add_layernorm", shape);
        }
        expect_untouched_outside(&x, 0, s->n, set, "add_layernorm (x)", shape);

        free(ref);
        free(tol);
        buffer *all[] = {&x, &delta, &gamma, &beta, &out, &summed};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            buffer_free(all[i]);
    }
}

/* ---- Elementwise rows: activations, log_softmax, logsumexp, argmax ---------- */

static const size_t row_sizes[] = {1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 64, 67, 255, 1000, 4099};
#define N_ROW_SIZES (sizeof row_sizes / sizeof *row_sizes)

/* Values an activation must get right beyond the uniform range. */
static const float activation_specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 50.0f, -50.0f,
                                            100.0f, -100.0f, 1e4f, -1e4f, 0.5f, -3.0f};

static void check_activation(const tsr_kernels *ks, tsr_activation act, size_t n, size_t si,
                             const char *set)
{
    char shape[80];
    snprintf(shape, sizeof shape, "act=%s n=%zu offset=%zu", activation_name(act), n,
             layout_offset(si));
    ref_rng rng;
    ref_rng_seed(&rng, 5000 + si * 4 + act);
    buffer x = buffer_new(1, n, n, layout_offset(si));
    buffer_fill(&x, &rng, -8, 8);
    size_t n_specials = sizeof activation_specials / sizeof *activation_specials;
    for (size_t i = 0; i < n_specials && i < n / 3; i++)
        x.p[(i * 7) % n] = activation_specials[i];

    double *ref = doubles(n), *tol = doubles(n);
    for (size_t i = 0; i < n; i++) {
        ref[i] = ref_activation(x.p[i], act);
        tol[i] = 1e-6 + 4e-6 * fabs(ref[i]);
    }
    ks->activate(x.p, n, act);
    expect_close(x.p, x.ld, ref, tol, 1, n, set, "activate", shape);
    expect_untouched_outside(&x, 0, n, set, "activate", shape);
    free(ref);
    free(tol);
    buffer_free(&x);
}

ParameterizedTestParameters(kernels, activate)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, activate)
{
    const tsr_kernels *ks = set_or_skip(p);
    const tsr_activation acts[] = {TSR_ACT_NONE, TSR_ACT_RELU,      TSR_ACT_GELU,
                                   TSR_ACT_SILU, TSR_ACT_GELU_TANH, TSR_ACT_GELU_SIGMOID};
    for (size_t si = 0; si < N_ROW_SIZES; si++)
        for (size_t a = 0; a < sizeof acts / sizeof acts[0]; a++)
            check_activation(ks, acts[a], row_sizes[si], si, tsr_kernel_sets[p->index].name);
}

/* Logits: uniform in [-10, 10) around an offset (large offsets overflow an
 * unshifted exp), some masked to -inf on the variants that ask for it. */
static buffer logits_new(size_t n, size_t si, float offset, int masked)
{
    ref_rng rng;
    ref_rng_seed(&rng, 6000 + si);
    buffer x = buffer_new(1, n, n, layout_offset(si));
    buffer_fill(&x, &rng, offset - 10, offset + 10);
    if (masked)
        for (size_t i = 1; i < n; i += 3)
            x.p[i] = -INFINITY;
    return x;
}

static const float logit_offsets[] = {0.0f, 1000.0f, -1000.0f, 0.0f};

ParameterizedTestParameters(kernels, log_softmax)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, log_softmax)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < N_ROW_SIZES; si++) {
        for (size_t v = 0; v < 4; v++) {
            size_t n = row_sizes[si];
            int masked = v == 3;
            char shape[100];
            snprintf(shape, sizeof shape, "n=%zu offset=%g masked=%d", n,
                     (double)logit_offsets[v], masked);
            buffer x = logits_new(n, si, logit_offsets[v], masked);
            buffer y = buffer_new(1, n, n, layout_offset(si + 1));

            ks->log_softmax(x.p, n, y.p);
            double *ref = doubles(n), *tol = doubles(n);
            ref_log_softmax(x.p, n, ref);
            double lse = ref_logsumexp(x.p, n);
            for (size_t i = 0; i < n; i++)
                tol[i] = isinf(ref[i]) ? 0
                                       : 4 * FLT_EPSILON * (fabs(ref[i]) + fabs(lse) +
                                                            sqrt((double)n) + 4);
            expect_close(y.p, y.ld, ref, tol, 1, n, set, "log_softmax", shape);
            expect_untouched_outside(&y, 0, n, set, "log_softmax", shape);

            ks->log_softmax(x.p, n, x.p);
            expect_same_bits(x.p, x.ld, y.p, y.ld, 1, 0, n, set, "log_softmax in place", shape);

            free(ref);
            free(tol);
            buffer_free(&x);
            buffer_free(&y);
        }
    }
}

ParameterizedTestParameters(kernels, logsumexp)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, logsumexp)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < N_ROW_SIZES; si++) {
        for (size_t v = 0; v < 4; v++) {
            size_t n = row_sizes[si];
            char shape[100];
            snprintf(shape, sizeof shape, "n=%zu offset=%g masked=%d", n,
                     (double)logit_offsets[v], v == 3);
            buffer x = logits_new(n, si, logit_offsets[v], v == 3);
            float got = ks->logsumexp(x.p, n);
            double ref = ref_logsumexp(x.p, n);
            double tol = 4 * FLT_EPSILON * (fabs(ref) + sqrt((double)n) + 4);
            expect_close(&got, 1, &ref, &tol, 1, 1, set, "logsumexp", shape);
            buffer_free(&x);
        }
    }
}

static void expect_argmax(const tsr_kernels *ks, const float *x, size_t n, size_t want,
                          const char *set, const char *shape)
{
    size_t got = ks->argmax(x, n);
    cr_assert(got == want, "[%s] argmax %s: index %zu, expected %zu", set, shape, got, want);
}

ParameterizedTestParameters(kernels, argmax)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, argmax)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < N_ROW_SIZES; si++) {
        size_t n = row_sizes[si];
        char shape[100];
        ref_rng rng;
        ref_rng_seed(&rng, 7000 + si);
        buffer x = buffer_new(1, n, n, layout_offset(si));
        buffer_fill(&x, &rng, -5, 5);

        snprintf(shape, sizeof shape, "n=%zu random", n);
        expect_argmax(ks, x.p, n, ref_argmax(x.p, n), set, shape);

        /* Ties: a new maximum at two places; the first must win. Every
         * first place on small rows, a spread of them on large ones. */
        size_t step = n <= 67 ? 1 : n / 61;
        for (size_t a = 0; a + 1 < n; a += step) {
            size_t later[2] = {a + 1, n - 1};
            for (size_t t = 0; t < 2; t++) {
                size_t b = later[t];
                float saved_a = x.p[a], saved_b = x.p[b];
                x.p[a] = x.p[b] = 6;
                snprintf(shape, sizeof shape, "n=%zu tie at %zu and %zu", n, a, b);
                expect_argmax(ks, x.p, n, a, set, shape);
                x.p[a] = saved_a;
                x.p[b] = saved_b;
            }
        }

        /* NaN is never the maximum. */
        size_t at = ref_argmax(x.p, n);
        float saved = x.p[at];
        x.p[at] = NAN;
        snprintf(shape, sizeof shape, "n=%zu NaN in place of the maximum", n);
        expect_argmax(ks, x.p, n, ref_argmax(x.p, n), set, shape);
        x.p[at] = saved;

        x.p[0] = NAN;
        snprintf(shape, sizeof shape, "n=%zu NaN first", n);
        expect_argmax(ks, x.p, n, ref_argmax(x.p, n), set, shape);

        for (size_t i = 0; i < n; i++)
            x.p[i] = NAN;
        snprintf(shape, sizeof shape, "n=%zu all NaN", n);
        expect_argmax(ks, x.p, n, 0, set, shape);

        x.p[n - 1] = -1e30f;
        snprintf(shape, sizeof shape, "n=%zu all NaN but the last", n);
        expect_argmax(ks, x.p, n, n - 1, set, shape);

        for (size_t i = 0; i < n; i++)
            x.p[i] = -INFINITY;
        snprintf(shape, sizeof shape, "n=%zu all -inf", n);
        expect_argmax(ks, x.p, n, 0, set, shape);

        buffer_free(&x);
    }
}

/* ---- Embedding ---------------------------------------------------------------- */

typedef struct embed_shape {
    size_t count, d, vocab;
    int with_pos;
    float scale;
} embed_shape;

static const embed_shape embed_shapes[] = {
    {1, 1, 1, 0, 1},       {2, 2, 3, 1, 1.5f},     {3, 3, 5, 1, 1},     {5, 7, 50, 0, 2.6457f},
    {8, 8, 13, 1, 2.828f}, {13, 16, 7, 1, 4},       {17, 17, 50, 0, 1},  {31, 33, 100, 1, 5.7f},
    {67, 64, 1000, 1, 8},  {33, 67, 40, 1, 8.185f}, {100, 512, 300, 1, 22.627f},
};

ParameterizedTestParameters(kernels, embed)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, embed)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof embed_shapes / sizeof *embed_shapes; si++) {
        const embed_shape *s = &embed_shapes[si];
        size_t off = layout_offset(si), pad = layout_pad(si);
        char shape[160];
        snprintf(shape, sizeof shape, "count=%zu d=%zu vocab=%zu pos=%d scale=%g offset=%zu "
                 "pad=%zu", s->count, s->d, s->vocab, s->with_pos, (double)s->scale, off, pad);
        ref_rng rng;
        ref_rng_seed(&rng, 8000 + si);

        buffer table = buffer_new(s->vocab, s->d, s->d, off);
        buffer pos = buffer_new(s->count, s->d, s->d, off);
        buffer out = buffer_new(s->count, s->d, s->d + pad, off);
        buffer_fill(&table, &rng, -1, 1);
        buffer_fill(&pos, &rng, -1, 1);
        int32_t *ids = malloc(s->count * sizeof *ids);
        cr_assert(ids != NULL, "out of memory");
        for (size_t i = 0; i < s->count; i++)
            ids[i] = (int32_t)(ref_rng_u32(&rng) % s->vocab);
        ids[s->count - 1] = (int32_t)(s->vocab - 1);

        const float *pos_rows = s->with_pos ? pos.p : NULL;
        ks->embed(ids, s->count, table.p, s->d, s->scale, pos_rows, out.p, out.ld);

        double *ref = doubles(s->count * s->d), *tol = doubles(s->count * s->d);
        ref_embed(ids, s->count, table.p, s->d, s->scale, pos_rows, ref);
        for (size_t i = 0; i < s->count; i++)
            for (size_t c = 0; c < s->d; c++)
                tol[i * s->d + c] =
                    2 * FLT_EPSILON * (fabs((double)table.p[(size_t)ids[i] * s->d + c] * s->scale) +
                                       (pos_rows ? fabs(pos_rows[i * s->d + c]) : 0));
        expect_close(out.p, out.ld, ref, tol, s->count, s->d, set, "embed", shape);
        expect_untouched_outside(&out, 0, s->d, set, "embed", shape);

        free(ids);
        free(ref);
        free(tol);
        buffer_free(&table);
        buffer_free(&pos);
        buffer_free(&out);
    }
}

/* A tied output projection's rows read as the embedding (embed_packed):
 * bit for bit what embed gives on the unpacked table (f32) or on q x scale
 * (int8), which the test above holds to the reference. */
ParameterizedTestParameters(kernels, embed_packed)
{
    return each_set();
}

/* embed_packed's rows (got) bit for bit embed's (want), nothing written
 * outside them. */
static void expect_embedded_as(const buffer *got, const buffer *want, const embed_shape *s,
                               const char *set, const char *what)
{
    for (size_t i = 0; i < s->count; i++)
        for (size_t c = 0; c < s->d; c++)
            cr_assert(bits_of(got->p[i * got->ld + c]) == bits_of(want->p[i * want->ld + c]),
                      "[%s] embed_packed %s count=%zu d=%zu vocab=%zu: row %zu column %zu is "
                      "%.9g, embed gives %.9g",
                      set, what, s->count, s->d, s->vocab, i, c, (double)got->p[i * got->ld + c],
                      (double)want->p[i * want->ld + c]);
    expect_untouched_outside(got, 0, s->d, set, "embed_packed", what);
}

ParameterizedTest(set_param *p, kernels, embed_packed)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;

    for (size_t si = 0; si < sizeof embed_shapes / sizeof *embed_shapes; si++) {
        const embed_shape *s = &embed_shapes[si];
        size_t pad = layout_pad(si);
        ref_rng rng;
        ref_rng_seed(&rng, 8500 + si);
        buffer table = buffer_new(s->vocab, s->d, s->d, 0);
        buffer pos = buffer_new(s->count, s->d, s->d, 0);
        buffer want = buffer_new(s->count, s->d, s->d + pad, 0);
        buffer got = buffer_new(s->count, s->d, s->d + pad, 0);
        buffer_fill(&table, &rng, -1, 1);
        buffer_fill(&pos, &rng, -1, 1);
        int32_t *ids = malloc(s->count * sizeof *ids);
        void *panels = aligned_alloc(64, (ks->pack_bytes(ks, TSR_WEIGHTS_F32, s->vocab, s->d) + 63) /
                                             64 * 64);
        cr_assert(ids && panels, "out of memory");
        for (size_t i = 0; i < s->count; i++)
            ids[i] = (int32_t)(ref_rng_u32(&rng) % s->vocab);
        ids[s->count - 1] = (int32_t)(s->vocab - 1);
        ks->pack_linear(ks, TSR_WEIGHTS_F32, table.p, s->vocab, s->d, panels);
        tsr_packed_linear w = {.n = s->vocab, .k = s->d, .panels = panels,
                               .type = TSR_WEIGHTS_F32};
        const float *pos_rows = s->with_pos ? pos.p : NULL;
        ks->embed(ids, s->count, table.p, s->d, s->scale, pos_rows, want.p, want.ld);
        ks->embed_packed(ks, &w, ids, s->count, s->scale, pos_rows, got.p, got.ld);
        expect_embedded_as(&got, &want, s, set, "f32");

        /* int8 rows (an int8 file's tied table held once): as embed on the
         * table q x scale, computed here, one rounding each. */
        int8_t *q = malloc(s->vocab * s->d);
        float *scales = malloc(s->vocab * sizeof *scales);
        void *i8_panels = aligned_alloc(
            64, (ks->pack_bytes(ks, TSR_WEIGHTS_INT8, s->vocab, s->d) + 63) / 64 * 64);
        cr_assert(q && scales && i8_panels, "out of memory");
        for (size_t r = 0; r < s->vocab; r++) {
            scales[r] = (float)(1 + ref_rng_u32(&rng) % 1000) / 65536.0f;
            for (size_t c = 0; c < s->d; c++) {
                q[r * s->d + c] = (int8_t)((int)(ref_rng_u32(&rng) % 255) - 127);
                table.p[r * s->d + c] = (float)q[r * s->d + c] * scales[r];
            }
        }
        ks->pack_linear_i8(ks, q, scales, s->vocab, s->d, 0, s->vocab, i8_panels);
        tsr_packed_linear w8 = {.n = s->vocab, .k = s->d, .panels = i8_panels,
                                .type = TSR_WEIGHTS_INT8};
        ks->embed(ids, s->count, table.p, s->d, s->scale, pos_rows, want.p, want.ld);
        ks->embed_packed(ks, &w8, ids, s->count, s->scale, pos_rows, got.p, got.ld);
        expect_embedded_as(&got, &want, s, set, "int8 (embed on q x scale)");
        free(q);
        free(scales);
        free(i8_panels);
        free(ids);
        free(panels);
        buffer_free(&table);
        buffer_free(&pos);
        buffer_free(&want);
        buffer_free(&got);
    }
}

/* A linear layer of some rows of another (a shortlist's output projection,
 * core/network/gathered_linear.c, through weight_rows): for every weight
 * type its packing is the bytes of packing those rows alone, and each of its
 * output columns the bits of the source's column, on rows of the decode and
 * the blocked paths. */
ParameterizedTestParameters(kernels, gathered_linear)
{
    return each_set();
}

typedef struct gather_shape {
    size_t n, k, count, m;
} gather_shape;

static const gather_shape gather_shapes[] = {
    {37, 13, 5, 3}, {70, 50, 33, 17}, {129, 64, 129, 2}, {300, 33, 71, 40},
};

ParameterizedTest(set_param *p, kernels, gathered_linear)
{
    const tsr_kernels *ks = set_or_skip(p);
    const char *set = tsr_kernel_sets[p->index].name;
    static const tsr_weight_type types[] = {TSR_WEIGHTS_F32, TSR_WEIGHTS_BF16, TSR_WEIGHTS_INT8};
    static const char *const type_names[] = {"f32", "bf16", "int8"};

    for (size_t si = 0; si < sizeof gather_shapes / sizeof *gather_shapes; si++) {
        const gather_shape *s = &gather_shapes[si];
        ref_rng rng;
        ref_rng_seed(&rng, 9100 + si);
        buffer w = buffer_new(s->n, s->k, s->k, 0), x = buffer_new(s->m, s->k, s->k, 0);
        buffer bias = buffer_new(1, s->n, s->n, 0);
        buffer_fill(&w, &rng, -1, 1);
        buffer_fill(&x, &rng, -1, 1);
        buffer_fill(&bias, &rng, -0.5f, 0.5f);
        /* Ascending ids with gaps (all of them when count == n), the last
         * row among them; and the rows they name, copied out. */
        int32_t *ids = malloc(s->count * sizeof *ids);
        buffer picked = buffer_new(s->count, s->k, s->k, 0);
        cr_assert(ids, "out of memory");
        for (size_t i = 0; i < s->count; i++)
            ids[i] = s->count == s->n ? (int32_t)i
                                      : (int32_t)(i * (s->n - 1) / (s->count - 1));
        for (size_t i = 0; i < s->count; i++)
            memcpy(picked.p + i * s->k, w.p + (size_t)ids[i] * s->k, s->k * sizeof(float));
        for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
            size_t bytes = ks->pack_bytes(ks, types[t], s->n, s->k);
            size_t alone_bytes = ks->pack_bytes(ks, types[t], s->count, s->k);
            void *panels = alloc_aligned(bytes), *alone = alloc_aligned(alone_bytes);
            ks->pack_linear(ks, types[t], w.p, s->n, s->k, panels);
            ks->pack_linear(ks, types[t], picked.p, s->count, s->k, alone);
            tsr_packed_linear src = {.n = s->n, .k = s->k, .bias = bias.p, .panels = panels,
                                     .type = types[t]};
            /* On one thread and on three (a block of rows each at a time):
             * the same bytes. */
            tsr_gathered_linear g, g1;
            cr_assert_eq(tsr_gathered_linear_pack(ks, &src, ids, s->count, 3, &g), 0,
                         "[%s] gathering %s rows failed", set, type_names[t]);
            cr_assert_eq(tsr_gathered_linear_pack(ks, &src, ids, s->count, 1, &g1), 0,
                         "[%s] gathering %s rows failed", set, type_names[t]);
            cr_assert(memcmp(g.w.panels, g1.w.panels, alone_bytes) == 0,
                      "[%s] %s: the gathered packing differs on 1 and 3 threads", set,
                      type_names[t]);
            tsr_gathered_linear_free(&g1);
            cr_assert(memcmp(g.w.panels, alone, alone_bytes) == 0,
                      "[%s] %s n=%zu k=%zu: the gathered %zu rows' packing differs from "
                      "packing them alone", set, type_names[t], s->n, s->k, s->count);
            buffer full = buffer_new(s->m, s->n, s->n, 0), got = buffer_new(s->m, s->count, s->count, 0);
            tsr_linear_args a = {.x = x.p, .ldx = x.ld, .m = s->m, .w = &src, .n_begin = 0,
                                 .n_end = s->n, .act = TSR_ACT_NONE, .y = full.p, .ldy = full.ld};
            ks->linear(ks, &a);
            a.w = &g.w;
            a.n_end = s->count;
            a.y = got.p;
            a.ldy = got.ld;
            ks->linear(ks, &a);
            for (size_t i = 0; i < s->m; i++)
                for (size_t c = 0; c < s->count; c++)
                    cr_assert(bits_of(got.p[i * got.ld + c]) ==
                                  bits_of(full.p[i * full.ld + (size_t)ids[c]]),
                              "[%s] %s m=%zu n=%zu k=%zu: gathered column %zu (row %d) of row "
                              "%zu is %.9g, the source's %.9g", set, type_names[t], s->m, s->n,
                              s->k, c, ids[c], i, (double)got.p[i * got.ld + c],
                              (double)full.p[i * full.ld + (size_t)ids[c]]);
            tsr_gathered_linear_free(&g);
            buffer_free(&full);
            buffer_free(&got);
            free(panels);
            free(alone);
        }
        free(ids);
        buffer_free(&picked);
        buffer_free(&w);
        buffer_free(&x);
        buffer_free(&bias);
    }
}

/* ---- Widening ------------------------------------------------------------------ */

/* All 65536 patterns, read from an odd address; every value is exact. */
static void check_widen(void (*widen)(const void *, size_t, float *), double (*value)(uint16_t),
                        const char *set, const char *what)
{
    const size_t n = 65536;
    unsigned char *bytes = malloc(2 * n + 1);
    buffer dst = buffer_new(1, n, n, 1);
    cr_assert(bytes != NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)i;
        memcpy(bytes + 1 + 2 * i, &h, sizeof h);
    }
    widen(bytes + 1, n, dst.p);

    for (size_t i = 0; i < n; i++) {
        double want = value((uint16_t)i);
        float got = dst.p[i];
        if (isnan(want)) {
            cr_assert(isnan(got) && !signbit(got) == !signbit(want),
                      "[%s] %s 0x%04zx: %.9g, expected a NaN of the same sign", set, what, i,
                      (double)got);
        } else {
            cr_assert(bits_of(got) == bits_of((float)want),
                      "[%s] %s 0x%04zx: %.9g (bits 0x%08x), expected %.9g", set, what, i,
                      (double)got, (unsigned)bits_of(got), want);
        }
    }
    expect_untouched_outside(&dst, 0, n, set, what, "all 65536 patterns");
    buffer_free(&dst);
    free(bytes);
}

ParameterizedTestParameters(kernels, f16_to_f32)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, f16_to_f32)
{
    const tsr_kernels *ks = set_or_skip(p);
    check_widen(ks->f16_to_f32, ref_f16_value, tsr_kernel_sets[p->index].name, "f16_to_f32");
}

ParameterizedTestParameters(kernels, bf16_to_f32)
{
    return each_set();
}

ParameterizedTest(set_param *p, kernels, bf16_to_f32)
{
    const tsr_kernels *ks = set_or_skip(p);
    check_widen(ks->bf16_to_f32, ref_bf16_value, tsr_kernel_sets[p->index].name, "bf16_to_f32");
}

Test(kernels, every_set_is_tested)
{
    cr_assert(tsr_kernel_set_count <= MAX_SETS,
              "%zu kernel sets but this test walks only %d: raise MAX_SETS",
              tsr_kernel_set_count, MAX_SETS);
}
