/* Reading a CTranslate2 model.bin's table (core/model/ctranslate2/file.h).
 * The table is interleaved with the values: each variable's header is read
 * through a small buffer, and its values are skipped, so that opening a
 * 1 GiB file reads a few kilobytes. Everything a later reader relies on is
 * checked here: a payload is exactly count x item size bytes and lies inside
 * the file, names are unique, aliases name a variable. */
#include "core/model/ctranslate2/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/memory.h"
#include "base/quote.h"

/* More variables than any model has (NLLB-3.3B has under 1,500); a count past
 * it is a corrupt file, not an allocation to attempt. */
#define MAX_VARIABLES (1u << 20)

typedef struct cursor {
    const tsr_ct2_file *f;
    size_t at; /* the next byte to read, in the file */
    unsigned char buf[4096];
    size_t buf_at, buf_len; /* buf holds bytes [buf_at, buf_at + buf_len) */
} cursor;

static int take(cursor *c, void *dst, size_t n, const char *what, char *err, size_t err_len)
{
    if (n > c->f->size || c->at > c->f->size - n)
        return tsr_fail(err, err_len, "the file ends inside %s (byte %zu of %zu; truncated?)",
                        what, c->at, c->f->size);
    if (c->at < c->buf_at || c->at + n > c->buf_at + c->buf_len) {
        size_t want = c->f->size - c->at < sizeof c->buf ? c->f->size - c->at : sizeof c->buf;
        if (n > want)
            return tsr_fail_internal(err, err_len, "%s of %zu bytes in a 4 KiB buffer", what, n);
        TSR_TRY(tsr_pread_all(c->f->fd, c->f->size, c->at, c->buf, want, err, err_len));
        c->buf_at = c->at;
        c->buf_len = want;
    }
    memcpy(dst, c->buf + (c->at - c->buf_at), n);
    c->at += n;
    return 0;
}

static int take_u32(cursor *c, uint32_t *v, const char *what, char *err, size_t err_len)
{
    unsigned char b[4];
    TSR_TRY(take(c, b, 4, what, err, err_len));
    *v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return 0;
}

/* A string: u16 length with its NUL, the bytes, the NUL; no NUL inside. */
static int take_string(cursor *c, char *out, size_t out_len, const char *what, char *err,
                       size_t err_len)
{
    unsigned char b[2];
    TSR_TRY(take(c, b, 2, what, err, err_len));
    size_t n = (size_t)b[0] | (size_t)b[1] << 8;
    if (n == 0)
        return tsr_fail(err, err_len, "%s at byte %zu has length 0 (its NUL is counted)", what,
                        c->at - 2);
    if (n > out_len)
        return tsr_fail(err, err_len, "%s at byte %zu is %zu bytes, more than %zu", what,
                        c->at - 2, n - 1, out_len - 1);
    TSR_TRY(take(c, out, n, what, err, err_len));
    if (out[n - 1] != '\0' || memchr(out, '\0', n - 1))
        return tsr_fail(err, err_len, "%s at byte %zu is not a NUL-terminated string", what,
                        c->at - n);
    return 0;
}

/* Names (variables, aliases, the spec) are CTranslate2's identifiers:
 * printable ASCII without quotes, so that every message may show them as
 * they are. */
static int check_name(const char *name, const char *what, size_t at, char *err, size_t err_len)
{
    for (const char *p = name; *p; p++)
        if (*p < 0x20 || *p > 0x7e || *p == '\'' || *p == '\\') {
            char quoted[TSR_QUOTE_LEN];
            return tsr_fail(err, err_len, "%s at byte %zu is not a printable ASCII name: '%s'",
                            what, at, tsr_quote(quoted, sizeof quoted, name, '\''));
        }
    return 0;
}

size_t tsr_ct2_item_size(tsr_ct2_dtype dtype)
{
    static const size_t sizes[] = {4, 1, 2, 4, 2, 2};
    return sizes[dtype];
}

