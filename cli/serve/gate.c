/* tessera serve: the gate in front of libmicrohttpd. libmicrohttpd 0.9.75
 * answers some malformed requests itself, as HTML, with no hook to change
 * that, and closes connections past its limits without a word; the gate
 * makes every such refusal the contract's JSON (cli/serve/api.md).
 *
 * The gate owns the listening socket. For each client it accepts, it makes a
 * socket pair and hands one end to libmicrohttpd as if it were the client
 * (with the client's address, so that --max-connections-per-client still
 * counts per address); one thread (this file's) relays the bytes between
 * the client and the other end with epoll, non-blocking both ways:
 *
 *   client -> server  through a framer (cli/serve/frame.c) that forwards a
 *                     request's head only once it is whole and well formed,
 *                     and knows where each request ends (keep-alive,
 *                     pipelining);
 *   server -> client  as they are, framed too, to count the answers.
 *
 * A malformed request is not forwarded: the gate waits until the answers to
 * the requests before it on the connection have been relayed, writes its
 * JSON answer, and closes (after reading what the client still sends for a
 * moment, so that the answer is not lost to a reset). A connection past
 * --max-connections (counted here) or --max-connections-per-client (counted
 * by libmicrohttpd) is answered 503 the same way.
 *
 * The gate also keeps the deadlines, since it sees every byte arrive:
 * --read-timeout (a connection has that long to send a whole request, from
 * its opening or from the end of its previous answer: slowloris), and a
 * client that reads nothing of its answer for WRITE_STALL_S is cut.
 *
 * Memory per connection is bounded: a buffer each way, of fixed size; a
 * side is not read while the other side's buffer is full. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/filter.h>
#endif

#include "cli/serve/frame.h"
#include "cli/serve/serve.h"

enum {
    UP_CAP = SRV_HEAD_MAX, /* client to server: a whole head fits */
    DOWN_CAP = 8192,       /* server to client */
    IN_FLIGHT_MAX = 64,    /* requests begun and not answered on a connection (a bit each) */
    LINGER_MS = 2000,      /* after the gate's answer, reading what the client still sends */
    WRITE_STALL_S = 60,    /* a client reading nothing of its answer for that long is cut */
    SWEEP_MS = 100,        /* how often deadlines are checked */
    STOP_FLUSH_MS = 500,   /* at the end, answers still being relayed get this long */
    SPARE_MAX = 64,        /* closed connections' records kept for new ones */
    EVENTS = 64,
};

typedef enum phase {
    RELAY,     /* bytes go both ways */
    REFUSING,  /* a refusal waits for the answers to the requests before it */
    ANSWERING, /* the gate's answer is being written */
    LINGERING, /* answered; what the client still sends is read and dropped */
} phase;

/* One direction: the bytes held, the first `framed` of them ready to go on. */
typedef struct flow {
    size_t len, framed;
    srv_framer framer;
} flow;

typedef struct conn {
    struct conn *prev, *next;
    int client, pair;                    /* sockets; -1 once closed */
    unsigned client_events, pair_events; /* as registered with epoll (0: not) */
    phase phase;
    int client_eof, server_eof, pair_shut, dead;
    int server_deaf; /* writes to the server end fail: what is framed is dropped */
    flow up, down;
    unsigned long heads;    /* request heads forwarded */
    unsigned long requests; /* whole requests forwarded */
    unsigned long answers;  /* final responses relayed */
    uint64_t head_methods;  /* bit (i % 64): request i was a HEAD (its answer has no body) */
    struct timespec since;  /* the read deadline counts from here */
    struct timespec progress; /* the last byte written to the client, or the first waiting */
    struct timespec linger_until;
    srv_refusal refusal;
    char up_buf[UP_CAP], down_buf[DOWN_CAP];
} conn;

