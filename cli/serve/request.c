/* tessera serve: request bodies (JSON) checked into jobs, and jobs answered
 * as JSON. Every refusal names the field and, for a sentence, its index:
 * "source[2][5]: id 99 out of range [0, 36)". */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/serve/serve.h"

/* Limits of the decoding options a request may ask for. A server takes them
 * from people it does not know, so they are tighter than the CLI's. */
enum { MAX_BEAM = 64, MAX_TARGET_LEN = 1024 };

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

/* An optional whole-number field in [lo, hi]; absent leaves *out. */
static int int_field(json_t *body, const char *name, long lo, long hi, int *out, int *http_status,
                     char *err, size_t err_len)
{
    json_t *v = json_object_get(body, name);
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(http_status, 400, err, err_len, "%s: must be a whole number in [%ld, %ld]",
                    name, lo, hi);
    *out = (int)json_integer_value(v);
    return 0;
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

static const char *const translate_fields[] = {"source", "text", "beam", "max_len",
                                               "length_penalty", "n_best", NULL};
static const char *const score_fields[] = {"source", "text", "target", "target_text", NULL};

static int known_fields(json_t *body, const char *const *fields, int *http_status, char *err,
                        size_t err_len)
{
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v) {
        int known = 0;
        for (size_t i = 0; fields[i] && !known; i++)
            known = strcmp(key, fields[i]) == 0;
        if (!known)
            return fail(http_status, 400, err, err_len, "unknown field '%.64s'", key);
    }
    return 0;
}