const char *tsr_ct2_dtype_name(tsr_ct2_dtype dtype)
{
    static const char *const names[] = {"float32", "int8",    "int16",
                                        "int32",   "float16", "bfloat16"};
    return names[dtype];
}

/* Replaces the first `from` in name by `to` (name has room: 512 bytes). */
static void replace_first(char *name, const char *from, const char *to)
{
    char *at = strstr(name, from);
    if (!at)
        return;
    char rest[512];
    snprintf(rest, sizeof rest, "%s", at + strlen(from));
    snprintf(at, 512 - (size_t)(at - name), "%s%s", to, rest);
}

/* OpenNMT-tf's names in binary version 1, as CTranslate2 maps them (its
 * map_v1_variable_name): the same replacements, in the same order. */
static void rename_v1(char name[512])
{
    replace_first(name, "transformer/", "");
    replace_first(name, ":0", "");
    replace_first(name, "w_embs", "embeddings/weight");
    replace_first(name, "kernel", "weight");
    replace_first(name, "LayerNorm", "layer_norm");
    replace_first(name, "dense", "projection");
    replace_first(name, "conv1d_", "linear_");
    replace_first(name, "conv1d", "linear_0");
    if (strstr(name, "encoder")) {
        replace_first(name, "multi_head", "self_attention");
    } else {
        replace_first(name, "masked_multi_head", "self_attention");
        replace_first(name, "multi_head", "attention");
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const tsr_ct2_variable *)a)->name, ((const tsr_ct2_variable *)b)->name);
}

/* One variable's header; its values are skipped. */
static int take_variable(cursor *c, int rename, tsr_ct2_variable *v, char *err, size_t err_len)
{
    char name[512];
    size_t at = c->at;
    TSR_TRY(take_string(c, name, sizeof name, "a variable name", err, err_len));
    TSR_TRY(check_name(name, "a variable name", at, err, err_len));
    if (rename)
        rename_v1(name);
    unsigned char rank;
    TSR_TRY(take(c, &rank, 1, "a rank", err, err_len));
    if (rank > TSR_CT2_MAX_RANK)
        return tsr_fail(err, err_len, "variable '%s': rank %u, at most %d", name, rank,
                        TSR_CT2_MAX_RANK);
    v->rank = rank;
    v->count = 1;
    for (size_t i = 0; i < rank; i++) {
        uint32_t dim;
        TSR_TRY(take_u32(c, &dim, "a dimension", err, err_len));
        v->shape[i] = dim;
        if (dim != 0 && v->count > SIZE_MAX / dim)
            return tsr_fail(err, err_len, "variable '%s': its shape overflows", name);
        v->count *= dim;
    }
    unsigned char type;
    uint32_t n;
    TSR_TRY(take(c, &type, 1, "a dtype", err, err_len));
    TSR_TRY(take_u32(c, &n, "a payload size", err, err_len));
    size_t bytes = n;
    if (c->f->version >= 4) {
        if (type > TSR_CT2_BF16)
            return tsr_fail(err, err_len, "variable '%s': dtype id %u, not one of CTranslate2's",
                            name, type);
        v->dtype = (tsr_ct2_dtype)type;
    } else {
        /* Before dtype ids the item size stood for the type (CTranslate2's
         * own reading of those files). */
        if (type != 4 && type != 2 && type != 1)
            return tsr_fail(err, err_len, "variable '%s': item size %u, expected 4, 2 or 1", name,
                            type);
        v->dtype = type == 4 ? TSR_CT2_F32 : type == 2 ? TSR_CT2_I16 : TSR_CT2_I8;
        bytes = (size_t)n * type;
    }
    if (v->count > SIZE_MAX / tsr_ct2_item_size(v->dtype) ||
        bytes != v->count * tsr_ct2_item_size(v->dtype))
        return tsr_fail(err, err_len,
                        "variable '%s': %zu bytes of values, but its shape holds %zu %s values",
                        name, bytes, v->count, tsr_ct2_dtype_name(v->dtype));
    if (bytes > c->f->size - c->at)
        return tsr_fail(err, err_len,
                        "variable '%s': its %zu bytes of values pass the end of the file (%zu "
                        "bytes; truncated?)",
                        name, bytes, c->f->size);
    v->offset = c->at;
    v->bytes = bytes;
    c->at += bytes;
    v->name = tsr_strdup(name);
    return v->name ? 0 : tsr_fail_oom(err, err_len, "out of memory reading the table");
}

