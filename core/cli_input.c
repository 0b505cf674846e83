/* Reading sentences from standard input and writing whole output lines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/errors.h"

/* Standard input, a line at a time. */
typedef struct cli_reader {
    FILE *in;
    size_t line_no;
    char *buf;
    size_t cap;
} cli_reader;

/* Reads the next line without its '\n' and one trailing '\r'. Returns 1 with
 * the line in *line and *len, 0 at end of input, -1 on a read error (reported). */
static int read_line(cli_reader *r, char **line, size_t *len)
{
    ssize_t n = getline(&r->buf, &r->cap, r->in);
    if (n < 0) {
        if (!ferror(r->in))
            return 0;
        cli_error("line %zu: read error on standard input", r->line_no + 1);
        return -1;
    }
    r->line_no++;
    if (n > 0 && r->buf[n - 1] == '\n')
        r->buf[--n] = '\0';
    if (n > 0 && r->buf[n - 1] == '\r')
        r->buf[--n] = '\0';
    *line = r->buf;
    *len = (size_t)n;
    return 1;
}

static void reader_free(cli_reader *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

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

int cli_parse_sentence(const char *text, size_t len, const tsr_vocab *vocab, int vocab_size,
                       int unk_id, const char *side, cli_ids *out, char *err, size_t err_len)
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
            int32_t found = tsr_vocab_find(vocab, tok, tlen);
            id = found >= 0 ? found : unk_id;
        } else if (parse_id(tok, tlen, &id) != 0) {
            return tsr_fail(err, err_len, "'%.*s' is not a %s token id", (int)(tlen > 40 ? 40 : tlen),
                            tok, side);
        }
        if (id < 0 || id >= vocab_size)
            return tsr_fail(err, err_len, "%s token id %ld out of range [0, %d)", side, id,
                            vocab_size);
        if (push_id(out, (int32_t)id) != 0)
            return tsr_fail(err, err_len, "out of memory");
    }
    return 0;
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

int cli_line_ids(cli_line *l, const int32_t *ids, size_t n, const tsr_vocab *vocab)
{
    for (size_t i = 0; i < n; i++) {
        if (i && line_append(l, " ", 1) != 0)
            return -1;
        if (vocab) {
            const char *tok = tsr_vocab_token(vocab, ids[i]);
            if (line_append(l, tok, strlen(tok)) != 0)
                return -1;
        } else if (cli_line_printf(l, "%d", (int)ids[i]) != 0) {
            return -1;
        }
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

/* Reads and parses up to max lines. *count receives the lines parsed. A line
 * that fails stops the batch: pending receives "line N: message" (else it is
 * empty) so that the lines before it can still be processed and printed
 * before the error. Returns 1 when more input may follow, 0 at its end or
 * after an error. */
static int read_batch(cli_reader *r, size_t max, cli_parse_fn parse, void *ctx, size_t *count,
                      char *pending, size_t pending_len)
{
    char *line, msg[768];
    size_t len;
    *count = 0;
    pending[0] = '\0';
    while (*count < max) {
        int rc = read_line(r, &line, &len);
        if (rc == 0)
            return 0;
        if (rc < 0) {
            snprintf(pending, pending_len, "line %zu: read error on standard input", r->line_no + 1);
            return 0;
        }
        if (memchr(line, '\0', len)) {
            snprintf(pending, pending_len, "line %zu: contains a NUL byte", r->line_no);
            return 0;
        }
        if (parse(ctx, line, len, *count, msg, sizeof msg) != 0) {
            snprintf(pending, pending_len, "line %zu: %s", r->line_no, msg);
            return 0;
        }
        (*count)++;
    }
    return 1;
}

int cli_run_batches(size_t cap, cli_parse_fn parse, cli_process_fn process, void *ctx)
{
    cli_reader reader = {.in = stdin};
    char pending[1024];
    int status = 0, more = 1;
    size_t n;
    while (status == 0 && more) {
        more = read_batch(&reader, cap, parse, ctx, &n, pending, sizeof pending);
        if (n > 0)
            status = process(ctx, n);
        if (status == 0 && pending[0])
            status = cli_error("%s", pending);
    }
    reader_free(&reader);
    return status;
}
