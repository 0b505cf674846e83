/* Fuzz target: the bytes `tessera serve` reads from a client before anything
 * else does, through the framer (cli/serve/frame.c). The input's first byte
 * says how the stream arrives: bits 1-7, the sizes of the pieces it comes in,
 * drawn from them (bit 0 set: the input is skipped). The rest is the stream.
 *
 * The framer is driven as the server's loop drives it (cli/serve/loop.c):
 * the bytes not framed yet are held, at most SRV_HEAD_MAX of them, and
 * handed over again with each new piece. The stream is framed twice,
 * arriving whole (as much as the buffer holds) and in the drawn pieces: a
 * framer reads a stream, so both must give the same heads (method, target,
 * version, keep-alive, Expect, framing) and the same bodies, ending at the
 * same offsets, with the same refusal. Each call frames no more than it was
 * given, a head's spans lie inside it and its body bytes inside what was
 * framed; a refusal has a status of the contract (cli/serve/api.md) and a
 * one-line printable message; a head holds at most SRV_HEAD_MAX bytes and
 * SRV_PIECES_MAX pieces; the framing ends (an event, or no byte left)
 * within a bounded number of calls. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve/frame.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "http";

enum { EVENTS_MAX = 4096 };

typedef struct event {
    srv_frame_event kind;
    size_t at;       /* stream bytes framed when it came */
    uint64_t detail; /* a refusal's status; a head's fields and spans, a body's bytes (hashed) */
} event;

typedef struct run {
    event e[EVENTS_MAX];
    size_t n;
    char refusal[sizeof ((srv_refusal *)0)->message];
} run;

static uint64_t hash(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u; /* FNV-1a */
    return h;
}

/* What a head says, hashed: its method and target as spans of its bytes
 * h[0, f->head_len), and its fields. */
static uint64_t head_digest(const srv_framer *f, const char *h)
{
    if (f->method_len == 0 || f->target_at + f->target_len > f->head_len ||
        f->method_len > f->target_at || f->head_bytes > SRV_HEAD_MAX ||
        f->pieces > SRV_PIECES_MAX || f->minor < 0 || f->minor > 9 ||
        (f->chunked && f->length != 0))
        abort();
    const int fields[] = {f->minor, f->is_head_method, f->keep_alive, f->expect_continue,
                          f->chunked};
    uint64_t d = hash(14695981039346656037u, h, f->method_len);
    d = hash(d, h + f->target_at, f->target_len);
    d = hash(d, fields, sizeof fields);
    return hash(d, &f->length, sizeof f->length);
}

static void check_refusal(const srv_refusal *why)
{
    static const int statuses[] = {400, 408, 413, 414, 431, 501, 503, 505};
    int known = 0;
    for (size_t i = 0; i < sizeof statuses / sizeof *statuses; i++)
        known |= why->status == statuses[i];
    if (!known || !why->kind || !why->kind[0] || !memchr(why->message, 0, sizeof why->message))
        abort();
    fuzz_check_message(why->message, 0);
}

static void record(run *r, srv_frame_event kind, size_t at, uint64_t detail)
{
    if (r->n == EVENTS_MAX)
        return; /* enough to compare: later events are not recorded */
    r->e[r->n++] = (event){kind, at, detail};
}

/* The size of the next piece: the whole rest when step is 0, else drawn
 * from step (a small LCG), 1 to 64 bytes, sometimes 1 for a while. */
static size_t next_piece(unsigned *state, unsigned step)
{
    if (step == 0)
        return SIZE_MAX;
    *state = *state * 1103515245u + 12345u + step;
    unsigned v = (*state >> 16) & 0xff;
    return v < 64 ? 1 : 1 + v % 64;
}

/* Frames data[0, n) arriving in pieces (step 0: whole), into r. */
static void frame_stream(unsigned step, const char *data, size_t n, run *r)
{
    srv_framer f;
    srv_framer_init(&f);
    r->n = 0;
    r->refusal[0] = 0;
    size_t framed = 0, arrived = 0, calls = 0;
    uint64_t body = 0;
    unsigned state = step;
    for (;;) {
        /* What arrives: a piece, as far as the buffer of unframed bytes holds. */
        size_t room = SRV_HEAD_MAX - (arrived - framed), piece = next_piece(&state, step);
        size_t take = n - arrived < room ? n - arrived : room;
        take = take < piece ? take : piece;
        arrived += take;
        while (framed < arrived || srv_frame_pending(&f)) {
            if (++calls > 8 * (n + 16))
                abort(); /* no progress */
            size_t used;
            srv_refusal why;
            memset(&why, 0, sizeof why);
            size_t given = arrived - framed;
            srv_frame_event e = srv_frame(&f, data + framed, given, &used, &why);
            if (used > given)
                abort();
            framed += used;
            if (e == SRV_FRAME_MORE)
                break;
            if (e == SRV_FRAME_DATA) {
                if (f.data == 0 || f.data > used || !srv_frame_inside(&f))
                    abort();
                body = hash(body, data + framed - f.data, f.data);
                continue; /* where a body is cut into runs depends on its arrival */
            }
            if (e == SRV_FRAME_HEAD) {
                if (f.head_len > used)
                    abort();
                record(r, e, framed, head_digest(&f, data + framed - f.head_len));
                body = 14695981039346656037u;
            } else if (e == SRV_FRAME_END) {
                record(r, e, framed, body);
            } else {
                check_refusal(&why);
                record(r, e, framed, (uint64_t)why.status);
                memcpy(r->refusal, why.message, sizeof r->refusal);
                return;
            }
        }
        /* The end of the stream, or a full buffer that framed nothing (a
         * head is refused at SRV_HEAD_MAX, so only a bug stalls so). */
        if (take == 0) {
            if (framed < arrived && arrived - framed == SRV_HEAD_MAX)
                abort();
            return;
        }
    }
}

static run whole, pieces;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || (data[0] & 1))
        return 0;
    const unsigned step = data[0] >> 1;
    const char *stream = (const char *)data + 1;
    frame_stream(0, stream, size - 1, &whole);
    frame_stream(step ? step : 1, stream, size - 1, &pieces);
    if (whole.n != pieces.n)
        abort();
    for (size_t i = 0; i < whole.n; i++)
        if (whole.e[i].kind != pieces.e[i].kind || whole.e[i].at != pieces.e[i].at ||
            whole.e[i].detail != pieces.e[i].detail)
            abort();
    if (strcmp(whole.refusal, pieces.refusal) != 0)
        abort();
    return 0;
}
