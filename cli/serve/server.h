/* tessera serve: the pieces of the HTTP server and what they share.
 *
 *   serve.c          the command: options, startup, signals, orderly shutdown
 *   serve/loop.c     the HTTP/1.1 server: one thread, epoll, every connection;
 *                    the limits, the deadlines, refusals of malformed HTTP
 *   serve/listener.c the listening socket, and its door closed at shutdown
 *   serve/frame.c    HTTP/1.x requests framed and checked
 *   serve/http.c     the routes: endpoints, jobs, answers; drain
 *   serve/request.c  JSON requests checked into jobs, jobs answered as JSON
 *   serve/batcher.c  the queue of sentences and the workers that batch them
 *   serve/metrics.c  counters and histograms, in Prometheus' text format
 *
 * A request becomes a job of n sentences. Its sentences wait in one queue
 * (bounded: a full queue refuses the whole job); each worker (a thread with a
 * runtime of its own) takes the oldest sentence and every other waiting one
 * that decodes with the same options, up to --max-batch sentences and
 * --max-batch-tokens source tokens, waiting at most --batch-wait-ms for more
 * while other requests are still arriving, and decodes them together. A
 * sentence's output does not depend on the batch it is decoded in, so every
 * answer is what the CLI prints for it.
 *
 * A job stops early when its client goes away, when --request-timeout
 * passes, or when shutdown's --drain-timeout does: its queued sentences are
 * dropped, and a batch holding any of its sentences is cancelled between two
 * decoding steps (tessera_cancel_fn); the other jobs' sentences of that
 * batch go back to the head of the queue and are decoded again, to the same
 * bits. */
#ifndef TSR_CLI_SERVE_SERVER_H
#define TSR_CLI_SERVE_SERVER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cli/cli.h"

/* ---- Time (the server's pieces share these) -------------------------------------- */

/* t plus ms milliseconds. */
static inline struct timespec srv_after_ms(struct timespec t, long ms)
{
    t.tv_nsec += (ms % 1000) * 1000000L;
    t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
    t.tv_nsec %= 1000000000L;
    return t;
}

