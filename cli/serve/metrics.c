/* tessera serve: what GET /metrics reports, in Prometheus' text format:
 * requests by endpoint and status, errors by kind, the queue depth, batch
 * sizes, tokens decoded (tokens/s is their rate) and request latency. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/serve/server.h"

static const char *const endpoints[] = {"/v1/translate", "/v1/score", "/v1/health", "/v1/model",
                                        "/metrics", "other"};
enum { N_ENDPOINTS = sizeof endpoints / sizeof *endpoints };
/* 499: the client left before its answer (nginx's code for it); 408: a
 * connection closed at --read-timeout (answered when a request had begun);
 * 414, 431, 501, 505: malformed HTTP, refused by the loop (cli/serve/frame.c). */
static const int codes[] = {200, 400, 404, 405, 413, 500, 503, 499, 408, 414, 431, 501, 505};
enum { N_CODES = sizeof codes / sizeof *codes };
/* The kind of error each code above means (NULL for success). */
static const char *const code_kinds[] = {NULL,           "bad_request",      "not_found",
                                         "bad_method",   "body_too_large",   "internal",
                                         "overloaded",   "client_gone",      "read_timeout",
                                         "uri_too_long", "headers_too_large", "not_implemented",
                                         "http_version"};

static const double latency_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,  0.5,    1,     2.5,  5,     10};
enum { N_LATENCY = sizeof latency_bounds / sizeof *latency_bounds };
static const double batch_bounds[] = {1, 2, 4, 8, 16, 32, 64, 128};
enum { N_BATCH = sizeof batch_bounds / sizeof *batch_bounds };

typedef struct histogram {
    unsigned long long bucket[16]; /* per bound, then +Inf */
    unsigned long long count;
    double sum;
} histogram;

struct srv_metrics {
    pthread_mutex_t lock;
    unsigned long long requests[N_ENDPOINTS][N_CODES];
    histogram latency, batch;
    unsigned long long src_tokens, tgt_tokens, sentences;
    unsigned long long stopped[4]; /* jobs stopped early, by srv_stop */
    unsigned long long cancelled_batches, requeued;
};

