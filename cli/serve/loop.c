/* tessera serve: the HTTP/1.1 server. One thread runs every connection on
 * epoll, non-blocking, never waiting on any one of them:
 *
 *   reading   bytes go through the framer (cli/serve/frame.c): a head is
 *             used only once it is whole and well formed, the body is
 *             de-chunked into the request, a malformed request is answered
 *             as the contract's JSON (cli/serve/api.md) and the connection
 *             closes;
 *   busy      a whole request is with the routes (cli/serve/http.c); a
 *             translate or score job decodes on the workers, which tell the
 *             loop through an eventfd when it is done (srv_exchange.decoded).
 *             Meanwhile the connection is watched for its client leaving
 *             (EPOLLRDHUP: the job is stopped) and --request-timeout;
 *   writing   the answer goes out; then the next request, pipelined or not.
 *
 * One request of a connection is read and answered at a time, so answers
 * keep their requests' order (pipelining) without being held anywhere.
 *
 * Memory per connection: a record of a few hundred bytes while it is idle;
 * the input buffer (SRV_HEAD_MAX bytes) only while unframed bytes wait in
 * it, the request's body and the answer only while they exist. So
 * thousands of idle keep-alive connections cost little (perf/serve-connections
 * measures it).
 *
 * The loop keeps the limits and the deadlines, since it sees every byte:
 * --max-connections and --max-connections-per-client (a connection past
 * either is answered 503 at once), --read-timeout (a connection has that
 * long to send a whole request, from its opening or from the end of its
 * previous answer: slowloris), and a client that reads nothing of its answer
 * for WRITE_STALL_S is cut. */
#define _GNU_SOURCE
#include <errno.h>
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

#include "cli/serve/frame.h"
#include "cli/serve/server.h"

enum {
    IN_CAP = SRV_HEAD_MAX, /* bytes read and not yet framed: a whole head fits */
    LINGER_MS = 2000,      /* after a last answer, reading what the client still sends */
    WRITE_STALL_S = 60,    /* a client reading nothing of its answer for that long is cut */
    SWEEP_MS = 100,        /* how often deadlines are checked */
    STOP_FLUSH_MS = 500,   /* at the end, answers still going out get this long */
    EVENTS = 256,
    PEER_BUCKETS = 4096, /* of the per-address counts */
};

typedef enum phase {
    READING,   /* a request arriving, or none yet (idle) */
    BUSY,      /* a whole request with the routes: its job decoding */
    WRITING,   /* an answer going out */
    LINGERING, /* the last answer given: what the client still sends is read and dropped */
} phase;

/* The open connections of one client address. */
typedef struct peer {
    struct peer *next;
    unsigned char addr[16];
    size_t len;
    int conns;
} peer;

typedef struct conn {
    struct conn *prev, *next;
    int fd;
    unsigned events; /* as registered with epoll */
    phase phase;
    int dead;
    int eof;       /* the client sent all it will */
    int closing;   /* the answer going out is the connection's last */
    int reset;     /* ...and the connection closes at once after it, without lingering */
    int head_only; /* the request is HEAD: its answer goes without the body */
    int expired;   /* the busy request's --request-timeout passed: its work was stopped */
    peer *peer;    /* counted in the limits (NULL: refused at the door) */
    char *in;      /* IN_CAP bytes while unframed bytes wait in it, else NULL */
    size_t in_len;
    srv_framer framer;
    srv_exchange *x; /* the request arriving (its head whole) or with the routes */
    char *out;       /* the answer going out, head and body */
    size_t out_len, out_sent;
    struct timespec since;    /* the read deadline counts from here */
    struct timespec progress; /* the last byte of the answer written, or its start */
    struct timespec linger_until;
} conn;

