/* The public text calls (core/tessera.h, "Text"): tokenizing, detokenizing,
 * and translate and score on text, through the model's tokenizers
 * (text/tokenizer.h) and the id calls. */
#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/model.h"
#include "text/tokenizer.h"
#include "text/vocabulary.h"

static const char *side_name(tessera_side s) { return s == TESSERA_SOURCE ? "source" : "target"; }

/* The side's tokenizer, or a message saying why there is none. */
static int text_side(const tessera_model *m, tessera_side s, const char *call,
                     const tsr_text_side **out, char *err, size_t err_len)
{
    if (!m)
        return tsr_fail(err, err_len, "%s: the model is NULL", call);
    if (s != TESSERA_SOURCE && s != TESSERA_TARGET)
        return tsr_fail(err, err_len, "%s: side %d is neither TESSERA_SOURCE nor TESSERA_TARGET",
                        call, (int)s);
    if (!m->text || !m->text->side[s].vocab)
        return tsr_fail(err, err_len,
                        "%s: the model has no %s tokenizer (config.json key 'tokenizer', "
                        "docs/model-format.md section 3)",
                        call, side_name(s));
    *out = &m->text->side[s];
    return 0;
}

const tessera_vocabulary *tessera_model_vocabulary(const tessera_model *m, tessera_side s)
{
    if (!m || !m->text || (s != TESSERA_SOURCE && s != TESSERA_TARGET))
        return NULL;
    return m->text->side[s].vocab;
}

int tessera_model_has_tokenizer(const tessera_model *m, tessera_side s)
{
    return tessera_model_vocabulary(m, s) != NULL && m->text->side[s].spm != NULL;
}

int tessera_tokenize(const tessera_model *m, tessera_side s, const char *text, size_t len,
                     int with_pieces, tessera_tokenized *out, char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "tokenize: the result pointer is NULL");
    memset(out, 0, sizeof *out);
    if (!text && len > 0)
        return tsr_fail(err, err_len, "tokenize: the text is NULL");
    const tsr_text_side *side = NULL;
    TSR_TRY(text_side(m, s, "tokenize", &side, err, err_len));
    return tsr_text_tokenize(side, text ? text : "", len, with_pieces, out, err, err_len);
}

void tessera_tokenized_free(tessera_tokenized *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->pieces && i < t->len; i++)
        tsr_free(t->pieces[i]);
    tsr_free(t->pieces);
    tsr_free(t->ids);
    memset(t, 0, sizeof *t);
}

void tessera_text_free(char *text) { tsr_free(text); }

static int dropped(const tsr_text_side *side, int32_t id)
{
    return id == side->dropped[0] || id == side->dropped[1] || id == side->dropped[2];
}

/* The pieces of ids, the dropped ones left out, into a block of n pointers. */
static int detokenize_ids(const tsr_text_side *side, const int32_t *ids, size_t n, char **text,
                          char *err, size_t err_len)
{
    const char **pieces = tsr_malloc((n ? n : 1) * sizeof *pieces);
    if (!pieces)
        return tsr_fail_oom(err, err_len, "detokenize: out of memory for %zu pieces", n);
    size_t kept = 0;
    size_t size = tessera_vocabulary_size(side->vocab);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= size) {
            tsr_free(pieces);
            return tsr_fail(err, err_len, "detokenize: id %d (token %zu) is out of range [0, %zu)",
                            (int)ids[i], i + 1, size);
        }
        if (!dropped(side, ids[i]))
            pieces[kept++] = tsr_vocabulary_piece(side->vocab, ids[i]);
    }
    int rc = tsr_text_decode(side, pieces, kept, text, err, err_len);
    tsr_free(pieces);
    return rc;
}

