/* tessera_model_load: config.json + model.safetensors from a directory (a
 * CTranslate2 directory, with its model.bin, goes to core/model/ctranslate2/). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "core/model/compute_type.h"
#include "core/model/argos/package.h"
#include "core/model/config.h"
#include "core/model/ctranslate2/load.h"
#include "core/model/ctranslate2/spec.h"
#include "core/model/languages.h"
#include "core/model/model.h"
#include "core/model/safetensors.h"
#include "simd/dispatch.h"
#include "simd/int8.h"
#include "text/tokenizer.h"
#include "threads/threads.h"

typedef struct file_source {
    tsr_safetensors st;
    const tsr_kernels *kernels;
} file_source;

static int shape_matches(const tsr_tensor_info *t, const size_t *shape, size_t ndim,
                         int rows_at_least)
{
    if (t->ndim != ndim)
        return 0;
    for (size_t i = 0; i < ndim; i++) {
        if (i == 0 && rows_at_least ? t->shape[0] < shape[0] : t->shape[i] != shape[i])
            return 0;
    }
    return 1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The tensors docs/model-format.md lets be I8: a linear layer's weight, i.e. a 2-D
 * "<layer>.weight" or attention "in_proj_weight". The only other 2-D
 * ".weight" tensors tessera reads are the token embeddings. */
static int is_linear_weight(const char *name, size_t ndim)
{
    return ndim == 2 && (ends_with(name, "in_proj_weight") ||
                         (ends_with(name, ".weight") && !ends_with(name, "embedding.weight")));
}

/* The per-row scales of an I8 linear weight: the F32 [out] tensor
 * "<name>_scale". With `scales` NULL (the checking pass) its presence, dtype
 * and shape are checked; else rows [row0, row0 + rows) are read into scales
 * and must be finite and > 0. */
static int read_scales(const tsr_safetensors *st, const tsr_tensor_info *t, size_t row0,
                       size_t rows, float *scales, char *err, size_t err_len)
{
    char scale_name[512];
    snprintf(scale_name, sizeof scale_name, "%s_scale", t->name);
    const tsr_tensor_info *s = tsr_safetensors_find(st, scale_name);
    if (!s)
        return tsr_fail(err, err_len, "tensor '%s': I8 weight without its scale tensor '%s'",
                        t->name, scale_name);
    if (s->dtype != TSR_DTYPE_F32)
        return tsr_fail(err, err_len, "tensor '%s': dtype %s, expected F32 (the scales of '%s')",
                        scale_name, s->dtype_name, t->name);
    if (s->ndim != 1 || s->shape[0] != t->shape[0])
        return tsr_fail(err, err_len, "tensor '%s': shape must be [%zu], one scale per row of '%s'",
                        scale_name, t->shape[0], t->name);
    if (!scales)
        return 0;
    TSR_TRY(tsr_safetensors_read(st, s, row0 * sizeof *scales, rows * sizeof *scales, scales,
                                 err, err_len));
    for (size_t i = 0; i < rows; i++)
        if (!(scales[i] > 0.0f) || isinf(scales[i]))
            return tsr_fail(err, err_len,
                            "tensor '%s': scale %zu is %g, expected finite and > 0", scale_name,
                            row0 + i, (double)scales[i]);
    return 0;
}

/* Rows [row0, row0 + rows) of `cols` values of tensor t as float32 into
 * dst: F32 read as they are; F16 and BF16 through scratch, widened; I8 (a
 * linear weight) dequantized with its scales, w = q * scale rounded once
 * (what compute type f32 makes of an I8 file), q and the scales through
 * scratch. */
