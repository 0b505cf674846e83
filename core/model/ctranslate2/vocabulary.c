/* CTranslate2 vocabularies (core/model/ctranslate2/vocabulary.h). */
#include "core/model/ctranslate2/vocabulary.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/json_kind.h"
#include "base/memory.h"
#include "base/quote.h"
#include "text/vocabulary.h"

/* NLLB's 256,206 tokens take 4 MB; a file past this is no vocabulary. */
#define VOCAB_FILE_MAX ((off_t)256 << 20)
#define VOCAB_TOKENS_MAX ((size_t)1 << 24)

/* The tokens collected before they become a vocabulary: `n` pieces into one
 * block of bytes, each NUL-terminated. */
typedef struct token_list {
    char *bytes;
    size_t used, cap;
    size_t *starts;
    size_t n, n_cap;
} token_list;

static int push(token_list *t, const char *s, size_t len)
{
    if (tsr_grow(&t->starts, &t->n_cap, t->n + 1, sizeof *t->starts) != 0 ||
        tsr_grow(&t->bytes, &t->cap, t->used + len + 1, 1) != 0)
        return TESSERA_ERR_NOMEM;
    memcpy(t->bytes + t->used, s, len);
    t->bytes[t->used + len] = '\0';
    t->starts[t->n++] = t->used;
    t->used += len + 1;
    return 0;
}

/* One token per line; the final '\r' of every line dropped only when all
 * lines have one (CTranslate2 keeps a '\r' that is part of a token). */
static int split_lines(const char *bytes, size_t len, token_list *t)
{
    int all_cr = 1;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(bytes + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - bytes) : len;
        all_cr &= end > at && bytes[end - 1] == '\r';
        at = end + 1;
    }
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(bytes + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - bytes) : len;
        TSR_TRY(push(t, bytes + at, end - at - (size_t)all_cr));
        at = end + 1;
    }
    return 0;
}

static int parse_json(const char *bytes, size_t len, token_list *t, const char *file, char *err,
                      size_t err_len)
{
    json_error_t jerr;
    json_t *root = json_loadb(bytes, len, 0, &jerr);
    char why[4 * sizeof jerr.text + 4];
    if (!root)
        return tsr_json_out_of_memory(&jerr)
                   ? tsr_fail_oom(err, err_len, "%s: out of memory", file)
                   : tsr_fail(err, err_len, "%s: line %d: %s", file, jerr.line,
                              tsr_quote(why, sizeof why, jerr.text, 0));
    int rc = 0;
    if (!json_is_array(root))
        rc = tsr_fail(err, err_len, "%s: expected a JSON list of tokens, got %s", file,
                      tsr_json_kind(root));
    for (size_t i = 0; rc == 0 && i < json_array_size(root); i++) {
        const json_t *tok = json_array_get(root, i);
        if (!json_is_string(tok))
            rc = tsr_fail(err, err_len, "%s: token %zu is %s, expected a string", file, i,
                          tsr_json_kind(tok));
        else if (memchr(json_string_value(tok), '\0', json_string_length(tok)))
            rc = tsr_fail(err, err_len, "%s: token %zu holds a NUL", file, i);
        else if (push(t, json_string_value(tok), json_string_length(tok)) != 0)
            rc = tsr_fail_oom(err, err_len, "%s: out of memory", file);
    }
    json_decref(root);
    return rc;
}

static int has_token(const token_list *t, const char *tok)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->bytes + t->starts[i], tok) == 0)
            return 1;
    return 0;
}

/* The list as a vocabulary: the pieces point into the block (taken over). */
static int adopt(token_list *t, const char *file, tessera_vocabulary **out, char *err,
                 size_t err_len)
{
    char **pieces = tsr_calloc(t->n, sizeof *pieces);
    if (!pieces)
        return tsr_fail_oom(err, err_len, "%s: out of memory", file);
    for (size_t i = 0; i < t->n; i++)
        pieces[i] = t->bytes + t->starts[i];
    char *bytes = t->bytes;
    t->bytes = NULL;
    if (tsr_vocabulary_adopt(bytes, pieces, t->n, out) != 0)
        return tsr_fail_oom(err, err_len, "%s: out of memory", file);
    return 0;
}

int tsr_ct2_vocabulary_load(const char *dir, const char *name, const char *unk,
                            tessera_vocabulary **out, char *file, size_t file_len, char *err,
                            size_t err_len)
{
    *out = NULL;
    char path[4200];
    int json = 1;
    snprintf(file, file_len, "%s.json", name);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (access(path, F_OK) != 0) {
        json = 0;
        snprintf(file, file_len, "%s.txt", name);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        if (access(path, F_OK) != 0)
            return 0;
    }
    char *bytes;
    size_t len;
    TSR_TRY(tsr_read_regular(path, VOCAB_FILE_MAX, &bytes, &len, err, err_len));
    token_list t = {0};
    int rc = 0;
    if (json)
        rc = parse_json(bytes, len, &t, file, err, err_len);
    else if (memchr(bytes, '\0', len))
        rc = tsr_fail(err, err_len, "%s: holds a NUL byte (not a vocabulary file)", file);
    else if (split_lines(bytes, len, &t) != 0)
        rc = tsr_fail_oom(err, err_len, "%s: out of memory", file);
    tsr_free(bytes);
    if (rc == 0 && !has_token(&t, unk) && push(&t, unk, strlen(unk)) != 0)
        rc = tsr_fail_oom(err, err_len, "%s: out of memory", file);
    if (rc == 0 && (t.n == 0 || t.n > VOCAB_TOKENS_MAX))
        rc = tsr_fail(err, err_len, "%s: %zu tokens (1 to 2^24)", file, t.n);
    if (rc == 0)
        rc = adopt(&t, file, out, err, err_len);
    tsr_free(t.bytes);
    tsr_free(t.starts);
    return rc;
}
