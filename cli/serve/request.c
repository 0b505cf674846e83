/* tessera serve: request bodies (JSON) checked into jobs, and jobs answered
 * as JSON. Every refusal names the field and, for a sentence, its index:
 * "source[2][5]: id 99 out of range [0, 36)". */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/serve/server.h"

/* Past the library's rules (tessera_translate_options_check), which every
 * option of a request is held to as the command's flags are, the server
 * takes its options from people it does not know, so it caps the work one
 * sentence may ask for tighter than the command does. */
enum { SERVER_BEAM_MAX = 64, SERVER_MAX_LEN_MAX = 1024 };

/* The decoding options a translate request may set: JSON fields named as
 * tessera_translate_options' fields, so that the library's messages name
 * them as the request does. srv_same_key compares them all, so that
 * sentences decoded with different options never share a batch; the target
 * prefix (per sentence) and the sampling stream (the sentence's index in its
 * request) are given per sentence, and need not. */
typedef enum field_type { WHOLE, NUMBER, BOOLEAN, SEED } field_type;

static const struct decoding_field {
    const char *name;
    field_type type;
    size_t offset;
} decoding_fields[] = {
    {"beam", WHOLE, offsetof(tessera_translate_options, beam)},
    {"max_len", WHOLE, offsetof(tessera_translate_options, max_len)},
    {"length_penalty", NUMBER, offsetof(tessera_translate_options, length_penalty)},
    {"n_best", WHOLE, offsetof(tessera_translate_options, n_best)},
    {"sampling_topk", WHOLE, offsetof(tessera_translate_options, sampling_topk)},
    {"sampling_topp", NUMBER, offsetof(tessera_translate_options, sampling_topp)},
    {"sampling_temperature", NUMBER, offsetof(tessera_translate_options, sampling_temperature)},
    {"seed", SEED, offsetof(tessera_translate_options, seed)},
    {"min_len", WHOLE, offsetof(tessera_translate_options, min_len)},
    {"no_repeat_ngram", WHOLE, offsetof(tessera_translate_options, no_repeat_ngram)},
    {"repetition_penalty", NUMBER, offsetof(tessera_translate_options, repetition_penalty)},
    {"disable_unk", BOOLEAN, offsetof(tessera_translate_options, disable_unk)},
    {"end_token", WHOLE, offsetof(tessera_translate_options, end_token)},
    {"return_alignments", BOOLEAN, offsetof(tessera_translate_options, return_alignments)},
};
#define N_DECODING_FIELDS (sizeof decoding_fields / sizeof decoding_fields[0])

static size_t field_size(field_type type)
{
    return type == SEED ? sizeof(uint64_t) : type == NUMBER ? sizeof(float) : sizeof(int);
}

int srv_same_key(const srv_key *a, const srv_key *b)
{
    /* The languages point at the model's own names (read_languages): equal
     * languages are equal pointers. */
    if (a->kind != b->kind || a->decoding.source_lang != b->decoding.source_lang ||
        a->decoding.target_lang != b->decoding.target_lang)
        return 0;
    for (size_t i = 0; i < N_DECODING_FIELDS; i++) {
        const struct decoding_field *f = &decoding_fields[i];
        if (memcmp((const char *)&a->decoding + f->offset, (const char *)&b->decoding + f->offset,
                   field_size(f->type)) != 0)
            return 0;
    }
    return 1;
}

