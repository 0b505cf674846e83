/* Writes model directories for the tests (see model_writer.h). The JSON is
 * produced by hand so that the tests need no JSON library of their own. */
#define _GNU_SOURCE
#include "tests/model_writer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

void mw_tiny_config(tessera_config *cfg)
{
    *cfg = (tessera_config){
        .d_model = 8,
        .n_heads = 2,
        .d_ff = 12,
        .n_encoder_layers = 1,
        .n_decoder_layers = 1,
        .src_vocab_size = 11,
        .tgt_vocab_size = 13,
        .max_positions = 16,
        .activation = TESSERA_RELU,
        .norm_first = 0,
        .layer_norm_eps = 1e-5f,
        .scale_embedding = 1,
        .bos_id = 2,
        .eos_id = 3,
        .pad_id = 1,
        .unk_id = 0,
    };
}

static int is_norm_weight(const char *name)
{
    const char *last = strrchr(name, '.');
    return last && strcmp(last, ".weight") == 0 && strstr(name, ".norm") != NULL;
}

/* Multiples of 1/128 with at most 8 significant bits, so that F16 and BF16
 * hold them exactly. Norm weights stay near 1 and the rest spans [-1, 1] so
 * that the tiny model's output depends on its input rather than on biases. */
static void fill_values(mw_tensor *t, unsigned seed)
{
    free(t->values);
    t->count = 1;
    for (size_t i = 0; i < t->ndim; i++)
        t->count *= t->shape[i];
    t->values = malloc((t->count ? t->count : 1) * sizeof(float));
    cr_assert_not_null(t->values);
    int norm = is_norm_weight(t->name);
    test_fill_uniform(t->values, t->count, seed, norm ? 0.5f : -1.0f, norm ? 1.5f : 1.0f);
    for (size_t i = 0; i < t->count; i++)
        t->values[i] = roundf(t->values[i] * 128.0f) / 128.0f;
}

mw_tensor *mw_add(mw_model *m, const char *name, size_t ndim, const size_t *shape)
{
    cr_assert_leq(ndim, MW_MAX_DIMS);
    if (m->n_tensors == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 64;
        m->tensors = realloc(m->tensors, m->cap * sizeof *m->tensors);
        cr_assert_not_null(m->tensors);
    }
    mw_tensor *t = &m->tensors[m->n_tensors++];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    strcpy(t->dtype, "F32");
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
    fill_values(t, m->seed * 7919u + (unsigned)m->n_tensors);
    return t;
}

/* Prefixes passed below are built in PREFIX_MAX bytes; the suffixes added
 * to them are shorter than 64. */
#define PREFIX_MAX 256
#define NAME_MAX_LEN (PREFIX_MAX + 64)

static void add_norm(mw_model *m, const char *prefix, size_t d)
{
    char name[NAME_MAX_LEN];
    snprintf(name, sizeof name, "%s.weight", prefix);
    mw_add(m, name, 1, (size_t[]){d});
    snprintf(name, sizeof name, "%s.bias", prefix);
    mw_add(m, name, 1, (size_t[]){d});
}

/* The required tensors of tessera_model_tensors, and the generator's bias. */
static int add_listed(const tessera_tensor_spec *t, void *arg)
{
    if (!t->optional || strcmp(t->name, "generator.bias") == 0)
        mw_add(arg, t->name, t->ndim, t->shape);
    return 0;
}

mw_model *mw_model_new(const tessera_config *cfg, unsigned seed)
{
    mw_model *m = calloc(1, sizeof *m);
    cr_assert_not_null(m);
    m->config = *cfg;
    m->seed = seed;
    char err[256];
    cr_assert_eq(tessera_model_tensors(cfg, add_listed, m, err, sizeof err), 0, "%s", err);
    return m;
}

mw_model *mw_model_tiny(unsigned seed)
{
    tessera_config cfg;
    mw_tiny_config(&cfg);
    return mw_model_new(&cfg, seed);
}