static void observe(histogram *h, const double *bounds, int n, double v)
{
    int i = 0;
    while (i < n && v > bounds[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum += v;
}

srv_metrics *srv_metrics_new(void)
{
    srv_metrics *m = calloc(1, sizeof *m);
    if (m)
        pthread_mutex_init(&m->lock, NULL);
    return m;
}

void srv_metrics_free(srv_metrics *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->lock);
    free(m);
}

void srv_metrics_request(srv_metrics *m, const char *endpoint, int status, double seconds)
{
    int e = N_ENDPOINTS - 1, c = 0;
    for (int i = 0; i < N_ENDPOINTS - 1; i++)
        if (strcmp(endpoint, endpoints[i]) == 0)
            e = i;
    while (c < N_CODES - 1 && codes[c] != status)
        c++;
    if (codes[c] != status)
        c = 5; /* anything unexpected counts as internal (500) */
    enum { LATENCY_ENDPOINTS = 2 }; /* translate and score */
    pthread_mutex_lock(&m->lock);
    m->requests[e][c]++;
    if (e < LATENCY_ENDPOINTS)
        observe(&m->latency, latency_bounds, N_LATENCY, seconds);
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_batch(srv_metrics *m, size_t sentences, size_t src_tokens, size_t tgt_tokens)
{
    pthread_mutex_lock(&m->lock);
    observe(&m->batch, batch_bounds, N_BATCH, (double)sentences);
    m->sentences += sentences;
    m->src_tokens += src_tokens;
    m->tgt_tokens += tgt_tokens;
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_stopped(srv_metrics *m, srv_stop why)
{
    pthread_mutex_lock(&m->lock);
    m->stopped[why]++;
    pthread_mutex_unlock(&m->lock);
}

void srv_metrics_cancelled_batch(srv_metrics *m, size_t requeued)
{
    pthread_mutex_lock(&m->lock);
    m->cancelled_batches++;
    m->requeued += requeued;
    pthread_mutex_unlock(&m->lock);
}

/* A growable text, for the exposition. */
typedef struct text {
    char *s;
    size_t len, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    for (int tries = 0; !t->oom && tries < 2; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (w >= 0 && t->s && t->len + (size_t)w < t->cap) {
            t->len += (size_t)w;
            return;
        }
        size_t cap = t->cap ? 2 * t->cap : 8192;
        while (cap < t->len + (size_t)w + 1)
            cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->oom = 1;
        } else {
            t->s = s;
            t->cap = cap;
        }
    }
}

static void put_histogram(text *t, const char *name, const char *help, const histogram *h,
                          const double *bounds, int n)
{
    put(t, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    unsigned long long cumulative = 0;
    for (int i = 0; i < n; i++) {
        cumulative += h->bucket[i];
        put(t, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i], cumulative);
    }
    put(t, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, h->count, name,
        h->sum, name, h->count);
}

char *srv_metrics_text(srv_metrics *m, size_t queue_depth, int workers)
{
    text t = {0};
    pthread_mutex_lock(&m->lock);
    put(&t, "# HELP tessera_requests_total Requests answered, by endpoint and HTTP status.\n"
            "# TYPE tessera_requests_total counter\n");
    for (int e = 0; e < N_ENDPOINTS; e++)
        for (int c = 0; c < N_CODES; c++)
            if (m->requests[e][c])
                put(&t, "tessera_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n",
                    endpoints[e], codes[c], m->requests[e][c]);
    put(&t, "# HELP tessera_errors_total Requests refused or failed, by kind.\n"
            "# TYPE tessera_errors_total counter\n");
    for (int c = 1; c < N_CODES; c++) {
        unsigned long long n = 0;
        for (int e = 0; e < N_ENDPOINTS; e++)
            n += m->requests[e][c];
        put(&t, "tessera_errors_total{kind=\"%s\"} %llu\n", code_kinds[c], n);
    }
    put(&t,
        "# HELP tessera_queue_depth Sentences waiting for a worker.\n"
        "# TYPE tessera_queue_depth gauge\ntessera_queue_depth %zu\n"
        "# HELP tessera_workers Workers decoding batches.\n"
        "# TYPE tessera_workers gauge\ntessera_workers %d\n"
        "# HELP tessera_sentences_total Sentences decoded.\n"
        "# TYPE tessera_sentences_total counter\ntessera_sentences_total %llu\n"
        "# HELP tessera_source_tokens_total Source tokens encoded.\n"
        "# TYPE tessera_source_tokens_total counter\ntessera_source_tokens_total %llu\n"
        "# HELP tessera_target_tokens_total Target tokens produced or scored (EOS included "
        "when scoring); tokens/s is its rate.\n"
        "# TYPE tessera_target_tokens_total counter\ntessera_target_tokens_total %llu\n",
        queue_depth, workers, m->sentences, m->src_tokens, m->tgt_tokens);
    put(&t,
        "# HELP tessera_requests_stopped_total Translate and score requests whose work was "
        "stopped before their answer, by reason.\n"
        "# TYPE tessera_requests_stopped_total counter\n"
        "tessera_requests_stopped_total{reason=\"client_gone\"} %llu\n"
        "tessera_requests_stopped_total{reason=\"request_timeout\"} %llu\n"
        "tessera_requests_stopped_total{reason=\"drain_timeout\"} %llu\n"
        "# HELP tessera_batches_cancelled_total Batches cancelled between two decoding steps "
        "because a request in them stopped.\n"
        "# TYPE tessera_batches_cancelled_total counter\ntessera_batches_cancelled_total %llu\n"
        "# HELP tessera_sentences_requeued_total Sentences of other requests in cancelled "
        "batches, queued again.\n"
        "# TYPE tessera_sentences_requeued_total counter\ntessera_sentences_requeued_total %llu\n",
        m->stopped[SRV_GONE], m->stopped[SRV_TIMED_OUT], m->stopped[SRV_SHUTDOWN],
        m->cancelled_batches, m->requeued);
    put_histogram(&t, "tessera_batch_sentences", "Sentences per decoded batch.", &m->batch,
                  batch_bounds, N_BATCH);
    put_histogram(&t, "tessera_request_duration_seconds",
                  "Time from a translate or score request's arrival to its answer.", &m->latency,
                  latency_bounds, N_LATENCY);
    pthread_mutex_unlock(&m->lock);
    if (t.oom) {
        free(t.s);
        return NULL;
    }
    return t.s;
}
