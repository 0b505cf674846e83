/* tessera serve: HTTP on libmicrohttpd, behind the gate (cli/serve/gate.c),
 * which owns the listening socket and hands each connection over as one end
 * of a socket pair. One thread per connection (bounded by --max-connections,
 * counted by the gate, and by --max-connections-per-client for each client
 * address, counted here): a request thread parses the body, queues its job
 * and sleeps until the workers have answered every sentence, checking every
 * 100 ms whether its client has gone or --request-timeout has passed (then
 * the job is stopped: cli/serve/serve.h). A connection slow to send its request is
 * answered 408 by the gate at --read-timeout, so slow clients hold a thread
 * for seconds, not for as long as they like, and the threads they do hold
 * block nobody else: a thread waits on its own socket only.
 *
 *   POST /v1/translate, POST /v1/score   the jobs (cli/serve/request.c)
 *   GET /v1/health                       200 ready / 503 loading or stopping
 *   GET /v1/model                        config, compute type, kernel set, workers, languages
 *   GET /metrics                         Prometheus text (cli/serve/metrics.c) */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "cli/serve/serve.h"

struct srv_http {
    struct MHD_Daemon *daemon;
    const srv_settings *s;
    srv_metrics *metrics;
    pthread_mutex_t lock;
    int in_flight;        /* requests begun and not yet completed */
    int ready, stopping;
    int closed;           /* drained: later requests must not reach the batcher */
    const cli_model *cm;  /* once ready */
    srv_batcher *batcher; /* once ready */
    srv_gate *gate;
    struct timespec stop_began; /* when quiesce began: --drain-timeout counts from it */
};

/* What a request carries between the calls libmicrohttpd makes for it. */
typedef struct exchange {
    char *body;
    size_t len, cap;
    int answered; /* refused by its headers, before the body */
    int arriving; /* counted by the batcher as arriving */
    struct timespec arrival;
    struct MHD_Connection *connection;
} exchange;

/* Queues `text` (malloc'd, taken over; NULL means out of memory) as the
 * answer with `status`, and counts it. */
static enum MHD_Result answer(srv_http *h, struct MHD_Connection *c, const char *endpoint,
                              const exchange *x, int status, char *text, const char *type)
{
    static char oom[] = "{\"error\":{\"kind\":\"internal\",\"message\":\"out of memory\"}}";
    struct MHD_Response *r;
    if (!text) {
        status = 500;
        type = "application/json";
        r = MHD_create_response_from_buffer(strlen(oom), oom, MHD_RESPMEM_PERSISTENT);
    } else {
        r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (!r)
            free(text);
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == 503)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    pthread_mutex_lock(&h->lock);
    int closing = h->stopping;
    pthread_mutex_unlock(&h->lock);
    if (closing) /* so that draining ends: no further request on this connection */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    srv_metrics_request(h->metrics, endpoint, status, srv_seconds_since(x->arrival));
    return ok;
}

/* A refusal as the contract's JSON, with its kind given. */
static enum MHD_Result error_kind(srv_http *h, struct MHD_Connection *c, const char *endpoint,
                                  const exchange *x, int status, const char *kind,
                                  const char *msg)
{
    return answer(h, c, endpoint, x, status, srv_error_json(kind, msg), "application/json");
}