static int fail(int *http_status, int code, char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t utf8_sequence(const unsigned char *s)
{
    size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* Every byte of s that does not start a valid UTF-8 sequence becomes '?'.
 * A message quotes the request (a field name cut at 64 bytes may end in
 * half a character) and goes into a JSON answer, which must be UTF-8. */
static void make_valid_utf8(char *s)
{
    while (*s) {
        size_t n = utf8_sequence((const unsigned char *)s);
        if (n == 0) {
            *s++ = '?';
            continue;
        }
        s += n;
    }
}

static int fail(int *http_status, int code, char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
    make_valid_utf8(err);
    *http_status = code;
    return -1;
}

/* The list of sentences under `name`: an array of 1 to max arrays of ids
 * (as_text 0) or of strings (as_text 1). Returns its length, 0 when absent,
 * -1 on error. */
static long sentence_list(json_t *body, const char *name, int as_text, const srv_settings *s,
                          int *http_status, char *err, size_t err_len)
{
    json_t *list = json_object_get(body, name);
    if (!list)
        return 0;
    if (!json_is_array(list) || json_array_size(list) == 0)
        return fail(http_status, 400, err, err_len, "%s: must be a non-empty array of %s", name,
                    as_text ? "strings" : "arrays of token ids");
    if (json_array_size(list) > (size_t)s->max_sentences)
        return fail(http_status, 413, err, err_len,
                    "%s: %zu sentences, more than this server takes in one request (%d)", name,
                    json_array_size(list), s->max_sentences);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item) {
        if (as_text ? !json_is_string(item) : !json_is_array(item))
            return fail(http_status, 400, err, err_len, "%s[%zu]: must be %s", name, i,
                        as_text ? "a string" : "an array of token ids");
    }
    return (long)json_array_size(list);
}

/* Sentence i of list `name` into ids (grown as needed): text as the model
 * reads it (cm->form: text, or pieces), else ids. A target (is_target) may
 * be empty, and BOS goes before it within max_positions. */
static int read_sentence(json_t *list, const char *name, size_t i, int as_text,
                         const cli_model *cm, int is_target, size_t max_len, cli_ids *ids,
                         int *http_status, char *err, size_t err_len)
{
    json_t *item = json_array_get(list, i);
    char why[256];
    int vocab_size = is_target ? cm->cfg->tgt_vocab_size : cm->cfg->src_vocab_size;
    ids->len = 0;
    if (as_text) {
        const char *text = json_string_value(item);
        if (cli_parse_side(cm, is_target ? TESSERA_TARGET : TESSERA_SOURCE, text,
                           json_string_length(item), ids, why, sizeof why) != 0)
            return fail(http_status, 400, err, err_len, "%s[%zu]: %s", name, i, why);
    } else {
        size_t t;
        json_t *id;
        json_array_foreach(item, t, id) {
            if (!json_is_integer(id) || json_integer_value(id) < 0 ||
                json_integer_value(id) >= vocab_size)
                return fail(http_status, 400, err, err_len,
                            "%s[%zu][%zu]: must be a token id in [0, %d)", name, i, t,
                            vocab_size);
            if (ids->len == ids->cap) {
                size_t cap = ids->cap ? 2 * ids->cap : 64;
                int32_t *grown = realloc(ids->ids, cap * sizeof *grown);
                if (!grown)
                    return fail(http_status, 500, err, err_len, "out of memory");
                ids->ids = grown;
                ids->cap = cap;
            }
            ids->ids[ids->len++] = (int32_t)json_integer_value(id);
        }
    }
    if (ids->len == 0 && !is_target)
        return fail(http_status, 400, err, err_len, "%s[%zu]: empty sentence", name, i);
    if (ids->len > max_len && !is_target)
        return fail(http_status, 400, err, err_len,
                    "%s[%zu]: %zu tokens, more than max_positions (%zu)", name, i, ids->len,
                    max_len);
    if (ids->len > max_len) /* a target: BOS goes before it */
        return fail(http_status, 400, err, err_len,
                    "%s[%zu]: %zu tokens: BOS + target is longer than max_positions (%zu)", name,
                    i, ids->len, max_len + 1);
    return 0;
}

/* The sentence lists of each kind: sources, and the second list (score's
 * targets, translate's target prefixes), as ids or as text. */
static const char *const list_fields[2][4] = {
    [SRV_TRANSLATE] = {"source", "text", "target_prefix", "target_prefix_text"},
    [SRV_SCORE] = {"source", "text", "target", "target_text"},
};

static int known_fields(json_t *body, srv_kind kind, int *http_status, char *err, size_t err_len)
{
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        int known = 0;
        for (size_t i = 0; i < 4 && !known; i++)
            known = strcmp(key, list_fields[kind][i]) == 0;
        for (size_t i = 0; kind == SRV_TRANSLATE && i < N_DECODING_FIELDS && !known; i++)
            known = strcmp(key, decoding_fields[i].name) == 0;
        known = known || strcmp(key, "source_lang") == 0 || strcmp(key, "target_lang") == 0;
        if (!known)
            return fail(http_status, 400, err, err_len, "unknown field '%.64s'", key);
    }
    return 0;
}

