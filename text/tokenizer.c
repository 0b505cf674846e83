/* A model's tokenizers (text/tokenizer.h). */
#include "text/tokenizer.h"

#include <stdio.h>
#include <string.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/memory.h"
#include "text/vocabulary.h"

/* Larger than any SentencePiece model (OPUS-MT's are under 1 MB): a file
 * past it is not one, and is not read into memory. */
#define SPM_FILE_MAX ((off_t)256 << 20)

static int load_spm(const char *dir, const char *file, tsr_spm **spm, char *err, size_t err_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    char *bytes;
    size_t len;
    int rc = tsr_read_regular(path, SPM_FILE_MAX, &bytes, &len, err, err_len);
    if (rc != 0)
        return tsr_fail_prefix(rc, err, err_len, "config.json's tokenizer");
    rc = tsr_spm_load(path, bytes, len, spm, err, err_len);
    tsr_free(bytes);
    return rc;
}

/* The ids a side maps unknown pieces to and leaves out of text. */
static void set_ids(tsr_text_side *side, const tessera_config *c, tessera_side s)
{
    /* tessera_config_unk_id's rule (core/ is above text/). */
    side->unk_id = s == TESSERA_SOURCE && c->has_source_unk_id ? c->source_unk_id : c->unk_id;
    /* A decoder that starts from zeros (Marian) has no bos: its bos_id is a
     * placeholder (often <unk>'s), not a token to drop. */
    side->dropped[0] = c->decoder_start == TESSERA_START_BOS ? c->bos_id : c->eos_id;
    side->dropped[1] = c->eos_id;
    side->dropped[2] = c->pad_id;
}

static int load_side(const char *dir, const tessera_config *c, tessera_side s,
                     tsr_model_text *t, char *err, size_t err_len)
{
    const char *file = s == TESSERA_SOURCE ? c->source_tokenizer : c->target_tokenizer;
    if (!file[0])
        return 0;
    tsr_text_side *side = &t->side[s];
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, s == TESSERA_SOURCE ? "vocab.src.txt" : "vocab.tgt.txt");
    TSR_TRY(tessera_vocabulary_load(path,
                                    (size_t)(s == TESSERA_SOURCE ? c->src_vocab_size
                                                                 : c->tgt_vocab_size),
                                    &side->vocab, err, err_len));
    side->file = file;
    set_ids(side, c, s);
    if (!tsr_spm_available())
        return 0; /* the vocabulary still serves ids and pieces */
    if (s == TESSERA_TARGET && t->owned[TESSERA_SOURCE] &&
        strcmp(file, c->source_tokenizer) == 0) {
        side->spm = t->owned[TESSERA_SOURCE]; /* one model shared by both sides */
        return 0;
    }
    TSR_TRY(load_spm(dir, file, &t->owned[s], err, err_len));
    side->spm = t->owned[s];
    return 0;
}

