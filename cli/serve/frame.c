/* tessera serve: HTTP/1.x requests framed and checked (cli/serve/frame.h).
 *
 * RFC 9112's grammar, strictly where two readers of one request could
 * disagree about where it ends (request smuggling, when a proxy stands in
 * front): each of these is refused (RFC 9112 allows or asks for each):
 *
 *   - whitespace between a field name and its colon,
 *   - a field line starting with a space or tab (obsolete line folding),
 *   - a bare CR, a NUL or another control byte in a head,
 *   - two Content-Length fields that disagree, a Content-Length with
 *     anything but digits,
 *   - Transfer-Encoding with Content-Length, more than one Transfer-Encoding,
 *     one that is not "chunked" alone (501),
 *   - an HTTP/1.1 request without Host, or with two.
 *
 * Leniently where RFC 9112 lets a server be: empty lines before a request
 * line are skipped, a bare LF ends a line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/serve/frame.h"

enum frame_state {
    F_HEAD,           /* before or inside a head */
    F_BODYLESS,       /* the head ended a message without a body */
    F_LENGTH,         /* inside a Content-Length body */
    F_CHUNK_SIZE,     /* the hex digits of a chunk size */
    F_CHUNK_EXT,      /* a chunk extension, after ';', to the line's end */
    F_CHUNK_SIZE_LF,  /* CR of the size line seen: LF expected */
    F_CHUNK_DATA,     /* inside a chunk's data */
    F_CHUNK_DATA_END, /* after a chunk's data: CRLF (or LF) expected */
    F_CHUNK_DATA_LF,  /* CR after a chunk's data seen: LF expected */
    F_TRAILER_START,  /* a trailer field line, or the blank line that ends the message */
    F_TRAILER_NAME,   /* a trailer field's name, up to its colon */
    F_TRAILER_VALUE,  /* a trailer field's value, to the line's end */
    F_TRAILER_LF,     /* CR ending a trailer line seen: LF expected */
    F_END_LF,         /* CR of the final blank line seen: LF expected */
};

void srv_framer_init(srv_framer *f)
{
    memset(f, 0, sizeof *f);
    f->state = F_HEAD;
}

int srv_frame_inside(const srv_framer *f) { return f->state != F_HEAD; }

int srv_frame_pending(const srv_framer *f) { return f->state == F_BODYLESS; }

/* RFC 9110's tchar: the bytes of a method and of a field name. */
static int is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A control byte other than HT: never in a head (a NUL, a bare CR). */
static int is_ctl(unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; }

static int hex_value(unsigned char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static srv_frame_event refuse(srv_framer *f, srv_refusal *why, int status, const char *kind,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A request refused: why filled. */
static srv_frame_event refuse(srv_framer *f, srv_refusal *why, int status, const char *kind,
                              const char *fmt, ...)
{
    (void)f;
    why->status = status;
    why->kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof why->message, fmt, ap);
    va_end(ap);
    return SRV_FRAME_REFUSED;
}

/* The end of the head that begins buf[0, len) (just after its blank line),
 * or 0 when it has not all arrived; f->scanned says where to go on. Lines
 * end with LF, a CR before it being part of the line end (a bare LF is
 * taken too, as RFC 9112 allows). */
static size_t head_end(srv_framer *f, const char *buf, size_t len)
{
    size_t i = f->scanned;
    const char *lf;
    while (i < len && (lf = memchr(buf + i, '\n', len - i))) {
        i = (size_t)(lf - buf);
        if (i + 1 >= len || (buf[i + 1] == '\r' && i + 2 >= len))
            break; /* what follows this LF has not arrived */
        if (buf[i + 1] == '\n')
            return i + 2;
        if (buf[i + 1] == '\r' && buf[i + 2] == '\n')
            return i + 3;
        i++;
    }
    f->scanned = i < len ? i : len;
    return 0;
}

/* The next line of the head h[*at, n) without its line end; *at moves past it. */
static size_t next_line(const char *h, size_t n, size_t *at, const char **line)
{
    const char *lf = memchr(h + *at, '\n', n - *at);
    size_t end = lf ? (size_t)(lf - h) : n;
    *line = h + *at;
    size_t len = end - *at;
    *at = end + 1;
    if (len > 0 && (*line)[len - 1] == '\r')
        len--;
    return len;
}

static int name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* 1 when the comma-separated list value[0, len) holds the token `want`
 * (any case, spaces around). */
static int has_token(const char *value, size_t len, const char *want)
{
    size_t at = 0;
    while (at < len) {
        const char *comma = memchr(value + at, ',', len - at);
        size_t end = comma ? (size_t)(comma - value) : len, b = at, e = end;
        while (b < e && (value[b] == ' ' || value[b] == '\t'))
            b++;
        while (e > b && (value[e - 1] == ' ' || value[e - 1] == '\t'))
            e--;
        if (name_is(value + b, e - b, want))
            return 1;
        at = end + 1;
    }
    return 0;
}

/* 1 when value[0, len) is 1*DIGIT, its number in *n (or 2 when it is
 * digits past 2^64 - 1); 0 otherwise. */
static int parse_length(const char *value, size_t len, uint64_t *n)
{
    *n = 0;
    if (len == 0)
        return 0;
    int overflow = 0;
    for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '9')
            return 0;
        unsigned d = (unsigned)(value[i] - '0');
        if (*n > (UINT64_MAX - d) / 10)
            overflow = 1;
        else
            *n = *n * 10 + d;
    }
    return overflow ? 2 : 1;
}