struct srv_gate {
    const srv_settings *s;
    srv_metrics *metrics;
    int listener, epoll, wake, port;
    srv_gate_handoff handoff;
    void *handoff_arg;
    pthread_t thread;
    int started;
    pthread_mutex_t lock; /* guards the requests below */
    pthread_cond_t changed;
    int quiesce_asked, quiesce_done, cut_asked, close_all_asked, stop_asked;
    unsigned live; /* connections with a server end (read by others: atomic) */
    /* The gate thread's own: */
    conn head;     /* a ring of every connection */
    conn *dead;    /* closed during a batch of events: freed after it */
    conn *spare;   /* freed, for reuse */
    int n_spare;
    int conns;
    int door_closing, door_filter;
    struct timespec door_began, last_accept, accept_paused_until, stop_by;
    int listening, stopping;
};

/* epoll's tags for the two fds that are not a connection's. */
enum { TAG_WAKE = 0, TAG_LISTENER = 1, TAG_PAIR = 1 };

static struct timespec now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

static double ms_between(struct timespec a, struct timespec b)
{
    return 1000.0 * srv_seconds_between(a, b);
}

/* ---- epoll interest ------------------------------------------------------------ */

/* Registers fd for `events` (0: not at all), as `*current` says it is now. */
static void interest(srv_gate *g, int fd, unsigned *current, unsigned events, uint64_t tag)
{
    if (fd < 0 || events == *current)
        return;
    struct epoll_event e = {.events = events, .data.u64 = tag};
    int op = events == 0 ? EPOLL_CTL_DEL : *current == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(g->epoll, op, fd, &e) == 0 || op == EPOLL_CTL_DEL)
        *current = events;
}

static void update_interest(srv_gate *g, conn *c)
{
    if (c->dead)
        return;
    int read_client = (c->phase == RELAY && !c->client_eof && c->up.len < UP_CAP) ||
                      c->phase == LINGERING;
    unsigned ce = (read_client ? EPOLLIN : 0) | (c->down.framed > 0 ? EPOLLOUT : 0);
    interest(g, c->client, &c->client_events, ce, (uint64_t)(uintptr_t)c);
    int pair_open = c->pair >= 0 && !c->server_eof;
    unsigned pe = (pair_open && c->down.len < DOWN_CAP ? EPOLLIN : 0) |
                  (pair_open && !c->server_deaf && c->up.framed > 0 ? EPOLLOUT : 0);
    interest(g, c->pair, &c->pair_events, pe, (uint64_t)(uintptr_t)c | TAG_PAIR);
}

/* ---- Connections --------------------------------------------------------------- */

/* Closing a socket is enough to take it out of epoll (no other descriptor
 * refers to it): one system call fewer per connection. */
static void close_pair(srv_gate *g, conn *c)
{
    if (c->pair < 0)
        return;
    close(c->pair);
    c->pair = -1;
    c->pair_events = 0;
    __atomic_sub_fetch(&g->live, 1, __ATOMIC_RELAXED);
}

/* Closes both sides (a client with bytes unread gets a reset, as from
 * libmicrohttpd itself); the record is freed after the current events. */
static void finish(srv_gate *g, conn *c)
{
    if (c->dead)
        return;
    close_pair(g, c);
    close(c->client);
    c->client = -1;
    c->client_events = 0;
    c->dead = 1;
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->next = g->dead;
    g->dead = c;
    g->conns--;
}

/* Closed records are kept for reuse, up to SPARE_MAX: a connection's
 * buffers are neither allocated nor cleared for each connection. */
static void free_dead(srv_gate *g)
{
    while (g->dead) {
        conn *c = g->dead;
        g->dead = c->next;
        if (g->n_spare < SPARE_MAX) {
            c->next = g->spare;
            g->spare = c;
            g->n_spare++;
        } else {
            free(c);
        }
    }
}

/* A record for a new connection, its buffers uninitialised. */
static conn *new_conn(srv_gate *g)
{
    conn *c = g->spare;
    if (c) {
        g->spare = c->next;
        g->n_spare--;
    } else if (!(c = malloc(sizeof *c))) {
        return NULL;
    }
    memset(c, 0, offsetof(conn, up_buf));
    return c;
}

