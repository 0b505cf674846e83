/* tessera serve: HTTP/1.x requests read off a connection's bytes, for the
 * server's loop (cli/serve/loop.c): where each request's head and body end,
 * what the head says (method, target, version, keep-alive, Expect), the
 * body's bytes (de-chunked), and which requests are refused.
 *
 * A framer reads the bytes a client sends as a stream, request after
 * request. It keeps a few numbers, never the bytes: the caller holds them,
 * and passes those not yet framed each time; a head is framed only once it
 * is whole, and checked whole before anything of it is used. */
#ifndef TSR_CLI_SERVE_FRAME_H
#define TSR_CLI_SERVE_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* A request's head (request line, header fields and the blank line) and its
 * chunked trailers take at most SRV_HEAD_MAX bytes together, and hold at
 * most SRV_PIECES_MAX header fields, trailer fields, cookies and query
 * arguments (the bounds cli/serve/api.md gives; servers in front of an
 * application often count them so). A chunk size line takes at most
 * SRV_CHUNK_LINE_MAX bytes. */
enum { SRV_HEAD_MAX = 16384, SRV_PIECES_MAX = 100, SRV_CHUNK_LINE_MAX = 1024 };

/* Why a request is refused, as the contract's error (cli/serve/api.md). */
typedef struct srv_refusal {
    int status;       /* 400, 408, 413, 414, 431, 501, 503, 505 */
    const char *kind; /* "bad_request", "headers_too_large", ... */
    char message[240];
} srv_refusal;

typedef enum srv_frame_event {
    SRV_FRAME_MORE,    /* every byte given is framed; the request needs more */
    SRV_FRAME_HEAD,    /* a head ended: its fields below describe it */
    SRV_FRAME_DATA,    /* body bytes: the last `data` bytes of those framed by the call */
    SRV_FRAME_END,     /* a request ended */
    SRV_FRAME_REFUSED, /* a request is malformed, at the first byte not framed: see the refusal */
} srv_frame_event;

typedef struct srv_framer {
    int state;
    size_t scanned;    /* head: bytes searched for its end so far */
    size_t head_bytes; /* bytes of head and trailers so far */
    int pieces;        /* fields, cookies and arguments so far */
    uint64_t left;     /* body bytes left: of the length, or of the chunk */
    size_t line;       /* bytes of the chunk size line so far */
    int digits;        /* hex digits of the chunk size so far */
    size_t data;       /* SRV_FRAME_DATA: how many body bytes */
    /* The last head, from SRV_FRAME_HEAD to the next one. Its bytes are the
     * last head_len of those framed by the call that returned the event;
     * the method and the target (as sent: not decoded) are spans of them. */
    size_t head_len;
    size_t method_len, target_at, target_len;
    int minor;           /* HTTP/1.minor */
    int is_head_method;  /* the method is HEAD: its answer has no body */
    int keep_alive;      /* another request may follow on the connection (version, Connection) */
    int expect_continue; /* Expect: 100-continue, with a body to come */
    int chunked;         /* the body is chunked: its length is unknown */
    uint64_t length;     /* Content-Length (0: none) */
} srv_framer;

/* A framer before a connection's first request. */
void srv_framer_init(srv_framer *f);

/* Frames the next bytes of the stream, buf[0, len): those after the bytes
 * framed so far. Returns at the first event, *used being the bytes framed by
 * this call (up to the event's last byte; for SRV_FRAME_REFUSED the bytes
 * before the malformed one). A request that is refused fills *why. */
srv_frame_event srv_frame(srv_framer *f, const char *buf, size_t len, size_t *used,
                          srv_refusal *why);

/* 1 when the framer has an event to give without another byte (the end of
 * a request without a body, just after its head or its last body bytes):
 * call srv_frame again. */
int srv_frame_pending(const srv_framer *f);

/* 1 when the framer is inside a request (its head has been framed, its end
 * has not). */
int srv_frame_inside(const srv_framer *f);

#endif