struct srv_loop {
    const srv_settings *s;
    srv_metrics *metrics;
    srv_routes routes;
    int listener, epoll, wake, port;
    pthread_t thread;
    int started;
    pthread_mutex_t lock; /* guards the requests and the decoded list below */
    pthread_cond_t changed;
    int quiesce_asked, quiesce_done, cut_asked, close_all_asked, stop_asked;
    srv_exchange *decoded; /* requests whose job is decoded, to answer */
    unsigned open;         /* connections counted in the limits (read by others: atomic) */
    /* The loop thread's own: */
    conn head;  /* a ring of every connection */
    conn *dead; /* closed during a batch of events: freed after it */
    int conns;
    peer *peers[PEER_BUCKETS];
    int quiescing; /* every answer closes its connection */
    int door_closing, door_filter;
    struct timespec door_began, last_accept, accept_paused_until, stop_by;
    int listening, stopping;
};

/* epoll's tags for the two descriptors that are not a connection. */
enum { TAG_WAKE = 0, TAG_LISTENER = 1 };

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
static void interest(srv_loop *l, int fd, unsigned *current, unsigned events, uint64_t tag)
{
    if (fd < 0 || events == *current)
        return;
    struct epoll_event e = {.events = events, .data.u64 = tag};
    int op = events == 0 ? EPOLL_CTL_DEL : *current == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(l->epoll, op, fd, &e) == 0 || op == EPOLL_CTL_DEL)
        *current = events;
}

/* What the connection waits for, by its phase: bytes of a request (while
 * there is room for them), its client leaving, room for its answer. */
static void update_interest(srv_loop *l, conn *c)
{
    if (c->dead)
        return;
    unsigned e = c->phase == READING   ? (!c->eof && c->in_len < IN_CAP ? EPOLLIN : 0)
                 : c->phase == BUSY    ? EPOLLRDHUP
                 : c->phase == WRITING ? EPOLLOUT
                                       : EPOLLIN;
    interest(l, c->fd, &c->events, e, (uint64_t)(uintptr_t)c);
}

/* ---- Client addresses -------------------------------------------------------------- */

static size_t address_bytes(const struct sockaddr *a, const unsigned char **bytes)
{
    if (a->sa_family == AF_INET) {
        *bytes = (const unsigned char *)&((const struct sockaddr_in *)a)->sin_addr;
        return 4;
    }
    if (a->sa_family == AF_INET6) {
        *bytes = (const unsigned char *)&((const struct sockaddr_in6 *)a)->sin6_addr;
        return 16;
    }
    *bytes = NULL;
    return 0;
}

/* An address's bucket of l->peers (FNV-1a of its bytes). */
static size_t peer_bucket(const unsigned char *bytes, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ bytes[i]) * 16777619u;
    return h % PEER_BUCKETS;
}

/* The record of the address's connections, made when it has none; NULL when
 * out of memory. */
static peer *peer_of(srv_loop *l, const struct sockaddr *a)
{
    const unsigned char *bytes;
    size_t len = address_bytes(a, &bytes);
    peer **slot = &l->peers[peer_bucket(bytes, len)];
    for (peer *p = *slot; p; p = p->next)
        if (p->len == len && memcmp(p->addr, bytes, len) == 0)
            return p;
    peer *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    memcpy(p->addr, bytes, len);
    p->len = len;
    p->next = *slot;
    *slot = p;
    return p;
}

static void peer_release(srv_loop *l, peer *p)
{
    if (--p->conns > 0)
        return;
    for (peer **at = &l->peers[peer_bucket(p->addr, p->len)]; *at; at = &(*at)->next)
        if (*at == p) {
            *at = p->next;
            free(p);
            return;
        }
}

/* ---- Connections --------------------------------------------------------------- */

static void free_exchange(srv_exchange *x)
{
    if (!x)
        return;
    free(x->method);
    free(x->path);
    free(x->body);
    free(x);
}

/* The request of the connection will not be answered (`why`: the client
 * left, or its deadline passed). A pending one is kept for its job's end
 * (finish), without its connection. */
