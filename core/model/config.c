/* config.json (docs/model-format.md section 1): strict types, defaults for the
 * optional keys, unknown keys ignored, and every error naming its key. */
#include "core/model/config.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"

/* Far beyond any real Transformer, small enough that products of two sizes
 * cannot overflow on 64-bit targets (the 32-bit case is checked below). */
#define MAX_SIZE (1 << 24)
/* A config.json is a few hundred bytes; this only stops reading a device. */
#define MAX_CONFIG_BYTES (16u << 20)

/* required: 1, always; 2, when the model has a decoder (n_decoder_layers >
 * 0: the target vocabulary); 0, optional. */
typedef struct int_key {
    const char *name;
    size_t offset;
    int required;
} int_key;

static const int_key int_keys[] = {
    {"d_model", offsetof(tessera_config, d_model), 1},
    {"n_heads", offsetof(tessera_config, n_heads), 1},
    {"d_ff", offsetof(tessera_config, d_ff), 1},
    {"n_encoder_layers", offsetof(tessera_config, n_encoder_layers), 1},
    {"n_decoder_layers", offsetof(tessera_config, n_decoder_layers), 1},
    {"src_vocab_size", offsetof(tessera_config, src_vocab_size), 1},
    {"tgt_vocab_size", offsetof(tessera_config, tgt_vocab_size), 2},
    {"max_positions", offsetof(tessera_config, max_positions), 0},
    {"bos_id", offsetof(tessera_config, bos_id), 0},
    {"eos_id", offsetof(tessera_config, eos_id), 0},
    {"pad_id", offsetof(tessera_config, pad_id), 0},
    {"unk_id", offsetof(tessera_config, unk_id), 0},
    {"position_offset", offsetof(tessera_config, position_offset), 0},
    {"alignment_heads", offsetof(tessera_config, alignment_heads), 0},
    {"min_target_length", offsetof(tessera_config, min_target_length), 0},
    {"source_unk_id", offsetof(tessera_config, source_unk_id), 0},
};

typedef struct bool_key {
    const char *name;
    size_t offset;
} bool_key;

static const bool_key bool_keys[] = {
    {"norm_first", offsetof(tessera_config, norm_first)},
    {"scale_embedding", offsetof(tessera_config, scale_embedding)},
    {"tie_output_projection", offsetof(tessera_config, tie_output_projection)},
    {"share_embeddings", offsetof(tessera_config, share_embeddings)},
};

/* A key whose value is one of a few names (activation, layer_norm_form). */
typedef struct named_value {
    const char *name;
    int value;
} named_value;

static const named_value activations[] = {
    {"relu", TESSERA_RELU},
    {"gelu", TESSERA_GELU},
    {"silu", TESSERA_SILU},
    {"gelu_tanh", TESSERA_GELU_TANH},
    {"gelu_sigmoid", TESSERA_GELU_SIGMOID},
};

static const named_value layer_norm_forms[] = {
    {"variance", TESSERA_LAYER_NORM_VARIANCE},
    {"std", TESSERA_LAYER_NORM_STD},
    {"std_unbiased", TESSERA_LAYER_NORM_STD_UNBIASED},
};

static const named_value position_encodings[] = {
    {"sinusoid", TESSERA_POSITIONS_SINUSOID},
    {"sinusoid_halves", TESSERA_POSITIONS_SINUSOID_HALVES},
    {"sinusoid_halves_t2t", TESSERA_POSITIONS_SINUSOID_HALVES_T2T},
};

static const named_value decoder_starts[] = {
    {"bos", TESSERA_START_BOS},
    {"zeros", TESSERA_START_ZEROS},
};

static const named_value source_languages[] = {
    {"none", TESSERA_SOURCE_LANGUAGE_NONE},
    {"prefix", TESSERA_SOURCE_LANGUAGE_PREFIX},
    {"suffix", TESSERA_SOURCE_LANGUAGE_SUFFIX},
};

static const named_value target_languages[] = {
    {"none", TESSERA_TARGET_LANGUAGE_NONE},
    {"forced", TESSERA_TARGET_LANGUAGE_FORCED},
    {"start", TESSERA_TARGET_LANGUAGE_START},
};

static const named_value ban_modes[] = {
    {"log_probs", 0},
    {"logits", 1},
};

void tessera_config_defaults(tessera_config *cfg)
{
    if (cfg)
        tsr_config_defaults(cfg);
}