/* The request line: the method up to the first space, the version after
 * the last one, the target between them. */
static srv_frame_event request_line(srv_framer *f, const char *p, size_t len, int *minor,
                                    srv_refusal *why)
{
    char quoted[CLI_QUOTE_BUF];
    const char *sp = memchr(p, ' ', len);
    if (!sp || sp == p)
        return refuse(f, why, 400, "bad_request", "malformed request line: %s",
                      cli_quote(p, len, quoted, sizeof quoted));
    for (const char *m = p; m < sp; m++)
        if (!is_tchar((unsigned char)*m))
            return refuse(f, why, 400, "bad_request", "malformed method: %s",
                          cli_quote(p, (size_t)(sp - p), quoted, sizeof quoted));
    f->is_head_method = sp - p == 4 && memcmp(p, "HEAD", 4) == 0;
    size_t target = (size_t)(sp - p);
    while (target < len && p[target] == ' ')
        target++;
    const char *last_space = NULL;
    for (size_t i = target; i < len; i++)
        if (p[i] == ' ')
            last_space = p + i;
    if (!last_space)
        return refuse(f, why, 400, "bad_request",
                      "request line without a target and an HTTP version: %s",
                      cli_quote(p, len, quoted, sizeof quoted));
    const char *v = last_space + 1;
    size_t vlen = len - (size_t)(v - p);
    if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
        v[7] < '0' || v[7] > '9')
        return refuse(f, why, 400, "bad_request", "malformed HTTP version: %s",
                      cli_quote(v, vlen, quoted, sizeof quoted));
    if (v[5] != '1')
        return refuse(f, why, 505, "http_version",
                      "%.8s is not supported: this server speaks HTTP/1.0 and HTTP/1.1", v);
    *minor = v[7] - '0';
    f->method_len = (size_t)(sp - p);
    f->target_at = target;
    f->target_len = (size_t)(last_space - p) - target;
    while (f->target_len > 0 && p[target + f->target_len - 1] == ' ')
        f->target_len--;
    /* Each query argument counts as a piece. */
    const char *query = memchr(p + target, '?', (size_t)(last_space - (p + target)));
    if (query) {
        f->pieces++;
        for (const char *q = query; q < last_space; q++)
            f->pieces += *q == '&';
    }
    return SRV_FRAME_MORE;
}

/* The fields of a request head that decide how it is framed. */
typedef struct request_fields {
    int hosts, lengths, encodings, chunked;
    int close, keep_alive, expect_continue; /* Connection: close / keep-alive, Expect */
    const char *length; /* the first Content-Length's value */
    size_t length_len;
    uint64_t body;
    char encoding[CLI_QUOTE_BUF];
} request_fields;