static const char *reason_phrase(int status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* The refusal becomes the answer: the server end closes (libmicrohttpd
 * drops whatever beginning of a request it holds), the JSON takes the
 * place of everything in the outgoing buffer (which is empty of answers). */
static void answer(srv_gate *g, conn *c)
{
    static const char oom[] = "{\"error\":{\"kind\":\"internal\",\"message\":\"out of memory\"}}";
    close_pair(g, c);
    const srv_refusal *r = &c->refusal;
    char *json = srv_error_json(r->kind, r->message);
    int n = snprintf(c->down_buf, DOWN_CAP,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s\r\n%s",
                     r->status, reason_phrase(r->status), strlen(json ? json : oom),
                     r->status == 503 ? "Retry-After: 1\r\n" : "", json ? json : oom);
    free(json);
    c->down.len = c->down.framed = n > 0 && n < DOWN_CAP ? (size_t)n : 0;
    c->progress = now();
    c->phase = ANSWERING;
    srv_metrics_request(g->metrics, "other", r->status, srv_seconds_since(c->since));
}

static void refuse(conn *c, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Refuses the connection's next request: nothing more of the client's is
 * forwarded. */
static void refuse(conn *c, int status, const char *kind, const char *fmt, ...)
{
    c->refusal.status = status;
    c->refusal.kind = kind;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->refusal.message, sizeof c->refusal.message, fmt, ap);
    va_end(ap);
    c->phase = REFUSING;
    c->up.len = c->up.framed;
}

/* Drops the first n bytes of a flow's buffer. */
static void consume(flow *f, char *buf, size_t n)
{
    memmove(buf, buf + n, f->len - n);
    f->len -= n;
    f->framed -= n;
}

/* ---- Relaying ------------------------------------------------------------------ */

static void read_client(srv_gate *g, conn *c, unsigned events)
{
    if (c->phase == LINGERING) {
        char sink[4096];
        ssize_t r;
        while ((r = recv(c->client, sink, sizeof sink, 0)) > 0)
            ;
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            finish(g, c);
        return;
    }
    if (c->phase != RELAY || c->client_eof || c->up.len == UP_CAP) {
        if (events & (EPOLLERR | EPOLLHUP))
            finish(g, c);
        return;
    }
    ssize_t r = recv(c->client, c->up_buf + c->up.len, UP_CAP - c->up.len, 0);
    if (r > 0)
        c->up.len += (size_t)r;
    else if (r == 0)
        c->client_eof = 1;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        finish(g, c); /* reset: the client is gone, and so is its work */
}

static void read_pair(srv_gate *g, conn *c, unsigned events)
{
    (void)g;
    if (c->pair < 0 || c->server_eof)
        return;
    if (c->down.len == DOWN_CAP) {
        if (events & EPOLLERR)
            c->server_eof = 1;
        return;
    }
    if (c->down.len == 0)
        c->progress = now(); /* the client's write stall counts from the first byte waiting */
    ssize_t r = recv(c->pair, c->down_buf + c->down.len, DOWN_CAP - c->down.len, 0);
    if (r > 0)
        c->down.len += (size_t)r;
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        c->server_eof = 1;
}

/* Frames what the client sent: whole heads are forwarded, a malformed
 * request is refused. */
static void frame_up(conn *c)
{
    while (c->phase == RELAY &&
           (c->up.framed < c->up.len || srv_frame_pending(&c->up.framer))) {
        if (!srv_frame_inside(&c->up.framer) && c->heads - c->answers >= IN_FLIGHT_MAX)
            return; /* enough answers awaited: the rest waits (and the client with it) */
        size_t used;
        srv_refusal why;
        srv_frame_event e = srv_frame(&c->up.framer, c->up_buf + c->up.framed,
                                      c->up.len - c->up.framed, &used, &why);
        c->up.framed += used;
        if (e == SRV_FRAME_HEAD) {
            uint64_t bit = (uint64_t)1 << (c->heads % IN_FLIGHT_MAX);
            c->head_methods = c->up.framer.is_head_method ? c->head_methods | bit
                                                          : c->head_methods & ~bit;
            c->heads++;
        } else if (e == SRV_FRAME_END) {
            c->requests++;
        } else if (e == SRV_FRAME_REFUSED) {
            c->refusal = why;
            c->phase = REFUSING;
            c->up.len = c->up.framed;
        } else {
            return;
        }
    }
}

/* Frames what the server sent, counting its final answers; 0 when it is
 * not HTTP as libmicrohttpd writes it (or answers nothing asked). */
static int frame_down(conn *c)
{
    while (c->down.framed < c->down.len || srv_frame_pending(&c->down.framer)) {
        if (!srv_frame_inside(&c->down.framer)) {
            if (c->answers >= c->heads)
                return 0;
            c->down.framer.bodiless = (int)(c->head_methods >> (c->answers % IN_FLIGHT_MAX)) & 1;
        }
        size_t used;
        srv_frame_event e = srv_frame(&c->down.framer, c->down_buf + c->down.framed,
                                      c->down.len - c->down.framed, &used, NULL);
        c->down.framed += used;
        if (e == SRV_FRAME_BROKEN)
            return 0;
        if (e == SRV_FRAME_END && c->down.framer.status >= 200)
            c->answers++;
        if (e == SRV_FRAME_MORE)
            break;
    }
    if (c->server_eof && srv_frame_until_close(&c->down.framer)) {
        srv_framer_init(&c->down.framer, 1);
        c->answers++;
    }
    return 1;
}

static void write_pair(conn *c)
{
    if (c->up.framed == 0)
        return;
    if (c->pair < 0 || c->server_deaf) {
        consume(&c->up, c->up_buf, c->up.framed);
        return;
    }
    ssize_t w = send(c->pair, c->up_buf, c->up.framed, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
        consume(&c->up, c->up_buf, (size_t)w);
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        /* libmicrohttpd closed its end, perhaps after an answer still to
         * be read from it: the rest of the request is dropped. */
        c->server_deaf = 1;
        consume(&c->up, c->up_buf, c->up.framed);
    }
}

static void write_client(srv_gate *g, conn *c)
{
    if (c->down.framed == 0)
        return;
    ssize_t w = send(c->client, c->down_buf, c->down.framed, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
        consume(&c->down, c->down_buf, (size_t)w);
        c->progress = now();
        if (c->down.len == 0 && c->answers >= c->requests)
            c->since = c->progress; /* answered: the next request's deadline starts */
    } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        finish(g, c);
    }
}