void mw_add_optional_tensors(mw_model *m)
{
    size_t d = (size_t)m->config.d_model;
    mw_add(m, "positional_encoding.pos_embedding", 3,
           (size_t[]){(size_t)m->config.max_positions, 1, d});
    add_norm(m, "transformer.encoder.norm", d);
    add_norm(m, "transformer.decoder.norm", d);
}

void mw_model_free(mw_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_tensors; i++) {
        free(m->tensors[i].name);
        free(m->tensors[i].values);
    }
    free(m->tensors);
    free(m->config_text);
    free(m->languages);
    free(m);
}

static size_t index_of(const mw_model *m, const char *name)
{
    for (size_t i = 0; i < m->n_tensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0)
            return i;
    cr_assert_fail("model_writer: no tensor '%s'", name);
    return 0;
}

mw_tensor *mw_find(mw_model *m, const char *name) { return &m->tensors[index_of(m, name)]; }

void mw_drop(mw_model *m, const char *name)
{
    size_t i = index_of(m, name);
    free(m->tensors[i].name);
    free(m->tensors[i].values);
    memmove(&m->tensors[i], &m->tensors[i + 1], (m->n_tensors - i - 1) * sizeof *m->tensors);
    m->n_tensors--;
}

void mw_set_shape(mw_model *m, const char *name, size_t ndim, const size_t *shape)
{
    cr_assert_leq(ndim, MW_MAX_DIMS);
    mw_tensor *t = mw_find(m, name);
    t->ndim = ndim;
    memcpy(t->shape, shape, ndim * sizeof *shape);
    fill_values(t, m->seed * 104729u + (unsigned)index_of(m, name));
}

void mw_set_dtype(mw_model *m, const char *name, const char *dtype)
{
    mw_tensor *t = mw_find(m, name);
    cr_assert_lt(strlen(dtype), sizeof t->dtype);
    strcpy(t->dtype, dtype);
}

int mw_is_linear_weight(const mw_tensor *t)
{
    size_t n = strlen(t->name);
    int weight = n > 7 && strcmp(t->name + n - 7, ".weight") == 0 && !strstr(t->name, "embedding");
    return t->ndim == 2 && (weight || strstr(t->name, "in_proj_weight"));
}

mw_tensor *mw_quantize_i8(mw_model *m, const char *name)
{
    char scale_name[256];
    size_t rows = mw_find(m, name)->shape[0];
    snprintf(scale_name, sizeof scale_name, "%s_scale", name);
    mw_set_dtype(m, name, "I8");
    mw_tensor *s = mw_add(m, scale_name, 1, (size_t[]){rows});
    for (size_t r = 0; r < rows; r++)
        s->values[r] = 0.01f * (float)(1 + r % 3);
    return s;
}

void mw_set_offsets(mw_model *m, const char *name, uint64_t begin, uint64_t end)
{
    mw_tensor *t = mw_find(m, name);
    t->fixed_offsets = 1;
    t->begin = begin;
    t->end = end;
}

void mw_set_config_text(mw_model *m, const char *text)
{
    free(m->config_text);
    m->config_text = strdup(text);
}

size_t mw_dtype_size(const char *dtype)
{
    static const struct {
        const char *name;
        size_t size;
    } sizes[] = {
        {"F64", 8},  {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},  {"I32", 4},
        {"I16", 2},  {"I8", 1},  {"U8", 1},  {"U16", 2},  {"U32", 4},  {"U64", 8},
        {"BOOL", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(sizes[i].name, dtype) == 0)
            return sizes[i].size;
    return 4;
}

static size_t tensor_bytes(const mw_tensor *t) { return t->count * mw_dtype_size(t->dtype); }

uint64_t mw_layout(mw_model *m)
{
    uint64_t offset = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        mw_tensor *t = &m->tensors[i];
        if (t->fixed_offsets)
            continue;
        if (t->overlaps_previous && offset > 0)
            offset--;
        t->begin = offset;
        offset += tensor_bytes(t);
        t->end = offset;
    }
    return offset;
}

