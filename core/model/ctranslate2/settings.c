/* config.json and the older variables (core/model/ctranslate2/settings.h). */
#include "core/model/ctranslate2/settings.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"
#include "core/model/ctranslate2/attributes.h"

static int json_token(const json_t *root, const char *key, char *out, size_t out_len,
                      int null_ok, char *err, size_t err_len)
{
    const json_t *v = json_object_get(root, key);
    if (!v || (null_ok && json_is_null(v)))
        return 1;
    if (!json_is_string(v) || json_string_length(v) >= out_len ||
        memchr(json_string_value(v), '\0', json_string_length(v)))
        return tsr_fail(err, err_len, "config.json: key '%s': expected a token (a string), got %s",
                        key, tsr_json_kind(v));
    snprintf(out, out_len, "%s", json_string_value(v));
    return 0;
}

static int json_flag(const json_t *root, const char *key, int *out, char *err, size_t err_len)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return tsr_fail(err, err_len, "config.json: key '%s': expected a boolean, got %s", key,
                        tsr_json_kind(v));
    *out = json_is_true(v);
    return 0;
}

/* The keys of config.json that change what runs (CTranslate2's
 * SequenceToSequenceModelConfig); unknown keys are ignored. */
static int parse_config(const json_t *root, int v6, tsr_ct2_settings *c, char *err,
                        size_t err_len)
{
    if (!json_is_object(root))
        return tsr_fail(err, err_len, "config.json: expected an object, got %s",
                        tsr_json_kind(root));
    if (v6) {
        if (json_token(root, "unk_token", c->unk, sizeof c->unk, 0, err, err_len) < 0 ||
            json_token(root, "bos_token", c->bos, sizeof c->bos, 0, err, err_len) < 0 ||
            json_token(root, "eos_token", c->eos, sizeof c->eos, 0, err, err_len) < 0)
            return TESSERA_ERR_INPUT;
        const json_t *start = json_object_get(root, "decoder_start_token");
        if (start && json_is_null(start))
            return tsr_fail(err, err_len,
                            "config.json: decoder_start_token null (the caller gives every "
                            "start token) is not a decoding tessera runs");
        int rc = json_token(root, "decoder_start_token", c->start, sizeof c->start, 0, err,
                            err_len);
        if (rc < 0)
            return rc;
        if (rc == 1)
            snprintf(c->start, sizeof c->start, "%s", c->bos);
        TSR_TRY(json_flag(root, "add_source_bos", &c->add_source_bos, err, err_len));
        TSR_TRY(json_flag(root, "add_source_eos", &c->add_source_eos, err, err_len));
    }
    const json_t *eps = json_object_get(root, "layer_norm_epsilon");
    if (eps && !json_is_null(eps)) {
        if (!json_is_number(eps) || !(json_number_value(eps) > 0))
            return tsr_fail(err, err_len,
                            "config.json: key 'layer_norm_epsilon': expected a number > 0, got %s",
                            tsr_json_kind(eps));
        c->layer_norm_epsilon = json_number_value(eps);
    }
    int mqa = 0;
    TSR_TRY(json_flag(root, "multi_query_attention", &mqa, err, err_len));
    if (mqa)
        return tsr_fail(err, err_len,
                        "config.json: multi_query_attention true, which tessera does not run");
    const json_t *q = json_object_get(root, "quantization_type");
    if (q && !json_is_null(q) && !(json_is_integer(q) && json_integer_value(q) == 0))
        return tsr_fail(err, err_len,
                        "config.json: quantization_type other than CTranslate2's own (AWQ) is "
                        "not run by tessera");
    return 0;
}

int tsr_ct2_settings_read(const char *dir, tsr_ct2_file *f, tsr_ct2_settings *c, char *err,
                          size_t err_len)
{
    memset(c, 0, sizeof *c);
    snprintf(c->unk, sizeof c->unk, "<unk>");
    snprintf(c->bos, sizeof c->bos, "<s>");
    snprintf(c->eos, sizeof c->eos, "</s>");
    snprintf(c->start, sizeof c->start, "<s>");
    c->layer_norm_epsilon = -1;
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    int v6 = f->version >= 6;
    if (access(path, F_OK) == 0) {
        char *bytes;
        size_t len;
        TSR_TRY(tsr_read_regular(path, (off_t)16 << 20, &bytes, &len, err, err_len));
        json_error_t jerr;
        json_t *root = json_loadb(bytes, len, 0, &jerr);
        tsr_free(bytes);
        char why[4 * sizeof jerr.text + 4];
        if (!root)
            return tsr_json_out_of_memory(&jerr)
                       ? tsr_fail_oom(err, err_len, "config.json: out of memory")
                       : tsr_fail(err, err_len, "config.json: line %d: %s", jerr.line,
                                  tsr_quote(why, sizeof why, jerr.text, 0));
        int rc = parse_config(root, v6, c, err, err_len);
        json_decref(root);
        TSR_TRY(rc);
    } else if (v6) {
        return tsr_fail(err, err_len,
                        "config.json: missing (a model.bin of binary version 6 keeps its tokens "
                        "there)");
    }
    if (v6)
        return 0;
    TSR_TRY(tsr_ct2_string_attribute(f, "unk_token", "<unk>", c->unk, sizeof c->unk, err, err_len));
    TSR_TRY(tsr_ct2_string_attribute(f, "bos_token", "<s>", c->bos, sizeof c->bos, err, err_len));
    TSR_TRY(tsr_ct2_string_attribute(f, "eos_token", "</s>", c->eos, sizeof c->eos, err, err_len));
    double v;
    TSR_TRY(tsr_ct2_root_attribute(f, "with_source_bos", 0, &v, err, err_len));
    c->add_source_bos = v != 0;
    TSR_TRY(tsr_ct2_root_attribute(f, "with_source_eos", 0, &v, err, err_len));
    c->add_source_eos = v != 0;
    TSR_TRY(tsr_ct2_root_attribute(f, "user_decoder_start_tokens", 0, &v, err, err_len));
    if (v != 0)
        return tsr_fail(err, err_len,
                        "variable 'user_decoder_start_tokens': the caller gives every start "
                        "token, which is not a decoding tessera runs");
    TSR_TRY(tsr_ct2_root_attribute(f, "with_target_bos", 1, &v, err, err_len));
    snprintf(c->start, sizeof c->start, "%s", v != 0 ? c->bos : c->eos);
    return 0;
}