void tsr_config_defaults(tessera_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_positions = 1024;
    cfg->activation = TESSERA_RELU;
    cfg->norm_first = 0;
    cfg->layer_norm_eps = 1e-5f;
    cfg->scale_embedding = 1;
    cfg->bos_id = 2;
    cfg->eos_id = 3;
    cfg->pad_id = 1;
    cfg->unk_id = 0;
}

int tessera_config_unk_id(const tessera_config *cfg, tessera_side side)
{
    return side == TESSERA_SOURCE && cfg->has_source_unk_id ? cfg->source_unk_id : cfg->unk_id;
}

static int *int_field(tessera_config *cfg, size_t offset)
{
    return (int *)((char *)cfg + offset);
}

static int read_ints(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
        const int_key *k = &int_keys[i];
        const json_t *v = json_object_get(root, k->name);
        if (!v) {
            /* n_decoder_layers, read before, says whether a decoder needs it. */
            if (k->required == 1 || (k->required == 2 && cfg->n_decoder_layers != 0))
                return tsr_fail(err, err_len, "key '%s': missing", k->name);
            continue;
        }
        if (!json_is_integer(v))
            return tsr_fail(err, err_len, "key '%s': expected an integer, got %s", k->name,
                            tsr_json_kind(v));
        json_int_t x = json_integer_value(v);
        if (x < INT_MIN || x > INT_MAX)
            return tsr_fail(err, err_len, "key '%s': %" JSON_INTEGER_FORMAT " is out of range",
                            k->name, x);
        *int_field(cfg, k->offset) = (int)x;
    }
    return 0;
}

static int read_bools(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof bool_keys / sizeof bool_keys[0]; i++) {
        const json_t *v = json_object_get(root, bool_keys[i].name);
        if (!v)
            continue;
        if (!json_is_boolean(v))
            return tsr_fail(err, err_len, "key '%s': expected true or false, got %s",
                            bool_keys[i].name, tsr_json_kind(v));
        *int_field(cfg, bool_keys[i].offset) = json_is_true(v);
    }
    return 0;
}

/* Sets *out from key's name, when the key is given; `what` names the kind
 * in the error: "key 'activation': unknown activation 'tanh' (relu, gelu, silu, ...)". */
static int read_named(const json_t *root, const char *key, const char *what,
                      const named_value *names, size_t n, int *out, char *err, size_t err_len)
{
    const json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tsr_fail(err, err_len, "key '%s': expected a string, got %s", key,
                        tsr_json_kind(v));
    const char *name = json_string_value(v);
    char choices[128] = "";
    for (size_t i = 0; i < n; i++) {
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].value;
            return 0;
        }
        size_t used = strlen(choices);
        snprintf(choices + used, sizeof choices - used, "%s%s", i ? ", " : "", names[i].name);
    }
    char quoted[TSR_QUOTE_LEN];
    return tsr_fail(err, err_len, "key '%s': unknown %s '%s' (%s)", key, what,
                    tsr_quote(quoted, sizeof quoted, name, '\''), choices);
}

/* A list of at most `max` ids (source_suffix, banned_target_ids); each is
 * checked against its vocabulary by tsr_config_validate. */
static int read_ids(const json_t *root, const char *key, int *ids, int *count, int max, char *err,
                    size_t err_len)
{
    const json_t *v = json_object_get(root, key);
    if (!v)
        return 0;
    if (!json_is_array(v))
        return tsr_fail(err, err_len, "key '%s': expected a list of ids, got %s", key,
                        tsr_json_kind(v));
    if (json_array_size(v) > (size_t)max)
        return tsr_fail(err, err_len, "key '%s': %zu ids, at most %d", key, json_array_size(v),
                        max);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *id = json_array_get(v, i);
        if (!json_is_integer(id))
            return tsr_fail(err, err_len, "key '%s': item %zu is %s, expected an integer id", key,
                            i + 1, tsr_json_kind(id));
        json_int_t x = json_integer_value(id);
        if (x < 0 || x > INT_MAX)
            return tsr_fail(err, err_len, "key '%s': id %" JSON_INTEGER_FORMAT " is out of range",
                            key, x);
        ids[i] = (int)x;
    }
    *count = (int)json_array_size(v);
    return 0;
}

/* alignment_layer: -1 (the last) or a 0-based layer, held 1-based so that
 * a zeroed config means the last. */
