/* Reading sentences from standard input and writing whole output lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int push_id(cli_ids *out, int32_t id)
{
    if (out->len == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 64;
        int32_t *ids = realloc(out->ids, cap * sizeof *ids);
        if (!ids)
            return -1;
        out->ids = ids;
        out->cap = cap;
    }
    out->ids[out->len++] = id;
    return 0;
}

/* A decimal id: digits only (a leading '-' is reported as out of range). */
static int parse_id(const char *s, size_t len, long *v)
{
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == len)
        return -1;
    long value = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (value < 1000000000L)
            value = value * 10 + (s[i] - '0');
    }
    *v = s[0] == '-' ? -value : value;
    return 0;
}

const char *cli_quote(const char *tok, size_t len, char *buf, size_t size)
{
    size_t used = 0;
    for (size_t i = 0; i < len && i < CLI_QUOTE_MAX && used + 5 < size; i++) {
        unsigned char c = (unsigned char)tok[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
            buf[used++] = (char)c;
        else
            used += (size_t)snprintf(buf + used, size - used, "\\x%02x", c);
    }
    if (len > CLI_QUOTE_MAX && used + 4 <= size) {
        memcpy(buf + used, "...", 3);
        used += 3;
    }
    buf[used] = '\0';
    return buf;
}

int cli_parse_sentence(const char *text, size_t len, const tessera_vocabulary *vocab,
                       int vocab_size, int unk_id, const char *side, cli_ids *out, char *err,
                       size_t err_len)
{
    out->len = 0;
    for (size_t i = 0; i < len;) {
        if (text[i] == ' ') {
            i++;
            continue;
        }
        size_t start = i;
        while (i < len && text[i] != ' ')
            i++;
        const char *tok = text + start;
        size_t tlen = i - start;
        long id;
        if (vocab) {
            int32_t found = tessera_vocabulary_find(vocab, tok, tlen);
            id = found >= 0 ? found : unk_id;
        } else if (parse_id(tok, tlen, &id) != 0) {
            char quoted[CLI_QUOTE_BUF];
            return cli_fail(err, err_len, "'%s' is not a %s token id",
                            cli_quote(tok, tlen, quoted, sizeof quoted), side);
        }
        if (id < 0 || id >= vocab_size) {
            /* The digits as typed: the parsed value saturates. */
            char quoted[CLI_QUOTE_BUF];
            return cli_fail(err, err_len, "%s token id %s out of range [0, %d)", side,
                            cli_quote(tok, tlen, quoted, sizeof quoted), vocab_size);
        }
        if (push_id(out, (int32_t)id) != 0)
            return cli_fail(err, err_len, "out of memory");
    }
    return 0;
}

/* Text through the side's tokenizer: its ids into out. */
static int parse_text(const cli_model *cm, tessera_side side, const char *text, size_t len,
                      cli_ids *out, char *err, size_t err_len)
{
    /* A sentence fits max_positions tokens (a target, with BOS), or is refused
     * before a huge line costs a huge tokenization. */
    size_t most = (size_t)cm->cfg->max_positions - (side == TESSERA_TARGET);
    if (len / TESSERA_TEXT_BYTES_PER_TOKEN > most)
        return cli_fail(err, err_len,
                        "%zu bytes of text, more than %zu tokens can hold (max_positions; %d "
                        "bytes a token)",
                        len, most, TESSERA_TEXT_BYTES_PER_TOKEN);
    tessera_tokenized t;
    if (tessera_tokenize(cm->model, side, text, len, 0, &t, err, err_len) != 0)
        return -1;
    out->len = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t.len; i++)
        rc = push_id(out, t.ids[i]);
    tessera_tokenized_free(&t);
    return rc == 0 ? 0 : cli_fail(err, err_len, "out of memory");
}

/* The vocabulary lines of `side` are read and written with: pieces' form
 * alone (a model may hold its vocabularies with lines of ids). */
static const tessera_vocabulary *line_vocabulary(const cli_model *cm, tessera_side side)
{
    if (cm->form != CLI_PIECES)
        return NULL;
    return side == TESSERA_SOURCE ? cm->src_vocab : cm->tgt_vocab;
}

int cli_parse_side(const cli_model *cm, tessera_side side, const char *text, size_t len,
                   cli_ids *out, char *err, size_t err_len)
{
    const tessera_config *cfg = cm->cfg;
    if (cm->form == CLI_TEXT)
        return parse_text(cm, side, text, len, out, err, err_len);
    int source = side == TESSERA_SOURCE;
    return cli_parse_sentence(text, len, line_vocabulary(cm, side),
                              source ? cfg->src_vocab_size : cfg->tgt_vocab_size,
                              tessera_config_unk_id(cfg, side),
                              source ? "source" : "target", out, err, err_len);
}

void cli_line_reset(cli_line *l)
{
    l->len = 0;
    if (l->text)
        l->text[0] = '\0';
}

