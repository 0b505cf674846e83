/* The HTTP framer of tessera serve (cli/serve/frame.c) against the contract's
 * refusals (cli/serve/api.md): every request stream of fuzz_http's seed
 * corpus (tests/fuzz/corpus/http, written by tools/make-fuzz-corpus) says in
 * its name what framing it must give. seed-refuse-STATUS-WHAT: a refusal
 * with that status, and none before it; seed-ok-N-WHAT: N requests ended,
 * no refusal. Each stream is framed whole, then a byte at a time (the
 * framer holds no byte, so both must agree). Plus the framer's own cases
 * that no seed name can say: what a head says, and bodies de-chunked. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve/frame.h"
#include "tests/testutil.h"

typedef struct outcome {
    int ended;       /* requests ended */
    char body[256];  /* the last request's body (cut at 255 bytes) */
    size_t body_len;
    int status;      /* the refusal's, or 0 */
    char kind[32];   /* the refusal's */
    size_t at;       /* bytes framed when it came (the stream's length without one) */
} outcome;

/* Frames requests from data[0, n), handing over at most `piece` new bytes at
 * a time (the bytes not framed yet are handed over again, as the server's
 * loop does). */
static outcome frame_requests(const char *data, size_t n, size_t piece)
{
    srv_framer f;
    srv_framer_init(&f);
    outcome o = {0};
    size_t framed = 0, arrived = 0;
    while (framed < n || srv_frame_pending(&f)) {
        arrived = arrived + piece < n ? arrived + piece : n;
        for (;;) {
            size_t used;
            srv_refusal why;
            srv_frame_event e = srv_frame(&f, data + framed, arrived - framed, &used, &why);
            cr_assert_leq(used, arrived - framed);
            framed += used;
            if (e == SRV_FRAME_HEAD)
                o.body_len = 0;
            for (size_t i = 0; e == SRV_FRAME_DATA && i < f.data; i++)
                if (o.body_len < sizeof o.body - 1)
                    o.body[o.body_len++] = data[framed - f.data + i];
            o.body[o.body_len] = '\0';
            if (e == SRV_FRAME_END)
                o.ended++;
            if (e == SRV_FRAME_REFUSED) {
                o.status = why.status;
                snprintf(o.kind, sizeof o.kind, "%s", why.kind);
                o.at = framed;
                return o;
            }
            if (e == SRV_FRAME_MORE)
                break;
        }
        if (arrived == n && !srv_frame_pending(&f))
            break;
    }
    o.at = framed;
    return o;
}

static char *read_seed(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    cr_assert(fp, "cannot open %s", path);
    char *buf = malloc(1 << 16);
    cr_assert(buf);
    *len = fread(buf, 1, 1 << 16, fp);
    fclose(fp);
    return buf;
}

Test(frame, every_seed_frames_as_its_name_says)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/http", test_srcdir());
    DIR *d = opendir(dir);
    cr_assert(d, "no corpus at %s", dir);
    int refusals = 0, goods = 0, statuses_seen[600] = {0};
    for (struct dirent *e; (e = readdir(d));) {
        int status = 0, ended = -1;
        if (sscanf(e->d_name, "seed-refuse-%d-", &status) != 1 &&
            sscanf(e->d_name, "seed-ok-%d-", &ended) != 1)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len;
        char *buf = read_seed(path, &len);
        cr_assert_geq(len, 1);
        cr_assert_eq(buf[0] & 1, 0, "%s is not a request stream", e->d_name);
        outcome whole = frame_requests(buf + 1, len - 1, len), bytes = frame_requests(buf + 1, len - 1, 1);
        cr_expect(whole.ended == bytes.ended && whole.status == bytes.status &&
                      whole.at == bytes.at && strcmp(whole.kind, bytes.kind) == 0,
                  "%s: whole, %d ended, refusal %d at %zu; a byte at a time, %d ended, refusal %d "
                  "at %zu", e->d_name, whole.ended, whole.status, whole.at, bytes.ended,
                  bytes.status, bytes.at);
        if (status) {
            refusals++;
            statuses_seen[status] = 1;
            cr_expect_eq(whole.status, status, "%s: refused %d (%s), not %d", e->d_name,
                         whole.status, whole.kind, status);
        } else {
            goods++;
            cr_expect_eq(whole.status, 0, "%s: refused %d (%s) at byte %zu", e->d_name,
                         whole.status, whole.kind, whole.at);
            cr_expect_eq(whole.ended, ended, "%s: %d requests ended, not %d", e->d_name,
                         whole.ended, ended);
        }
        free(buf);
    }
    closedir(d);
    /* Every status of the refusals of malformed HTTP in api.md has its seeds
     * (408 and 503 are the loop's deadlines and limits, not the framer's). */
    static const int malformed[] = {400, 413, 414, 431, 501, 505};
    for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++)
        cr_expect(statuses_seen[malformed[i]], "no seed is refused %d", malformed[i]);
    cr_expect_geq(refusals, 30, "only %d refusal seeds", refusals);
    cr_expect_geq(goods, 5, "only %d good seeds", goods);
}