/* Seconds from t0 to t1. */
static inline double srv_seconds_between(struct timespec t0, struct timespec t1)
{
    return (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* Seconds from t0 (CLOCK_MONOTONIC) to now. */
static inline double srv_seconds_since(struct timespec t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return srv_seconds_between(t0, now);
}

/* ---- Settings ------------------------------------------------------------------ */

typedef struct srv_settings {
    cli_options cli;       /* model, workers, threads, numa, smt, compute type */
    const char *host;      /* address to listen on (default 127.0.0.1) */
    int port;              /* 0: any free port (printed at startup) */
    int max_batch;         /* sentences per batch */
    int max_batch_tokens;  /* source tokens per batch */
    int batch_wait_ms;     /* longest wait for a batch to fill */
    int max_queue;         /* sentences waiting, at most */
    size_t max_body;       /* request body bytes, at most */
    int max_sentences;     /* sentences per request, at most */
    int max_connections;   /* open connections, at most */
    int max_per_client;    /* open connections from one client address, at most */
    double read_timeout;   /* seconds to receive one whole request */
    double request_timeout; /* seconds from a request's arrival to its answer */
    double drain_timeout;  /* seconds shutdown waits for the requests accepted */
} srv_settings;

/* ---- Jobs -------------------------------------------------------------------------- */

typedef enum srv_kind { SRV_TRANSLATE, SRV_SCORE } srv_kind;

/* What a job's sentences are decoded with: only sentences with equal keys
 * (srv_same_key) share a batch. */
typedef struct srv_key {
    srv_kind kind;
    /* translate: the request's options (request.c's table of the fields a
     * request may set; the rest at their defaults); score: the defaults */
    tessera_translate_options decoding;
} srv_key;

/* Whether two jobs' sentences may share a batch: the same kind, and every
 * decoding option a request may set equal. */
int srv_same_key(const srv_key *a, const srv_key *b);

/* Why a job stopped before its answer (srv_job.stop). */
typedef enum srv_stop {
    SRV_RUNNING = 0,
    SRV_GONE,      /* its client closed the connection */
    SRV_TIMED_OUT, /* --request-timeout passed */
    SRV_SHUTDOWN,  /* --drain-timeout passed while stopping */
} srv_stop;

typedef struct srv_job {
    srv_key key;
    int text;                  /* given as text: answers carry tokens too */
    size_t n;                  /* sentences */
    tessera_tokens *src, *tgt; /* [n]; tgt for score */
    tessera_tokens *prefix;    /* translate: [n] target prefixes, or NULL: none */
    int32_t *ids;              /* every sentence's ids, src and tgt point into it */
    size_t src_tokens;         /* sum of source lengths */
    /* Answers, filled by the workers: */
    tessera_hypothesis *hyps; /* translate: [n * n_best] */
    float **logprobs;         /* score: [n], each tgt[i].len + 1 values */
    /* Guarded by the batcher's lock: */
    size_t waiting, pending;  /* sentences still queued / not yet answered */
    size_t dropped;           /* sentences dropped or cancelled, not answered */
    int status;               /* 0, or the tessera_status of the first failure */
    char err[512];
    srv_stop stop;            /* nonzero: drop what is queued, cancel what is decoding */
    void (*decoded)(void *arg); /* called when no sentence is pending (under the lock) */
    void *decoded_arg;
} srv_job;

/* How a job ended, once decoded was called: SRV_RUNNING (0) when every
 * sentence was answered (a stop that came after the last stands for nothing),
 * else why it stopped. */
static inline srv_stop srv_job_outcome(const srv_job *job)
{
    return job->dropped > 0 ? job->stop : SRV_RUNNING;
}

/* A job from a request body; NULL with an HTTP status (400, 413, 500) and a
 * one-line message naming the field and sentence in err. */
srv_job *srv_job_parse(srv_kind kind, const char *body, size_t len, const cli_model *cm,
                       const srv_settings *s, int *http_status, char *err, size_t err_len);
/* The job's answer as JSON (NUL-terminated, malloc'd); NULL when out of memory. */
char *srv_job_answer(const srv_job *job, const cli_model *cm);
void srv_job_free(srv_job *job);

/* {"error": {"kind": ..., "message": ...}}, malloc'd (NULL when out of memory). */
char *srv_error_json(const char *kind, const char *message);

/* ---- The batcher -------------------------------------------------------------------- */

typedef struct srv_batcher srv_batcher;
typedef struct srv_metrics srv_metrics;

/* Starts one thread per runtime of cm. NULL with a message when it cannot. */
srv_batcher *srv_batcher_start(const cli_model *cm, const srv_settings *s, srv_metrics *metrics,
                               char *err, size_t err_len);

/* Queues the job's sentences; 0, or -1 when the queue has no room for them
 * all (nothing queued: the caller answers 503). Once every sentence is
 * answered or dropped, decoded(arg) is called, on a worker's thread or the
 * one stopping the job, with the batcher's lock held (it must only take note
 * and return); the job may be freed from then on (srv_job_outcome says how
 * it ended). */
int srv_batcher_submit(srv_batcher *b, srv_job *job, void (*decoded)(void *arg), void *arg);

/* Stops a job (its client left, its deadline passed): its queued sentences
 * are dropped, a batch decoding any of them is cancelled within a decoding
 * step. Nothing when it has already stopped or is all answered. */
void srv_batcher_stop_job(srv_batcher *b, srv_job *job, srv_stop why);

/* Stops every job queued or decoding (SRV_SHUTDOWN): for shutdown when
 * --drain-timeout has passed. */
void srv_batcher_cancel_all(srv_batcher *b);

/* A translate or score request has begun to arrive (delta +1), or has been
 * queued or refused (-1). A batch waits to fill only while requests are
 * arriving: with none on the way, waiting could only add latency. */
void srv_batcher_arriving(srv_batcher *b, int delta);

/* Sentences waiting. */
size_t srv_batcher_depth(srv_batcher *b);

/* Finishes every queued sentence, then stops the workers and frees. */
void srv_batcher_stop(srv_batcher *b);

/* ---- Metrics ---------------------------------------------------------------------- */

srv_metrics *srv_metrics_new(void);
void srv_metrics_free(srv_metrics *m);
/* A request answered: endpoint, HTTP status, seconds from arrival to answer. */
void srv_metrics_request(srv_metrics *m, const char *endpoint, int status, double seconds);
/* A batch decoded: sentences, source tokens, target tokens produced. */
void srv_metrics_batch(srv_metrics *m, size_t sentences, size_t src_tokens, size_t tgt_tokens);
/* A job stopped before its answer, and why. */
void srv_metrics_stopped(srv_metrics *m, srv_stop why);
/* A batch cancelled; `requeued` sentences of other jobs went back to the queue. */
void srv_metrics_cancelled_batch(srv_metrics *m, size_t requeued);
/* The Prometheus text exposition (malloc'd); queue depth given by the caller. */
char *srv_metrics_text(srv_metrics *m, size_t queue_depth, int workers);

/* ---- Requests between the loop and the routes ------------------------------------- */

/* An answer: status, Content-Type and body (malloc'd; NULL: out of memory,
 * answered 500). */
typedef struct srv_answer {
    int status;
    const char *type;
    char *body;
} srv_answer;

/* One request, from its head to its answer. */
typedef struct srv_exchange srv_exchange;
struct srv_exchange {
    /* Read by the loop: */
    char *method, *path; /* NUL-terminated; the path %XX-decoded (any byte may be there),
                            without its query */
    size_t path_len;
    char *body; /* NUL-terminated (NULL: empty) */
    size_t body_len, body_cap;
    struct timespec arrival; /* CLOCK_MONOTONIC: when its head was whole */
    /* The routes': */
    srv_job *job;         /* decoding */
    const char *endpoint; /* label of its metrics */
    int arriving;         /* counted by the batcher as arriving */
    /* The loop's: called by the batcher (srv_batcher_submit's `decoded`) */
    void (*decoded)(void *x);
    void *loop, *conn;  /* conn NULL once its client is gone */
    srv_exchange *next; /* in the loop's list of decoded jobs */
};

/* What the loop asks of the routes, on its own thread. For each request:
 * begin once its head is whole; then drop (it never arrived whole), or run
 * once it has; when run leaves it pending, finish when its job is decoded,
 * and drop before that when its client leaves or its deadline passes. */
typedef struct srv_routes {
    void *arg;
    /* 1 with an answer in *a that makes reading the body pointless (a length
     * past --max-body: `declared` is the Content-Length, 0 without one),
     * else 0. */
    int (*begin)(void *arg, srv_exchange *x, uint64_t declared, srv_answer *a);
    /* 1 with the answer in *a, or 0: pending (a job queued). */
    int (*run)(void *arg, srv_exchange *x, srv_answer *a);
    /* The pending job is decoded: 1 with its answer, 0 when its client is
     * gone (x->conn NULL). */
    int (*finish)(void *arg, srv_exchange *x, srv_answer *a);
    /* The request will not be answered as asked: it never arrived whole;
     * or, pending, its client left (why SRV_GONE) or its --request-timeout
     * passed (SRV_TIMED_OUT), when its work is stopped and finish still
     * comes. */
    void (*drop)(void *arg, srv_exchange *x, srv_stop why);
} srv_routes;

/* ---- The listening socket (serve/listener.c) --------------------------------------- */

/* A non-blocking socket listening on s->host:s->port, the port it got in
 * *port; -1 with a message when it cannot. */
int srv_listener_open(const srv_settings *s, int *port, char *err, size_t err_len);
/* Stops new connections at the socket (their first packet dropped), the
 * handshakes already answered still completing: 1 when the system took
 * the filter, 0 where it has none. */
int srv_listener_close_door(int listener);

/* ---- The loop (serve/loop.c) ------------------------------------------------------- */

typedef struct srv_loop srv_loop;

/* Listens on s->host:s->port (not accepting yet); NULL with a message. */
srv_loop *srv_loop_open(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len);
/* The port listened on. */
int srv_loop_port(const srv_loop *l);
/* Starts the loop's thread: connections accepted, requests read and given
 * to the routes. 0, or -1 with a message. */
int srv_loop_start(srv_loop *l, const srv_routes *routes, char *err, size_t err_len);
/* Stops accepting: the connections the system completed are still taken,
 * then the listening socket closes; every later answer closes its
 * connection. Returns once it has. */
void srv_loop_quiesce(srv_loop *l);
/* Connections open (those refused at the limits aside). */
unsigned srv_loop_connections(srv_loop *l);
/* Connections still receiving a request are answered 503 (shutdown's
 * --drain-timeout has passed), idle ones closed. Returns at once. */
void srv_loop_cut_receiving(srv_loop *l);
/* Closes every connection, answered or not (pending requests dropped):
 * shutdown's last resort. Returns at once. */
void srv_loop_close_all(srv_loop *l);
/* Writes the answers still going out, briefly, closes every connection and
 * frees. */
void srv_loop_stop(srv_loop *l);

/* ---- HTTP (serve/http.c) ---------------------------------------------------------- */

typedef struct srv_http srv_http;

/* Listens on s->host:s->port; NULL with a message when it cannot. The model
 * may still be loading: health says so until srv_http_ready. */
srv_http *srv_http_start(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len);
/* The port actually listened on. */
int srv_http_port(const srv_http *h);
/* The model is loaded and the workers run: requests are served from now on. */
void srv_http_ready(srv_http *h, const cli_model *cm, srv_batcher *b);
/* Stops accepting connections; requests already accepted go on. */
void srv_http_quiesce(srv_http *h);
/* Waits until no request is in progress, at most --drain-timeout: then the
 * jobs still running are cancelled (answered 503) and connections still
 * receiving a request are answered 503 and closed, and it waits for those
 * to end. */
void srv_http_drain(srv_http *h);
void srv_http_stop(srv_http *h);

#endif