/* The variables after their aliases are added (sorted), or a duplicate. */
static int sort_and_check(tsr_ct2_file *f, char *err, size_t err_len)
{
    qsort(f->vars, f->n_vars, sizeof *f->vars, by_name);
    for (size_t i = 1; i < f->n_vars; i++)
        if (strcmp(f->vars[i - 1].name, f->vars[i].name) == 0)
            return tsr_fail(err, err_len, "variable '%s' is defined twice", f->vars[i].name);
    return 0;
}

/* Adds `alias` as a copy of `target`'s entry, unless target is absent or
 * alias is already a name (the first definition stays, as in CTranslate2). */
static int add_alias(tsr_ct2_file *f, size_t n_real, const char *alias, const char *target,
                     char *err, size_t err_len)
{
    tsr_ct2_variable key = {.name = (char *)target};
    tsr_ct2_variable *t = bsearch(&key, f->vars, n_real, sizeof *f->vars, by_name);
    if (!t)
        return 1;
    key.name = (char *)alias;
    if (bsearch(&key, f->vars, n_real, sizeof *f->vars, by_name))
        return 1;
    for (size_t i = n_real; i < f->n_vars; i++)
        if (strcmp(f->vars[i].name, alias) == 0)
            return 1;
    tsr_ct2_variable *a = &f->vars[f->n_vars];
    *a = *t;
    a->name = tsr_strdup(alias);
    if (!a->name)
        return tsr_fail_oom(err, err_len, "out of memory reading the aliases");
    f->n_vars++;
    return 0;
}

/* The aliases: each a copy of its target's entry, and its "_scale" the
 * target's. An alias of a variable the file lacks is ignored, as
 * CTranslate2 ignores it. */