static int read_alignment_layer(const json_t *root, tessera_config *cfg, char *err,
                                size_t err_len)
{
    const json_t *v = json_object_get(root, "alignment_layer");
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return tsr_fail(err, err_len, "key 'alignment_layer': expected an integer, got %s",
                        tsr_json_kind(v));
    json_int_t x = json_integer_value(v);
    if (x < -1 || x >= cfg->n_decoder_layers)
        return tsr_fail(err, err_len,
                        "key 'alignment_layer': %" JSON_INTEGER_FORMAT
                        " is not -1 (the last) or a decoder layer 0..%d",
                        x, cfg->n_decoder_layers - 1);
    cfg->alignment_layer = x < 0 ? 0 : (int)x + 1;
    return 0;
}

static int read_family(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    const json_t *v = json_object_get(root, "family");
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tsr_fail(err, err_len, "key 'family': expected a string, got %s",
                        tsr_json_kind(v));
    const char *name = json_string_value(v);
    size_t len = strlen(name);
    int plain = len > 0 && len < sizeof cfg->family;
    for (size_t i = 0; plain && i < len; i++)
        plain = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
                name[i] == '-' || name[i] == '_' || name[i] == '.';
    if (!plain) {
        char quoted[TSR_QUOTE_LEN];
        return tsr_fail(err, err_len,
                        "key 'family': '%s' is not 1 to %zu of a-z, 0-9, '-', '_', '.'",
                        tsr_quote(quoted, sizeof quoted, name, '\''), sizeof cfg->family - 1);
    }
    memcpy(cfg->family, name, len + 1);
    return 0;
}

/* A tokenizer file name of config key 'tokenizer': a plain name in the model
 * directory (no '/', not "." or ".."), 1 to 63 printable bytes. */
static int read_tokenizer_file(const json_t *tok, const char *side, char *name, size_t cap,
                               char *err, size_t err_len)
{
    const json_t *v = json_object_get(tok, side);
    if (!v)
        return 0;
    if (!json_is_string(v))
        return tsr_fail(err, err_len, "key 'tokenizer.%s': expected a file name, got %s", side,
                        tsr_json_kind(v));
    const char *file = json_string_value(v);
    size_t len = json_string_length(v);
    int plain = len > 0 && len < cap && strcmp(file, ".") != 0 && strcmp(file, "..") != 0;
    for (size_t i = 0; plain && i < len; i++)
        plain = (unsigned char)file[i] > 0x20 && file[i] != 0x7f && file[i] != '/' &&
                file[i] != '\\';
    if (!plain) {
        char quoted[TSR_QUOTE_LEN];
        return tsr_fail(err, err_len,
                        "key 'tokenizer.%s': '%s' is not a file name in the model directory "
                        "(1 to %zu printable bytes, no '/')",
                        side, tsr_quote(quoted, sizeof quoted, file, '\''), cap - 1);
    }
    memcpy(name, file, len + 1);
    return 0;
}

/* Key 'tokenizer' (docs/model-format.md section 3): {"type": "sentencepiece",
 * "source": FILE, "target": FILE}. */
static int read_tokenizer(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    const json_t *tok = json_object_get(root, "tokenizer");
    if (!tok)
        return 0;
    if (!json_is_object(tok))
        return tsr_fail(err, err_len, "key 'tokenizer': expected an object, got %s",
                        tsr_json_kind(tok));
    const json_t *type = json_object_get(tok, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "sentencepiece") != 0) {
        char quoted[TSR_QUOTE_LEN];
        return tsr_fail(err, err_len, "key 'tokenizer.type': %s%s%s, expected \"sentencepiece\"",
                        json_is_string(type) ? "'" : "",
                        json_is_string(type)
                            ? tsr_quote(quoted, sizeof quoted, json_string_value(type), '\'')
                            : type ? tsr_json_kind(type) : "absent",
                        json_is_string(type) ? "'" : "");
    }
    TSR_TRY(read_tokenizer_file(tok, "source", cfg->source_tokenizer,
                                sizeof cfg->source_tokenizer, err, err_len));
    TSR_TRY(read_tokenizer_file(tok, "target", cfg->target_tokenizer,
                                sizeof cfg->target_tokenizer, err, err_len));
    if (!cfg->source_tokenizer[0] && !cfg->target_tokenizer[0])
        return tsr_fail(err, err_len, "key 'tokenizer': names neither a source nor a target file");
    return 0;
}

