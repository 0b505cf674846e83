/* Reading a safetensors file. The JSON header is checked completely (dtype,
 * shape, offsets, sizes, overlaps) before any tensor is handed out, so that
 * later code can trust every tsr_tensor_info it gets: its data lies inside
 * the file as it was opened and holds exactly count elements of its dtype.
 * The file is read whole into memory, or (for the model load) only its
 * header, each tensor then read where the caller wants it. */
#include "core/model/safetensors.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"

/* The file opens with the header length as a little-endian u64. */
#define HEADER_LEN_BYTES 8
#define METADATA_KEY "__metadata__"

typedef struct dtype_desc {
    const char *name;
    size_t size;
    tsr_dtype dtype;
} dtype_desc;

/* Every dtype the safetensors format defines; tessera reads only the first
 * three, but the others are valid files and are rejected later, by name, only
 * if a tensor the model needs uses them. */
static const dtype_desc known_dtypes[] = {
    {"F32", 4, TSR_DTYPE_F32},        {"F16", 2, TSR_DTYPE_F16},
    {"BF16", 2, TSR_DTYPE_BF16},      {"F64", 8, TSR_DTYPE_OTHER},
    {"I64", 8, TSR_DTYPE_OTHER},      {"I32", 4, TSR_DTYPE_OTHER},
    {"I16", 2, TSR_DTYPE_OTHER},      {"I8", 1, TSR_DTYPE_I8},
    {"U8", 1, TSR_DTYPE_OTHER},       {"U16", 2, TSR_DTYPE_OTHER},
    {"U32", 4, TSR_DTYPE_OTHER},      {"U64", 8, TSR_DTYPE_OTHER},
    {"BOOL", 1, TSR_DTYPE_OTHER},     {"F8_E5M2", 1, TSR_DTYPE_OTHER},
    {"F8_E4M3", 1, TSR_DTYPE_OTHER},
};

/* Where a tensor's bytes lie in the data section, kept until the overlap check. */
typedef struct byte_span {
    uint64_t begin, end;
    size_t tensor;
} byte_span;

static const dtype_desc *find_dtype(const char *name)
{
    for (size_t i = 0; i < sizeof known_dtypes / sizeof known_dtypes[0]; i++)
        if (strcmp(known_dtypes[i].name, name) == 0)
            return &known_dtypes[i];
    return NULL;
}