static int read_rows(const file_source *fs, const tsr_tensor_info *t, size_t row0, size_t rows,
                     size_t cols, float *dst, unsigned char *scratch, char *err, size_t err_len)
{
    size_t count = rows * cols, first = row0 * cols;
    switch (t->dtype) {
    case TSR_DTYPE_F32:
        return tsr_safetensors_read(&fs->st, t, first * sizeof(float), count * sizeof(float), dst,
                                    err, err_len);
    case TSR_DTYPE_F16:
    case TSR_DTYPE_BF16:
        TSR_TRY(tsr_safetensors_read(&fs->st, t, first * sizeof(uint16_t),
                                     count * sizeof(uint16_t), scratch, err, err_len));
        if (t->dtype == TSR_DTYPE_F16)
            fs->kernels->f16_to_f32(scratch, count, dst);
        else
            fs->kernels->bf16_to_f32(scratch, count, dst);
        return 0;
    default: { /* I8, which the caller checked */
        int8_t *q = (int8_t *)scratch;
        float *scales = (float *)(scratch + (count + 63) / 64 * 64);
        TSR_TRY(read_scales(&fs->st, t, row0, rows, scales, err, err_len));
        TSR_TRY(tsr_safetensors_read(&fs->st, t, first, count, q, err, err_len));
        for (size_t i = 0; i < rows; i++)
            for (size_t j = 0; j < cols; j++)
                dst[i * cols + j] = (float)q[i * cols + j] * scales[i];
        return 0;
    }
    }
}

/* An I8 linear weight as it is, for compute type int8: q and its scales,
 * never widened. Returns 1 when the tensor is missing, misshapen, not I8,
 * or holds a -128 (outside the symmetric range the int8 kernels take): the
 * caller then fetches it as floats, which names what is wrong with it or,
 * for a -128, dequantizes it to be quantized again. Returns 0 when read, a
 * negative status on a bad scale tensor or a failed read. */
static int fetch_i8_from_file(void *ctx, const char *name, size_t total_rows, size_t cols,
                              size_t row0, size_t rows, int8_t *q, float *scales, char *err,
                              size_t err_len)
{
    file_source *fs = ctx;
    const tsr_tensor_info *t = tsr_safetensors_find(&fs->st, name);
    size_t shape[2] = {total_rows, cols};
    if (!t || t->dtype != TSR_DTYPE_I8 || !shape_matches(t, shape, 2, 0) ||
        !is_linear_weight(name, 2))
        return 1;
    TSR_TRY(tsr_safetensors_read(&fs->st, t, row0 * cols, rows * cols, q, err, err_len));
    if (tsr_i8_holds_min(q, rows * cols))
        return 1;
    return read_scales(&fs->st, t, row0, rows, scales, err, err_len);
}

/* F32 values are read straight into dst; F16, BF16 and I8 ones pass
 * through scratch and are widened into dst. */
static int fetch_from_file(void *ctx, const char *name, const size_t *shape, size_t ndim,
                           int optional, int rows_at_least, float *dst, void *scratch, char *err,
                           size_t err_len)
{
    file_source *fs = ctx;
    const tsr_tensor_info *t = tsr_safetensors_find(&fs->st, name);
    if (!t)
        return optional ? 1 : tsr_fail(err, err_len, "tensor '%s': missing", name);
    if (!shape_matches(t, shape, ndim, rows_at_least)) {
        char want[128], got[128];
        tsr_shape_describe(shape, ndim, want, sizeof want);
        tsr_shape_describe(t->shape, t->ndim, got, sizeof got);
        return tsr_fail(err, err_len, "tensor '%s': shape %s, expected %s%s", name, got, want,
                        rows_at_least ? " (or more rows)" : "");
    }
    /* Row-major: the first shape[0] rows are a prefix of the data. */
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++)
        count *= shape[i];
    switch (t->dtype) {
    case TSR_DTYPE_F32:
    case TSR_DTYPE_F16:
    case TSR_DTYPE_BF16:
        break;
    case TSR_DTYPE_I8:
        if (!is_linear_weight(name, ndim))
            return tsr_fail(err, err_len,
                            "tensor '%s': dtype I8 is only for linear weights (with a '%s_scale' "
                            "tensor); expected F32, F16 or BF16",
                            name, name);
        if (!dst)
            return read_scales(&fs->st, t, 0, shape[0], NULL, err, err_len);
        break;
    default:
        return tsr_fail(err, err_len, "tensor '%s': dtype %s, expected F32, F16 or BF16%s", name,
                        t->dtype_name, is_linear_weight(name, ndim) ? " (or I8 with a scale)" : "");
    }
    if (!dst)
        return 0;
    size_t rows = shape[0] ? shape[0] : 1;
    TSR_TRY(read_rows(fs, t, 0, rows, count / rows, dst, scratch, err, err_len));
    return tsr_weights_check_finite(name, dst, count, 0, err, err_len);
}