int tessera_detokenize(const tessera_model *m, tessera_side s, const int32_t *ids, size_t n,
                       char **text, char *err, size_t err_len)
{
    if (!text)
        return tsr_fail(err, err_len, "detokenize: the result pointer is NULL");
    *text = NULL;
    if (!ids && n > 0)
        return tsr_fail(err, err_len, "detokenize: ids is NULL with %zu ids", n);
    const tsr_text_side *side = NULL;
    TSR_TRY(text_side(m, s, "detokenize", &side, err, err_len));
    return detokenize_ids(side, ids, n, text, err, err_len);
}

int tessera_detokenize_pieces(const tessera_model *m, tessera_side s, const char *const *pieces,
                              size_t n, char **text, char *err, size_t err_len)
{
    if (!text)
        return tsr_fail(err, err_len, "detokenize: the result pointer is NULL");
    *text = NULL;
    if (!pieces && n > 0)
        return tsr_fail(err, err_len, "detokenize: pieces is NULL with %zu pieces", n);
    const tsr_text_side *side = NULL;
    TSR_TRY(text_side(m, s, "detokenize", &side, err, err_len));
    const char **kept = tsr_malloc((n ? n : 1) * sizeof *kept);
    if (!kept)
        return tsr_fail_oom(err, err_len, "detokenize: out of memory for %zu pieces", n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!pieces[i]) {
            tsr_free(kept);
            return tsr_fail(err, err_len, "detokenize: piece %zu is NULL", i + 1);
        }
        /* As the command reads pieces: an unknown one is unk_id's. */
        int32_t id = tsr_vocabulary_find(side->vocab, pieces[i], strlen(pieces[i]));
        if (id < 0)
            id = side->unk_id;
        if (!dropped(side, id))
            kept[k++] = tsr_vocabulary_piece(side->vocab, id);
    }
    int rc = tsr_text_decode(side, kept, k, text, err, err_len);
    tsr_free(kept);
    return rc;
}

/* n texts tokenized on one side: tokens[i] views tok[i]'s ids. */
static int tokenize_all(const tsr_text_side *side, const char *const *texts, size_t n,
                        const char *what, size_t max_tokens, tessera_tokenized *tok,
                        tessera_tokens *tokens, char *err, size_t err_len)
{
    for (size_t i = 0; i < n; i++) {
        if (!texts[i])
            return tsr_fail(err, err_len, "%s %zu: the text is NULL", what, i + 1);
        size_t len = strlen(texts[i]);
        if (len / TESSERA_TEXT_BYTES_PER_TOKEN > max_tokens)
            return tsr_fail(err, err_len,
                            "%s %zu: %zu bytes of text, more than %zu tokens can hold "
                            "(max_positions; %d bytes a token)",
                            what, i + 1, len, max_tokens, TESSERA_TEXT_BYTES_PER_TOKEN);
        int rc = tsr_text_tokenize(side, texts[i], len, 0, &tok[i], err, err_len);
        if (rc != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err_len ? err : "");
            tsr_fail(err, err_len, "%s %zu: %s", what, i + 1, why);
            return rc;
        }
        tokens[i] = (tessera_tokens){tok[i].ids, tok[i].len};
    }
    return 0;
}

static void free_tokenized(tessera_tokenized *tok, size_t n)
{
    for (size_t i = 0; tok && i < n; i++)
        tessera_tokenized_free(&tok[i]);
    tsr_free(tok);
}