static void drop_request(srv_loop *l, conn *c, srv_stop why)
{
    srv_exchange *x = c->x;
    if (!x)
        return;
    c->x = NULL;
    l->routes.drop(l->routes.arg, x, why);
    if (c->phase == BUSY)
        x->conn = NULL; /* freed when its job is decoded */
    else
        free_exchange(x);
}

/* The connection no longer counts in the limits (nor for shutdown's drain):
 * it is closing, its last answer given. */
static void uncount(srv_loop *l, conn *c)
{
    if (c->peer) {
        peer_release(l, c->peer);
        c->peer = NULL;
        __atomic_sub_fetch(&l->open, 1, __ATOMIC_RELAXED);
    }
}

/* Closes the connection (a client with bytes unread gets a reset); the
 * record is freed after the current events. */
static void finish(srv_loop *l, conn *c)
{
    if (c->dead)
        return;
    drop_request(l, c, SRV_GONE);
    close(c->fd); /* which takes it out of epoll: no other descriptor refers to it */
    c->dead = 1;
    uncount(l, c);
    c->prev->next = c->next;
    c->next->prev = c->prev;
    c->next = l->dead;
    l->dead = c;
    l->conns--;
}

static void free_dead(srv_loop *l)
{
    while (l->dead) {
        conn *c = l->dead;
        l->dead = c->next;
        free(c->in);
        free(c->out);
        free(c);
    }
}

/* ---- Answers ------------------------------------------------------------------ */

static const char *reason_phrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/* RFC 9110's Date, as an origin server with a clock sends it. */
static const char *http_date(void)
{
    static __thread char text[40];
    static __thread time_t made = -1;
    time_t t = time(NULL);
    if (t != made) {
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        made = t;
    }
    return text;
}

static void write_out(srv_loop *l, conn *c);

/* Gives the answer (its body taken over): the connection writes it, and
 * then reads the next request, or closes when c->closing. */
static void give(srv_loop *l, conn *c, srv_answer *a)
{
    static const char oom[] = "{\"error\":{\"kind\":\"internal\",\"message\":\"out of memory\"}}";
    if (!a->body) {
        a->status = 500;
        a->type = "application/json";
    }
    const char *body = a->body ? a->body : oom;
    size_t body_len = strlen(body);
    c->closing |= l->quiescing; /* so that draining ends */
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "%s%s\r\n",
                     a->status, reason_phrase(a->status), http_date(), a->type, body_len,
                     a->status == 503 ? "Retry-After: 1\r\n" : "",
                     c->closing ? "Connection: close\r\n" : "");
    size_t send_body = c->head_only ? 0 : body_len;
    free(c->out);
    c->out = malloc((size_t)n + send_body);
    if (!c->out) {
        free(a->body);
        finish(l, c);
        return;
    }
    memcpy(c->out, head, (size_t)n);
    memcpy(c->out + n, body, send_body);
    free(a->body);
    a->body = NULL;
    c->out_len = (size_t)n + send_body;
    c->out_sent = 0;
    c->phase = WRITING;
    c->progress = now();
    write_out(l, c);
}