static int take_aliases(cursor *c, tsr_ct2_file *f, char *err, size_t err_len)
{
    uint32_t n;
    TSR_TRY(take_u32(c, &n, "the alias count", err, err_len));
    if (n > MAX_VARIABLES)
        return tsr_fail(err, err_len, "%u aliases: not a model file", n);
    size_t n_real = f->n_vars;
    tsr_ct2_variable *grown = tsr_realloc(f->vars, (n_real + 2 * (size_t)n) * sizeof *grown);
    if (!grown)
        return tsr_fail_oom(err, err_len, "out of memory reading the aliases");
    f->vars = grown;
    for (uint32_t i = 0; i < n; i++) {
        char alias[512], target[512];
        size_t at = c->at;
        TSR_TRY(take_string(c, alias, sizeof alias - 8, "an alias", err, err_len));
        TSR_TRY(check_name(alias, "an alias", at, err, err_len));
        at = c->at;
        TSR_TRY(take_string(c, target, sizeof target - 8, "an alias's target", err, err_len));
        TSR_TRY(check_name(target, "an alias's target", at, err, err_len));
        int rc = add_alias(f, n_real, alias, target, err, err_len);
        if (rc < 0)
            return rc;
        strcat(alias, "_scale");
        strcat(target, "_scale");
        rc = add_alias(f, n_real, alias, target, err, err_len);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int is_transformer_spec(const char *spec)
{
    return !spec[0] || !strcmp(spec, "TransformerBase") || !strcmp(spec, "TransformerBig") ||
           !strcmp(spec, "TransformerSpec");
}

static int read_table(tsr_ct2_file *f, char *err, size_t err_len)
{
    cursor *c = tsr_calloc(1, sizeof *c);
    if (!c)
        return tsr_fail_oom(err, err_len, "out of memory reading the table");
    c->f = f;
    int rc = take_u32(c, &f->version, "the binary version", err, err_len);
    if (rc == 0 && (f->version < 1 || f->version > TSR_CT2_VERSION_MAX))
        rc = tsr_fail(err, err_len,
                      "binary version %u: tessera reads CTranslate2's versions 1 to %d%s",
                      f->version, TSR_CT2_VERSION_MAX,
                      f->version > TSR_CT2_VERSION_MAX ? " (a newer CTranslate2 wrote it)"
                                                       : " (not a model.bin?)");
    f->revision = 1;
    if (rc == 0 && f->version >= 2) {
        size_t at = c->at;
        rc = take_string(c, f->spec, sizeof f->spec, "the spec name", err, err_len);
        if (rc == 0)
            rc = check_name(f->spec, "the spec name", at, err, err_len);
        if (rc == 0)
            rc = take_u32(c, &f->revision, "the spec revision", err, err_len);
    }
    uint32_t n = 0;
    if (rc == 0)
        rc = take_u32(c, &n, "the variable count", err, err_len);
    if (rc == 0 && (n == 0 || n > MAX_VARIABLES))
        rc = tsr_fail(err, err_len, "%u variables: not a model file", n);
    if (rc == 0 && !(f->vars = tsr_calloc(n, sizeof *f->vars)))
        rc = tsr_fail_oom(err, err_len, "out of memory reading the table");
    int rename = f->revision == 1 && is_transformer_spec(f->spec);
    for (uint32_t i = 0; rc == 0 && i < n; i++) {
        rc = take_variable(c, rename, &f->vars[i], err, err_len);
        if (rc == 0)
            f->n_vars++;
    }
    if (rc == 0)
        rc = sort_and_check(f, err, err_len);
    if (rc == 0 && f->version >= 3)
        rc = take_aliases(c, f, err, err_len);
    if (rc == 0)
        rc = sort_and_check(f, err, err_len);
    tsr_free(c);
    return rc;
}

int tsr_ct2_open(const char *path, tsr_ct2_file *f, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    off_t size;
    f->fd = tsr_open_regular(path, &size, err, err_len);
    if (f->fd < 0)
        return TESSERA_ERR_INPUT;
    f->fd_open = 1;
    f->size = (size_t)size;
    int rc = read_table(f, err, err_len);
    if (rc != 0)
        tsr_ct2_close(f);
    return rc;
}

tsr_ct2_variable *tsr_ct2_find(const tsr_ct2_file *f, const char *name)
{
    tsr_ct2_variable key = {.name = (char *)name};
    return f->vars ? bsearch(&key, f->vars, f->n_vars, sizeof *f->vars, by_name) : NULL;
}

int tsr_ct2_read(const tsr_ct2_file *f, const tsr_ct2_variable *v, size_t first, size_t bytes,
                 void *dst, char *err, size_t err_len)
{
    if (first > v->bytes || bytes > v->bytes - first)
        return tsr_fail_internal(err, err_len, "variable '%s': bytes %zu..%zu of %zu", v->name,
                                 first, first + bytes, v->bytes);
    int rc = tsr_pread_all(f->fd, f->size, v->offset + first, dst, bytes, err, err_len);
    return rc != 0 ? tsr_fail_prefix(rc, err, err_len, v->name) : 0;
}

void tsr_ct2_close(tsr_ct2_file *f)
{
    for (size_t i = 0; i < f->n_vars; i++)
        tsr_free(f->vars[i].name);
    tsr_free(f->vars);
    if (f->fd_open)
        close(f->fd);
    memset(f, 0, sizeof *f);
}