/* The same, the kind read off the status. */
static enum MHD_Result error(srv_http *h, struct MHD_Connection *c, const char *endpoint,
                             const exchange *x, int status, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static enum MHD_Result error(srv_http *h, struct MHD_Connection *c, const char *endpoint,
                             const exchange *x, int status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *kind = status == 400   ? "bad_request"
                       : status == 404 ? "not_found"
                       : status == 405 ? "bad_method"
                       : status == 413 ? "body_too_large"
                       : status == 503 ? "overloaded"
                                       : "internal";
    return error_kind(h, c, endpoint, x, status, kind, msg);
}

/* The request is no longer arriving: queued, refused or gone. */
static void arrived(srv_http *h, exchange *x)
{
    if (x->arriving) {
        x->arriving = 0;
        srv_batcher_arriving(h->batcher, -1);
    }
}

/* 1 when the client has closed its side of the connection. */
static int client_gone(void *arg)
{
    struct MHD_Connection *c = arg;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info)
        return 0;
    char byte;
    ssize_t n = recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result run_job(srv_http *h, struct MHD_Connection *c, const char *endpoint,
                               srv_kind kind, exchange *x)
{
    char err[600];
    int status;
    srv_job *job =
        srv_job_parse(kind, x->body ? x->body : "", x->len, h->cm, h->s, &status, err, sizeof err);
    if (!job) {
        arrived(h, x);
        return error(h, c, endpoint, x, status, "%s", err);
    }
    job->deadline = x->arrival;
    job->deadline.tv_sec += (time_t)h->s->request_timeout;
    int queued = srv_batcher_submit(h->batcher, job);
    arrived(h, x);
    if (queued != 0) {
        srv_job_free(job);
        return error(h, c, endpoint, x, 503,
                     "the queue is full (%d sentences) or the server is stopping; retry later",
                     h->s->max_queue);
    }
    srv_stop stop = srv_batcher_wait(h->batcher, job, client_gone, c);
    if (stop != SRV_RUNNING) {
        srv_job_free(job);
        srv_metrics_stopped(h->metrics, stop);
        if (stop == SRV_GONE) {
            srv_metrics_request(h->metrics, endpoint, 499, srv_seconds_since(x->arrival));
            return MHD_NO; /* nobody to answer: close */
        }
        char msg[200];
        if (stop == SRV_TIMED_OUT)
            snprintf(msg, sizeof msg, "not answered within --request-timeout (%g s): its work "
                     "was cancelled", h->s->request_timeout);
        else
            snprintf(msg, sizeof msg, "the server is stopping and --drain-timeout (%g s) has "
                     "passed: its work was cancelled", h->s->drain_timeout);
        return error_kind(h, c, endpoint, x, 503, stop == SRV_TIMED_OUT ? "timeout" : "stopping",
                          msg);
    }
    if (job->status != 0) {
        status = job->status == TESSERA_ERR_NOMEM ? 503 : job->status == TESSERA_ERR_INPUT ? 400
                                                                                          : 500;
        enum MHD_Result r = error(h, c, endpoint, x, status, "%s", job->err);
        srv_job_free(job);
        return r;
    }
    char *text = srv_job_answer(job, h->cm);
    srv_job_free(job);
    return answer(h, c, endpoint, x, 200, text, "application/json");
}

/* "languages": how the model takes them (the config's source_language and
 * target_language) and each name with its token id, as the requests'
 * source_lang / target_lang name them; an empty "names" for a model of one
 * language pair. */
static json_t *model_languages_json(const srv_http *h)
{
    static const char *const source[] = {"none", "prefix", "suffix"};
    static const char *const target[] = {"none", "forced", "start"};
    const tessera_config *cfg = h->cm->cfg;
    json_t *names = json_object();
    for (size_t i = 0; names && i < tessera_model_language_count(h->cm->model); i++) {
        int32_t id;
        const char *name = tessera_model_language(h->cm->model, i, &id);
        if (json_object_set_new(names, name, json_integer(id)) != 0)
            json_decref(names), names = NULL;
    }
    return names ? json_pack("{s:s,s:s,s:o}", "source", source[cfg->source_language], "target",
                             target[cfg->target_language], "names", names)
                 : NULL;
}

static char *model_json(const srv_http *h)
{
    const tessera_config *cfg = h->cm->cfg;
    const srv_settings *s = h->s;
    char err[256];
    const char *set = tessera_kernel_set(err, sizeof err);
    json_t *root = json_pack(
        "{s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:i,s:i,s:i,s:i},s:s,s:s,s:s,s:i,s:i,s:b,"
        "s:{s:i,s:i,s:i,s:i,s:I,s:I}}",
        "config", "d_model", cfg->d_model, "n_heads", cfg->n_heads, "d_ff", cfg->d_ff,
        "n_encoder_layers", cfg->n_encoder_layers, "n_decoder_layers", cfg->n_decoder_layers,
        "src_vocab_size", cfg->src_vocab_size, "tgt_vocab_size", cfg->tgt_vocab_size,
        "max_positions", cfg->max_positions, "norm_first", cfg->norm_first, "bos_id",
        cfg->bos_id, "eos_id", cfg->eos_id, "pad_id", cfg->pad_id, "unk_id", cfg->unk_id,
        "directory", h->cm->dir, "compute_type",
        tessera_compute_type_name(tessera_model_compute_type(h->cm->model)),
        "kernel_set", set ? set : "?", "workers", h->cm->n_runtimes, "threads_per_worker",
        tessera_runtime_threads(h->cm->runtimes[0]), "text", h->cm->form != CLI_IDS,
        "batching", "max_batch", s->max_batch, "max_batch_tokens", s->max_batch_tokens,
        "batch_wait_ms", s->batch_wait_ms, "max_queue", s->max_queue, "max_body",
        (json_int_t)s->max_body, "max_memory",
        (json_int_t)tessera_runtime_memory_budget(h->cm->runtimes[0]));
    json_t *languages = root ? model_languages_json(h) : NULL;
    if (root && (!languages || json_object_set_new(root, "languages", languages) != 0))
        json_decref(root), root = NULL;
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

static char *health_json(const char *status)
{
    json_t *root = json_pack("{s:s}", "status", status);
    char *text = root ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

static enum MHD_Result route(srv_http *h, struct MHD_Connection *c, const char *url,
                             const char *method, exchange *x)
{
    /* The URL and method as sent (libmicrohttpd has decoded %XX, so any
     * byte may be there) are quoted in messages: a JSON string must be
     * valid UTF-8, and a log line must not be forged. */
    char q_url[CLI_QUOTE_BUF], q_method[CLI_QUOTE_BUF];
    cli_quote(url, strlen(url), q_url, sizeof q_url);
    cli_quote(method, strlen(method), q_method, sizeof q_method);
    pthread_mutex_lock(&h->lock);
    int ready = h->ready && !h->closed, stopping = h->stopping;
    pthread_mutex_unlock(&h->lock);
    const int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    const int translate = strcmp(url, "/v1/translate") == 0, score = strcmp(url, "/v1/score") == 0;
    if (strcmp(url, "/v1/health") == 0) {
        if (!get)
            return error(h, c, url, x, 405, "%s %s: use GET", q_method, q_url);
        const char *state = stopping ? "stopping" : !ready ? "loading" : "ready";
        return answer(h, c, url, x, ready && !stopping ? 200 : 503, health_json(state),
                      "application/json");
    }
    if (strcmp(url, "/metrics") == 0) {
        if (!get)
            return error(h, c, url, x, 405, "%s %s: use GET", q_method, q_url);
        char *text = srv_metrics_text(h->metrics, ready ? srv_batcher_depth(h->batcher) : 0,
                                      ready ? h->cm->n_runtimes : 0);
        return answer(h, c, url, x, 200, text, "text/plain; version=0.0.4");
    }
    if (!translate && !score && strcmp(url, "/v1/model") != 0)
        return error(h, c, "other", x, 404,
                     "%s: no such endpoint (POST /v1/translate, POST /v1/score, GET /v1/health, "
                     "GET /v1/model, GET /metrics)",
                     q_url);
    if ((translate || score) ? !post : !get)
        return error(h, c, url, x, 405, "%s %s: use %s", q_method, q_url,
                     (translate || score) ? "POST" : "GET");
    if (!ready)
        return error(h, c, url, x, 503, stopping ? "the server is stopping"
                                                 : "the model is still loading");
    if (!translate && !score)
        return answer(h, c, url, x, 200, model_json(h), "application/json");
    return run_job(h, c, url, translate ? SRV_TRANSLATE : SRV_SCORE, x);
}

/* A declared length past --max-body is refused from the headers, before any
 * of the body is read. (The gate has refused a malformed Content-Length, and
 * two that disagree.) MHD_YES when nothing is refused (*refused 0). */
static enum MHD_Result refuse_by_headers(srv_http *h, struct MHD_Connection *c, const char *url,
                                         exchange *x, int *refused)
{
    const char *length =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    *refused = 0;
    if (!length)
        return MHD_YES;
    char *end;
    errno = 0;
    unsigned long long declared = strtoull(length, &end, 10);
    if (end == length || errno != 0 || declared <= h->s->max_body)
        return MHD_YES;
    *refused = 1;
    arrived(h, x);
    return error(h, c, url, x, 413, "body: %llu bytes declared, more than %zu", declared,
                 h->s->max_body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **state)
{
    (void)version;
    srv_http *h = cls;
    exchange *x = *state;
    if (!x) { /* the headers have arrived */
        x = calloc(1, sizeof *x);
        if (!x)
            return MHD_NO;
        clock_gettime(CLOCK_MONOTONIC, &x->arrival);
        x->connection = c;
        *state = x;
        pthread_mutex_lock(&h->lock);
        h->in_flight++;
        srv_batcher *b = h->ready && !h->closed ? h->batcher : NULL;
        pthread_mutex_unlock(&h->lock);
        if (b && strcmp(method, "POST") == 0 &&
            (strcmp(url, "/v1/translate") == 0 || strcmp(url, "/v1/score") == 0)) {
            x->arriving = 1;
            srv_batcher_arriving(b, +1);
        }
        int refused;
        enum MHD_Result r = refuse_by_headers(h, c, url, x, &refused);
        if (refused)
            x->answered = 1;
        return r;
    }
    if (x->answered) { /* refused by its headers: the rest is not read */
        *data_size = 0;
        return MHD_NO;
    }
    if (*data_size > 0) { /* a piece of the body */
        if (x->len + *data_size > h->s->max_body) {
            /* Past --max-body (a chunked body, whose length nobody
             * declared): not read further. libmicrohttpd cannot answer in
             * the middle of a body, so the connection is closed. */
            arrived(h, x);
            srv_metrics_request(h->metrics, url, 413, srv_seconds_since(x->arrival));
            *data_size = 0;
            return MHD_NO;
        } else {
            if (x->len + *data_size + 1 > x->cap) {
                size_t cap = x->cap ? 2 * x->cap : 4096;
                while (cap < x->len + *data_size + 1)
                    cap *= 2;
                char *body = realloc(x->body, cap);
                if (!body)
                    return MHD_NO;
                x->body = body;
                x->cap = cap;
            }
            memcpy(x->body + x->len, data, *data_size);
            x->len += *data_size;
            x->body[x->len] = '\0';
        }
        *data_size = 0;
        return MHD_YES;
    }
    return route(h, c, url, method, x);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode why)
{
    (void)c;
    (void)why;
    srv_http *h = cls;
    exchange *x = *state;
    if (!x)
        return;
    arrived(h, x); /* refused before it was queued, or the client left */
    free(x->body);
    free(x);
    *state = NULL;
    pthread_mutex_lock(&h->lock);
    h->in_flight--;
    pthread_mutex_unlock(&h->lock);
}

/* The gate's connection, handed to the daemon (cli/serve/serve.h: srv_gate_handoff). */
static int take_connection(void *arg, int fd, const struct sockaddr *client, socklen_t len)
{
    srv_http *h = arg;
    return MHD_add_connection(h->daemon, fd, client, len) == MHD_YES ? 0 : -1;
}

srv_http *srv_http_start(const srv_settings *s, srv_metrics *metrics, char *err, size_t err_len)
{
    srv_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    h->s = s;
    h->metrics = metrics;
    pthread_mutex_init(&h->lock, NULL);
    h->gate = srv_gate_open(s, metrics, err, err_len);
    if (!h->gate) {
        srv_http_stop(h);
        return NULL;
    }
    /* Connections come from the gate only. Its framer lets through request
     * heads of up to SRV_HEAD_MAX bytes and SRV_PIECES_MAX fields, cookies
     * and arguments, which libmicrohttpd keeps in the connection's memory
     * pool with a copy of the Cookie field and a record each: the pool is
     * sized so that those always fit (a head it could not hold would be
     * refused in HTML). poll(), not select(): three descriptors a
     * connection pass FD_SETSIZE soon. Timeouts are the gate's. */
    enum { POOL_BYTES = 64 * 1024 };
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
    h->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, h, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->max_per_client,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)POOL_BYTES, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)0, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_len, "libmicrohttpd did not start (out of memory or threads?)");
        srv_http_stop(h);
        return NULL;
    }
    if (srv_gate_start(h->gate, take_connection, h, err, err_len) != 0) {
        srv_http_stop(h);
        return NULL;
    }
    return h;
}