int tessera_translate_text(tessera_runtime *rt, const tessera_model *m, const char *const *src,
                           size_t n, const tessera_translate_options *o,
                           tessera_text_hypothesis **out, char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "translate: the result pointer is NULL");
    *out = NULL;
    if (!src && n > 0)
        return tsr_fail(err, err_len, "translate: src is NULL");
    tessera_translate_options defaults;
    if (!o) {
        tessera_translate_options_init(&defaults);
        o = &defaults;
    }
    const tsr_text_side *source = NULL, *target = NULL;
    TSR_TRY(text_side(m, TESSERA_SOURCE, "translate", &source, err, err_len));
    TSR_TRY(text_side(m, TESSERA_TARGET, "translate", &target, err, err_len));
    tessera_tokenized *tok = tsr_calloc(n ? n : 1, sizeof *tok);
    tessera_tokens *tokens = tsr_calloc(n ? n : 1, sizeof *tokens);
    int rc = tok && tokens ? 0 : tsr_fail_oom(err, err_len, "translate: out of memory");
    if (rc == 0)
        rc = tokenize_all(source, src, n, "sentence", (size_t)m->cfg.max_positions, tok, tokens,
                          err, err_len);
    tessera_hypothesis *h = NULL;
    if (rc == 0) {
        tessera_translate_options opts = *o;
        opts.allow_empty = 1;
        rc = tessera_translate_with(rt, m, tokens, n, &opts, &h, err, err_len);
    }
    free_tokenized(tok, n);
    tsr_free(tokens);
    if (rc != 0)
        return rc;
    size_t count = n * (size_t)o->n_best;
    tessera_text_hypothesis *th = tsr_calloc(count ? count : 1, sizeof *th);
    if (!th) {
        tessera_hypotheses_free(h, count);
        return tsr_fail_oom(err, err_len, "translate: out of memory for %zu texts", count);
    }
    for (size_t i = 0; i < count; i++)
        th[i].tokens = h[i]; /* the ids move into th: h's block alone is freed */
    tsr_free(h);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        rc = detokenize_ids(target, th[i].tokens.ids, th[i].tokens.len, &th[i].text, err, err_len);
        if (rc != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err_len ? err : "");
            tsr_fail(err, err_len, "sentence %zu: %s", i / (size_t)o->n_best + 1, why);
        }
    }
    if (rc != 0) {
        tessera_text_hypotheses_free(th, count);
        return rc;
    }
    *out = th;
    return 0;
}

void tessera_text_hypotheses_free(tessera_text_hypothesis *h, size_t count)
{
    if (!h)
        return;
    for (size_t i = 0; i < count; i++) {
        tsr_free(h[i].text);
        tsr_free(h[i].tokens.ids);
        tsr_free(h[i].tokens.alignment);
    }
    tsr_free(h);
}

int tessera_score_text(tessera_runtime *rt, const tessera_model *m, const char *const *src,
                       const char *const *tgt, size_t n, const tessera_score_options *o,
                       float ***out, char *err, size_t err_len)
{
    if (!out)
        return tsr_fail(err, err_len, "score: the result pointer is NULL");
    *out = NULL;
    if ((!src || !tgt) && n > 0)
        return tsr_fail(err, err_len, "score: %s is NULL", !src ? "src" : "tgt");
    const tsr_text_side *source = NULL, *target = NULL;
    TSR_TRY(text_side(m, TESSERA_SOURCE, "score", &source, err, err_len));
    TSR_TRY(text_side(m, TESSERA_TARGET, "score", &target, err, err_len));
    tessera_tokenized *tok = tsr_calloc(2 * (n ? n : 1), sizeof *tok);
    tessera_tokens *tokens = tsr_calloc(2 * (n ? n : 1), sizeof *tokens);
    int rc = tok && tokens ? 0 : tsr_fail_oom(err, err_len, "score: out of memory");
    if (rc == 0)
        rc = tokenize_all(source, src, n, "source", (size_t)m->cfg.max_positions, tok, tokens,
                          err, err_len);
    if (rc == 0)
        rc = tokenize_all(target, tgt, n, "target", (size_t)m->cfg.max_positions - 1, tok + n,
                          tokens + n, err, err_len);
    tessera_score_options defaults;
    tessera_score_options_init(&defaults);
    if (rc == 0)
        rc = tessera_score_with(rt, m, tokens, tokens + n, n, o ? o : &defaults, out, err,
                                err_len);
    free_tokenized(tok, 2 * n);
    tsr_free(tokens);
    return rc;
}