static int line_append(cli_line *l, const char *s, size_t n)
{
    if (l->len + n + 2 > l->cap) {
        size_t cap = l->cap ? l->cap : 256;
        while (cap < l->len + n + 2)
            cap *= 2;
        char *text = realloc(l->text, cap);
        if (!text)
            return -1;
        l->text = text;
        l->cap = cap;
    }
    memcpy(l->text + l->len, s, n);
    l->len += n;
    l->text[l->len] = '\0';
    return 0;
}

int cli_line_printf(cli_line *l, const char *fmt, ...)
{
    char buf[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return -1;
    return line_append(l, buf, (size_t)n);
}

int cli_line_ids(cli_line *l, const int32_t *ids, size_t n, const tessera_vocabulary *vocab)
{
    for (size_t i = 0; i < n; i++) {
        if (i && line_append(l, " ", 1) != 0)
            return -1;
        if (vocab) {
            const char *tok = tessera_vocabulary_piece(vocab, ids[i]);
            if (line_append(l, tok, strlen(tok)) != 0)
                return -1;
        } else if (cli_line_printf(l, "%d", (int)ids[i]) != 0) {
            return -1;
        }
    }
    return 0;
}

int cli_line_side(cli_line *l, const cli_model *cm, tessera_side side, const int32_t *ids,
                  size_t n, char *err, size_t err_len)
{
    if (cm->form != CLI_TEXT)
        return cli_line_ids(l, ids, n, line_vocabulary(cm, side)) ==
                       0
                   ? 0
                   : cli_fail(err, err_len, "out of memory writing output");
    char *text;
    if (tessera_detokenize(cm->model, side, ids, n, &text, err, err_len) != 0)
        return -1;
    int rc = cli_line_text(l, text);
    tessera_text_free(text);
    return rc == 0 ? 0 : cli_fail(err, err_len, "out of memory writing output");
}

int cli_line_text(cli_line *l, const char *text)
{
    size_t from = l->len;
    if (line_append(l, text, strlen(text)) != 0)
        return -1;
    for (size_t i = from; i < l->len; i++)
        if (l->text[i] == '\t' || l->text[i] == '\n' || l->text[i] == '\r')
            l->text[i] = ' ';
    return 0;
}

int cli_sentences_init(cli_sentences *s, size_t cap)
{
    s->ids = calloc(cap, sizeof *s->ids);
    s->seqs = calloc(cap, sizeof *s->seqs);
    return s->ids && s->seqs ? 0 : -1;
}

void cli_sentences_free(cli_sentences *s, size_t cap)
{
    for (size_t i = 0; s->ids && i < cap; i++)
        free(s->ids[i].ids);
    free(s->ids);
    free(s->seqs);
    s->ids = NULL;
    s->seqs = NULL;
}

int cli_split_at_tab(const char *line, size_t len, const char *expected, size_t *first_len,
                     const char **second, size_t *second_len, char *err, size_t err_len)
{
    const char *tab = memchr(line, '\t', len);
    if (!tab)
        return cli_fail(err, err_len, "expected %s, found no tab", expected);
    *first_len = (size_t)(tab - line);
    *second = tab + 1;
    *second_len = len - *first_len - 1;
    if (memchr(*second, '\t', *second_len))
        return cli_fail(err, err_len, "expected %s, found more than one tab", expected);
    return 0;
}

int cli_parse_source(const cli_model *cm, const char *text, size_t len, int allow_empty,
                     cli_ids *ids, tessera_tokens *out, char *err, size_t err_len)
{
    const tessera_config *cfg = cm->cfg;
    if (cli_parse_side(cm, TESSERA_SOURCE, text, len, ids, err, err_len) != 0)
        return -1;
    if (ids->len == 0 && !allow_empty)
        return cli_fail(err, err_len, "empty source sentence");
    if (ids->len > (size_t)cfg->max_positions)
        return cli_fail(err, err_len, "%zu source tokens, more than max_positions (%d)", ids->len,
                        cfg->max_positions);
    *out = (tessera_tokens){ids->ids, ids->len};
    return 0;
}

int cli_line_bytes(cli_line *l, const void *bytes, size_t n) { return line_append(l, bytes, n); }

int cli_line_write(cli_line *l)
{
    if (fwrite(l->text, 1, l->len, stdout) != l->len) {
        cli_error("error writing standard output");
        return -1;
    }
    return 0;
}

int cli_line_emit(cli_line *l)
{
    if (line_append(l, "\n", 1) != 0) {
        cli_error("out of memory writing output");
        return -1;
    }
    if (fwrite(l->text, 1, l->len, stdout) != l->len) {
        cli_error("error writing standard output");
        return -1;
    }
    return 0;
}

void cli_line_free(cli_line *l)
{
    free(l->text);
    memset(l, 0, sizeof *l);
}