/* The keys model families add (docs/model-format.md: "Model families"). */
static int read_family_keys(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    int named[5] = {(int)cfg->position_encoding, (int)cfg->decoder_start, cfg->ban_logits,
                    (int)cfg->source_language, (int)cfg->target_language};
    if (read_named(root, "position_encoding", "encoding", position_encodings,
                   sizeof position_encodings / sizeof position_encodings[0], &named[0], err,
                   err_len) ||
        read_named(root, "decoder_start", "start", decoder_starts,
                   sizeof decoder_starts / sizeof decoder_starts[0], &named[1], err, err_len) ||
        read_named(root, "banned_target_ids_mode", "mode", ban_modes,
                   sizeof ban_modes / sizeof ban_modes[0], &named[2], err, err_len) ||
        read_named(root, "source_language", "placement", source_languages,
                   sizeof source_languages / sizeof source_languages[0], &named[3], err,
                   err_len) ||
        read_named(root, "target_language", "form", target_languages,
                   sizeof target_languages / sizeof target_languages[0], &named[4], err,
                   err_len) ||
        read_ids(root, "source_suffix", cfg->source_suffix, &cfg->n_source_suffix,
                 TESSERA_SOURCE_SUFFIX_MAX, err, err_len) ||
        read_ids(root, "banned_target_ids", cfg->banned_target_ids, &cfg->n_banned_target_ids,
                 TESSERA_BANNED_IDS_MAX, err, err_len) ||
        read_family(root, cfg, err, err_len) || read_alignment_layer(root, cfg, err, err_len) ||
        read_tokenizer(root, cfg, err, err_len))
        return -1;
    cfg->position_encoding = (tessera_position_encoding)named[0];
    cfg->decoder_start = (tessera_decoder_start)named[1];
    cfg->ban_logits = named[2];
    cfg->source_language = (tessera_source_language)named[3];
    cfg->target_language = (tessera_target_language)named[4];
    return 0;
}

static int read_eps(const json_t *root, tessera_config *cfg, char *err, size_t err_len)
{
    const json_t *v = json_object_get(root, "layer_norm_eps");
    if (!v)
        return 0;
    if (!json_is_number(v))
        return tsr_fail(err, err_len, "key 'layer_norm_eps': expected a number, got %s",
                        tsr_json_kind(v));
    double eps = json_number_value(v);
    /* Checked as a float too: 1e-60 is > 0 but would become 0. */
    float eps_f = (float)eps;
    if (!(eps > 0) || !isfinite(eps) || !(eps_f > 0) || !isfinite(eps_f))
        return tsr_fail(err, err_len, "key 'layer_norm_eps': %g is not a positive finite float",
                        eps);
    cfg->layer_norm_eps = eps_f;
    return 0;
}

int tsr_config_parse(const char *json, size_t len, tessera_config *cfg, char *err, size_t err_len)
{
    tsr_config_defaults(cfg);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root && tsr_json_out_of_memory(&jerr))
        return tsr_fail_oom(err, err_len, "out of memory parsing it");
    if (!root) {
        /* jansson's text quotes the bytes near the error as they are. */
        char why[4 * sizeof jerr.text + 4];
        return tsr_fail(err, err_len, "not valid JSON: %s (line %d, column %d)",
                        tsr_quote(why, sizeof why, jerr.text, 0), jerr.line, jerr.column);
    }
    int rc;
    /* The enums' values, read as ints. */
    int named[2] = {(int)cfg->activation, (int)cfg->layer_norm_form};
    if (!json_is_object(root))
        rc = tsr_fail(err, err_len, "top level is %s, expected a JSON object", tsr_json_kind(root));
    else if (read_ints(root, cfg, err, err_len) != 0 || read_bools(root, cfg, err, err_len) != 0 ||
             read_named(root, "activation", "activation", activations,
                        sizeof activations / sizeof activations[0], &named[0], err, err_len) ||
             read_named(root, "layer_norm_form", "form", layer_norm_forms,
                        sizeof layer_norm_forms / sizeof layer_norm_forms[0], &named[1], err,
                        err_len) ||
             read_eps(root, cfg, err, err_len) != 0 ||
             read_family_keys(root, cfg, err, err_len) != 0) {
        rc = -1;
    } else {
        cfg->activation = (tessera_activation)named[0];
        cfg->layer_norm_form = (tessera_layer_norm_form)named[1];
        cfg->has_source_unk_id = json_object_get(root, "source_unk_id") != NULL;
        rc = tsr_config_validate(cfg, err, err_len);
    }
    json_decref(root);
    return rc;
}

