/* tessera serve: the pieces of the HTTP server and what they share.
 *
 *   serve.c          the command: options, startup, signals, orderly shutdown
 *   serve_http.c     libmicrohttpd: routes, bodies, answers, the connection limit
 *   serve_request.c  JSON requests checked into jobs, jobs answered as JSON
 *   serve_batcher.c  the queue of sentences and the workers that batch them
 *   serve_metrics.c  counters and histograms, in Prometheus' text format
 *
 * A request becomes a job of n sentences. Its sentences wait in one queue
 * (bounded: a full queue refuses the whole job); each worker (a thread with a
 * runtime of its own) takes the oldest sentence and every other waiting one
 * that decodes with the same options, up to --max-batch sentences and
 * --max-batch-tokens source tokens, waiting at most --batch-wait-ms for more
 * while other requests are still arriving, and decodes them together. A
 * sentence's output does not depend on the batch it is decoded in, so every
 * answer is what the CLI prints for it. */
#ifndef TSR_CLI_SERVE_H
#define TSR_CLI_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"

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
} srv_settings;

/* ---- Jobs -------------------------------------------------------------------------- */

typedef enum srv_kind { SRV_TRANSLATE, SRV_SCORE } srv_kind;

/* What a job's sentences are decoded with: only sentences with equal keys
 * share a batch. */
typedef struct srv_key {
    srv_kind kind;
    int beam, max_len, n_best;
    float length_penalty;
} srv_key;

typedef struct srv_job {
    srv_key key;
    int text;                  /* given as text: answers carry tokens too */
    size_t n;                  /* sentences */
    tessera_tokens *src, *tgt; /* [n]; tgt for score */
    int32_t *ids;              /* every sentence's ids, src and tgt point into it */
    size_t src_tokens;         /* sum of source lengths */
    /* Answers, filled by the workers: */
    tessera_hypothesis *hyps; /* translate: [n * n_best] */
    float **logprobs;         /* score: [n], each tgt[i].len + 1 values */
    /* Guarded by the batcher's lock: */
    size_t waiting, pending;  /* sentences still queued / not yet answered */
    int status;               /* 0, or the tessera_status of the first failure */
    char err[512];
    int abandoned;            /* the client went away: skip what is still queued */
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

/* Waits until every sentence of the job is answered, or `gone` says the
 * client left (checked every 100 ms): then its queued sentences are
 * dropped, those being decoded finished, and 1 is returned; 0 when answered.
 * Either way the job may be freed afterwards. */
int srv_batcher_wait(srv_batcher *b, srv_job *job, int (*gone)(void *), void *gone_arg);

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
/* Waits until no request is in progress. */
void srv_http_drain(srv_http *h);
void srv_http_stop(srv_http *h);

#endif