void mw_overlap(mw_model *m, const char *first, const char *second)
{
    size_t a = index_of(m, first), b = index_of(m, second);
    cr_assert_neq(a, b, "a tensor cannot overlap itself");
    cr_assert_gt(tensor_bytes(&m->tensors[a]), 0, "an empty tensor cannot be overlapped");
    cr_assert_gt(tensor_bytes(&m->tensors[b]), 0, "an empty tensor cannot overlap");
    mw_tensor moved = m->tensors[b];
    memmove(&m->tensors[b], &m->tensors[b + 1], (m->n_tensors - b - 1) * sizeof moved);
    if (b < a)
        a--;
    memmove(&m->tensors[a + 2], &m->tensors[a + 1], (m->n_tensors - a - 2) * sizeof moved);
    moved.overlaps_previous = 1;
    m->tensors[a + 1] = moved;
}

/* IEEE half precision, round to nearest even. */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t exp8 = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp8 == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    int exp = (int)exp8 - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        int shift = 14 - exp;
        uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static void put_le(unsigned char *p, uint64_t v, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Encodes t's values into dst (tensor_bytes(t) bytes, little-endian). */
static void encode(const mw_tensor *t, unsigned char *dst)
{
    size_t size = mw_dtype_size(t->dtype);
    for (size_t i = 0; i < t->count; i++) {
        float v = t->values[i];
        unsigned char *p = dst + i * size;
        uint32_t bits;
        double dv = v;
        uint64_t dbits;
        if (strcmp(t->dtype, "F32") == 0) {
            memcpy(&bits, &v, sizeof bits);
            put_le(p, bits, 4);
        } else if (strcmp(t->dtype, "F16") == 0) {
            put_le(p, f32_to_f16(v), 2);
        } else if (strcmp(t->dtype, "BF16") == 0) {
            put_le(p, f32_to_bf16(v), 2);
        } else if (strcmp(t->dtype, "F64") == 0) {
            memcpy(&dbits, &dv, sizeof dbits);
            put_le(p, dbits, 8);
        } else if (t->dtype[0] == 'I' || t->dtype[0] == 'U' || strcmp(t->dtype, "BOOL") == 0) {
            put_le(p, (uint64_t)(int64_t)lroundf(v * 100.0f), size);
        } else {
            memset(p, 0, size);
        }
    }
}

static void append_text(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append_text(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        cr_assert_geq(n, 0);
        if ((size_t)n < *cap - *len) {
            *len += (size_t)n;
            return;
        }
        *cap = (*cap + (size_t)n) * 2;
        *buf = realloc(*buf, *cap);
        cr_assert_not_null(*buf);
    }
}

/* The JSON header, padded with spaces to a multiple of 8 bytes as the
 * reference writer does (so the data section starts aligned). */
static char *header_json(const mw_model *m)
{
    size_t len = 0, cap = 4096;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    buf[0] = '\0';
    append_text(&buf, &len, &cap, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < m->n_tensors; i++) {
        const mw_tensor *t = &m->tensors[i];
        append_text(&buf, &len, &cap, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, t->dtype);
        for (size_t k = 0; k < t->ndim; k++)
            append_text(&buf, &len, &cap, "%s%zu", k ? "," : "", t->shape[k]);
        append_text(&buf, &len, &cap, "],\"data_offsets\":[%llu,%llu]}",
                    (unsigned long long)t->begin, (unsigned long long)t->end);
    }
    append_text(&buf, &len, &cap, "}");
    while (len % 8 != 0)
        append_text(&buf, &len, &cap, " ");
    return buf;
}

static void write_safetensors_bytes(const char *path, uint64_t declared_len, const char *header,
                                    const unsigned char *data, size_t data_bytes,
                                    size_t truncate_bytes)
{
    size_t header_len = strlen(header);
    size_t total = 8 + header_len + data_bytes;
    unsigned char *file = calloc(total, 1);
    cr_assert_not_null(file);
    put_le(file, declared_len, 8);
    memcpy(file + 8, header, header_len);
    if (data)
        memcpy(file + 8 + header_len, data, data_bytes);
    test_write_file(path, file, truncate_bytes < total ? total - truncate_bytes : 0);
    free(file);
}

void mw_write_safetensors(mw_model *m, const char *path)
{
    uint64_t data_len = mw_layout(m);
    unsigned char *data = calloc(data_len ? data_len : 1, 1);
    cr_assert_not_null(data);
    for (size_t i = 0; i < m->n_tensors; i++) {
        const mw_tensor *t = &m->tensors[i];
        size_t bytes = tensor_bytes(t);
        if (t->begin + bytes > data_len || t->begin > data_len)
            continue;
        unsigned char *encoded = malloc(bytes ? bytes : 1);
        cr_assert_not_null(encoded);
        encode(t, encoded);
        memcpy(data + t->begin, encoded, bytes);
        free(encoded);
    }
    char *header = header_json(m);
    write_safetensors_bytes(path, strlen(header), header, data, data_len, m->truncate_bytes);
    free(header);
    free(data);
}

static const char *activation_name(tessera_activation a)
{
    switch (a) {
    case TESSERA_GELU: return "gelu";
    case TESSERA_SILU: return "silu";
    case TESSERA_GELU_TANH: return "gelu_tanh";
    case TESSERA_GELU_SIGMOID: return "gelu_sigmoid";
    default: return "relu";
    }
}

static const char *layer_norm_form_name(tessera_layer_norm_form f)
{
    switch (f) {
    case TESSERA_LAYER_NORM_STD: return "std";
    case TESSERA_LAYER_NORM_STD_UNBIASED: return "std_unbiased";
    default: return "variance";
    }
}

/* text + ", \"key\": value" before its closing brace. */
static char *append_key(char *text, const char *key, const char *value)
{
    char *end = strrchr(text, '}'), *out = NULL;
    cr_assert(end != NULL);
    *end = '\0';
    cr_assert_geq(asprintf(&out, "%s,  \"%s\": %s\n}\n", text, key, value), 0);
    free(text);
    return out;
}

static char *id_list(const int *ids, int n)
{
    char buf[256] = "[";
    for (int i = 0; i < n; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? ", " : "", ids[i]);
    strcat(buf, "]");
    return strdup(buf);
}

/* The keys of docs/model-format.md's model families, each only when it is not
 * its default (so the files of older tests stay as they were). */
static char *with_family_keys(char *text, const tessera_config *c)
{
    static const char *const positions[] = {"\"sinusoid\"", "\"sinusoid_halves\"",
                                            "\"sinusoid_halves_t2t\""};
    if (c->position_encoding != TESSERA_POSITIONS_SINUSOID)
        text = append_key(text, "position_encoding", positions[c->position_encoding]);
    if (c->tie_output_projection)
        text = append_key(text, "tie_output_projection", "true");
    if (c->share_embeddings)
        text = append_key(text, "share_embeddings", "true");
    if (c->decoder_start == TESSERA_START_ZEROS)
        text = append_key(text, "decoder_start", "\"zeros\"");
    if (c->n_source_suffix > 0) {
        char *ids = id_list(c->source_suffix, c->n_source_suffix);
        text = append_key(text, "source_suffix", ids);
        free(ids);
    }
    if (c->position_offset > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", c->position_offset);
        text = append_key(text, "position_offset", n);
    }
    if (c->min_target_length > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", c->min_target_length);
        text = append_key(text, "min_target_length", n);
    }
    if (c->has_source_unk_id) {
        char n[16];
        snprintf(n, sizeof n, "%d", c->source_unk_id);
        text = append_key(text, "source_unk_id", n);
    }
    if (c->n_banned_target_ids > 0) {
        char *ids = id_list(c->banned_target_ids, c->n_banned_target_ids);
        text = append_key(text, "banned_target_ids", ids);
        free(ids);
        text = append_key(text, "banned_target_ids_mode",
                          c->ban_logits ? "\"logits\"" : "\"log_probs\"");
    }
    static const char *const source_languages[] = {"\"none\"", "\"prefix\"", "\"suffix\""};
    static const char *const target_languages[] = {"\"none\"", "\"forced\"", "\"start\""};
    if (c->source_language != TESSERA_SOURCE_LANGUAGE_NONE)
        text = append_key(text, "source_language", source_languages[c->source_language]);
    if (c->target_language != TESSERA_TARGET_LANGUAGE_NONE)
        text = append_key(text, "target_language", target_languages[c->target_language]);
    return text;
}

char *mw_config_json(const tessera_config *c)
{
    char *text = NULL;
    int n = asprintf(&text,
                     "{\n"
                     "  \"d_model\": %d,\n"
                     "  \"n_heads\": %d,\n"
                     "  \"d_ff\": %d,\n"
                     "  \"n_encoder_layers\": %d,\n"
                     "  \"n_decoder_layers\": %d,\n"
                     "  \"src_vocab_size\": %d,\n"
                     "  \"tgt_vocab_size\": %d,\n"
                     "  \"max_positions\": %d,\n"
                     "  \"activation\": \"%s\",\n"
                     "  \"norm_first\": %s,\n"
                     "  \"layer_norm_eps\": %.9g,\n"
                     "  \"layer_norm_form\": \"%s\",\n"
                     "  \"scale_embedding\": %s,\n"
                     "  \"bos_id\": %d,\n"
                     "  \"eos_id\": %d,\n"
                     "  \"pad_id\": %d,\n"
                     "  \"unk_id\": %d\n"
                     "}\n",
                     c->d_model, c->n_heads, c->d_ff, c->n_encoder_layers, c->n_decoder_layers,
                     c->src_vocab_size, c->tgt_vocab_size, c->max_positions,
                     activation_name(c->activation), c->norm_first ? "true" : "false",
                     (double)c->layer_norm_eps, layer_norm_form_name(c->layer_norm_form),
                     c->scale_embedding ? "true" : "false", c->bos_id,
                     c->eos_id, c->pad_id, c->unk_id);
    cr_assert_geq(n, 0);
    return with_family_keys(text, c);
}

char *mw_path(const char *dir, const char *file)
{
    char *path = NULL;
    cr_assert_geq(asprintf(&path, "%s/%s", dir, file), 0);
    return path;
}

void mw_write(mw_model *m, const char *dir)
{
    char *config = m->config_text ? strdup(m->config_text) : mw_config_json(&m->config);
    if (!m->config_text && m->languages)
        config = append_key(config, "languages", m->languages);
    char *path = mw_path(dir, "config.json");
    test_write_file(path, config, strlen(config));
    free(path);
    free(config);
    path = mw_path(dir, "model.safetensors");
    mw_write_safetensors(m, path);
    free(path);
}

void mw_write_raw_safetensors(const char *path, uint64_t declared_len, const char *header,
                              size_t data_bytes)
{
    write_safetensors_bytes(path, declared_len, header, NULL, data_bytes, 0);
}

void mw_write_header_text(const char *path, const char *header, size_t data_bytes)
{
    mw_write_raw_safetensors(path, strlen(header), header, data_bytes);
}

static void write_vocab_file(const char *dir, const char *file, char prefix, int n)
{
    size_t len = 0, cap = 256;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    text[0] = '\0';
    for (int i = 0; i < n; i++)
        append_text(&text, &len, &cap, "%c%d\n", prefix, i);
    char *path = mw_path(dir, file);
    test_write_file(path, text, len);
    free(path);
    free(text);
}

void mw_write_vocab(const char *dir, const tessera_config *cfg)
{
    write_vocab_file(dir, "vocab.src.txt", 's', cfg->src_vocab_size);
    write_vocab_file(dir, "vocab.tgt.txt", 't', cfg->tgt_vocab_size);
}
