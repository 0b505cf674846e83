/* tessera serve: the pieces of the HTTP server and what they share.
 *
 *   serve.c          the command: options, startup, signals, orderly shutdown
 *   serve/gate.c     the listening socket, and a relay in front of libmicrohttpd:
 *                    malformed requests and connections past the limits
 *                    answered in JSON, the read deadline (--read-timeout)
 *   serve/frame.c    where each HTTP/1.x message ends, what libmicrohttpd would refuse
 *   serve/http.c     libmicrohttpd: routes, bodies, answers, the per-address limit
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
#ifndef TSR_CLI_SERVE_SERVE_H
#define TSR_CLI_SERVE_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
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
    struct timespec deadline; /* CLOCK_MONOTONIC: --request-timeout after arrival */
    pthread_cond_t done;
} srv_job;

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
 * all (nothing queued: the caller answers 503). */
int srv_batcher_submit(srv_batcher *b, srv_job *job);

/* Waits until every sentence of the job is answered, or the job stops: its
 * client left (`gone`, asked every 100 ms), its deadline passed, or
 * srv_batcher_cancel_all. Then its queued sentences are dropped, a batch
 * decoding any of them is cancelled within a decoding step, and the reason
 * is returned; SRV_RUNNING (0) when answered. Either way the job may be
 * freed afterwards. */
srv_stop srv_batcher_wait(srv_batcher *b, srv_job *job, int (*gone)(void *), void *gone_arg);

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

/* ---- HTTP ------------------------------------------------------------------------------ */

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

/* ---- The gate (serve/gate.c) ------------------------------------------------------ */

/* The gate owns the listening socket and stands between each client and
 * libmicrohttpd (the file's comment says how): requests libmicrohttpd would
 * refuse in HTML, and connections past the limits, are answered in JSON
 * there; it keeps --read-timeout. */
typedef struct srv_gate srv_gate;

/* Hands a connection to the HTTP daemon: fd is the daemon's end of a socket
 * pair standing for the client at `client`. 0 when the daemon took it, -1
 * when it refused it (a connection limit); fd is the daemon's either way. */
typedef int (*srv_gate_handoff)(void *arg, int fd, const struct sockaddr *client,
                                socklen_t len);

/* Listens on s->host:s->port (not accepting yet); NULL with a message when
 * it cannot. */
srv_gate *srv_gate_open(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len);
/* The port listened on. */
int srv_gate_port(const srv_gate *g);
/* Starts accepting, each connection handed over through `handoff` (called
 * on the gate's thread). 0, or -1 with a message. */
int srv_gate_start(srv_gate *g, srv_gate_handoff handoff, void *arg, char *err, size_t err_len);
/* Stops accepting: the connections the system completed are still taken,
 * then the listening socket closes. Returns once it has. */
void srv_gate_quiesce(srv_gate *g);
/* Connections open to the daemon (their answers relayed or not yet). */
unsigned srv_gate_connections(srv_gate *g);
/* Connections still receiving a request (shutdown's --drain-timeout has
 * passed) are answered 503, idle ones closed. Returns at once. */
void srv_gate_cut_receiving(srv_gate *g);
/* Closes every connection, answered or not: shutdown's last resort, when
 * connections still hold requests after --drain-timeout and a grace.
 * Returns at once. */
void srv_gate_close_all(srv_gate *g);
/* Relays what the stopped daemon said, briefly, closes every connection
 * and frees. */
void srv_gate_stop(srv_gate *g);

#endif
