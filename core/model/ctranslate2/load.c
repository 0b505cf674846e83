/* A CTranslate2 model.bin as a weight source (core/model/model.h): each
 * tensor tessera's model asks for by its own name is read from the
 * CTranslate2 variables behind it (tsr_ct2_tensor_parts), widened or
 * dequantized to float32 (w = q / scale, CTranslate2's definition), or, for
 * compute type int8, handed over as the file's int8 rows and scales. */
#include "core/model/ctranslate2/load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/compute_type.h"
#include "core/model/ctranslate2/spec.h"
#include "core/model/model.h"
#include "simd/dispatch.h"
#include "simd/int8.h"
#include "text/tokenizer.h"
#include "threads/threads.h"

/* CTranslate2's scale for int16 weights saved without one (its
 * Quantize::global_int16_scale). */
#define INT16_DEFAULT_SCALE 1000.0f

typedef struct ct2_source {
    tsr_ct2_model *m;
    const tsr_kernels *kernels;
} ct2_source;

/* One CTranslate2 variable behind a tessera tensor: rows [row0, row0 +
 * rows) of the tensor, `cols` values each. */
typedef struct part {
    tsr_ct2_variable *var;
    size_t row0, rows, cols;
} part;

static int is_bias(const char *ct2_name)
{
    size_t n = strlen(ct2_name);
    return n >= 5 && strcmp(ct2_name + n - 5, "/bias") == 0;
}

/* Finds the parts of tensor `name` and checks their shapes against tessera's
 * (shape, ndim; a position table [rows, 1, d] is CTranslate2's [rows, d],
 * with at least `rows` rows when rows_at_least). A bias CTranslate2 left out
 * (its linear layers' is optional) is a part without a variable: zeros.
 * Returns the number of parts, 0 when the tensor is absent (the caller says
 * whether it may be), or an error. */
static int find_parts(const ct2_source *s, const char *name, const size_t *shape, size_t ndim,
                      int rows_at_least, part out[2], char *err, size_t err_len)
{
    char names[2][320];
    size_t n = tsr_ct2_tensor_parts(s->m, name, names);
    if (n == 0)
        return 0;
    size_t want_rows = shape[0], cols = ndim >= 2 ? shape[ndim - 1] : 1;
    if (ndim > 2 && !(ndim == 3 && shape[1] == 1))
        return tsr_fail_internal(err, err_len, "tensor '%s': rank %zu", name, ndim);
    size_t rank = ndim == 1 ? 1 : 2, rows = 0, found = 0;
    for (size_t i = 0; i < n; i++) {
        tsr_ct2_variable *v = tsr_ct2_find(&s->m->file, names[i]);
        out[i] = (part){.var = v, .cols = cols};
        if (!v) {
            if (!is_bias(names[i]) && n > 1)
                return tsr_fail(err, err_len, "variable '%s': missing (beside '%s')", names[i],
                                names[i ? 0 : 1]);
            continue;
        }
        found++;
        size_t v_cols = v->rank == 2 ? v->shape[1] : 1;
        int fits = v->rank == rank && v_cols == cols &&
                   (rows_at_least ? v->shape[0] >= want_rows
                                  : n > 1 || v->shape[0] == want_rows);
        if (!fits) {
            char got[96], exp[96];
            size_t e[2] = {want_rows, cols};
            tsr_shape_describe(v->shape, v->rank, got, sizeof got);
            tsr_shape_describe(e, rank, exp, sizeof exp);
            return tsr_fail(err, err_len, "variable '%s': shape %s, expected %s%s", v->name, got,
                            exp,
                            n > 1           ? " (rows with its pair)"
                            : rows_at_least ? " or more rows"
                                            : "");
        }
        out[i].rows = rows_at_least ? want_rows : v->shape[0];
        rows += out[i].rows;
    }
    if (found == 0)
        return 0;
    /* A pair's missing bias takes the rows its partner leaves. */
    for (size_t i = 0; i < n; i++)
        if (!out[i].var) {
            if (rows > want_rows)
                break;
            out[i].rows = want_rows - rows;
            rows = want_rows;
        }
    for (size_t i = 1; i < n; i++)
        out[i].row0 = out[i - 1].row0 + out[i - 1].rows;
    if (rows != want_rows)
        return tsr_fail(err, err_len, "variables '%s' and '%s': %zu rows in all, expected %zu",
                        names[0], names[1], rows, want_rows);
    return (int)n;
}

/* The scale of a quantized variable: "<name>_scale", a scalar or one per
 * row, floats; int16 files may lack it (CTranslate2's 1000). */