/* One decoding field of the request into its place in *o: its JSON type
 * checked here, its value by the library. */
static int read_field(json_t *body, const struct decoding_field *f, tessera_translate_options *o,
                      int *http_status, char *err, size_t err_len)
{
    json_t *v = json_object_get(body, f->name);
    char *at = (char *)o + f->offset;
    if (!v)
        return 0;
    json_int_t whole = json_is_integer(v) ? json_integer_value(v) : 0;
    switch (f->type) {
    case WHOLE:
        if (!json_is_integer(v) || whole < INT_MIN || whole > INT_MAX)
            return fail(http_status, 400, err, err_len, "%s: must be a whole number", f->name);
        *(int *)at = (int)whole;
        return 0;
    case NUMBER:
        if (!json_is_number(v))
            return fail(http_status, 400, err, err_len, "%s: must be a number", f->name);
        *(float *)at = (float)json_number_value(v);
        return 0;
    case BOOLEAN:
        if (!json_is_boolean(v))
            return fail(http_status, 400, err, err_len, "%s: must be true or false", f->name);
        *(int *)at = json_is_true(v);
        return 0;
    case SEED:
        if (!json_is_integer(v) || whole < 0)
            return fail(http_status, 400, err, err_len,
                        "%s: must be a whole number in [0, 2^63 - 1]", f->name);
        *(uint64_t *)at = (uint64_t)whole;
        return 0;
    }
    return 0;
}

/* The decoding options of a translate request, checked as the library
 * checks them (the same messages as the command's, with the request's
 * field names), then against the server's caps. */
static int read_options(json_t *body, const tessera_config *cfg, srv_key *key, int *http_status,
                        char *err, size_t err_len)
{
    tessera_translate_options *o = &key->decoding;
    for (size_t i = 0; i < N_DECODING_FIELDS; i++)
        if (read_field(body, &decoding_fields[i], o, http_status, err, err_len) != 0)
            return -1;
    char why[512];
    if (tessera_translate_options_check(cfg, o, why, sizeof why) != 0)
        return fail(http_status, 400, err, err_len, "%s", why);
    if (o->beam > SERVER_BEAM_MAX)
        return fail(http_status, 400, err, err_len,
                    "beam: %d is more than this server takes (%d)", o->beam, SERVER_BEAM_MAX);
    if (o->max_len > SERVER_MAX_LEN_MAX)
        return fail(http_status, 400, err, err_len,
                    "max_len: %d is more than this server takes (%d)", o->max_len,
                    SERVER_MAX_LEN_MAX);
    return 0;
}

/* The model's own spelling of language `name` (it outlives the request's
 * body), which the caller has checked the model has. */
static const char *model_language(const tessera_model *m, const char *name)
{
    const char *own;
    for (size_t i = 0; name && (own = tessera_model_language(m, i, NULL)) != NULL; i++)
        if (strcmp(own, name) == 0)
            return own;
    return NULL;
}

/* A request's source_lang and target_lang (both kinds), checked as the
 * command's --source-lang and --target-lang are. */