/* Rows of a linear weight the checking pass vouched for. */
static int fetch_rows_from_file(void *ctx, const char *name, size_t total_rows, size_t cols,
                                size_t row0, size_t rows, float *dst, void *scratch, char *err,
                                size_t err_len)
{
    file_source *fs = ctx;
    const tsr_tensor_info *t = tsr_safetensors_find(&fs->st, name);
    size_t shape[2] = {total_rows, cols};
    if (!t || !shape_matches(t, shape, 2, 0))
        return tsr_fail_internal(err, err_len, "tensor '%s': not as checked", name);
    TSR_TRY(read_rows(fs, t, row0, rows, cols, dst, scratch, err, err_len));
    return tsr_weights_check_finite(name, dst, rows * cols, row0 * cols, err, err_len);
}

int tessera_model_load(const char *dir, tessera_model **model, char *err, size_t err_len)
{
    /* The status codes are newer than this function: any error is -1. */
    return tessera_model_load_with(dir, NULL, model, err, err_len) != 0 ? -1 : 0;
}

int tessera_model_load_with(const char *dir, const tessera_load_options *options,
                            tessera_model **model, char *err, size_t err_len)
{
    char path[4096];
    tessera_config cfg;
    tessera_compute_type type;
    if (!model || !dir)
        return tsr_fail(err, err_len, "model load: %s is NULL",
                        !model ? "the result pointer" : "the model directory");
    *model = NULL;
    if (tsr_argos_is_package(dir))
        return tsr_argos_package_load(dir, options, model, err, err_len);
    if (tsr_ct2_is_model_dir(dir))
        return tsr_ct2_model_load(dir, options, model, err, err_len);
    TSR_TRY(tsr_compute_type_resolve(options, &type, err, err_len));
    const tsr_kernels *kernels = tsr_kernels_select(err, err_len);
    if (!kernels)
        return TESSERA_ERR_INPUT;

    snprintf(path, sizeof path, "%s/config.json", dir);
    TSR_TRY(tsr_config_load(path, &cfg, err, err_len));

    /* The weights are packed on the threads asked for (TESSERA_NUM_THREADS,
     * OMP_NUM_THREADS when not), else one per allowed CPU. */
    int threads;
    TSR_TRY(tsr_threads_resolve(options ? options->threads : 0, &threads, err, err_len));
    if (threads == 0)
        threads = tsr_threads_allowed_cpus();
    tsr_languages *languages;
    TSR_TRY(tsr_languages_load(path, &cfg, &languages, err, err_len));

    /* The tokenizers first: a missing one is found before the weights load. */
    tsr_model_text *text;
    int rc = tsr_model_text_load(dir, &cfg, &text, err, err_len);
    if (rc != 0) {
        tsr_languages_free(languages);
        return rc;
    }

    file_source fs = {.kernels = kernels};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    rc = tsr_safetensors_open_table(path, &fs.st, err, err_len);
    if (rc != 0) {
        tsr_model_text_free(text);
        tsr_languages_free(languages);
        return tsr_fail_prefix(rc, err, err_len, path);
    }

    tsr_weight_source src = {.fetch = fetch_from_file, .fetch_rows = fetch_rows_from_file,
                             .fetch_i8 = fetch_i8_from_file, .ctx = &fs, .concurrent = 1};
    rc = tsr_model_build(&cfg, kernels, type, options ? options->numa : NULL, threads, &src,
                         model, err, err_len);
    tsr_safetensors_close(&fs.st);
    if (rc != 0) {
        tsr_model_text_free(text);
        tsr_languages_free(languages);
        return tsr_fail_prefix(rc, err, err_len, path);
    }
    (*model)->text = text;
    (*model)->languages = languages;
    return 0;
}