/* One step of advance: 1 when it changed something another step may build on. */
static int step(srv_gate *g, conn *c)
{
    size_t up = c->up.len, down = c->down.len;
    phase was = c->phase;
    frame_up(c);
    write_pair(c);
    if (c->client_eof && c->up.framed == 0 && !c->pair_shut && c->pair >= 0 &&
        c->phase == RELAY) {
        /* The client sent all it will: libmicrohttpd sees the same end
         * (and a request still being answered sees its client gone). */
        c->up.len = 0;
        shutdown(c->pair, SHUT_WR);
        c->pair_shut = 1;
    }
    if (!frame_down(c)) {
        finish(g, c);
        return 0;
    }
    if (c->phase == REFUSING && c->down.framed == 0) {
        if (c->answers >= c->requests) {
            c->down.len = 0;
            answer(g, c);
        } else if (c->server_eof) {
            finish(g, c); /* the server closed without the answers it owed */
            return 0;
        }
    }
    write_client(g, c);
    if (c->dead)
        return 0;
    if (c->phase == RELAY && c->server_eof && c->down.framed == 0) {
        /* libmicrohttpd closed, and all it said is relayed. When it
         * answered a request before its body had all arrived (413 from the
         * headers), the client may still be sending it: closing at once
         * would reset the connection, and the answer with it. */
        if (c->answers <= c->requests) {
            finish(g, c);
            return 0;
        }
        close_pair(g, c);
        c->down.len = 0;
        c->phase = ANSWERING;
    }
    if (c->phase == ANSWERING && c->down.len == 0) {
        shutdown(c->client, SHUT_WR);
        c->phase = LINGERING;
        c->linger_until = srv_after_ms(now(), LINGER_MS);
    }
    return c->phase != was || c->up.len != up || c->down.len != down;
}