static void refuse(srv_loop *l, conn *c, int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Answers the connection's request (or the bytes it sent) with the
 * contract's error, and closes it after: nothing more of it is read. */
static void refuse(srv_loop *l, conn *c, int status, const char *kind, const char *fmt, ...)
{
    char message[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    drop_request(l, c, SRV_GONE);
    free(c->in);
    c->in = NULL;
    c->in_len = 0;
    c->closing = 1;
    c->head_only = 0;
    srv_metrics_request(l->metrics, "other", status, srv_seconds_since(c->since));
    srv_answer a = {status, "application/json", srv_error_json(kind, message)};
    give(l, c, &a);
}

static void serve_buffered(srv_loop *l, conn *c);

/* Writes what it can of the answer; when it is all out, the connection
 * lingers (its last answer), closes (a reset one) or reads on. */
static void write_out(srv_loop *l, conn *c)
{
    while (c->out_sent < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            c->out_sent += (size_t)w;
            c->progress = now();
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            update_interest(l, c); /* EPOLLOUT says when there is room */
            return;
        } else {
            finish(l, c);
            return;
        }
    }
    free(c->out);
    c->out = NULL;
    c->since = now(); /* answered: the next request's deadline starts */
    if (c->reset) {
        finish(l, c);
    } else if (c->closing) {
        /* Closing at once would reset the connection if the client is
         * still sending (a body refused from its head), and the answer with
         * it: what it sends is read and dropped for a moment. */
        shutdown(c->fd, SHUT_WR);
        uncount(l, c);
        c->phase = LINGERING;
        c->linger_until = srv_after_ms(c->since, LINGER_MS);
    } else {
        c->phase = READING;
        serve_buffered(l, c);
    }
    update_interest(l, c);
}

/* ---- Requests ------------------------------------------------------------------ */

static int hex_digit(unsigned char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The path of a request target t[0, n): up to its query, %XX decoded (a
 * '%' not followed by two hex digits stays itself). */
static char *decode_path(const char *t, size_t n, size_t *len)
{
    const char *query = memchr(t, '?', n);
    size_t end = query ? (size_t)(query - t) : n, k = 0;
    char *p = malloc(end + 1);
    for (size_t i = 0; p && i < end; i++) {
        int hi = t[i] == '%' && i + 2 < end ? hex_digit((unsigned char)t[i + 1]) : -1;
        int lo = hi >= 0 ? hex_digit((unsigned char)t[i + 2]) : -1;
        if (lo >= 0) {
            p[k++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            p[k++] = t[i];
        }
    }
    if (p)
        p[k] = '\0';
    *len = k;
    return p;
}

static void on_decoded(void *arg);

/* A head is whole: h[0, f->head_len). The request begins (or is answered
 * from its head alone). */
static void begin_request(srv_loop *l, conn *c, const char *h)
{
    const srv_framer *f = &c->framer;
    srv_exchange *x = calloc(1, sizeof *x);
    if (x) {
        x->method = strndup(h, f->method_len);
        x->path = decode_path(h + f->target_at, f->target_len, &x->path_len);
    }
    if (!x || !x->method || !x->path) {
        free_exchange(x);
        refuse(l, c, 503, "overloaded", "out of memory; retry later");
        return;
    }
    x->arrival = now();
    x->decoded = on_decoded;
    x->loop = l;
    x->conn = c;
    c->head_only = f->is_head_method;
    c->closing = !f->keep_alive;
    srv_answer a;
    if (l->routes.begin(l->routes.arg, x, f->chunked ? 0 : f->length, &a)) {
        free_exchange(x); /* answered: its body is not read */
        free(c->in);
        c->in = NULL;
        c->in_len = 0;
        c->closing = 1;
        give(l, c, &a);
        return;
    }
    c->x = x;
    if (f->expect_continue && f->minor >= 1) {
        /* The client waits for this before it sends its body (a second, for
         * curl). Best effort: the socket's buffer is empty at this point. */
        static const char go_on[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!send(c->fd, go_on, sizeof go_on - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

/* Body bytes of the request arriving. */
static void body_bytes(srv_loop *l, conn *c, const char *data, size_t n)
{
    srv_exchange *x = c->x;
    if (x->body_len + n > l->s->max_body) {
        /* A chunked body past --max-body (a declared length was refused
         * from the head): not read further. The connection closes right
         * after the answer, so the client's sending stops. */
        c->reset = 1;
        refuse(l, c, 413, "body_too_large", "body: more than %zu bytes (--max-body)",
               l->s->max_body);
        return;
    }
    if (x->body_len + n + 1 > x->body_cap) {
        size_t cap = x->body_cap ? 2 * x->body_cap : 4096;
        while (cap < x->body_len + n + 1)
            cap *= 2;
        char *body = realloc(x->body, cap);
        if (!body) {
            refuse(l, c, 503, "overloaded", "out of memory; retry later");
            return;
        }
        x->body = body;
        x->body_cap = cap;
    }
    memcpy(x->body + x->body_len, data, n);
    x->body_len += n;
    x->body[x->body_len] = '\0';
}

/* The request is whole: to the routes. */
static void run_request(srv_loop *l, conn *c)
{
    srv_answer a;
    c->phase = BUSY;
    c->expired = 0;
    if (l->routes.run(l->routes.arg, c->x, &a)) {
        free_exchange(c->x);
        c->x = NULL;
        give(l, c, &a);
    }
}

/* Frames what the client sent, while the connection reads requests. */
static void serve_buffered(srv_loop *l, conn *c)
{
    while (!c->dead && c->phase == READING &&
           (c->in_len > 0 || srv_frame_pending(&c->framer))) {
        size_t used;
        srv_refusal why;
        srv_frame_event e = srv_frame(&c->framer, c->in, c->in_len, &used, &why);
        if (e == SRV_FRAME_REFUSED) {
            refuse(l, c, why.status, why.kind, "%s", why.message);
            return;
        }
        if (e == SRV_FRAME_HEAD)
            begin_request(l, c, c->in + used - c->framer.head_len);
        else if (e == SRV_FRAME_DATA)
            body_bytes(l, c, c->in + used - c->framer.data, c->framer.data);
        if (c->dead || !c->in)
            return; /* answered and closing: nothing more is read */
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (e == SRV_FRAME_END)
            run_request(l, c);
        else if (e == SRV_FRAME_MORE)
            break;
    }
    if (c->dead)
        return;
    if (c->in && c->in_len == 0) {
        free(c->in); /* idle connections hold no buffer */
        c->in = NULL;
    }
    if (c->phase == READING && c->eof)
        finish(l, c); /* the client sent all it will: a request cut short is dropped */
}

static void on_conn_event(srv_loop *l, conn *c, unsigned events)
{
    if (c->phase == LINGERING) {
        char sink[4096];
        ssize_t r;
        while ((r = recv(c->fd, sink, sizeof sink, 0)) > 0)
            ;
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            finish(l, c);
        return;
    }
    if (c->phase == BUSY) {
        /* The client shut its side or reset: nobody will read the answer. */
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            finish(l, c);
        return;
    }
    if (c->phase == WRITING) {
        if (events & (EPOLLHUP | EPOLLERR))
            finish(l, c);
        else
            write_out(l, c);
        return;
    }
    if (!c->in && !(c->in = malloc(IN_CAP))) {
        finish(l, c);
        return;
    }
    ssize_t r = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
    if (r > 0)
        c->in_len += (size_t)r;
    else if (r == 0)
        c->eof = 1;
    else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        finish(l, c); /* reset: the client is gone */
        return;
    }
    serve_buffered(l, c);
}

/* The batcher's `decoded` (on a worker's thread, its lock held): the
 * request goes on the loop's list, and the loop wakes. */
static void on_decoded(void *arg)
{
    srv_exchange *x = arg;
    srv_loop *l = x->loop;
    uint64_t one = 1;
    pthread_mutex_lock(&l->lock);
    x->next = l->decoded;
    l->decoded = x;
    pthread_mutex_unlock(&l->lock);
    (void)!write(l->wake, &one, sizeof one);
}

/* The decoded jobs' answers go out (those whose client is gone: nothing). */
static void answer_decoded(srv_loop *l)
{
    pthread_mutex_lock(&l->lock);
    srv_exchange *x = l->decoded;
    l->decoded = NULL;
    pthread_mutex_unlock(&l->lock);
    while (x) {
        srv_exchange *next = x->next;
        conn *c = x->conn;
        srv_answer a;
        if (l->routes.finish(l->routes.arg, x, &a) && c && !c->dead) {
            c->x = NULL;
            give(l, c, &a);
        }
        free_exchange(x);
        x = next;
    }
}

/* ---- Accepting ----------------------------------------------------------------- */

static void admit(srv_loop *l, int fd, const struct sockaddr *addr)
{
    const srv_settings *s = l->s;
    if (l->conns >= 2 * s->max_connections + 64) {
        close(fd); /* refusals lingering by the thousand: no more records for them */
        return;
    }
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    int on = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    c->fd = fd;
    srv_framer_init(&c->framer);
    c->since = c->progress = now();
    c->prev = l->head.prev;
    c->next = &l->head;
    l->head.prev->next = c;
    l->head.prev = c;
    l->conns++;
    peer *p = NULL;
    if (__atomic_load_n(&l->open, __ATOMIC_RELAXED) >= (unsigned)s->max_connections) {
        refuse(l, c, 503, "too_many_connections",
               "the server has --max-connections (%d) connections open; retry later",
               s->max_connections);
    } else if (!(p = peer_of(l, addr)) || p->conns >= s->max_per_client) {
        refuse(l, c, 503, "too_many_connections",
               "this address has --max-connections-per-client (%d) connections open; "
               "retry later", s->max_per_client);
    } else {
        c->peer = p;
        p->conns++;
        __atomic_add_fetch(&l->open, 1, __ATOMIC_RELAXED);
    }
    update_interest(l, c);
}

static void accept_all(srv_loop *l)
{
    while (l->listening) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = accept4(l->listener, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            l->last_accept = now();
            admit(l, fd, (struct sockaddr *)&addr);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            /* Out of descriptors or memory: the backlog waits a sweep. */
            unsigned none = EPOLLIN;
            interest(l, l->listener, &none, 0, TAG_LISTENER);
            l->accept_paused_until = srv_after_ms(now(), SWEEP_MS);
        }
        return;
    }
}

static void stop_listening(srv_loop *l)
{
    if (!l->listening)
        return;
    unsigned registered = EPOLLIN;
    interest(l, l->listener, &registered, 0, TAG_LISTENER);
    close(l->listener);
    l->listener = -1;
    l->listening = 0;
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
static int close_door_step(srv_loop *l)
{
    enum { HANDSHAKE_QUIET_MS = 200, HANDSHAKE_MAX_MS = 1000 };
    struct timespec t = now();
    if (!l->door_closing) {
        l->door_closing = 1;
        l->door_filter = l->listening && srv_listener_close_door(l->listener);
        l->door_began = l->last_accept = t;
    }
    accept_all(l);
    t = now();
    if (l->door_filter && ms_between(l->last_accept, t) < HANDSHAKE_QUIET_MS &&
        ms_between(l->door_began, t) < HANDSHAKE_MAX_MS && l->listening)
        return 0;
    stop_listening(l);
    l->door_closing = 0;
    return 1;
}

/* ---- Deadlines ----------------------------------------------------------------- */

/* Closes a connection reading requests: answered with `status` when a
 * request has begun to arrive, closed at once when it is idle. */
static void cut(srv_loop *l, conn *c, int status, const char *kind, const char *message)
{
    if (c->in_len > 0 || c->x) {
        refuse(l, c, status, kind, "%s", message);
    } else {
        if (status == 408)
            srv_metrics_request(l->metrics, "other", 408, srv_seconds_since(c->since));
        finish(l, c);
    }
}

static void sweep(srv_loop *l)
{
    struct timespec t = now();
    char message[200];
    snprintf(message, sizeof message, "no whole request within --read-timeout (%g s)",
             l->s->read_timeout);
    for (conn *c = l->head.next, *next; c != &l->head; c = next) {
        next = c->next;
        if (c->phase == LINGERING && ms_between(c->linger_until, t) >= 0)
            finish(l, c);
        else if (c->phase == WRITING && srv_seconds_between(c->progress, t) > WRITE_STALL_S)
            finish(l, c);
        else if (c->phase == READING && srv_seconds_between(c->since, t) > l->s->read_timeout)
            cut(l, c, 408, "read_timeout", message);
        else if (c->phase == BUSY && !c->expired && c->x &&
                 srv_seconds_between(c->x->arrival, t) >= l->s->request_timeout) {
            c->expired = 1; /* its answer (503 timeout) comes when the job has stopped */
            l->routes.drop(l->routes.arg, c->x, SRV_TIMED_OUT);
        }
    }
    if (l->listening && !l->door_closing && l->accept_paused_until.tv_sec &&
        ms_between(l->accept_paused_until, t) >= 0) {
        unsigned none = 0;
        l->accept_paused_until.tv_sec = 0;
        interest(l, l->listener, &none, EPOLLIN, TAG_LISTENER);
    }
}

/* Shutdown's --drain-timeout passed: connections still receiving a request
 * are answered 503 (idle ones closed); one whose answer is going out takes
 * no further request. */
static void cut_receiving(srv_loop *l)
{
    char message[200];
    snprintf(message, sizeof message,
             "the server is stopping and the request did not arrive whole within "
             "--drain-timeout (%g s)", l->s->drain_timeout);
    for (conn *c = l->head.next, *next; c != &l->head; c = next) {
        next = c->next;
        if (c->phase == READING)
            cut(l, c, 503, "stopping", message);
        else if (c->phase == WRITING)
            c->closing = 1;
    }
}

/* ---- The thread ---------------------------------------------------------------- */

static void quiesced(srv_loop *l)
{
    pthread_mutex_lock(&l->lock);
    l->quiesce_done = 1;
    pthread_cond_broadcast(&l->changed);
    pthread_mutex_unlock(&l->lock);
}

/* Takes the other threads' requests, and the decoded jobs. */
static void take_requests(srv_loop *l)
{
    uint64_t n;
    while (read(l->wake, &n, sizeof n) > 0)
        ;
    pthread_mutex_lock(&l->lock);
    int quiesce = l->quiesce_asked && !l->quiesce_done, cut_now = l->cut_asked,
        close_all = l->close_all_asked, stop = l->stop_asked;
    l->cut_asked = l->close_all_asked = 0;
    pthread_mutex_unlock(&l->lock);
    answer_decoded(l);
    if (quiesce && !l->door_closing) {
        l->quiescing = 1;
        if (close_door_step(l))
            quiesced(l);
    }
    if (cut_now)
        cut_receiving(l);
    for (conn *c = l->head.next, *next; close_all && c != &l->head; c = next) {
        next = c->next;
        finish(l, c);
    }
    if (stop && !l->stopping) {
        l->stopping = 1;
        l->stop_by = srv_after_ms(now(), STOP_FLUSH_MS);
        stop_listening(l);
    }
}

static void on_event(srv_loop *l, struct epoll_event *e)
{
    if (e->data.u64 == TAG_WAKE) {
        take_requests(l);
        return;
    }
    if (e->data.u64 == TAG_LISTENER) {
        accept_all(l);
        return;
    }
    conn *c = (conn *)(uintptr_t)e->data.u64;
    if (!c->dead)
        on_conn_event(l, c, e->events);
    if (!c->dead)
        update_interest(l, c);
}

static void *run(void *arg)
{
    srv_loop *l = arg;
    struct epoll_event events[EVENTS];
    struct timespec next_sweep = srv_after_ms(now(), SWEEP_MS);
    for (;;) {
        int wait_ms = l->door_closing || l->stopping ? 10 : SWEEP_MS;
        int n = epoll_wait(l->epoll, events, EVENTS, wait_ms);
        for (int i = 0; i < n; i++)
            on_event(l, &events[i]);
        free_dead(l);
        if (l->door_closing && close_door_step(l))
            quiesced(l);
        struct timespec t = now();
        if (ms_between(next_sweep, t) >= 0) {
            sweep(l); /* each change it makes updates its connection's interest itself */
            free_dead(l);
            next_sweep = srv_after_ms(t, SWEEP_MS);
        }
        if (l->stopping) {
            /* Each connection ends once its answer is out; what lingers,
             * reads requests or is not read is closed. */
            for (conn *c = l->head.next, *next; c != &l->head; c = next) {
                next = c->next;
                if (c->phase != WRITING || ms_between(l->stop_by, t) >= 0)
                    finish(l, c);
            }
            free_dead(l);
            if (l->conns == 0)
                break;
        }
    }
    return NULL;
}

/* ---- The interface (cli/serve/server.h) ------------------------------------------------- */

srv_loop *srv_loop_open(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len)
{
    srv_loop *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    l->s = s;
    l->metrics = metrics;
    l->epoll = l->wake = -1;
    l->head.next = l->head.prev = &l->head;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->changed, NULL);
    l->listener = srv_listener_open(s, &l->port, err, err_len);
    if (l->listener < 0) {
        srv_loop_stop(l);
        return NULL;
    }
    l->listening = 1;
    return l;
}

int srv_loop_port(const srv_loop *l) { return l->port; }

int srv_loop_start(srv_loop *l, const srv_routes *routes, char *err, size_t err_len)
{
    l->routes = *routes;
    l->epoll = epoll_create1(EPOLL_CLOEXEC);
    l->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    unsigned none = 0, none2 = 0;
    if (l->epoll < 0 || l->wake < 0) {
        snprintf(err, err_len, "cannot start the server's loop: %s", strerror(errno));
        return -1;
    }
    interest(l, l->wake, &none, EPOLLIN, TAG_WAKE);
    interest(l, l->listener, &none2, EPOLLIN, TAG_LISTENER);
    if (none != EPOLLIN || none2 != EPOLLIN || pthread_create(&l->thread, NULL, run, l) != 0) {
        snprintf(err, err_len, "cannot start the server's thread");
        return -1;
    }
    l->started = 1;
    return 0;
}

/* Asks the loop's thread for something (the flag under the lock). */
static void ask(srv_loop *l, int *flag)
{
    uint64_t one = 1;
    pthread_mutex_lock(&l->lock);
    *flag = 1;
    pthread_mutex_unlock(&l->lock);
    (void)!write(l->wake, &one, sizeof one);
}

void srv_loop_quiesce(srv_loop *l)
{
    if (!l->started)
        return;
    ask(l, &l->quiesce_asked);
    pthread_mutex_lock(&l->lock);
    while (!l->quiesce_done)
        pthread_cond_wait(&l->changed, &l->lock);
    pthread_mutex_unlock(&l->lock);
}

unsigned srv_loop_connections(srv_loop *l) { return __atomic_load_n(&l->open, __ATOMIC_RELAXED); }

void srv_loop_cut_receiving(srv_loop *l)
{
    if (l->started)
        ask(l, &l->cut_asked);
}

void srv_loop_close_all(srv_loop *l)
{
    if (l->started)
        ask(l, &l->close_all_asked);
}

void srv_loop_stop(srv_loop *l)
{
    if (!l)
        return;
    if (l->started) {
        ask(l, &l->stop_asked);
        pthread_join(l->thread, NULL);
    }
    /* Jobs decoded after their connections closed: nobody to answer. */
    for (srv_exchange *x = l->decoded, *next; x; x = next) {
        next = x->next;
        srv_answer a;
        x->conn = NULL;
        l->routes.finish(l->routes.arg, x, &a);
        free_exchange(x);
    }
    if (l->listener >= 0)
        close(l->listener);
    if (l->epoll >= 0)
        close(l->epoll);
    if (l->wake >= 0)
        close(l->wake);
    for (conn *c = l->head.next, *next; c != &l->head; c = next) { /* never started */
        next = c->next;
        free(c);
    }
    free_dead(l);
    for (size_t i = 0; i < PEER_BUCKETS; i++)
        for (peer *p = l->peers[i], *next; p; p = next) {
            next = p->next;
            free(p);
        }
    pthread_cond_destroy(&l->changed);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