static int read_languages(json_t *body, const tessera_model *m, srv_key *key, int *http_status,
                          char *err, size_t err_len)
{
    static const char *const names[2] = {"source_lang", "target_lang"};
    const char *given[2] = {NULL, NULL};
    for (int side = 0; side < 2; side++) {
        json_t *v = json_object_get(body, names[side]);
        if (v && !json_is_string(v))
            return fail(http_status, 400, err, err_len, "%s: must be a string", names[side]);
        given[side] = v ? json_string_value(v) : NULL;
    }
    if (!m && !given[0] && !given[1]) /* the fuzz target's model is its config alone */
        return 0;
    char why[512];
    if (tessera_model_check_languages(m, given[0], given[1], 1, why, sizeof why) != 0)
        return fail(http_status, 400, err, err_len, "%s", why);
    key->decoding.source_lang = model_language(m, given[0]);
    key->decoding.target_lang = model_language(m, given[1]);
    return 0;
}

/* Sentence i alone within the workers' memory budget (a model the fuzz
 * target makes has no runtimes: nothing to check); else 413, as a body too
 * large: the same request can never be answered. */
static int check_budget(const cli_model *cm, const srv_job *job, const char *name, size_t i,
                        int *http_status, char *err, size_t err_len)
{
    if (cm->n_runtimes == 0)
        return 0;
    const tessera_runtime *rt = cm->runtimes[0];
    size_t need, len = job->src[i].len;
    if (job->key.kind == SRV_TRANSLATE) {
        need = tessera_translate_memory(rt, cm->model, 1, len, &job->key.decoding);
    } else {
        need = tessera_score_memory(rt, cm->model, 1, len, job->tgt[i].len);
    }
    size_t budget = tessera_runtime_memory_budget(rt);
    if (need <= budget)
        return 0;
    return fail(http_status, 413, err, err_len,
                "%s[%zu]: %zu tokens need %.1f MiB of working memory, more than the memory "
                "budget (%.1f MiB; --max-memory)", name, i, len, (double)need / (1 << 20),
                (double)budget / (1 << 20));
}

/* Where a request's sentences are: its sources, and its second list
 * (score's targets, translate's target prefixes), both ids or both text. */
typedef struct lists {
    const char *src, *second;
    int as_text, has_second;
    size_t n;
} lists;

static int find_lists(json_t *root, srv_kind kind, const cli_model *cm, const srv_settings *s,
                      lists *l, int *http_status, char *err, size_t err_len)
{
    const char *const *names = list_fields[kind];
    l->as_text = json_object_get(root, "text") != NULL;
    if (l->as_text && json_object_get(root, "source"))
        return fail(http_status, 400, err, err_len, "give either source (ids) or text, not both");
    if (l->as_text && cm->form == CLI_IDS)
        return fail(http_status, 400, err, err_len,
                    "text: this model has neither tokenizers nor vocab.src.txt / vocab.tgt.txt; "
                    "send source ids");
    l->src = names[l->as_text];
    l->second = names[2 + l->as_text];
    const char *other = names[3 - l->as_text];
    if (json_object_get(root, other))
        return fail(http_status, 400, err, err_len, "%s: goes with %s, not with %s", other,
                    l->as_text ? "source ids" : "text", l->as_text ? "text" : "source ids");
    long n = sentence_list(root, l->src, l->as_text, s, http_status, err, err_len);
    if (n == 0)
        return fail(http_status, 400, err, err_len, "missing field: source (token ids) or text");
    if (n < 0)
        return -1;
    long n_second = sentence_list(root, l->second, l->as_text, s, http_status, err, err_len);
    if (n_second < 0)
        return -1;
    if (n_second == 0 && kind == SRV_SCORE)
        return fail(http_status, 400, err, err_len, "missing field: %s", l->second);
    if (n_second > 0 && n_second != n)
        return fail(http_status, 400, err, err_len, "%s: %ld sentences for %ld in %s",
                    l->second, n_second, n, l->src);
    l->n = (size_t)n;
    l->has_second = n_second > 0;
    return 0;
}

/* Sentence i of the sources (second 0) or of the second list into ids; a
 * target prefix is also checked as the library will check it. */