/* The decoding options of a translate request, checked. */
static int read_options(json_t *body, srv_key *key, int *http_status, char *err, size_t err_len)
{
    tessera_translate_options d;
    tessera_translate_options_init(&d);
    key->beam = d.beam;
    key->max_len = d.max_len;
    key->n_best = 1;
    key->length_penalty = d.length_penalty;
    if (int_field(body, "beam", 1, MAX_BEAM, &key->beam, http_status, err, err_len) ||
        int_field(body, "max_len", 0, MAX_TARGET_LEN, &key->max_len, http_status, err, err_len) ||
        int_field(body, "n_best", 1, key->beam, &key->n_best, http_status, err, err_len))
        return -1;
    json_t *lp = json_object_get(body, "length_penalty");
    if (lp) {
        double v = json_number_value(lp);
        if (!json_is_number(lp) || !(v >= 0.0 && v <= 100.0))
            return fail(http_status, 400, err, err_len,
                        "length_penalty: must be a number in [0, 100]");
        key->length_penalty = (float)v;
    }
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
        tessera_translate_options o;
        tessera_translate_options_init(&o);
        o.beam = job->key.beam;
        o.n_best = job->key.n_best;
        o.max_len = job->key.max_len;
        need = tessera_translate_memory(rt, cm->model, 1, len, &o);
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

srv_job *srv_job_parse(srv_kind kind, const char *body, size_t len, const cli_model *cm,
                       const srv_settings *s, int *http_status, char *err, size_t err_len)
{
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    srv_job *job = NULL;
    cli_ids ids = {0};
    const tessera_config *cfg = cm->cfg;
    if (!root) {
        fail(http_status, 400, err, err_len, "body: not JSON (line %d, column %d: %s)", jerr.line,
             jerr.column, jerr.text);
        return NULL;
    }
    srv_key key = {.kind = kind};
    const char *src_name = "source", *tgt_name = "target";
    int as_text = 0;
    long n = 0, n_tgt = 0;
    if (!json_is_object(root)) {
        fail(http_status, 400, err, err_len, "body: must be a JSON object");
        goto fail;
    }
    if (known_fields(root, kind == SRV_TRANSLATE ? translate_fields : score_fields, http_status,
                     err, err_len) != 0)
        goto fail;
    if (kind == SRV_TRANSLATE && read_options(root, &key, http_status, err, err_len) != 0)
        goto fail;
    if (json_object_get(root, "text")) {
        if (json_object_get(root, "source")) {
            fail(http_status, 400, err, err_len, "give either source (ids) or text, not both");
            goto fail;
        }
        if (cm->form == CLI_IDS) {
            fail(http_status, 400, err, err_len,
                 "text: this model has neither tokenizers nor vocab.src.txt / vocab.tgt.txt; "
                 "send source ids");
            goto fail;
        }
        as_text = 1;
        src_name = "text";
        tgt_name = "target_text";
    } else if (kind == SRV_SCORE && json_object_get(root, "target_text")) {
        fail(http_status, 400, err, err_len, "target_text: goes with text, not with source ids");
        goto fail;
    }
    n = sentence_list(root, src_name, as_text, s, http_status, err, err_len);
    if (n == 0)
        fail(http_status, 400, err, err_len, "missing field: source (token ids) or text");
    if (n <= 0)
        goto fail;
    if (kind == SRV_SCORE) {
        n_tgt = sentence_list(root, tgt_name, as_text, s, http_status, err, err_len);
        if (n_tgt == 0)
            fail(http_status, 400, err, err_len, "missing field: %s", tgt_name);
        if (n_tgt <= 0)
            goto fail;
        if (n_tgt != n) {
            fail(http_status, 400, err, err_len, "%s: %ld sentences for %ld in %s", tgt_name,
                 n_tgt, n, src_name);
            goto fail;
        }
    }

    job = calloc(1, sizeof *job);
    if (!job)
        goto oom;
    job->key = key;
    job->text = as_text;
    job->n = (size_t)n;
    job->src = calloc(job->n, sizeof *job->src);
    job->tgt = kind == SRV_SCORE ? calloc(job->n, sizeof *job->tgt) : NULL;
    if (!job->src || (kind == SRV_SCORE && !job->tgt))
        goto oom;
    pthread_cond_init(&job->done, NULL);
    /* Two passes: check and count, then copy into one array. */
    size_t total = 0, max_src = (size_t)cfg->max_positions, max_tgt = max_src - 1;
    json_t *src_list = json_object_get(root, src_name), *tgt_list = json_object_get(root, tgt_name);
    for (size_t i = 0; i < job->n; i++) {
        if (read_sentence(src_list, src_name, i, as_text, cm, 0, max_src, &ids, http_status,
                          err, err_len) != 0)
            goto fail;
        total += ids.len;
        job->src_tokens += ids.len;
        if (kind == SRV_SCORE) {
            if (read_sentence(tgt_list, tgt_name, i, as_text, cm, 1, max_tgt, &ids, http_status,
                              err, err_len) != 0)
                goto fail;
            total += ids.len;
        }
    }
    job->ids = malloc((total + 1) * sizeof *job->ids);
    if (!job->ids)
        goto oom;
    size_t at = 0;
    for (size_t i = 0; i < job->n; i++) {
        read_sentence(src_list, src_name, i, as_text, cm, 0, max_src, &ids, http_status, err,
                      err_len);
        memcpy(job->ids + at, ids.ids, ids.len * sizeof *ids.ids);
        job->src[i] = (tessera_tokens){job->ids + at, ids.len};
        at += ids.len;
        if (kind == SRV_SCORE) {
            read_sentence(tgt_list, tgt_name, i, as_text, cm, 1, max_tgt, &ids, http_status,
                          err, err_len);
            memcpy(job->ids + at, ids.ids, ids.len * sizeof *ids.ids);
            job->tgt[i] = (tessera_tokens){job->ids + at, ids.len};
            at += ids.len;
        }
    }
    for (size_t i = 0; i < job->n; i++)
        if (check_budget(cm, job, src_name, i, http_status, err, err_len) != 0)
            goto fail;
    if (kind == SRV_TRANSLATE)
        job->hyps = calloc(job->n * (size_t)key.n_best, sizeof *job->hyps);
    else
        job->logprobs = calloc(job->n, sizeof *job->logprobs);
    if (!job->hyps && !job->logprobs)
        goto oom;
    free(ids.ids);
    json_decref(root);
    return job;
oom:
    fail(http_status, 500, err, err_len, "out of memory for the request");
fail:
    free(ids.ids);
    json_decref(root);
    srv_job_free(job);
    return NULL;
}

void srv_job_free(srv_job *job)
{
    if (!job)
        return;
    if (job->hyps)
        tessera_hypotheses_free(job->hyps, job->n * (size_t)job->key.n_best);
    if (job->logprobs)
        tessera_scores_free(job->logprobs, job->n);
    if (job->src)
        pthread_cond_destroy(&job->done);
    free(job->src);
    free(job->tgt);
    free(job->ids);
    free(job);
}

/* A score as JSON: a number, or null for -inf (a hypothesis that does not
 * exist, when the vocabulary is smaller than the beam), which JSON lacks. */
static json_t *score_json(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* {"ids": [...], "score": s} of one hypothesis, and for a text request its
 * "text" (a model with tokenizers) or "tokens" (its pieces). */
static json_t *hypothesis_json(const tessera_hypothesis *h, const cli_model *cm, int as_text)
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
    if (!bad && as_text) {
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
    size_t K = (size_t)job->key.n_best;
    for (size_t i = 0; !bad && i < job->n; i++) {
        json_t *item;
        if (job->key.kind == SRV_TRANSLATE) {
            item = hypothesis_json(&job->hyps[i * K], cm, job->text);
            if (item && K > 1) {
                json_t *all = json_array();
                bad = !all || json_object_set_new(item, "n_best", all) != 0;
                for (size_t k = 0; !bad && k < K; k++) {
                    json_t *h = hypothesis_json(&job->hyps[i * K + k], cm, job->text);
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