/* Moves the connection on as far as its bytes allow: frames, forwards,
 * and steps through the phases of a refusal. */
static void advance(srv_gate *g, conn *c)
{
    while (!c->dead && step(g, c))
        ;
    update_interest(g, c);
}

/* ---- Accepting ----------------------------------------------------------------- */

static void admit(srv_gate *g, int fd, const struct sockaddr *addr, socklen_t len)
{
    const srv_settings *s = g->s;
    if (g->conns >= 2 * s->max_connections + 64) {
        close(fd); /* refusals lingering by the thousand: no more records for them */
        return;
    }
    conn *c = new_conn(g);
    if (!c) {
        close(fd);
        return;
    }
    int on = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    c->client = fd;
    c->pair = -1;
    srv_framer_init(&c->up.framer, 0);
    srv_framer_init(&c->down.framer, 1);
    c->since = c->progress = now();
    c->prev = g->head.prev;
    c->next = &g->head;
    g->head.prev->next = c;
    g->head.prev = c;
    g->conns++;
    int sv[2];
    if (__atomic_load_n(&g->live, __ATOMIC_RELAXED) >= (unsigned)s->max_connections) {
        refuse(c, 503, "too_many_connections",
               "the server has --max-connections (%d) connections open; retry later",
               s->max_connections);
    } else if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        refuse(c, 503, "too_many_connections", "cannot open a connection (%s); retry later",
               strerror(errno));
    } else {
        if (g->handoff(g->handoff_arg, sv[1], addr, len) != 0) { /* it closed sv[1] */
            close(sv[0]);
            refuse(c, 503, "too_many_connections",
                   "this address has --max-connections-per-client (%d) connections open "
                   "(or the server --max-connections); retry later",
                   s->max_per_client);
        } else {
            c->pair = sv[0];
            __atomic_add_fetch(&g->live, 1, __ATOMIC_RELAXED);
        }
    }
    advance(g, c);
}

static void accept_all(srv_gate *g)
{
    while (g->listening) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(g->listener, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            g->last_accept = now();
            admit(g, fd, (struct sockaddr *)&addr, len);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            /* Out of descriptors or memory: the backlog waits a sweep. */
            unsigned none = EPOLLIN;
            interest(g, g->listener, &none, 0, TAG_LISTENER);
            g->accept_paused_until = srv_after_ms(now(), SWEEP_MS);
        }
        return;
    }
}

static void stop_listening(srv_gate *g)
{
    if (!g->listening)
        return;
    unsigned registered = EPOLLIN;
    interest(g, g->listener, &registered, 0, TAG_LISTENER);
    close(g->listener);
    g->listener = -1;
    g->listening = 0;
}

/* Stops new connections at the listening socket: a filter that drops a
 * packet with SYN set and ACK clear, the first of a new connection. Returns
 * 1 when the system took it, 0 where it has no socket filters.
 *
 * Only the first packet: the filter also sees the last ACK of every
 * handshake whose SYN-ACK already went out, and a drop-all filter once
 * dropped such an ACK, leaving a client connected on its side (and its
 * request sent) to a connection the listener never queued and reset when it
 * closed. Sockets accepted later inherit the filter; an established
 * connection never receives a bare SYN, so it drops nothing of theirs. The
 * filter reads the TCP header, whose byte 13 holds the flags. */