static int read_one(json_t *root, const lists *l, int second, size_t i, const cli_model *cm,
                    const srv_key *key, cli_ids *ids, int *http_status, char *err, size_t err_len)
{
    const char *name = second ? l->second : l->src;
    size_t max_len = (size_t)cm->cfg->max_positions - (second ? 1 : 0);
    if (read_sentence(json_object_get(root, name), name, i, l->as_text, cm, second, max_len, ids,
                      http_status, err, err_len) != 0)
        return -1;
    if (!second || key->kind != SRV_TRANSLATE)
        return 0;
    tessera_tokens prefix = {ids->ids, ids->len};
    char why[512];
    if (tessera_target_prefix_check(cm->cfg, &key->decoding, &prefix, why, sizeof why) != 0)
        return fail(http_status, 400, err, err_len, "%s[%zu]: %s", name, i, why);
    return 0;
}

/* The job's sentences: checked and counted, then copied into one array
 * (job->ids) that src and the second list point into. */
static int read_sentences(json_t *root, const lists *l, const cli_model *cm, srv_job *job,
                          tessera_tokens *second, int *http_status, char *err, size_t err_len)
{
    cli_ids ids = {0};
    size_t total = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < job->n; i++)
        for (int k = 0; rc == 0 && k < 1 + l->has_second; k++) {
            rc = read_one(root, l, k, i, cm, &job->key, &ids, http_status, err, err_len);
            total += ids.len;
            job->src_tokens += k == 0 ? ids.len : 0;
        }
    if (rc == 0 && !(job->ids = malloc((total + 1) * sizeof *job->ids)))
        rc = fail(http_status, 500, err, err_len, "out of memory for the request");
    size_t at = 0;
    for (size_t i = 0; rc == 0 && i < job->n; i++)
        for (int k = 0; k < 1 + l->has_second; k++) {
            read_one(root, l, k, i, cm, &job->key, &ids, http_status, err, err_len);
            memcpy(job->ids + at, ids.ids, ids.len * sizeof *ids.ids);
            (k == 0 ? job->src : second)[i] = (tessera_tokens){job->ids + at, ids.len};
            at += ids.len;
        }
    free(ids.ids);
    return rc;
}

srv_job *srv_job_parse(srv_kind kind, const char *body, size_t len, const cli_model *cm,
                       const srv_settings *s, int *http_status, char *err, size_t err_len)
{
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    srv_job *job = NULL;
    if (!root) {
        fail(http_status, 400, err, err_len, "body: not JSON (line %d, column %d: %s)", jerr.line,
             jerr.column, jerr.text);
        return NULL;
    }
    srv_key key = {.kind = kind};
    tessera_translate_options_init(&key.decoding);
    key.decoding.shortlist = cm->shortlist; /* the server's, for every request */
    lists l;
    if (!json_is_object(root)) {
        fail(http_status, 400, err, err_len, "body: must be a JSON object");
        goto fail;
    }
    if (known_fields(root, kind, http_status, err, err_len) != 0 ||
        (kind == SRV_TRANSLATE &&
         read_options(root, cm->cfg, &key, http_status, err, err_len) != 0) ||
        read_languages(root, cm->model, &key, http_status, err, err_len) != 0 ||
        find_lists(root, kind, cm, s, &l, http_status, err, err_len) != 0)
        goto fail;

    job = calloc(1, sizeof *job);
    if (!job)
        goto oom;
    job->key = key;
    job->text = l.as_text;
    job->n = l.n;
    job->src = calloc(job->n, sizeof *job->src);
    if (l.has_second)
        *(kind == SRV_SCORE ? &job->tgt : &job->prefix) = calloc(job->n, sizeof *job->src);
    if (!job->src || (l.has_second && !job->tgt && !job->prefix))
        goto oom;
    if (read_sentences(root, &l, cm, job, kind == SRV_SCORE ? job->tgt : job->prefix, http_status,
                       err, err_len) != 0)
        goto fail;
    for (size_t i = 0; i < job->n; i++)
        if (check_budget(cm, job, l.src, i, http_status, err, err_len) != 0)
            goto fail;
    if (kind == SRV_TRANSLATE)
        job->hyps = calloc(job->n * (size_t)key.decoding.n_best, sizeof *job->hyps);
    else
        job->logprobs = calloc(job->n, sizeof *job->logprobs);
    if (!job->hyps && !job->logprobs)
        goto oom;
    json_decref(root);
    return job;
oom:
    fail(http_status, 500, err, err_len, "out of memory for the request");
fail:
    json_decref(root);
    srv_job_free(job);
    return NULL;
}