static tsr_ct2_variable *scale_of(const ct2_source *s, const tsr_ct2_variable *v, int *missing,
                                  char *err, size_t err_len)
{
    char name[520];
    snprintf(name, sizeof name, "%s_scale", v->name);
    tsr_ct2_variable *sc = tsr_ct2_find(&s->m->file, name);
    *missing = 0;
    if (!sc) {
        if (v->dtype == TSR_CT2_I16) {
            *missing = 1;
            return NULL;
        }
        tsr_fail(err, err_len, "variable '%s': %s without its scale '%s'", v->name,
                 tsr_ct2_dtype_name(v->dtype), name);
        return NULL;
    }
    int is_float = sc->dtype == TSR_CT2_F32 || sc->dtype == TSR_CT2_F16 || sc->dtype == TSR_CT2_BF16;
    if (!is_float || !(sc->rank == 0 || (sc->rank == 1 && sc->shape[0] == v->shape[0]))) {
        tsr_fail(err, err_len, "variable '%s': expected a float scale, or one per row of '%s'",
                 name, v->name);
        return NULL;
    }
    return sc;
}

/* n floats of a float variable from value `first` on, through a small
 * buffer (scales, and the values of scalar-sized reads). */
static int read_floats(const ct2_source *s, const tsr_ct2_variable *v, size_t first, size_t n,
                       float *dst, char *err, size_t err_len)
{
    if (v->dtype == TSR_CT2_F32)
        return tsr_ct2_read(&s->m->file, v, first * 4, n * 4, dst, err, err_len);
    uint16_t buf[1024];
    for (size_t done = 0; done < n;) {
        size_t k = n - done < 1024 ? n - done : 1024;
        TSR_TRY(tsr_ct2_read(&s->m->file, v, (first + done) * 2, k * 2, buf, err, err_len));
        if (v->dtype == TSR_CT2_F16)
            s->kernels->f16_to_f32(buf, k, dst + done);
        else
            s->kernels->bf16_to_f32(buf, k, dst + done);
        done += k;
    }
    return 0;
}

/* Scales of rows [r0, r0 + rows) of a part (broadcast when the scale is a
 * scalar), each finite and > 0. */
static int read_scales(const ct2_source *s, const part *p, size_t r0, size_t rows,
                       float *scales, char *err, size_t err_len)
{
    int missing;
    tsr_ct2_variable *sc = scale_of(s, p->var, &missing, err, err_len);
    if (!sc && !missing)
        return TESSERA_ERR_INPUT;
    if (missing || sc->rank == 0) {
        float one = INT16_DEFAULT_SCALE;
        if (!missing)
            TSR_TRY(read_floats(s, sc, 0, 1, &one, err, err_len));
        for (size_t r = 0; r < rows; r++)
            scales[r] = one;
    } else {
        TSR_TRY(read_floats(s, sc, r0, rows, scales, err, err_len));
    }
    for (size_t r = 0; r < rows; r++)
        if (!(scales[r] > 0) || scales[r] > 3.4e38f)
            return tsr_fail(err, err_len, "variable '%s_scale': scale %zu is %g, expected finite "
                                          "and > 0",
                            p->var->name, r0 + r, (double)scales[r]);
    return 0;
}

/* Rows [r0, r0 + rows) of a part's values as float32 into dst, through
 * scratch. */
static int read_part(const ct2_source *s, const part *p, size_t r0, size_t rows, float *dst,
                     unsigned char *scratch, char *err, size_t err_len)
{
    const tsr_ct2_variable *v = p->var;
    if (!v) {
        memset(dst, 0, rows * p->cols * sizeof *dst);
        return 0;
    }
    size_t count = rows * p->cols, first = r0 * p->cols;
    size_t item = tsr_ct2_item_size(v->dtype);
    switch (v->dtype) {
    case TSR_CT2_F32:
        return tsr_ct2_read(&s->m->file, v, first * 4, count * 4, dst, err, err_len);
    case TSR_CT2_F16:
    case TSR_CT2_BF16:
        TSR_TRY(tsr_ct2_read(&s->m->file, v, first * 2, count * 2, scratch, err, err_len));
        if (v->dtype == TSR_CT2_F16)
            s->kernels->f16_to_f32(scratch, count, dst);
        else
            s->kernels->bf16_to_f32(scratch, count, dst);
        return 0;
    case TSR_CT2_I8:
    case TSR_CT2_I16: {
        float *scales = (float *)(scratch + (count * item + 63) / 64 * 64);
        TSR_TRY(read_scales(s, p, r0, rows, scales, err, err_len));
        TSR_TRY(tsr_ct2_read(&s->m->file, v, first * item, count * item, scratch, err, err_len));
        for (size_t r = 0; r < rows; r++)
            for (size_t c = 0; c < p->cols; c++) {
                size_t i = r * p->cols + c;
                float q = v->dtype == TSR_CT2_I8 ? (float)((const int8_t *)scratch)[i]
                                                 : (float)((const int16_t *)scratch)[i];
                dst[i] = q / scales[r];
            }
        return 0;
    }
    case TSR_CT2_I32:
        break;
    }
    return tsr_fail(err, err_len, "variable '%s': dtype int32, expected a float or quantized type",
                    v->name);
}