static int close_the_door(int listener)
{
#ifdef SO_ATTACH_FILTER
    enum { TCP_FLAGS_BYTE = 13, TCP_SYN = 0x02, TCP_ACK = 0x10 };
    struct sock_filter drop_syn[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, TCP_FLAGS_BYTE),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_SYN | TCP_ACK),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_SYN, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0),          /* drop */
        BPF_STMT(BPF_RET | BPF_K, 0xffffffffu), /* keep the whole packet */
    };
    struct sock_fprog filter = {.len = sizeof drop_syn / sizeof drop_syn[0], .filter = drop_syn};
    return setsockopt(listener, SOL_SOCKET, SO_ATTACH_FILTER, &filter, sizeof filter) == 0;
#else
    (void)listener;
    return 0;
#endif
}

/* Quiescing: connections the system completed before the socket closes are
 * accepted ones to their clients, so they are taken rather than reset (a
 * listening socket's close resets its backlog). First, where the system
 * allows, new connections are stopped at the door (a client's SYN goes
 * unanswered, and its retry finds the port closed); then a handshake
 * answered before the door closed completes within a round trip: until none
 * has for HANDSHAKE_QUIET_MS (and at most HANDSHAKE_MAX_MS, the first
 * SYN-ACK retransmission being 1 s away), whatever arrives is accepted.
 * Without the filter only what is queued now is taken. Returns 1 once the
 * listening socket is closed. */
static int close_door_step(srv_gate *g)
{
    enum { HANDSHAKE_QUIET_MS = 200, HANDSHAKE_MAX_MS = 1000 };
    struct timespec t = now();
    if (!g->door_closing) {
        g->door_closing = 1;
        g->door_filter = g->listening && close_the_door(g->listener);
        g->door_began = g->last_accept = t;
    }
    accept_all(g);
    t = now();
    if (g->door_filter && ms_between(g->last_accept, t) < HANDSHAKE_QUIET_MS &&
        ms_between(g->door_began, t) < HANDSHAKE_MAX_MS && g->listening)
        return 0;
    stop_listening(g);
    g->door_closing = 0;
    return 1;
}

/* ---- Deadlines ----------------------------------------------------------------- */

/* A connection receiving a request, not being answered. */
static int receiving(const conn *c)
{
    return c->phase == RELAY && !c->client_eof && !c->server_eof &&
           c->answers >= c->requests && c->down.len == 0;
}

/* Closes a connection that is receiving: answered with `status` when a
 * request has begun to arrive, closed at once when it is idle. */
static void cut(srv_gate *g, conn *c, int status, const char *kind, const char *message)
{
    if (c->up.len > 0 || srv_frame_inside(&c->up.framer)) {
        refuse(c, status, kind, "%s", message);
        advance(g, c);
    } else {
        srv_metrics_request(g->metrics, "other", 408, srv_seconds_since(c->since));
        finish(g, c);
    }
}

static void sweep(srv_gate *g)
{
    struct timespec t = now();
    char message[200];
    snprintf(message, sizeof message, "no whole request within --read-timeout (%g s)",
             g->s->read_timeout);
    for (conn *c = g->head.next, *next; c != &g->head; c = next) {
        next = c->next;
        if (c->phase == LINGERING && ms_between(c->linger_until, t) >= 0)
            finish(g, c);
        else if (c->down.framed > 0 && srv_seconds_between(c->progress, t) > WRITE_STALL_S)
            finish(g, c);
        else if (receiving(c) && srv_seconds_between(c->since, t) > g->s->read_timeout)
            cut(g, c, 408, "read_timeout", message);
    }
    if (g->listening && !g->door_closing && g->accept_paused_until.tv_sec &&
        ms_between(g->accept_paused_until, t) >= 0) {
        unsigned none = 0;
        g->accept_paused_until.tv_sec = 0;
        interest(g, g->listener, &none, EPOLLIN, TAG_LISTENER);
    }
}

/* Shutdown's --drain-timeout passed: connections still receiving a request
 * are answered 503 (idle ones closed). One whose last answer is still being
 * relayed (to a client slow to read it) takes no further request. */