/* A refusal frames the valid beginning of its request: the bytes before
 * the malformed one may go on, none after. */
Test(frame, a_refused_request_after_a_good_one_keeps_the_good_one)
{
    static const char s[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/2.0\r\nHost: a\r\n\r\n";
    outcome o = frame_requests(s, sizeof s - 1, sizeof s);
    cr_expect_eq(o.ended, 1);
    cr_expect_eq(o.status, 505);
    cr_expect_str_eq(o.kind, "http_version");
    cr_expect_eq(o.at, strlen("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), "refused at %zu", o.at);
}

/* A chunked body comes out de-chunked (extensions and trailers dropped),
 * a Content-Length one as it is. */
Test(frame, bodies_come_out_as_sent)
{
    static const char chunked[] = "POST /v1/score HTTP/1.1\r\nHost: x\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\n"
                                  "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nT: 1\r\n\r\n";
    static const char length[] = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd";
    for (size_t piece = 1; piece <= sizeof chunked; piece += sizeof chunked - 1) {
        outcome o = frame_requests(chunked, sizeof chunked - 1, piece);
        cr_expect_eq(o.ended, 1);
        cr_expect_str_eq(o.body, "hello world", "a piece of %zu: '%s'", piece, o.body);
        o = frame_requests(length, sizeof length - 1, piece);
        cr_expect_eq(o.ended, 1);
        cr_expect_str_eq(o.body, "abcd", "a piece of %zu: '%s'", piece, o.body);
    }
}

/* The head's fields, as the loop reads them after SRV_FRAME_HEAD. */
static srv_framer head_of(const char *request)
{
    srv_framer f;
    srv_framer_init(&f);
    size_t used, n = strlen(request);
    srv_refusal why;
    srv_frame_event e = srv_frame(&f, request, n, &used, &why);
    cr_assert_eq(e, SRV_FRAME_HEAD, "%s: event %d", request, (int)e);
    cr_assert_leq(f.head_len, used, "%s: the head is %zu bytes of %zu", request, f.head_len, used);
    return f;
}

Test(frame, a_head_says_what_the_loop_needs)
{
    static const char get[] = "\r\nGET  /v1/x?a=1  HTTP/1.1\r\nHost: x\r\n\r\n";
    srv_framer f = head_of(get);
    const char *h = get + 2; /* after the empty line skipped */
    cr_expect_eq(f.method_len, 3);
    cr_expect(f.head_len == sizeof get - 3, "the head without the empty line: %zu", f.head_len);
    cr_expect(f.target_len == 9 && memcmp(h + f.target_at, "/v1/x?a=1", 9) == 0,
              "target: '%.*s'", (int)f.target_len, h + f.target_at);
    cr_expect(f.keep_alive && f.minor == 1 && !f.is_head_method && !f.chunked && !f.length);
    f = head_of("HEAD / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, CLOSE\r\n\r\n");
    cr_expect(f.is_head_method && !f.keep_alive);
    f = head_of("GET / HTTP/1.0\r\n\r\n");
    cr_expect(!f.keep_alive && f.minor == 0, "HTTP/1.0 closes unless it asks otherwise");
    f = head_of("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    cr_expect(f.keep_alive);
    f = head_of("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 9\r\n\r\n");
    cr_expect(f.expect_continue && f.length == 9);
    f = head_of("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n");
    cr_expect(!f.expect_continue, "nothing to continue without a body");
    f = head_of("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    cr_expect(f.chunked && f.length == 0);
}
