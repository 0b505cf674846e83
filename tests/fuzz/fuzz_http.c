/* Fuzz target: the bytes `tessera serve` reads from a client before anything
 * else does, through the framer (cli/serve/frame.c), and the responses it
 * frames on their way back. The input's first byte says how: bit 0, which
 * direction (0: requests, 1: responses); bits 1-7, how the stream arrives
 * (the sizes of the pieces it comes in, drawn from them). The rest is the
 * stream.
 *
 * The framer is driven as the gate drives it (cli/serve/gate.c): the bytes
 * not framed yet are held, at most SRV_HEAD_MAX of them, and handed over
 * again with each new piece. The stream is framed twice, arriving whole (as
 * much as the buffer holds) and in the drawn pieces: a framer reads a
 * stream, so both must give the same events at the same offsets, with the
 * same refusal. Each call frames no more than it was given; a refusal has a
 * status of the contract (cli/serve/api.md) and a one-line printable
 * message; a head holds at most SRV_HEAD_MAX bytes and SRV_PIECES_MAX
 * pieces; the framing ends (an event, or no byte left) within a bounded
 * number of calls. */
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
    size_t at;      /* stream bytes framed when it came */
    int detail;     /* a refusal's status, a response head's status, a request head's HEAD */
} event;

typedef struct run {
    event e[EVENTS_MAX];
    size_t n;
    char refusal[sizeof ((srv_refusal *)0)->message];
} run;

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

static void record(run *r, srv_frame_event kind, size_t at, int detail)
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

/* Frames data[0, n) arriving in pieces (step 0: whole), into r; a
 * response's bodiless flags are drawn from `draw`, the same in both runs. */
static void frame_stream(int response, unsigned step, unsigned draw, const char *data, size_t n,
                         run *r)
{
    srv_framer f;
    srv_framer_init(&f, response);
    r->n = 0;
    r->refusal[0] = 0;
    size_t framed = 0, arrived = 0, calls = 0, messages = 0;
    unsigned state = step;
    /* A response's bodiless flag, set by its caller before its head (the
     * gate: when it answers HEAD), drawn per message. */
    int bodiless = (int)(draw & 1);
    for (;;) {
        /* What arrives: a piece, as far as the buffer of unframed bytes holds. */
        size_t room = SRV_HEAD_MAX - (arrived - framed), piece = next_piece(&state, step);
        size_t take = n - arrived < room ? n - arrived : room;
        take = take < piece ? take : piece;
        arrived += take;
        int more_bytes = arrived < n;
        while (framed < arrived || srv_frame_pending(&f)) {
            if (++calls > 8 * (n + 16))
                abort(); /* no progress */
            if (response && !srv_frame_inside(&f))
                f.bodiless = bodiless;
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
            if (e == SRV_FRAME_HEAD && !response &&
                (f.head_bytes > SRV_HEAD_MAX || f.pieces > SRV_PIECES_MAX))
                abort();
            record(r, e, framed, e == SRV_FRAME_REFUSED ? why.status
                                 : e == SRV_FRAME_HEAD  ? (response ? f.status : f.is_head_method)
                                                        : 0);
            if (e == SRV_FRAME_END && f.status >= 200) /* not after an interim 1xx */
                bodiless = (int)(++messages % 3 == 0) ^ (int)(draw & 1);
            if (e == SRV_FRAME_REFUSED) {
                if (response)
                    abort(); /* a response is BROKEN, never refused */
                check_refusal(&why);
                memcpy(r->refusal, why.message, sizeof r->refusal);
                return;
            }
            if (e == SRV_FRAME_BROKEN) {
                if (!response)
                    abort();
                return;
            }
        }
        if (!more_bytes && take == 0) {
            /* The end of the stream: a response framed until close ends there. */
            if (response && srv_frame_until_close(&f))
                record(r, SRV_FRAME_END, framed, 0);
            return;
        }
        /* A full buffer that framed nothing: the gate reads no more, so
         * neither does the stream here (only a response can stall so: a
         * request's head is refused at SRV_HEAD_MAX). */
        if (take == 0 && framed < arrived)
            return;
    }
}

static run whole, pieces;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const int response = data[0] & 1;
    const unsigned step = data[0] >> 1;
    const char *stream = (const char *)data + 1;
    frame_stream(response, 0, step, stream, size - 1, &whole);
    frame_stream(response, step ? step : 1, step, stream, size - 1, &pieces);
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