static void cut_receiving(srv_gate *g)
{
    char message[200];
    snprintf(message, sizeof message,
             "the server is stopping and the request did not arrive whole within "
             "--drain-timeout (%g s)", g->s->drain_timeout);
    for (conn *c = g->head.next, *next; c != &g->head; c = next) {
        next = c->next;
        if (receiving(c)) {
            cut(g, c, 503, "stopping", message);
        } else if ((c->phase == RELAY || c->phase == REFUSING) && !c->server_eof &&
                   c->answers >= c->requests) {
            /* Every answer is out of the daemon: what it holds of a next
             * request is dropped with the connection's server end. */
            close_pair(g, c);
            c->server_eof = 1;
            advance(g, c);
        }
    }
}

/* ---- The thread ---------------------------------------------------------------- */

/* Takes the other threads' requests. */
static void take_requests(srv_gate *g)
{
    uint64_t n;
    while (read(g->wake, &n, sizeof n) > 0)
        ;
    pthread_mutex_lock(&g->lock);
    int quiesce = g->quiesce_asked && !g->quiesce_done, cut_now = g->cut_asked,
        close_all = g->close_all_asked, stop = g->stop_asked;
    g->cut_asked = g->close_all_asked = 0;
    pthread_mutex_unlock(&g->lock);
    if (quiesce && !g->door_closing && close_door_step(g)) {
        pthread_mutex_lock(&g->lock);
        g->quiesce_done = 1;
        pthread_cond_broadcast(&g->changed);
        pthread_mutex_unlock(&g->lock);
    }
    if (cut_now)
        cut_receiving(g);
    for (conn *c = g->head.next, *next; close_all && c != &g->head; c = next) {
        next = c->next;
        finish(g, c);
    }
    if (stop && !g->stopping) {
        g->stopping = 1;
        g->stop_by = srv_after_ms(now(), STOP_FLUSH_MS);
        stop_listening(g);
    }
}

static void on_event(srv_gate *g, struct epoll_event *e)
{
    if (e->data.u64 == TAG_WAKE) {
        take_requests(g);
        return;
    }
    if (e->data.u64 == TAG_LISTENER) {
        accept_all(g);
        return;
    }
    conn *c = (conn *)(uintptr_t)(e->data.u64 & ~(uint64_t)TAG_PAIR);
    if (c->dead)
        return;
    if (e->data.u64 & TAG_PAIR)
        read_pair(g, c, e->events);
    else
        read_client(g, c, e->events);
    advance(g, c);
}

static void *run(void *arg)
{
    srv_gate *g = arg;
    struct epoll_event events[EVENTS];
    struct timespec next_sweep = srv_after_ms(now(), SWEEP_MS);
    for (;;) {
        int wait_ms = g->door_closing || g->stopping ? 10 : SWEEP_MS;
        int n = epoll_wait(g->epoll, events, EVENTS, wait_ms);
        for (int i = 0; i < n; i++)
            on_event(g, &events[i]);
        free_dead(g);
        if (g->door_closing && close_door_step(g)) {
            pthread_mutex_lock(&g->lock);
            g->quiesce_done = 1;
            pthread_cond_broadcast(&g->changed);
            pthread_mutex_unlock(&g->lock);
        }
        struct timespec t = now();
        if (ms_between(next_sweep, t) >= 0) {
            sweep(g);
            next_sweep = srv_after_ms(t, SWEEP_MS);
        }
        if (g->stopping) {
            /* libmicrohttpd has stopped: each connection ends once what it
             * said is relayed; what lingers, or is not read, is closed. */
            for (conn *c = g->head.next, *next; c != &g->head; c = next) {
                next = c->next;
                if (c->phase == LINGERING || ms_between(g->stop_by, t) >= 0)
                    finish(g, c);
                else
                    advance(g, c);
            }
            free_dead(g);
            if (g->conns == 0)
                break;
        }
    }
    return NULL;
}

/* ---- The interface (cli/serve/serve.h) ------------------------------------------------- */

