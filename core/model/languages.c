/* A multilingual model's languages (core/model/languages.h). */
#include "core/model/languages.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"

/* As config.c reads config.json: a few KiB with 200 languages. */
#define MAX_CONFIG_BYTES (16 << 20)
/* Names a refusal offers. */
#define NEAREST_SHOWN 5

static int valid_name(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len > TSR_LANGUAGE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] <= ' ' || name[i] > '~')
            return 0;
    return 1;
}

/* The vocabularies a language id must be a token of. */
static int check_id(const tessera_config *cfg, const char *name, json_int_t id, char *err,
                    size_t err_len)
{
    char q[TSR_QUOTE_LEN];
    if (cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE &&
        (id < 0 || id >= cfg->src_vocab_size))
        return tsr_fail(err, err_len,
                        "key 'languages': '%s': id %lld is out of range [0, %d) (src_vocab_size)",
                        tsr_quote(q, sizeof q, name, '\''), (long long)id, cfg->src_vocab_size);
    if (cfg->target_language != TESSERA_TARGET_LANGUAGE_NONE &&
        (id < 0 || id >= cfg->tgt_vocab_size))
        return tsr_fail(err, err_len,
                        "key 'languages': '%s': id %lld is out of range [0, %d) (tgt_vocab_size)",
                        tsr_quote(q, sizeof q, name, '\''), (long long)id, cfg->tgt_vocab_size);
    return 0;
}

static int read_table(const json_t *table, const tessera_config *cfg, tsr_languages *out,
                      char *err, size_t err_len)
{
    size_t n = json_object_size(table);
    if (n == 0)
        return tsr_fail(err, err_len, "key 'languages': no language in it");
    out->names = tsr_calloc(n, sizeof *out->names);
    out->ids = tsr_calloc(n, sizeof *out->ids);
    if (!out->names || !out->ids)
        return tsr_fail_oom(err, err_len, "out of memory for %zu languages", n);
    const char *name;
    const json_t *v;
    char q[TSR_QUOTE_LEN];
    /* jansson keeps the file's order, and duplicates were refused when it
     * was parsed. */
    json_object_foreach ((json_t *)table, name, v) {
        if (!valid_name(name))
            return tsr_fail(err, err_len,
                            "key 'languages': '%s' is not a language name (1-%d printable "
                            "ASCII characters, no space)",
                            tsr_quote(q, sizeof q, name, '\''), TSR_LANGUAGE_NAME_MAX);
        if (!json_is_integer(v))
            return tsr_fail(err, err_len, "key 'languages': '%s': expected an integer id, got %s",
                            name, tsr_json_kind(v));
        TSR_TRY(check_id(cfg, name, json_integer_value(v), err, err_len));
        memcpy(out->names[out->n], name, strlen(name) + 1);
        out->ids[out->n++] = (int32_t)json_integer_value(v);
    }
    return 0;
}

int tsr_languages_parse(const char *json, size_t len, const tessera_config *cfg,
                        tsr_languages **out, char *err, size_t err_len)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!root) /* config.c read this text first and said why */
        return tsr_fail(err, err_len, "not valid JSON");
    const json_t *table = json_is_object(root) ? json_object_get(root, "languages") : NULL;
    int wanted = cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE ||
                 cfg->target_language != TESSERA_TARGET_LANGUAGE_NONE;
    int rc = 0;
    if (!wanted && table)
        rc = tsr_fail(err, err_len, "key 'languages': given, but neither source_language nor "
                                    "target_language says how the model takes one");
    else if (wanted && !table)
        rc = tsr_fail(err, err_len, "key 'languages': missing, and key '%s' needs it",
                      cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE ? "source_language"
                                                                           : "target_language");
    else if (table && !json_is_object(table))
        rc = tsr_fail(err, err_len, "key 'languages': expected an object of name: id, got %s",
                      tsr_json_kind(table));
    else if (table && !(*out = tsr_calloc(1, sizeof **out)))
        rc = tsr_fail_oom(err, err_len, "out of memory for the languages");
    else if (table)
        rc = read_table(table, cfg, *out, err, err_len);
    json_decref(root);
    if (rc != 0) {
        tsr_languages_free(*out);
        *out = NULL;
    }
    return rc;
}

int tsr_languages_load(const char *path, const tessera_config *cfg, tsr_languages **out,
                       char *err, size_t err_len)
{
    *out = NULL;
    char *text;
    size_t len;
    TSR_TRY(tsr_read_regular(path, MAX_CONFIG_BYTES, &text, &len, err, err_len));
    int rc = tsr_languages_parse(text, len, cfg, out, err, err_len);
    tsr_free(text);
    return rc != 0 ? tsr_fail_prefix(rc, err, err_len, path) : 0;
}

void tsr_languages_free(tsr_languages *l)
{
    if (!l)
        return;
    tsr_free(l->names);
    tsr_free(l->ids);
    tsr_free(l);
}

/* Edit distance between a and b, letters compared without case; a name that
 * starts with the one asked for counts as nearer than any other. */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[TSR_LANGUAGE_NAME_MAX + 2];
    if (la > TSR_LANGUAGE_NAME_MAX)
        la = TSR_LANGUAGE_NAME_MAX;
    if (strncasecmp(b, a, la) == 0)
        return lb - la; /* a prefix of b: only what b adds */
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t sub = diag + (tolower((unsigned char)a[i - 1]) !=
                                 tolower((unsigned char)b[j - 1]));
            size_t best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[lb] + TSR_LANGUAGE_NAME_MAX; /* after every name it prefixes */
}

int tsr_languages_find(const tsr_languages *l, const char *what, const char *name, int32_t *id,
                       char *err, size_t err_len)
{
    char q[TSR_QUOTE_LEN];
    for (size_t i = 0; l && i < l->n; i++)
        if (strcmp(l->names[i], name) == 0) {
            *id = l->ids[i];
            return 0;
        }
    if (!l || l->n == 0)
        return tsr_fail(err, err_len, "%s '%s': the model has no languages", what,
                        tsr_quote(q, sizeof q, name, '\''));
    /* The NEAREST_SHOWN nearest, in table order among equals. */
    size_t best[NEAREST_SHOWN], best_d[NEAREST_SHOWN], kept = 0;
    for (size_t i = 0; i < l->n; i++) {
        size_t d = distance(name, l->names[i]), at = kept;
        while (at > 0 && best_d[at - 1] > d)
            at--;
        if (at >= NEAREST_SHOWN)
            continue;
        if (kept < NEAREST_SHOWN)
            kept++;
        memmove(best + at + 1, best + at, (kept - 1 - at) * sizeof *best);
        memmove(best_d + at + 1, best_d + at, (kept - 1 - at) * sizeof *best_d);
        best[at] = i;
        best_d[at] = d;
    }
    char list[NEAREST_SHOWN * (TSR_LANGUAGE_NAME_MAX + 2) + 1] = "";
    for (size_t k = 0; k < kept; k++) {
        strcat(list, k ? ", " : "");
        strcat(list, l->names[best[k]]);
    }
    return tsr_fail(err, err_len,
                    "%s '%s' is not one of the model's %zu languages; the nearest: %s", what,
                    tsr_quote(q, sizeof q, name, '\''), l->n, list);
}