static uint64_t read_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = HEADER_LEN_BYTES - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static int checked_mul(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

static void format_shape(const tsr_tensor_info *t, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (size_t i = 0; i < t->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? ", " : "", t->shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* The file is read (tsr_pread_all, base/files.h), never mapped. */

/* Opens path as a regular file of a size a safetensors file can have. */
static int open_sized(const char *path, size_t *len, char *err, size_t err_len)
{
    off_t size;
    int fd = tsr_open_regular(path, &size, err, err_len);
    if (fd < 0)
        return -1;
    const char *problem = NULL;
    if (size == 0)
        problem = "empty file (no header length)";
    else if (size < HEADER_LEN_BYTES)
        problem = "file too short for the 8-byte header length";
    else if ((uintmax_t)size > SIZE_MAX / 2)
        problem = "file too large to read";
    if (problem) {
        close(fd);
        if (size > 0 && size < HEADER_LEN_BYTES)
            return tsr_fail(err, err_len, "%s (%jd bytes)", problem, (intmax_t)size);
        return tsr_fail(err, err_len, "%s", problem);
    }
    *len = (size_t)size;
    return fd;
}

static int check_metadata(const json_t *meta, char *err, size_t err_len)
{
    if (!json_is_object(meta))
        return tsr_fail(err, err_len, "'" METADATA_KEY "' is %s, expected an object",
                        tsr_json_kind(meta));
    const char *key;
    const json_t *value;
    json_object_foreach ((json_t *)meta, key, value) {
        if (!json_is_string(value)) {
            char quoted[TSR_QUOTE_LEN];
            return tsr_fail(err, err_len,
                            "'" METADATA_KEY "': value of '%s' is %s, expected a string",
                            tsr_quote(quoted, sizeof quoted, key, '\''), tsr_json_kind(value));
        }
    }
    return 0;
}

/* A non-negative JSON integer that fits size_t, or -1. */
static int json_size(const json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return -1;
    uint64_t u = (uint64_t)json_integer_value(v);
    if (u > SIZE_MAX)
        return -1;
    *out = u;
    return 0;
}

static int parse_dtype(const char *name, const json_t *entry, const dtype_desc **out, char *err,
                       size_t err_len)
{
    const json_t *dtype = json_object_get(entry, "dtype");
    if (!dtype)
        return tsr_fail(err, err_len, "tensor '%s': missing \"dtype\"", name);
    if (!json_is_string(dtype))
        return tsr_fail(err, err_len, "tensor '%s': \"dtype\" is %s, expected a string", name,
                        tsr_json_kind(dtype));
    *out = find_dtype(json_string_value(dtype));
    if (!*out) {
        char quoted[TSR_QUOTE_LEN];
        return tsr_fail(err, err_len, "tensor '%s': unknown dtype '%s'", name,
                        tsr_quote(quoted, sizeof quoted, json_string_value(dtype), '\''));
    }
    return 0;
}

static int parse_shape(const char *name, const json_t *entry, tsr_tensor_info *t, char *err,
                       size_t err_len)
{
    const json_t *shape = json_object_get(entry, "shape");
    if (!shape)
        return tsr_fail(err, err_len, "tensor '%s': missing \"shape\"", name);
    if (!json_is_array(shape))
        return tsr_fail(err, err_len, "tensor '%s': \"shape\" is %s, expected an array", name,
                        tsr_json_kind(shape));
    size_t ndim = json_array_size(shape);
    if (ndim > TSR_MAX_DIMS)
        return tsr_fail(err, err_len, "tensor '%s': shape has %zu dimensions (at most %d)", name,
                        ndim, TSR_MAX_DIMS);
    t->ndim = ndim;
    t->count = 1;
    for (size_t i = 0; i < ndim; i++) {
        const json_t *dim = json_array_get(shape, i);
        uint64_t d;
        if (json_is_integer(dim) && json_integer_value(dim) < 0)
            return tsr_fail(err, err_len, "tensor '%s': shape[%zu] is %" JSON_INTEGER_FORMAT
                            ", expected a non-negative integer", name, i, json_integer_value(dim));
        if (json_size(dim, &d) != 0)
            return tsr_fail(err, err_len, "tensor '%s': shape[%zu] is %s, expected a non-negative integer",
                            name, i, tsr_json_kind(dim));
        t->shape[i] = (size_t)d;
        if (checked_mul(t->count, t->shape[i], &t->count) != 0)
            return tsr_fail(err, err_len, "tensor '%s': the product of the shape overflows", name);
    }
    return 0;
}

static int parse_offsets(const char *name, const json_t *entry, byte_span *span, char *err,
                         size_t err_len)
{
    const json_t *offsets = json_object_get(entry, "data_offsets");
    if (!offsets)
        return tsr_fail(err, err_len, "tensor '%s': missing \"data_offsets\"", name);
    if (!json_is_array(offsets) || json_array_size(offsets) != 2 ||
        json_size(json_array_get(offsets, 0), &span->begin) != 0 ||
        json_size(json_array_get(offsets, 1), &span->end) != 0)
        return tsr_fail(err, err_len,
                        "tensor '%s': \"data_offsets\" must be an array of two non-negative integers",
                        name);
    if (span->begin > span->end)
        return tsr_fail(err, err_len,
                        "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] begin after end", name,
                        span->begin, span->end);
    return 0;
}

/* One header entry: dtype, shape and offsets consistent with each other and
 * with the data section, data_len bytes. `name` is the tensor's name as
 * messages show it (tsr_quote), here and in the parse_ functions above. */
static int parse_entry(const char *name, const json_t *entry, size_t data_len,
                       tsr_tensor_info *t, byte_span *span, char *err, size_t err_len)
{
    if (!json_is_object(entry))
        return tsr_fail(err, err_len, "tensor '%s': entry is %s, expected an object", name,
                        tsr_json_kind(entry));
    const dtype_desc *dtype = NULL;
    if (parse_dtype(name, entry, &dtype, err, err_len) != 0 ||
        parse_shape(name, entry, t, err, err_len) != 0 ||
        parse_offsets(name, entry, span, err, err_len) != 0)
        return -1;
    t->dtype = dtype->dtype;
    t->dtype_name = dtype->name;
    if (span->end > data_len)
        return tsr_fail(err, err_len,
                        "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                        "] outside the data section (%zu bytes)",
                        name, span->begin, span->end, data_len);
    char shape_text[TSR_MAX_DIMS * 24 + 4];
    format_shape(t, shape_text, sizeof shape_text);
    if (checked_mul(t->count, dtype->size, &t->bytes) != 0)
        return tsr_fail(err, err_len, "tensor '%s': shape %s of %s is too large", name, shape_text,
                        dtype->name);
    if (span->end - span->begin != t->bytes)
        return tsr_fail(err, err_len,
                        "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] hold %" PRIu64
                        " bytes but shape %s of %s needs %zu",
                        name, span->begin, span->end, span->end - span->begin, shape_text,
                        dtype->name, t->bytes);
    t->offset = (size_t)span->begin;
    return 0;
}

static int compare_spans(const void *a, const void *b)
{
    const byte_span *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return 0;
}

/* Sorted by begin, a span overlaps an earlier one exactly when it starts
 * before the furthest end seen so far. Empty tensors occupy no bytes. */
static int check_overlaps(byte_span *spans, size_t n, const tsr_tensor_info *tensors, char *err,
                          size_t err_len)
{
    qsort(spans, n, sizeof *spans, compare_spans);
    const byte_span *furthest = NULL;
    for (size_t i = 0; i < n; i++) {
        const byte_span *s = &spans[i];
        if (s->begin == s->end)
            continue;
        if (furthest && s->begin < furthest->end) {
            char quoted[TSR_QUOTE_LEN], quoted_furthest[TSR_QUOTE_LEN];
            return tsr_fail(err, err_len,
                            "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                            "] overlap tensor '%s' [%" PRIu64 ", %" PRIu64 "]",
                            tsr_quote(quoted, sizeof quoted, tensors[s->tensor].name, '\''),
                            s->begin, s->end,
                            tsr_quote(quoted_furthest, sizeof quoted_furthest,
                                      tensors[furthest->tensor].name, '\''),
                            furthest->begin, furthest->end);
        }
        if (!furthest || s->end > furthest->end)
            furthest = s;
    }
    return 0;
}

static int compare_tensor_names(const void *a, const void *b)
{
    const tsr_tensor_info *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static int parse_header(tsr_safetensors *st, const json_t *root,
                        size_t data_len, char *err, size_t err_len)
{
    size_t n = json_object_size(root);
    /* One spare slot so that an empty header still gets a real allocation. */
    st->tensors = tsr_calloc(n + 1, sizeof *st->tensors);
    byte_span *spans = tsr_calloc(n + 1, sizeof *spans);
    if (!st->tensors || !spans) {
        tsr_free(spans);
        return tsr_fail_oom(err, err_len, "out of memory reading the header (%zu entries)", n);
    }
    const char *key;
    const json_t *value;
    int rc = 0;
    json_object_foreach ((json_t *)root, key, value) {
        if (strcmp(key, METADATA_KEY) == 0) {
            rc = check_metadata(value, err, err_len);
        } else {
            tsr_tensor_info *t = &st->tensors[st->n_tensors];
            byte_span *span = &spans[st->n_tensors];
            span->tensor = st->n_tensors++;
            t->name = tsr_strdup(key);
            char quoted[TSR_QUOTE_LEN];
            rc = t->name ? parse_entry(tsr_quote(quoted, sizeof quoted, key, '\''), value,
                                       data_len, t, span, err, err_len)
                         : tsr_fail_oom(err, err_len, "out of memory");
        }
        if (rc != 0)
            break;
    }
    if (rc == 0)
        rc = check_overlaps(spans, st->n_tensors, st->tensors, err, err_len);
    tsr_free(spans);
    if (rc == 0)
        qsort(st->tensors, st->n_tensors, sizeof *st->tensors, compare_tensor_names);
    return rc;
}

/* The header length that opens a file of `len` bytes, checked. */
static int check_header_len(uint64_t header_len, size_t len, char *err, size_t err_len)
{
    size_t after = len - HEADER_LEN_BYTES;
    if (header_len < 2)
        return tsr_fail(err, err_len,
                        "header length %" PRIu64 " is too small for a JSON object", header_len);
    if (header_len > after)
        return tsr_fail(err, err_len,
                        "header length %" PRIu64 " exceeds the %zu bytes that follow it",
                        header_len, after);
    return 0;
}

/* The JSON header (header_len bytes at `header`) of a file of st->len
 * bytes, into st's table. */
static int parse_json_header(tsr_safetensors *st, const unsigned char *header,
                             uint64_t header_len, char *err, size_t err_len)
{
    size_t after = st->len - HEADER_LEN_BYTES;
    json_error_t jerr;
    /* Duplicate names would make "the tensor called X" ambiguous; any
     * top-level value is decoded so that the error can say what it was. */
    json_t *root = json_loadb((const char *)header, (size_t)header_len,
                              JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root && tsr_json_out_of_memory(&jerr))
        return tsr_fail_oom(err, err_len, "out of memory parsing the header (%" PRIu64 " bytes)",
                            header_len);
    if (!root) {
        /* jansson's text quotes the bytes near the error as they are. */
        char why[4 * sizeof jerr.text + 4];
        return tsr_fail(err, err_len, "header is not valid JSON: %s (line %d, column %d)",
                        tsr_quote(why, sizeof why, jerr.text, 0), jerr.line, jerr.column);
    }
    int rc;
    if (!json_is_object(root))
        rc = tsr_fail(err, err_len, "header is %s, expected a JSON object", tsr_json_kind(root));
    else
        rc = parse_header(st, root, after - (size_t)header_len, err, err_len);
    json_decref(root);
    return rc;
}

int tsr_safetensors_open_table(const char *path, tsr_safetensors *st, char *err, size_t err_len)
{
    memset(st, 0, sizeof *st);
    int fd = open_sized(path, &st->len, err, err_len);
    if (fd < 0)
        return -1;
    st->fd = fd;
    st->fd_open = 1;
    unsigned char len_bytes[HEADER_LEN_BYTES];
    int rc = tsr_pread_all(fd, st->len, 0, len_bytes, HEADER_LEN_BYTES, err, err_len);
    uint64_t header_len = rc == 0 ? read_le64(len_bytes) : 0;
    if (rc == 0)
        rc = check_header_len(header_len, st->len, err, err_len);
    unsigned char *header = NULL;
    if (rc == 0 && !(header = tsr_malloc((size_t)header_len)))
        rc = tsr_fail_oom(err, err_len, "out of memory reading the header (%" PRIu64 " bytes)",
                          header_len);
    if (rc == 0)
        rc = tsr_pread_all(fd, st->len, HEADER_LEN_BYTES, header, (size_t)header_len, err, err_len);
    if (rc == 0) {
        st->data_start = HEADER_LEN_BYTES + (size_t)header_len;
        rc = parse_json_header(st, header, header_len, err, err_len);
    }
    tsr_free(header);
    if (rc != 0)
        tsr_safetensors_close(st);
    return rc;
}

/* The table first, then the whole file: the same checks, the same table. */
int tsr_safetensors_open(const char *path, tsr_safetensors *st, char *err, size_t err_len)
{
    TSR_TRY(tsr_safetensors_open_table(path, st, err, err_len));
    unsigned char *bytes = tsr_alloc_pages(st->len);
    int rc = bytes ? tsr_pread_all(st->fd, st->len, 0, bytes, st->len, err, err_len)
                   : tsr_fail_oom(err, err_len, "out of memory reading it (%zu bytes)", st->len);
    if (rc != 0) {
        tsr_free_pages(bytes, st->len);
        tsr_safetensors_close(st);
        return rc;
    }
    close(st->fd);
    st->fd_open = 0;
    st->bytes = bytes;
    for (size_t i = 0; i < st->n_tensors; i++)
        st->tensors[i].data = bytes + st->data_start + st->tensors[i].offset;
    return 0;
}

int tsr_safetensors_read(const tsr_safetensors *st, const tsr_tensor_info *t, size_t first,
                         size_t bytes, void *dst, char *err, size_t err_len)
{
    if (st->bytes) {
        memcpy(dst, (const unsigned char *)t->data + first, bytes);
        return 0;
    }
    int rc = tsr_pread_all(st->fd, st->len, st->data_start + t->offset + first, dst, bytes, err,
                        err_len);
    if (rc == 0)
        return 0;
    char quoted[TSR_QUOTE_LEN], prefix[TSR_QUOTE_LEN + 16];
    snprintf(prefix, sizeof prefix, "tensor '%s'",
             tsr_quote(quoted, sizeof quoted, t->name, '\''));
    return tsr_fail_prefix(rc, err, err_len, prefix);
}

const tsr_tensor_info *tsr_safetensors_find(const tsr_safetensors *st, const char *name)
{
    if (!st->tensors)
        return NULL;
    tsr_tensor_info key = {.name = (char *)name};
    return bsearch(&key, st->tensors, st->n_tensors, sizeof *st->tensors, compare_tensor_names);
}

void tsr_safetensors_close(tsr_safetensors *st)
{
    for (size_t i = 0; i < st->n_tensors; i++)
        tsr_free(st->tensors[i].name);
    tsr_free(st->tensors);
    tsr_free_pages(st->bytes, st->len);
    if (st->fd_open)
        close(st->fd);
    memset(st, 0, sizeof *st);
}
