/* tessera serve: the routes. The loop (cli/serve/loop.c) reads each request
 * and hands it over here on its own thread; an answer is given at once,
 * except a translate or score request's: its job is queued, and answered
 * when the workers have decoded it (or stopped it: cli/serve/server.h).
 *
 *   POST /v1/translate, POST /v1/score   the jobs (cli/serve/request.c)
 *   GET /v1/health                       200 ready / 503 loading or stopping
 *   GET /v1/model                        config, compute type, kernel set, workers, languages
 *   GET /metrics                         Prometheus text (cli/serve/metrics.c)
 *
 * Shutdown's drain is here too: it waits for the requests in progress. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/serve/server.h"

struct srv_http {
    srv_loop *loop;
    const srv_settings *s;
    srv_metrics *metrics;
    pthread_mutex_t lock;
    int in_flight;        /* requests begun and not yet answered or dropped */
    int ready, stopping;
    int closed;           /* drained: later requests must not reach the batcher */
    const cli_model *cm;  /* once ready */
    srv_batcher *batcher; /* once ready */
    struct timespec stop_began; /* when quiesce began: --drain-timeout counts from it */
};

/* The request is no longer arriving: queued, refused or gone. */
static void arrived(srv_http *h, srv_exchange *x)
{
    if (x->arriving) {
        x->arriving = 0;
        srv_batcher_arriving(h->batcher, -1);
    }
}

/* The request has ended, answered or not. */
static void ended(srv_http *h, srv_exchange *x)
{
    arrived(h, x);
    pthread_mutex_lock(&h->lock);
    h->in_flight--;
    pthread_mutex_unlock(&h->lock);
}

/* `text` (malloc'd, taken over; NULL means out of memory) as the answer
 * with `status`, counted. Returns 1: answered. */
static int answer(srv_http *h, srv_exchange *x, int status, char *text, const char *type,
                  srv_answer *a)
{
    *a = (srv_answer){text ? status : 500, type, text};
    srv_metrics_request(h->metrics, x->endpoint, a->status, srv_seconds_since(x->arrival));
    ended(h, x);
    return 1;
}

/* A refusal as the contract's JSON, with its kind given. */
static int error_kind(srv_http *h, srv_exchange *x, int status, const char *kind,
                      const char *msg, srv_answer *a)
{
    return answer(h, x, status, srv_error_json(kind, msg), "application/json", a);
}

/* The same, the kind read off the status. */
static int error(srv_http *h, srv_exchange *x, srv_answer *a, int status, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int error(srv_http *h, srv_exchange *x, srv_answer *a, int status, const char *fmt, ...)
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
    return error_kind(h, x, status, kind, msg, a);
}

static int run_job(srv_http *h, srv_exchange *x, srv_kind kind, srv_answer *a)
{
    char err[600];
    int status;
    srv_job *job = srv_job_parse(kind, x->body ? x->body : "", x->body_len, h->cm, h->s,
                                 &status, err, sizeof err);
    if (!job)
        return error(h, x, a, status, "%s", err);
    int queued = srv_batcher_submit(h->batcher, job, x->decoded, x);
    arrived(h, x);
    if (queued != 0) {
        srv_job_free(job);
        return error(h, x, a, 503,
                     "the queue is full (%d sentences) or the server is stopping; retry later",
                     h->s->max_queue);
    }
    x->job = job;
    return 0; /* answered by finish */
}