srv_gate *srv_gate_open(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *addr;
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    int rc = getaddrinfo(s->host, port, &hints, &addr);
    if (rc != 0) {
        snprintf(err, err_len, "--host %s: %s", s->host, gai_strerror(rc));
        return NULL;
    }
    srv_gate *g = calloc(1, sizeof *g);
    if (!g) {
        freeaddrinfo(addr);
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    g->s = s;
    g->metrics = metrics;
    g->epoll = g->wake = -1;
    g->head.next = g->head.prev = &g->head;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->changed, NULL);
    g->listener = socket(addr->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                         addr->ai_protocol);
    int on = 1;
    if (g->listener >= 0) {
        (void)setsockopt(g->listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (addr->ai_family == AF_INET6)
            (void)setsockopt(g->listener, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    }
    if (g->listener < 0 || bind(g->listener, addr->ai_addr, addr->ai_addrlen) != 0 ||
        listen(g->listener, SOMAXCONN) != 0) {
        snprintf(err, err_len, "cannot listen on %s port %d: %s", s->host, s->port,
                 strerror(errno));
        freeaddrinfo(addr);
        srv_gate_stop(g);
        return NULL;
    }
    freeaddrinfo(addr);
    g->listening = 1;
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    g->port = s->port;
    if (getsockname(g->listener, (struct sockaddr *)&bound, &len) == 0)
        g->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return g;
}

int srv_gate_port(const srv_gate *g) { return g->port; }

int srv_gate_start(srv_gate *g, srv_gate_handoff handoff, void *arg, char *err, size_t err_len)
{
    g->handoff = handoff;
    g->handoff_arg = arg;
    g->epoll = epoll_create1(EPOLL_CLOEXEC);
    g->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    unsigned none = 0, none2 = 0;
    if (g->epoll < 0 || g->wake < 0) {
        snprintf(err, err_len, "cannot start the gate: %s", strerror(errno));
        return -1;
    }
    interest(g, g->wake, &none, EPOLLIN, TAG_WAKE);
    interest(g, g->listener, &none2, EPOLLIN, TAG_LISTENER);
    if (none != EPOLLIN || none2 != EPOLLIN ||
        pthread_create(&g->thread, NULL, run, g) != 0) {
        snprintf(err, err_len, "cannot start the gate's thread");
        return -1;
    }
    g->started = 1;
    return 0;
}

/* Asks the gate thread for something (the flag under the lock). */
static void ask(srv_gate *g, int *flag)
{
    uint64_t one = 1;
    pthread_mutex_lock(&g->lock);
    *flag = 1;
    pthread_mutex_unlock(&g->lock);
    (void)!write(g->wake, &one, sizeof one);
}

void srv_gate_quiesce(srv_gate *g)
{
    if (!g->started)
        return;
    ask(g, &g->quiesce_asked);
    pthread_mutex_lock(&g->lock);
    while (!g->quiesce_done)
        pthread_cond_wait(&g->changed, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

unsigned srv_gate_connections(srv_gate *g) { return __atomic_load_n(&g->live, __ATOMIC_RELAXED); }

void srv_gate_cut_receiving(srv_gate *g)
{
    if (g->started)
        ask(g, &g->cut_asked);
}

void srv_gate_close_all(srv_gate *g)
{
    if (g->started)
        ask(g, &g->close_all_asked);
}

void srv_gate_stop(srv_gate *g)
{
    if (!g)
        return;
    if (g->started) {
        ask(g, &g->stop_asked);
        pthread_join(g->thread, NULL);
    }
    if (g->listener >= 0)
        close(g->listener);
    if (g->epoll >= 0)
        close(g->epoll);
    if (g->wake >= 0)
        close(g->wake);
    for (conn *c = g->head.next, *next; c != &g->head; c = next) { /* never started */
        next = c->next;
        free(c);
    }
    free_dead(g);
    while (g->spare) {
        conn *c = g->spare;
        g->spare = c->next;
        free(c);
    }
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
    free(g);
}