int srv_http_port(const srv_http *h) { return srv_gate_port(h->gate); }

void srv_http_ready(srv_http *h, const cli_model *cm, srv_batcher *b)
{
    pthread_mutex_lock(&h->lock);
    h->cm = cm;
    h->batcher = b;
    h->ready = 1;
    pthread_mutex_unlock(&h->lock);
}

void srv_http_quiesce(srv_http *h)
{
    clock_gettime(CLOCK_MONOTONIC, &h->stop_began);
    pthread_mutex_lock(&h->lock);
    h->stopping = 1;
    pthread_mutex_unlock(&h->lock);
    srv_gate_quiesce(h->gate);
}

void srv_http_drain(srv_http *h)
{
    /* Until no request is in progress and every connection has closed (each
     * answer given while stopping closes its connection), or, for clients
     * that keep a connection open without sending a request, DRAIN_GRACE_MS
     * after the last request ended. When --drain-timeout passes first, the
     * jobs still running are cancelled (each answered 503 within a decoding
     * step) and the connections still receiving a request are answered
     * 503 by the gate and closed; should a request still be in progress
     * LAST_RESORT_MS later, every connection is closed. */
    enum { DRAIN_GRACE_MS = 3000, LAST_RESORT_MS = 2000, POLL_MS = 10 };
    int idle_ms = 0, cancelled = 0, closed_all = 0;
    for (;;) {
        double since_stop = srv_seconds_since(h->stop_began);
        if (!cancelled && since_stop >= h->s->drain_timeout) {
            cancelled = 1;
            if (h->batcher)
                srv_batcher_cancel_all(h->batcher);
            srv_gate_cut_receiving(h->gate);
        }
        if (!closed_all && since_stop >= h->s->drain_timeout + LAST_RESORT_MS / 1000.0) {
            closed_all = 1;
            srv_gate_close_all(h->gate);
        }
        /* Connections whose answers are still being relayed count. */
        unsigned connections = srv_gate_connections(h->gate);
        pthread_mutex_lock(&h->lock);
        if (h->in_flight > 0) {
            idle_ms = 0;
        } else if (connections == 0 || idle_ms >= DRAIN_GRACE_MS) {
            h->closed = 1; /* atomically with in_flight 0: a request begun later sees it */
            pthread_mutex_unlock(&h->lock);
            return;
        }
        pthread_mutex_unlock(&h->lock);
        struct timespec pause = {0, POLL_MS * 1000000L};
        nanosleep(&pause, NULL);
        idle_ms += POLL_MS;
    }
}

void srv_http_stop(srv_http *h)
{
    if (!h)
        return;
    /* The gate stops handing connections to the daemon (it already has
     * when the server quiesced; not when the model failed to load)... */
    if (h->gate)
        srv_gate_quiesce(h->gate);
    if (h->daemon)
        MHD_stop_daemon(h->daemon); /* ...the daemon's ends of the connections close... */
    srv_gate_stop(h->gate);         /* ...and the gate relays what they said, then closes */
    pthread_mutex_destroy(&h->lock);
    free(h);
}