/* The job is decoded, or stopped: its answer. */
static int finish(void *arg, srv_exchange *x, srv_answer *a)
{
    srv_http *h = arg;
    srv_job *job = x->job;
    srv_stop stop = srv_job_outcome(job);
    x->job = NULL;
    if (stop != SRV_RUNNING)
        srv_metrics_stopped(h->metrics, stop);
    if (stop == SRV_GONE || !x->conn) {
        srv_job_free(job);
        srv_metrics_request(h->metrics, x->endpoint, 499, srv_seconds_since(x->arrival));
        ended(h, x);
        return 0; /* nobody to answer */
    }
    if (stop != SRV_RUNNING) {
        srv_job_free(job);
        char msg[200];
        if (stop == SRV_TIMED_OUT)
            snprintf(msg, sizeof msg, "not answered within --request-timeout (%g s): its work "
                     "was cancelled", h->s->request_timeout);
        else
            snprintf(msg, sizeof msg, "the server is stopping and --drain-timeout (%g s) has "
                     "passed: its work was cancelled", h->s->drain_timeout);
        return error_kind(h, x, 503, stop == SRV_TIMED_OUT ? "timeout" : "stopping", msg, a);
    }
    if (job->status != 0) {
        int status = job->status == TESSERA_ERR_NOMEM   ? 503
                     : job->status == TESSERA_ERR_INPUT ? 400
                                                        : 500;
        error(h, x, a, status, "%s", job->err);
        srv_job_free(job);
        return 1;
    }
    char *text = srv_job_answer(job, h->cm);
    srv_job_free(job);
    return answer(h, x, 200, text, "application/json", a);
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

/* The request's path is `want`. */
static int path_is(const srv_exchange *x, const char *want)
{
    return x->path_len == strlen(want) && memcmp(x->path, want, x->path_len) == 0;
}

/* Its endpoint, as /metrics labels it: one of the five, or "other". */
static const char *endpoint_of(const srv_exchange *x)
{
    static const char *const known[] = {"/v1/translate", "/v1/score", "/v1/health",
                                        "/v1/model", "/metrics"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (path_is(x, known[i]))
            return known[i];
    return "other";
}

static int route(void *arg, srv_exchange *x, srv_answer *a)
{
    srv_http *h = arg;
    /* The path and method as sent (%XX decoded, so any byte may be there)
     * are quoted in messages: a JSON string must be valid UTF-8, and a log
     * line must not be forged. */
    char q_path[CLI_QUOTE_BUF], q_method[CLI_QUOTE_BUF];
    cli_quote(x->path, x->path_len, q_path, sizeof q_path);
    cli_quote(x->method, strlen(x->method), q_method, sizeof q_method);
    pthread_mutex_lock(&h->lock);
    int ready = h->ready && !h->closed, stopping = h->stopping;
    pthread_mutex_unlock(&h->lock);
    const int get = strcmp(x->method, "GET") == 0, post = strcmp(x->method, "POST") == 0;
    const int translate = path_is(x, "/v1/translate"), score = path_is(x, "/v1/score");
    if (path_is(x, "/v1/health")) {
        if (!get)
            return error(h, x, a, 405, "%s %s: use GET", q_method, q_path);
        const char *state = stopping ? "stopping" : !ready ? "loading" : "ready";
        return answer(h, x, ready && !stopping ? 200 : 503, health_json(state),
                      "application/json", a);
    }
    if (path_is(x, "/metrics")) {
        if (!get)
            return error(h, x, a, 405, "%s %s: use GET", q_method, q_path);
        char *text = srv_metrics_text(h->metrics, ready ? srv_batcher_depth(h->batcher) : 0,
                                      ready ? h->cm->n_runtimes : 0);
        return answer(h, x, 200, text, "text/plain; version=0.0.4", a);
    }
    if (!translate && !score && !path_is(x, "/v1/model"))
        return error(h, x, a, 404,
                     "%s: no such endpoint (POST /v1/translate, POST /v1/score, GET /v1/health, "
                     "GET /v1/model, GET /metrics)",
                     q_path);
    if ((translate || score) ? !post : !get)
        return error(h, x, a, 405, "%s %s: use %s", q_method, q_path,
                     (translate || score) ? "POST" : "GET");
    if (!ready)
        return error(h, x, a, 503, stopping ? "the server is stopping"
                                            : "the model is still loading");
    if (!translate && !score)
        return answer(h, x, 200, model_json(h), "application/json", a);
    return run_job(h, x, translate ? SRV_TRANSLATE : SRV_SCORE, a);
}

/* A head has arrived: the request is in progress; a declared length past
 * --max-body is refused from it, before any of the body is read. */
static int begin(void *arg, srv_exchange *x, uint64_t declared, srv_answer *a)
{
    srv_http *h = arg;
    x->endpoint = endpoint_of(x);
    pthread_mutex_lock(&h->lock);
    h->in_flight++;
    srv_batcher *b = h->ready && !h->closed ? h->batcher : NULL;
    pthread_mutex_unlock(&h->lock);
    if (b && strcmp(x->method, "POST") == 0 && (path_is(x, "/v1/translate") ||
                                                 path_is(x, "/v1/score"))) {
        x->arriving = 1;
        srv_batcher_arriving(b, +1);
    }
    if (declared > h->s->max_body)
        return error(h, x, a, 413, "body: %llu bytes declared, more than %zu",
                     (unsigned long long)declared, h->s->max_body);
    return 0;
}

static void drop(void *arg, srv_exchange *x, srv_stop why)
{
    srv_http *h = arg;
    if (x->job)
        srv_batcher_stop_job(h->batcher, x->job, why); /* finish follows */
    else
        ended(h, x);
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
    h->loop = srv_loop_open(s, metrics, err, err_len);
    const srv_routes routes = {h, begin, route, finish, drop};
    if (!h->loop || srv_loop_start(h->loop, &routes, err, err_len) != 0) {
        srv_http_stop(h);
        return NULL;
    }
    return h;
}

int srv_http_port(const srv_http *h) { return srv_loop_port(h->loop); }

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
    srv_loop_quiesce(h->loop);
}

void srv_http_drain(srv_http *h)
{
    /* Until no request is in progress and every connection has closed (each
     * answer given while stopping closes its connection), or, for clients
     * that keep a connection open without sending a request, DRAIN_GRACE_MS
     * after the last request ended. When --drain-timeout passes first, the
     * jobs still running are cancelled (each answered 503 within a decoding
     * step) and the connections still receiving a request are answered
     * 503 by the loop and closed; should a request still be in progress
     * LAST_RESORT_MS later, every connection is closed. */
    enum { DRAIN_GRACE_MS = 3000, LAST_RESORT_MS = 2000, POLL_MS = 10 };
    int idle_ms = 0, cancelled = 0, closed_all = 0;
    for (;;) {
        double since_stop = srv_seconds_since(h->stop_began);
        if (!cancelled && since_stop >= h->s->drain_timeout) {
            cancelled = 1;
            if (h->batcher)
                srv_batcher_cancel_all(h->batcher);
            srv_loop_cut_receiving(h->loop);
        }
        if (!closed_all && since_stop >= h->s->drain_timeout + LAST_RESORT_MS / 1000.0) {
            closed_all = 1;
            srv_loop_close_all(h->loop);
        }
        /* Connections whose answers are still going out count. */
        unsigned connections = srv_loop_connections(h->loop);
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
    srv_loop_stop(h->loop); /* the answers still going out, briefly; then every connection closes */
    pthread_mutex_destroy(&h->lock);
    free(h);
}