void srv_job_free(srv_job *job)
{
    if (!job)
        return;
    if (job->hyps)
        tessera_hypotheses_free(job->hyps, job->n * (size_t)job->key.decoding.n_best);
    if (job->logprobs)
        tessera_scores_free(job->logprobs, job->n);
    free(job->src);
    free(job->tgt);
    free(job->prefix);
    free(job->ids);
    free(job);
}

/* A score as JSON: a number, or null for -inf (a hypothesis that does not
 * exist, when the vocabulary is smaller than the beam), which JSON lacks. */
static json_t *score_json(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* {"ids": [...], "score": s} of one hypothesis, with return_alignments its
 * "alignment" (the source position of each id), and for a text request its
 * "text" (a model with tokenizers) or "tokens" (its pieces). */
static json_t *hypothesis_json(const tessera_hypothesis *h, const cli_model *cm,
                               const srv_job *job)
{
    json_t *o = json_object(), *ids = json_array();
    if (!o || !ids) {
        json_decref(o);
        json_decref(ids);
        return NULL;
    }
    int bad = json_object_set_new(o, "ids", ids) != 0;
    for (size_t t = 0; !bad && t < h->len; t++)
        bad = json_array_append_new(ids, json_integer(h->ids[t])) != 0;
    bad = bad || json_object_set_new(o, "score", score_json(h->score)) != 0;
    if (!bad && job->key.decoding.return_alignments) {
        json_t *alignment = json_array();
        bad = json_object_set_new(o, "alignment", alignment) != 0;
        for (size_t t = 0; !bad && h->alignment && t < h->len; t++)
            bad = json_array_append_new(alignment, json_integer(h->alignment[t])) != 0;
    }
    if (!bad && job->text) {
        cli_line l = {0};
        char why[256];
        bad = cli_line_side(&l, cm, TESSERA_TARGET, h->ids, h->len, why, sizeof why) != 0 ||
              json_object_set_new(o, cm->form == CLI_TEXT ? "text" : "tokens",
                                  json_string(l.text ? l.text : "")) != 0;
        cli_line_free(&l);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *srv_job_answer(const srv_job *job, const cli_model *cm)
{
    json_t *root = json_object(), *list = json_array();
    int bad = !root || !list;
    if (!bad)
        bad = json_object_set_new(root, job->key.kind == SRV_TRANSLATE ? "translations" : "scores",
                                  list) != 0;
    else
        json_decref(list);
    size_t K = (size_t)job->key.decoding.n_best;
    for (size_t i = 0; !bad && i < job->n; i++) {
        json_t *item;
        if (job->key.kind == SRV_TRANSLATE) {
            item = hypothesis_json(&job->hyps[i * K], cm, job);
            if (item && K > 1) {
                json_t *all = json_array();
                bad = !all || json_object_set_new(item, "n_best", all) != 0;
                for (size_t k = 0; !bad && k < K; k++) {
                    json_t *h = hypothesis_json(&job->hyps[i * K + k], cm, job);
                    bad = !h || json_array_append_new(all, h) != 0;
                }
            }
        } else {
            item = json_array();
            for (size_t t = 0; item && !bad && t <= job->tgt[i].len; t++)
                bad = json_array_append_new(item, score_json(job->logprobs[i][t])) != 0;
        }
        bad = bad || !item || json_array_append_new(list, item) != 0;
    }
    /* 9 significant digits: the CLI's %.9g, so answers match its output. */
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(9));
    json_decref(root);
    return text;
}

char *srv_error_json(const char *kind, const char *message)
{
    json_t *root = json_pack("{s:{s:s,s:s}}", "error", "kind", kind, "message", message);
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}
