/* tessera serve: where each HTTP/1.x message of a connection ends, for the
 * gate (cli/serve/gate.c), and which requests libmicrohttpd would refuse
 * with its own HTML.
 *
 * A framer reads one direction of a connection as a stream, message after
 * message: requests (client to server: checked, see srv_frame) or
 * responses (libmicrohttpd's, trusted but bounded). It keeps a few numbers,
 * never the bytes: the caller holds them, and passes those not yet framed
 * each time; a request's head is framed only once it is whole, so that no
 * byte of a head that is refused reaches libmicrohttpd. */
#ifndef TSR_CLI_SERVE_FRAME_H
#define TSR_CLI_SERVE_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* A request's head (request line, header fields and the blank line) and its
 * chunked trailers take at most SRV_HEAD_MAX bytes together, and hold at
 * most SRV_PIECES_MAX header fields, trailer fields, cookies and query
 * arguments (libmicrohttpd keeps one record of each in the connection's
 * memory pool, with the head and a copy of the Cookie field: its pool is
 * sized for these bounds, in cli/serve/http.c). A chunk size line takes at
 * most SRV_CHUNK_LINE_MAX bytes. */
enum { SRV_HEAD_MAX = 16384, SRV_PIECES_MAX = 100, SRV_CHUNK_LINE_MAX = 1024 };

/* Why a request is refused, as the contract's error (cli/serve/api.md). */
typedef struct srv_refusal {
    int status;       /* 400, 408, 413, 414, 431, 501, 503, 505 */
    const char *kind; /* "bad_request", "headers_too_large", ... */
    char message[240];
} srv_refusal;

typedef enum srv_frame_event {
    SRV_FRAME_MORE,    /* every byte given is framed; the message needs more */
    SRV_FRAME_HEAD,    /* a head ended: a request's (is_head_method set) or a response's (status) */
    SRV_FRAME_END,     /* a message ended (a response: an interim 1xx one when status < 200) */
    SRV_FRAME_REFUSED, /* a request is malformed, at the first byte not framed: see the refusal */
    SRV_FRAME_BROKEN,  /* a response is not HTTP/1.x as libmicrohttpd writes it */
} srv_frame_event;

typedef struct srv_framer {
    int response;        /* frames responses (else requests) */
    int state;
    size_t scanned;      /* head: bytes searched for its end so far */
    size_t head_bytes;   /* request: bytes of head and trailers so far */
    int pieces;          /* request: fields, cookies and arguments so far */
    uint64_t left;       /* body bytes left: of the length, or of the chunk */
    size_t line;         /* bytes of the chunk size line so far */
    int digits;          /* hex digits of the chunk size so far */
    int is_head_method;  /* request: the last head's method is HEAD */
    int bodiless;        /* response: set by the caller before its head (answers HEAD) */
    int status;          /* response: the last head's status */
} srv_framer;

/* A framer of requests (response 0) or responses (1), before a message. */
void srv_framer_init(srv_framer *f, int response);

/* Frames the next bytes of the stream, buf[0, len): those after the bytes
 * framed so far. Returns at the first event, *used being the bytes framed by
 * this call (up to the event's last byte; for SRV_FRAME_REFUSED the bytes
 * before the malformed one, which may be forwarded: a valid beginning of the
 * request). A request that is refused fills *why. */
srv_frame_event srv_frame(srv_framer *f, const char *buf, size_t len, size_t *used,
                          srv_refusal *why);

/* A response whose length is its connection's end (no Content-Length, not
 * chunked): 1 while it is being framed; the caller ends it at end of stream. */
int srv_frame_until_close(const srv_framer *f);

/* 1 when the framer has an event to give without another byte (the end of
 * a message without a body, just after its head): call srv_frame again. */
int srv_frame_pending(const srv_framer *f);

/* Requests: 1 when the framer is inside a message (bytes of a request have
 * been framed, its end has not). */
int srv_frame_inside(const srv_framer *f);

#endif