static srv_frame_event request_field(srv_framer *f, const char *p, size_t len,
                                     request_fields *r, srv_refusal *why)
{
    char quoted[CLI_QUOTE_BUF];
    if (p[0] == ' ' || p[0] == '\t')
        return refuse(f, why, 400, "bad_request",
                      "a header line begins with a space or tab (obsolete line folding)");
    const char *colon = memchr(p, ':', len);
    if (!colon)
        return refuse(f, why, 400, "bad_request", "a header line without a colon: %s",
                      cli_quote(p, len, quoted, sizeof quoted));
    size_t nlen = (size_t)(colon - p);
    for (size_t i = 0; i < nlen; i++)
        if (!is_tchar((unsigned char)p[i]))
            return refuse(f, why, 400, "bad_request",
                          "malformed header name (no space may come before its colon): %s",
                          cli_quote(p, nlen, quoted, sizeof quoted));
    if (nlen == 0)
        return refuse(f, why, 400, "bad_request", "a header line with an empty name");
    const char *value = colon + 1;
    while (value < p + len && (*value == ' ' || *value == '\t'))
        value++;
    size_t vlen = len - (size_t)(value - p);
    f->pieces++;
    if (name_is(p, nlen, "Content-Length")) {
        uint64_t n;
        int ok = parse_length(value, vlen, &n);
        if (!ok)
            return refuse(f, why, 400, "bad_request", "malformed Content-Length: %s",
                          cli_quote(value, vlen, quoted, sizeof quoted));
        if (ok == 2)
            return refuse(f, why, 413, "body_too_large",
                          "Content-Length: %s bytes, more than this server can count",
                          cli_quote(value, vlen, quoted, sizeof quoted));
        if (r->lengths++ == 0) {
            r->length = value;
            r->length_len = vlen;
            r->body = n;
        } else if (vlen != r->length_len || memcmp(value, r->length, vlen) != 0) {
            /* Which one a proxy in front took is unknown: request smuggling. */
            return refuse(f, why, 400, "bad_request", "conflicting Content-Length headers");
        }
    } else if (name_is(p, nlen, "Transfer-Encoding")) {
        r->encodings++;
        r->chunked = vlen == 7 && strncasecmp(value, "chunked", 7) == 0;
        cli_quote(value, vlen, r->encoding, sizeof r->encoding);
    } else if (name_is(p, nlen, "Host")) {
        r->hosts++;
    } else if (name_is(p, nlen, "Connection")) {
        r->close |= has_token(value, vlen, "close");
        r->keep_alive |= has_token(value, vlen, "keep-alive");
    } else if (name_is(p, nlen, "Expect")) {
        r->expect_continue |= vlen == 12 && strncasecmp(value, "100-continue", 12) == 0;
    } else if (name_is(p, nlen, "Cookie")) {
        /* Cookies, split at ';' and ',', count a piece each. */
        for (size_t i = 0; i < vlen; i++)
            f->pieces += value[i] == ';' || value[i] == ',';
    }
    return SRV_FRAME_MORE;
}

/* A whole request head h[0, n), its blank line included. */
static srv_frame_event request_head(srv_framer *f, const char *h, size_t n, srv_refusal *why)
{
    for (size_t i = 0; i < n; i++)
        if (is_ctl((unsigned char)h[i]) && h[i] != '\n' &&
            !(h[i] == '\r' && i + 1 < n && h[i + 1] == '\n'))
            return refuse(f, why, 400, "bad_request",
                          h[i] == '\r' ? "a bare CR in the request head"
                                       : "a control byte (0x%02x) in the request head",
                          (unsigned char)h[i]);
    size_t at = 0;
    const char *line;
    size_t len = next_line(h, n, &at, &line);
    int minor = 0;
    srv_frame_event e = request_line(f, line, len, &minor, why);
    request_fields r = {0};
    while (e == SRV_FRAME_MORE && (len = next_line(h, n, &at, &line)) > 0)
        e = request_field(f, line, len, &r, why);
    if (e != SRV_FRAME_MORE)
        return e;
    if (r.hosts > 1)
        return refuse(f, why, 400, "bad_request", "more than one Host header");
    if (minor >= 1 && r.hosts == 0)
        return refuse(f, why, 400, "bad_request", "an HTTP/1.1 request without a Host header");
    if (r.encodings > 1)
        return refuse(f, why, 400, "bad_request", "more than one Transfer-Encoding header");
    if (r.encodings && r.lengths)
        return refuse(f, why, 400, "bad_request",
                      "both Transfer-Encoding and Content-Length: which one frames the body?");
    if (r.encodings && !r.chunked)
        return refuse(f, why, 501, "not_implemented",
                      "Transfer-Encoding: %s: only chunked is supported", r.encoding);
    if (f->pieces > SRV_PIECES_MAX)
        return refuse(f, why, 431, "headers_too_large",
                      "more than %d header fields, cookies and query arguments", SRV_PIECES_MAX);
    f->head_bytes = n;
    f->head_len = n;
    f->minor = minor;
    f->keep_alive = minor >= 1 ? !r.close : r.keep_alive && !r.close;
    f->chunked = r.chunked;
    f->length = r.body;
    f->expect_continue = r.expect_continue && (r.chunked || r.body > 0);
    f->left = r.body;
    f->state = r.chunked ? F_CHUNK_SIZE : r.body > 0 ? F_LENGTH : F_BODYLESS;
    return SRV_FRAME_HEAD;
}