/* The rows [*a, *b) of the stacked tensor that part p holds among rows
 * [row0, row0 + rows); 0 when it holds none of them. */
static int rows_within(const part *p, size_t row0, size_t rows, size_t *a, size_t *b)
{
    *a = row0 > p->row0 ? row0 : p->row0;
    *b = row0 + rows < p->row0 + p->rows ? row0 + rows : p->row0 + p->rows;
    return *a < *b;
}

/* Rows [row0, row0 + rows) of the parts (rows stacked), into dst. */
static int read_rows(const ct2_source *s, const part *parts, int n, size_t row0, size_t rows,
                     float *dst, unsigned char *scratch, char *err, size_t err_len)
{
    for (int i = 0; i < n; i++) {
        const part *p = &parts[i];
        size_t a, b;
        if (rows_within(p, row0, rows, &a, &b))
            TSR_TRY(read_part(s, p, a - p->row0, b - a, dst + (a - row0) * p->cols, scratch, err,
                              err_len));
    }
    return 0;
}

static void mark_used(const ct2_source *s, tsr_ct2_variable *v)
{
    v->used = 1;
    char name[520];
    snprintf(name, sizeof name, "%s_scale", v->name);
    tsr_ct2_variable *sc = tsr_ct2_find(&s->m->file, name);
    if (sc)
        sc->used = 1;
}

static int fetch(void *ctx, const char *name, const size_t *shape, size_t ndim, int optional,
                 int rows_at_least, float *dst, void *scratch, char *err, size_t err_len)
{
    const ct2_source *s = ctx;
    part parts[2];
    int n = find_parts(s, name, shape, ndim, rows_at_least, parts, err, err_len);
    if (n < 0)
        return n;
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++)
        count *= shape[i];
    if (n == 0) {
        char names[2][320];
        size_t k = tsr_ct2_tensor_parts(s->m, name, names);
        if (optional)
            return 1;
        /* A linear layer without a bias (CTranslate2's is optional) adds 0. */
        if (k > 0 && is_bias(names[0])) {
            if (dst)
                memset(dst, 0, count * sizeof *dst);
            return 0;
        }
        return tsr_fail(err, err_len, "variable '%s': missing", k > 0 ? names[0] : name);
    }
    for (int i = 0; i < n; i++) {
        if (!parts[i].var)
            continue;
        if (parts[i].var->dtype == TSR_CT2_I32)
            return tsr_fail(err, err_len, "variable '%s': dtype int32, expected a float or "
                                          "quantized type",
                            parts[i].var->name);
        if (!dst) {
            /* The checking pass, which runs alone: what the model reads. */
            int missing;
            if ((parts[i].var->dtype == TSR_CT2_I8 || parts[i].var->dtype == TSR_CT2_I16) &&
                !scale_of(s, parts[i].var, &missing, err, err_len) && !missing)
                return TESSERA_ERR_INPUT;
            mark_used(s, parts[i].var);
        }
    }
    if (!dst)
        return 0;
    TSR_TRY(read_rows(s, parts, n, 0, shape[0], dst, scratch, err, err_len));
    return tsr_weights_check_finite(parts[0].var ? parts[0].var->name : parts[1].var->name, dst,
                                    count, 0, err, err_len);
}

/* Rows [row0, row0 + rows) of a linear weight the checking pass vouched for. */
static int fetch_rows(void *ctx, const char *name, size_t total_rows, size_t cols, size_t row0,
                      size_t rows, float *dst, void *scratch, char *err, size_t err_len)
{
    const ct2_source *s = ctx;
    part parts[2];
    size_t shape[2] = {total_rows, cols};
    int n = find_parts(s, name, shape, 2, 0, parts, err, err_len);
    if (n <= 0)
        return n < 0 ? n : tsr_fail_internal(err, err_len, "tensor '%s': no variable", name);
    TSR_TRY(read_rows(s, parts, n, row0, rows, dst, scratch, err, err_len));
    /* The value's place in the whole tensor, as a whole fetch names it. */
    return tsr_weights_check_finite(parts[0].var ? parts[0].var->name : parts[1].var->name, dst,
                                    rows * cols, row0 * cols, err, err_len);
}