int tsr_model_text_load(const char *dir, const tessera_config *c, tsr_model_text **out,
                        char *err, size_t err_len)
{
    *out = NULL;
    if (!c->source_tokenizer[0] && !c->target_tokenizer[0])
        return 0;
    tsr_model_text *t = tsr_calloc(1, sizeof *t);
    if (!t)
        return tsr_fail_oom(err, err_len, "out of memory loading the tokenizers");
    int rc = load_side(dir, c, TESSERA_SOURCE, t, err, err_len);
    if (rc == 0)
        rc = load_side(dir, c, TESSERA_TARGET, t, err, err_len);
    if (rc != 0) {
        tsr_model_text_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int tsr_model_text_adopt(tessera_vocabulary *vocab[2], const tessera_config *c,
                         tsr_model_text **out, char *err, size_t err_len)
{
    *out = tsr_calloc(1, sizeof **out);
    if (!*out) {
        if (vocab[1] != vocab[0])
            tessera_vocabulary_free(vocab[1]);
        tessera_vocabulary_free(vocab[0]);
        return tsr_fail_oom(err, err_len, "out of memory holding the vocabularies");
    }
    for (int s = 0; s < 2; s++) {
        (*out)->side[s].vocab = vocab[s];
        (*out)->side[s].file = "the vocabulary";
        set_ids(&(*out)->side[s], c, (tessera_side)s);
    }
    return 0;
}

void tsr_model_text_free(tsr_model_text *t)
{
    if (!t)
        return;
    if (t->side[1].vocab != t->side[0].vocab)
        tessera_vocabulary_free(t->side[1].vocab);
    tessera_vocabulary_free(t->side[0].vocab);
    for (int s = 0; s < 2; s++)
        tsr_spm_free(t->owned[s]);
    tsr_free(t);
}

/* The tokens being gathered by tsr_text_tokenize. */
typedef struct gather {
    const tsr_text_side *side;
    tessera_tokenized *out;
    size_t cap, pieces_cap; /* out->ids' room, out->pieces' */
    int with_pieces;
} gather;

static int push(void *arg, const char *piece, size_t len)
{
    gather *g = arg;
    tessera_tokenized *out = g->out;
    if (tsr_grow(&out->ids, &g->cap, out->len + 1, sizeof *out->ids) != 0 ||
        (g->with_pieces &&
         tsr_grow(&out->pieces, &g->pieces_cap, out->len + 1, sizeof *out->pieces) != 0))
        return TESSERA_ERR_NOMEM;
    if (g->with_pieces) {
        char *copy = tsr_malloc(len + 1);
        if (!copy)
            return TESSERA_ERR_NOMEM;
        memcpy(copy, piece, len);
        copy[len] = '\0';
        out->pieces[out->len] = copy;
    }
    int32_t id = tsr_vocabulary_find(g->side->vocab, piece, len);
    out->ids[out->len++] = id >= 0 ? id : g->side->unk_id;
    return 0;
}

/* The length of a leading ">>tag<<" (1 to 32 of A-Z a-z 0-9 _ -), or 0. */
static size_t tag_length(const char *text, size_t len)
{
    if (len < 5 || text[0] != '>' || text[1] != '>')
        return 0;
    for (size_t i = 2; i < len && i < 2 + 33; i++) {
        char c = text[i];
        if (c == '<')
            return i > 2 && i + 1 < len && text[i + 1] == '<' ? i + 2 : 0;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 0;
}

int tsr_text_tokenize(const tsr_text_side *side, const char *text, size_t len, int with_pieces,
                      tessera_tokenized *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    size_t bad = tsr_utf8_invalid_at(text, len);
    if (bad < len)
        return tsr_fail(err, err_len, text[bad] ? "invalid UTF-8 at byte %zu"
                                                : "a NUL byte at byte %zu", bad + 1);
    if (!side->spm)
        return tsr_fail(err, err_len,
                        "%s: this tessera was built without SentencePiece: give ids or pieces",
                        side->file);
    gather g = {.side = side, .out = out, .with_pieces = with_pieces};
    int rc = 0;
    size_t tag = tag_length(text, len);
    if (tag && tsr_vocabulary_find(side->vocab, text, tag) >= 0) {
        rc = push(&g, text, tag);
        text += tag;
        len -= tag;
    }
    if (rc == 0)
        rc = tsr_spm_encode(side->spm, text, len, push, &g, err, err_len);
    if (rc == TESSERA_ERR_NOMEM)
        tsr_fail_oom(err, err_len, "out of memory tokenizing %zu bytes", len);
    if (rc != 0)
        tessera_tokenized_free(out);
    return rc;
}

int tsr_text_decode(const tsr_text_side *side, const char *const *pieces, size_t n, char **text,
                    char *err, size_t err_len)
{
    size_t len;
    if (!side->spm)
        return tsr_fail(err, err_len,
                        "%s: this tessera was built without SentencePiece: ask for ids or pieces",
                        side->file);
    TSR_TRY(tsr_spm_decode(side->spm, pieces, n, text, &len, err, err_len));
    /* A byte piece <0x00> decodes to a NUL: a space, so that the text is all
     * there in a C string. */
    for (size_t i = 0; i < len; i++)
        if ((*text)[i] == '\0')
            (*text)[i] = ' ';
    return 0;
}