/* A head larger than SRV_HEAD_MAX: 414 when even its request line is. */
static srv_frame_event too_large(srv_framer *f, const char *buf, srv_refusal *why)
{
    if (!memchr(buf, '\n', SRV_HEAD_MAX))
        return refuse(f, why, 414, "uri_too_long", "request line longer than %d bytes",
                      SRV_HEAD_MAX);
    return refuse(f, why, 431, "headers_too_large", "request head longer than %d bytes",
                  SRV_HEAD_MAX);
}

static srv_frame_event head(srv_framer *f, const char *buf, size_t len, size_t *at,
                            srv_refusal *why)
{
    /* Empty lines before a request line are skipped (RFC 9112, 2.2). */
    while (*at < len && (buf[*at] == '\n' || buf[*at] == '\r')) {
        if (buf[*at] == '\n')
            (*at)++;
        else if (*at + 1 >= len)
            return SRV_FRAME_MORE;
        else if (buf[*at + 1] == '\n')
            *at += 2;
        else
            return refuse(f, why, 400, "bad_request", "a bare CR before the request line");
    }
    const char *h = buf + *at;
    size_t end = head_end(f, h, len - *at);
    if (end == 0 && len - *at < SRV_HEAD_MAX)
        return SRV_FRAME_MORE;
    if (end == 0 || end > SRV_HEAD_MAX)
        return too_large(f, h, why);
    srv_frame_event e = request_head(f, h, end, why);
    if (e == SRV_FRAME_HEAD) {
        f->scanned = 0;
        *at += end;
    }
    return e;
}

/* One byte of a chunked body's framing (sizes, extensions, line ends,
 * trailers): SRV_FRAME_MORE to go on, else the event. */