/* The whole file, NUL-free bytes as read; NULL with a message and *rc
 * (bad input, or out of memory) on failure. */
static char *read_whole_file(const char *path, size_t *len, int *rc, char *err, size_t err_len)
{
    off_t size;
    int fd = tsr_open_regular(path, &size, err, err_len);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        if (fd >= 0) {
            tsr_fail(err, err_len, "cannot read: %s", strerror(errno));
            close(fd);
        }
        *rc = tsr_fail_prefix(TESSERA_ERR_INPUT, err, err_len, path);
        return NULL;
    }
    size_t cap = 4096, used = 0;
    char *buf = tsr_malloc(cap);
    while (buf) {
        if (used == cap) {
            if (cap >= MAX_CONFIG_BYTES) {
                *rc = tsr_fail(err, err_len, "%s: too large for a config file", path);
                tsr_free(buf);
                fclose(f);
                return NULL;
            }
            char *bigger = tsr_realloc(buf, cap * 2);
            if (!bigger) {
                tsr_free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (got == 0)
            break;
    }
    if (!buf) {
        *rc = tsr_fail_oom(err, err_len, "%s: out of memory", path);
    } else if (ferror(f)) {
        *rc = tsr_fail(err, err_len, "%s: cannot read: %s", path, strerror(errno));
        tsr_free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = used;
    return buf;
}

int tsr_config_load(const char *path, tessera_config *cfg, char *err, size_t err_len)
{
    size_t len;
    int rc = TESSERA_ERR_INPUT;
    char *text = read_whole_file(path, &len, &rc, err, err_len);
    if (!text)
        return rc;
    rc = tsr_config_parse(text, len, cfg, err, err_len);
    tsr_free(text);
    if (rc != 0)
        return tsr_fail_prefix(rc, err, err_len, path);
    return 0;
}

static int check_range(const char *key, int value, int lo, int hi_exclusive, const char *why,
                       char *err, size_t err_len)
{
    if (value >= lo && value < hi_exclusive)
        return 0;
    return tsr_fail(err, err_len, "key '%s': %d is out of range [%d, %d)%s", key, value, lo,
                    hi_exclusive, why);
}

/* A weight matrix of rows x cols floats must be addressable. */
static int check_matrix(const char *key, int rows, int cols, char *err, size_t err_len)
{
    if ((size_t)rows > SIZE_MAX / sizeof(float) / (size_t)cols)
        return tsr_fail(err, err_len, "key '%s': a %d x %d matrix is too large for this machine",
                        key, rows, cols);
    return 0;
}

static int check_ids(const char *key, const int *ids, int n, int max, int vocab,
                     const char *vocab_key, char *err, size_t err_len)
{
    if (n < 0 || n > max)
        return tsr_fail(err, err_len, "key '%s': %d ids, at most %d", key, n, max);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= vocab)
            return tsr_fail(err, err_len, "key '%s': id %d is out of range [0, %d) (%s)", key,
                            ids[i], vocab, vocab_key);
    return 0;
}

static int validate_family_keys(const tessera_config *c, int has_decoder, char *err,
                                size_t err_len)
{
    if (check_range("position_offset", c->position_offset, 0, TESSERA_MAX_POSITIONS_MAX + 1, "",
                    err, err_len) ||
        check_matrix("position_offset", c->max_positions + c->position_offset, c->d_model, err,
                     err_len))
        return -1;
    if (c->position_encoding != TESSERA_POSITIONS_SINUSOID &&
        c->position_encoding != TESSERA_POSITIONS_SINUSOID_HALVES &&
        c->position_encoding != TESSERA_POSITIONS_SINUSOID_HALVES_T2T)
        return tsr_fail(err, err_len, "key 'position_encoding': unknown encoding %d",
                        (int)c->position_encoding);
    /* Halves pair column i with column d/2 + i; the t2t frequencies divide
     * by d/2 - 1. */
    if (c->position_encoding != TESSERA_POSITIONS_SINUSOID &&
        (c->d_model % 2 != 0 ||
         (c->position_encoding == TESSERA_POSITIONS_SINUSOID_HALVES_T2T && c->d_model < 4)))
        return tsr_fail(err, err_len, "key 'position_encoding': needs an even d_model%s, got %d",
                        c->position_encoding == TESSERA_POSITIONS_SINUSOID_HALVES_T2T ? " >= 4" : "",
                        c->d_model);
    if (c->decoder_start != TESSERA_START_BOS && c->decoder_start != TESSERA_START_ZEROS)
        return tsr_fail(err, err_len, "key 'decoder_start': unknown start %d",
                        (int)c->decoder_start);
    if (check_ids("source_suffix", c->source_suffix, c->n_source_suffix,
                  TESSERA_SOURCE_SUFFIX_MAX, c->src_vocab_size, "src_vocab_size", err, err_len))
        return -1;
    if (c->alignment_layer < 0 || c->alignment_layer > (has_decoder ? c->n_decoder_layers : 0))
        return tsr_fail(err, err_len, "key 'alignment_layer': %d is not a decoder layer",
                        c->alignment_layer - 1);
    if (check_range("min_target_length", c->min_target_length, 0, c->max_positions, "", err,
                    err_len))
        return -1;
    if (check_range("alignment_heads", c->alignment_heads, 0, c->n_heads + 1, " (0: all, n_heads)",
                    err, err_len))
        return -1;
    if ((unsigned)c->source_language > TESSERA_SOURCE_LANGUAGE_SUFFIX)
        return tsr_fail(err, err_len, "key 'source_language': unknown placement %d",
                        (int)c->source_language);
    if ((unsigned)c->target_language > TESSERA_TARGET_LANGUAGE_START)
        return tsr_fail(err, err_len, "key 'target_language': unknown form %d",
                        (int)c->target_language);
    /* The language token then takes a row of its own: one id fewer fits
     * source_suffix's place. */
    if (c->source_language != TESSERA_SOURCE_LANGUAGE_NONE &&
        c->n_source_suffix >= TESSERA_SOURCE_SUFFIX_MAX)
        return tsr_fail(err, err_len, "key 'source_suffix': at most %d ids beside a source "
                                      "language", TESSERA_SOURCE_SUFFIX_MAX - 1);
    if (c->target_language == TESSERA_TARGET_LANGUAGE_START &&
        c->decoder_start != TESSERA_START_BOS)
        return tsr_fail(err, err_len, "key 'target_language': \"start\" replaces the decoder's "
                                      "first token, which decoder_start \"zeros\" does not read");
    if (memchr(c->family, '\0', sizeof c->family) == NULL)
        return tsr_fail(err, err_len, "key 'family': not a terminated string");
    if (memchr(c->source_tokenizer, '\0', sizeof c->source_tokenizer) == NULL ||
        memchr(c->target_tokenizer, '\0', sizeof c->target_tokenizer) == NULL)
        return tsr_fail(err, err_len, "key 'tokenizer': a file name that is not terminated");
    if (!has_decoder) {
        if (c->target_tokenizer[0])
            return tsr_fail(err, err_len, "key 'tokenizer.target': an encoder alone has no "
                                          "target side");
        if (c->target_language != TESSERA_TARGET_LANGUAGE_NONE)
            return tsr_fail(err, err_len, "key 'target_language': an encoder alone has no "
                                          "target side");
        if (c->tie_output_projection || c->share_embeddings || c->n_banned_target_ids)
            return tsr_fail(err, err_len, "key '%s': an encoder alone has no target side",
                            c->tie_output_projection ? "tie_output_projection"
                            : c->share_embeddings    ? "share_embeddings"
                                                     : "banned_target_ids");
        return 0;
    }
    if (c->share_embeddings && c->src_vocab_size != c->tgt_vocab_size)
        return tsr_fail(err, err_len,
                        "key 'share_embeddings': the vocabularies differ (%d source, %d target)",
                        c->src_vocab_size, c->tgt_vocab_size);
    if (check_ids("banned_target_ids", c->banned_target_ids, c->n_banned_target_ids,
                  TESSERA_BANNED_IDS_MAX, c->tgt_vocab_size, "tgt_vocab_size", err, err_len))
        return -1;
    for (int i = 0; i < c->n_banned_target_ids; i++)
        if (c->banned_target_ids[i] == c->eos_id)
            return tsr_fail(err, err_len, "key 'banned_target_ids': bans eos_id (%d)", c->eos_id);
    return 0;
}

int tsr_config_validate(const tessera_config *cfg, char *err, size_t err_len)
{
    tessera_config c = *cfg;
    /* An encoder alone (BERT-style use) has no decoder layers, and then
     * needs no target vocabulary: every other size is at least 1. */
    int has_decoder = c.n_decoder_layers != 0;
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
        const int_key *k = &int_keys[i];
        int lo = k->offset == offsetof(tessera_config, n_decoder_layers) ||
                         (k->required == 2 && !has_decoder)
                     ? 0
                     : 1;
        if (k->required &&
            check_range(k->name, *int_field(&c, k->offset), lo, MAX_SIZE + 1, "", err, err_len))
            return -1;
    }
    if (check_range("max_positions", c.max_positions, 2, TESSERA_MAX_POSITIONS_MAX + 1,
                    " (TESSERA_MAX_POSITIONS_MAX)", err, err_len))
        return -1;
    if (c.d_model % c.n_heads != 0)
        return tsr_fail(err, err_len, "key 'n_heads': %d does not divide d_model (%d)", c.n_heads,
                        c.d_model);
    if (has_decoder) {
        int both_vocab =
            c.src_vocab_size < c.tgt_vocab_size ? c.src_vocab_size : c.tgt_vocab_size;
        if (check_range("bos_id", c.bos_id, 0, c.tgt_vocab_size, " (tgt_vocab_size)", err,
                        err_len) ||
            check_range("eos_id", c.eos_id, 0, c.tgt_vocab_size, " (tgt_vocab_size)", err,
                        err_len) ||
            /* With a source_unk_id of its own, unk_id is the target's alone
             * (a CTranslate2 target vocabulary's appended <unk> may lie past
             * the source's last id). */
            (c.has_source_unk_id
                 ? check_range("unk_id", c.unk_id, 0, c.tgt_vocab_size, " (tgt_vocab_size)", err,
                               err_len)
                 : check_range("unk_id", c.unk_id, 0, both_vocab, " (the smaller vocabulary)",
                               err, err_len)) ||
            check_range("pad_id", c.pad_id, 0, both_vocab, " (the smaller vocabulary)", err,
                        err_len))
            return -1;
        /* bos_id may equal eos_id: fairseq starts the decoder from </s>. */
    } else if (check_range("unk_id", c.unk_id, 0, c.src_vocab_size, " (src_vocab_size)", err,
                           err_len) ||
               check_range("pad_id", c.pad_id, 0, c.src_vocab_size, " (src_vocab_size)", err,
                           err_len)) {
        return -1;
    }
    if (c.has_source_unk_id && check_range("source_unk_id", c.source_unk_id, 0,
                                             c.src_vocab_size, " (src_vocab_size)", err, err_len))
        return -1;
    if (check_matrix("src_vocab_size", c.src_vocab_size, c.d_model, err, err_len) ||
        (has_decoder && check_matrix("tgt_vocab_size", c.tgt_vocab_size, c.d_model, err, err_len)) ||
        check_matrix("d_ff", c.d_ff, c.d_model, err, err_len) ||
        check_matrix("max_positions", c.max_positions, c.d_model, err, err_len) ||
        check_matrix("d_model", 3 * c.d_model, c.d_model, err, err_len))
        return -1;
    if (c.activation < TESSERA_RELU || c.activation > TESSERA_GELU_SIGMOID)
        return tsr_fail(err, err_len, "key 'activation': unknown activation %d", (int)c.activation);
    if (c.layer_norm_form != TESSERA_LAYER_NORM_VARIANCE &&
        c.layer_norm_form != TESSERA_LAYER_NORM_STD &&
        c.layer_norm_form != TESSERA_LAYER_NORM_STD_UNBIASED)
        return tsr_fail(err, err_len, "key 'layer_norm_form': unknown form %d",
                        (int)c.layer_norm_form);
    /* The N - 1 estimate of one element's spread is 0/0. */
    if (c.layer_norm_form == TESSERA_LAYER_NORM_STD_UNBIASED && c.d_model < 2)
        return tsr_fail(err, err_len,
                        "key 'layer_norm_form': 'std_unbiased' needs d_model >= 2, got %d",
                        c.d_model);
    if (!(c.layer_norm_eps > 0) || !isfinite(c.layer_norm_eps))
        return tsr_fail(err, err_len, "key 'layer_norm_eps': %g is not a positive finite float",
                        (double)c.layer_norm_eps);
    return validate_family_keys(&c, has_decoder, err, err_len);
}