/* The file's int8 rows and scales as they are (w = q / scale there, q x
 * (1 / scale) here), for compute type int8; 1 when a part is not int8 with
 * a scale per row, or the rows hold -128 (the caller then quantizes
 * floats). */
static int fetch_i8(void *ctx, const char *name, size_t total_rows, size_t cols, size_t row0,
                    size_t rows, int8_t *q, float *scales, char *err, size_t err_len)
{
    const ct2_source *s = ctx;
    part parts[2];
    size_t shape[2] = {total_rows, cols};
    char quiet[8];
    int n = find_parts(s, name, shape, 2, 0, parts, quiet, sizeof quiet);
    if (n <= 0)
        return 1;
    for (int i = 0; i < n; i++)
        if (!parts[i].var || parts[i].var->dtype != TSR_CT2_I8)
            return 1;
    for (int i = 0; i < n; i++) {
        const part *p = &parts[i];
        size_t a, b;
        if (!rows_within(p, row0, rows, &a, &b))
            continue;
        int8_t *rows_q = q + (a - row0) * cols;
        TSR_TRY(tsr_ct2_read(&s->m->file, p->var, (a - p->row0) * cols, (b - a) * cols, rows_q,
                             err, err_len));
        if (tsr_i8_holds_min(rows_q, (b - a) * cols))
            return 1;
        float *rows_scales = scales + (a - row0);
        TSR_TRY(read_scales(s, p, a - p->row0, b - a, rows_scales, err, err_len));
        for (size_t r = 0; r < b - a; r++)
            rows_scales[r] = 1.0f / rows_scales[r];
    }
    return 0;
}

/* The default compute type, unless the caller or TESSERA_COMPUTE_TYPE chose. */
static int resolve_type(const tessera_load_options *options, tessera_compute_type stored,
                        tessera_compute_type *type, char *err, size_t err_len)
{
    tessera_load_options o;
    tessera_load_options_init(&o);
    if (options)
        o = *options;
    const char *env = getenv("TESSERA_COMPUTE_TYPE");
    if (o.compute_type == TESSERA_COMPUTE_DEFAULT && !(env && *env))
        o.compute_type = stored;
    return tsr_compute_type_resolve(&o, type, err, err_len);
}

static int load(const tessera_load_options *options, tsr_ct2_model *cm,
                tessera_model **model, char *err, size_t err_len)
{
    tessera_compute_type type;
    TSR_TRY(resolve_type(options, cm->stored_type, &type, err, err_len));
    const tsr_kernels *kernels = tsr_kernels_select(err, err_len);
    if (!kernels)
        return TESSERA_ERR_INPUT;
    int threads;
    TSR_TRY(tsr_threads_resolve(options ? options->threads : 0, &threads, err, err_len));
    if (threads == 0)
        threads = tsr_threads_allowed_cpus();
    ct2_source s = {.m = cm, .kernels = kernels};
    tsr_weight_source src = {.fetch = fetch, .fetch_rows = fetch_rows, .fetch_i8 = fetch_i8,
                             .ctx = &s, .concurrent = 1};
    TSR_TRY(tsr_model_build(&cm->cfg, kernels, type, options ? options->numa : NULL, threads, &src,
                            model, err, err_len));
    int rc = tsr_ct2_check_all_used(cm, err, err_len);
    if (rc == 0) {
        rc = tsr_model_text_adopt(cm->vocab, &cm->cfg, &(*model)->text, err, err_len);
        cm->vocab[0] = cm->vocab[1] = NULL; /* the model's now, or freed */
    }
    if (rc != 0) {
        tessera_model_free(*model);
        *model = NULL;
    }
    return rc;
}

int tsr_ct2_model_load(const char *dir, const tessera_load_options *options,
                       tessera_model **model, char *err, size_t err_len)
{
    tsr_ct2_model *cm = tsr_calloc(1, sizeof *cm);
    if (!cm)
        return tsr_fail_oom(err, err_len, "%s: out of memory", dir);
    int rc = tsr_ct2_model_open(dir, cm, err, err_len);
    if (rc == 0) {
        rc = load(options, cm, model, err, err_len);
        tsr_ct2_model_close(cm);
    }
    tsr_free(cm);
    return rc != 0 ? tsr_fail_prefix(rc, err, err_len, dir) : 0;
}