static srv_frame_event chunk_byte(srv_framer *f, unsigned char c, srv_refusal *why)
{
    static const char bad[] = "malformed chunked body: %s";
    if (f->state >= F_TRAILER_START && ++f->head_bytes > SRV_HEAD_MAX)
        return refuse(f, why, 431, "headers_too_large",
                      "request head and trailers longer than %d bytes", SRV_HEAD_MAX);
    if ((f->state == F_CHUNK_SIZE || f->state == F_CHUNK_EXT) && ++f->line > SRV_CHUNK_LINE_MAX)
        return refuse(f, why, 400, "bad_request", bad, "a chunk size line over 1024 bytes");
    switch (f->state) {
    case F_CHUNK_SIZE:
        if (hex_value(c) >= 0) {
            if (f->left > UINT64_MAX >> 4)
                return refuse(f, why, 413, "body_too_large",
                              "a chunk larger than this server can count");
            f->left = f->left * 16 + (uint64_t)hex_value(c);
            f->digits++;
            return SRV_FRAME_MORE;
        }
        if (f->digits == 0)
            return refuse(f, why, 400, "bad_request", bad, "a chunk size that is not hex digits");
        if (c == ';')
            f->state = F_CHUNK_EXT;
        else if (c == '\r')
            f->state = F_CHUNK_SIZE_LF;
        else if (c == '\n')
            break;
        else
            return refuse(f, why, 400, "bad_request", bad, "a chunk size that is not hex digits");
        return SRV_FRAME_MORE;
    case F_CHUNK_EXT:
        if (c == '\r')
            f->state = F_CHUNK_SIZE_LF;
        else if (c == '\n')
            break;
        else if (is_ctl(c))
            return refuse(f, why, 400, "bad_request", bad, "a control byte in a chunk extension");
        return SRV_FRAME_MORE;
    case F_CHUNK_SIZE_LF:
        if (c != '\n')
            return refuse(f, why, 400, "bad_request", bad, "a bare CR in a chunk size line");
        break;
    case F_CHUNK_DATA_END:
    case F_CHUNK_DATA_LF:
        if (c == '\r' && f->state == F_CHUNK_DATA_END) {
            f->state = F_CHUNK_DATA_LF;
            return SRV_FRAME_MORE;
        }
        if (c != '\n')
            return refuse(f, why, 400, "bad_request", bad, "a chunk's data not followed by CRLF");
        f->state = F_CHUNK_SIZE;
        return SRV_FRAME_MORE;
    case F_TRAILER_START:
        if (c == '\r') {
            f->state = F_END_LF;
            return SRV_FRAME_MORE;
        }
        if (c == '\n')
            return SRV_FRAME_END;
        if (!is_tchar(c))
            return refuse(f, why, 400, "bad_request", bad, "a malformed trailer field");
        if (++f->pieces > SRV_PIECES_MAX)
            return refuse(f, why, 431, "headers_too_large",
                          "more than %d header fields, cookies and query arguments",
                          SRV_PIECES_MAX);
        f->state = F_TRAILER_NAME;
        return SRV_FRAME_MORE;
    case F_TRAILER_NAME:
        if (c == ':')
            f->state = F_TRAILER_VALUE;
        else if (!is_tchar(c))
            return refuse(f, why, 400, "bad_request", bad, "a malformed trailer field");
        return SRV_FRAME_MORE;
    case F_TRAILER_VALUE:
        if (c == '\r')
            f->state = F_TRAILER_LF;
        else if (c == '\n')
            f->state = F_TRAILER_START;
        else if (is_ctl(c))
            return refuse(f, why, 400, "bad_request", bad, "a control byte in a trailer field");
        return SRV_FRAME_MORE;
    case F_TRAILER_LF:
    case F_END_LF:
        if (c != '\n')
            return refuse(f, why, 400, "bad_request", bad, "a bare CR in the trailers");
        if (f->state == F_END_LF)
            return SRV_FRAME_END;
        f->state = F_TRAILER_START;
        return SRV_FRAME_MORE;
    default: /* not a state of the chunked framing: never reached */
        return refuse(f, why, 400, "bad_request", bad, "unexpected");
    }
    /* The end of a chunk size line: its data, or the trailers after the last chunk. */
    f->line = 0;
    f->digits = 0;
    f->state = f->left > 0 ? F_CHUNK_DATA : F_TRAILER_START;
    return SRV_FRAME_MORE;
}

/* The framer is between requests again (what the last head said stays). */
static srv_frame_event ended(srv_framer *f)
{
    f->state = F_HEAD;
    f->scanned = f->head_bytes = f->line = 0;
    f->pieces = f->digits = 0;
    f->left = 0;
    return SRV_FRAME_END;
}

srv_frame_event srv_frame(srv_framer *f, const char *buf, size_t len, size_t *used,
                          srv_refusal *why)
{
    size_t at = 0;
    srv_frame_event e = SRV_FRAME_MORE;
    while (e == SRV_FRAME_MORE) {
        if (f->state == F_HEAD) {
            e = head(f, buf, len, &at, why);
            if (e == SRV_FRAME_MORE)
                break;
        } else if (f->state == F_BODYLESS) {
            e = ended(f);
        } else if (f->state == F_LENGTH || f->state == F_CHUNK_DATA) {
            if (at == len)
                break;
            uint64_t take = len - at < f->left ? len - at : f->left;
            at += (size_t)take;
            f->left -= take;
            f->data = (size_t)take;
            if (f->left == 0)
                f->state = f->state == F_LENGTH ? F_BODYLESS : F_CHUNK_DATA_END;
            e = SRV_FRAME_DATA;
        } else {
            if (at == len)
                break;
            e = chunk_byte(f, (unsigned char)buf[at], why);
            if (e == SRV_FRAME_END) {
                at++;
                e = ended(f);
            } else if (e == SRV_FRAME_MORE) {
                at++;
            }
        }
    }
    *used = at;
    return e;
}
