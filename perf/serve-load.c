/* A load generator for tessera serve: C concurrent clients, each sending
 * single-sentence translate requests one after another (a new connection
 * each), for N requests in all or for S seconds; optionally a further client
 * sending malformed requests all along. Prints one key=value line:
 * throughput (sentences/s) and latency percentiles, and what went wrong.
 *
 *   perf/tessera-serve-load -p PORT -i SENTENCES [-c CLIENTS] [-n REQUESTS]
 *                           [-t SECONDS] [-L MAX_LEN] [--bad]
 *   perf/tessera-serve-load --direct MODEL -k THREADS [-T TYPE] -i SENTENCES
 *                           -n REQUESTS [-L MAX_LEN]
 *
 * --direct: no server; the same requests as lone translate calls of the
 * library (what a lone `tessera translate` call spends translating, without
 * its model load), one after another on a runtime of THREADS threads: the
 * reference for the server's latency at 1 client.
 *
 * SENTENCES: one sentence of token ids per line; request r sends line
 * r mod lines. --bad: also send malformed requests (bad JSON, ids out of
 * range, wrong types, too-large bodies) back to back; each must be refused
 * with 400 or 413. perf/serve-load.sh runs it against a server it starts and
 * against the CLI on the same sentences. */
#define _GNU_SOURCE
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/tessera.h"
#include "tests/http_client.h"

typedef struct run {
    int port, max_len;
    int32_t **ids; /* --direct: each line's ids */
    size_t *n_ids;
    char **bodies;
    size_t n_bodies;
    long requests; /* stop after this many (0: by time) */
    double until;  /* stop at this time (0: by count) */
    pthread_mutex_t lock;
    long next, ok, failed;
    double *latency; /* per answered request, seconds */
    size_t n_latency, cap_latency;
    int stop_bad;
    long bad_sent, bad_refused, bad_other;
    char first_failure[256];
} run;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Appends a latency; under r->lock. */
static void record(run *r, double dt)
{
    if (r->n_latency == r->cap_latency) {
        size_t cap = r->cap_latency ? 2 * r->cap_latency : 4096;
        double *grown = realloc(r->latency, cap * sizeof *grown);
        if (!grown)
            return;
        r->latency = grown;
        r->cap_latency = cap;
    }
    r->latency[r->n_latency++] = dt;
}

static void *client(void *arg)
{
    run *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        long i = r->next++;
        pthread_mutex_unlock(&r->lock);
        if ((r->requests && i >= r->requests) || (r->until && now() >= r->until))
            break;
        const char *body = r->bodies[(size_t)i % r->n_bodies];
        http_reply rep;
        double t0 = now();
        int rc = http_request(r->port, "POST", "/v1/translate", body, strlen(body), &rep);
        double dt = now() - t0;
        pthread_mutex_lock(&r->lock);
        if (rc == 0 && rep.status == 200 && strstr(rep.body, "\"translations\"")) {
            r->ok++;
            record(r, dt);
        } else {
            r->failed++;
            if (!r->first_failure[0])
                snprintf(r->first_failure, sizeof r->first_failure,
                         "status %d, errno %d: %.150s", rep.status, rep.sys_error,
                         rep.body ? rep.body : "");
        }
        pthread_mutex_unlock(&r->lock);
        http_reply_free(&rep);
    }
    return NULL;
}

/* --direct: the requests as lone library calls, one after another. */
static int direct(run *r, const char *model_dir, int threads, const char *type, double *start)
{
    char err[512];
    tessera_load_options lo;
    tessera_model *m;
    tessera_runtime *rt;
    tessera_runtime_options ro;
    tessera_load_options_init(&lo);
    if (type && tessera_compute_type_parse(type, &lo.compute_type, err, sizeof err) != 0) {
        fprintf(stderr, "tessera-serve-load: %s\n", err);
        return -1;
    }
    tessera_runtime_options_init(&ro);
    ro.threads = threads;
    if (tessera_model_load_with(model_dir, &lo, &m, err, sizeof err) != 0 ||
        tessera_runtime_create(&ro, &rt, err, sizeof err) != 0) {
        fprintf(stderr, "tessera-serve-load: %s\n", err);
        return -1;
    }
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    if (r->max_len > 0)
        o.max_len = r->max_len;
    *start = now(); /* the load is not counted */
    for (long i = 0; i < r->requests; i++) {
        size_t line = (size_t)i % r->n_bodies;
        tessera_tokens src = {r->ids[line], r->n_ids[line]};
        tessera_hypothesis *h;
        double t0 = now();
        int rc = tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err);
        double dt = now() - t0;
        if (rc != 0) {
            r->failed++;
            snprintf(r->first_failure, sizeof r->first_failure, "%.250s", err);
            continue;
        }
        tessera_hypotheses_free(h, 1);
        r->ok++;
        record(r, dt);
    }
    tessera_runtime_free(rt);
    tessera_model_free(m);
    return 0;
}

/* Malformed requests, one after another, until told to stop. */
static void *bad_client(void *arg)
{
    run *r = arg;
    static const char *const bad[] = {
        "{\"source\": [[5, 6]", "[1, 2, 3]", "{\"source\": [[-1]]}",
        "{\"source\": [[5]], \"beam\": 0}",
        "{\"source\": \"5 6\"}", "{\"text\": [7]}", "{\"source\": [[]]}", "", "\xff\xfe",
        "{\"source\": [[5]], \"unknown\": true}",
    };
    const size_t n_bad = sizeof bad / sizeof *bad;
    size_t big_len = (size_t)2 << 20;
    char *big = malloc(big_len);
    if (big)
        memset(big, '[', big_len);
    for (long i = 0;; i++) {
        pthread_mutex_lock(&r->lock);
        int stop = r->stop_bad;
        pthread_mutex_unlock(&r->lock);
        if (stop)
            break;
        http_reply rep;
        int too_large = big && i % 50 == 49;
        const char *body = too_large ? big : bad[(size_t)i % n_bad];
        http_request(r->port, "POST", "/v1/translate", body, too_large ? big_len : strlen(body),
                     &rep);
        pthread_mutex_lock(&r->lock);
        r->bad_sent++;
        if (rep.status == (too_large ? 413 : 400))
            r->bad_refused++;
        else
            r->bad_other++;
        pthread_mutex_unlock(&r->lock);
        http_reply_free(&rep);
    }
    free(big);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return sorted[i];
}

/* One request body per line of the file, and the line's ids. */
static char **read_bodies(const char *path, int max_len, size_t *n, int32_t ***ids_out,
                          size_t **n_ids_out)
{
    int32_t **ids = NULL;
    size_t *n_ids = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char **bodies = NULL, *line = NULL;
    size_t cap = 0, count = 0, line_cap = 0;
    ssize_t len;
    while ((len = getline(&line, &line_cap, f)) > 0) {
        char *body = malloc((size_t)len * 2 + 64), *p = body;
        if (!body)
            break;
        int32_t *sentence = malloc(((size_t)len + 1) * sizeof *sentence);
        size_t n_tok = 0;
        if (!sentence) {
            free(body);
            break;
        }
        p += sprintf(p, "{\"source\": [[");
        for (char *tok = strtok(line, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
            p += sprintf(p, "%s%s", n_tok ? "," : "", tok);
            sentence[n_tok++] = (int32_t)atoi(tok);
        }
        if (max_len > 0)
            sprintf(p, "]], \"max_len\": %d}", max_len);
        else
            sprintf(p, "]]}");
        if (count == cap) {
            cap = cap ? 2 * cap : 256;
            char **grown = realloc(bodies, cap * sizeof *grown);
            int32_t **grown_ids = realloc(ids, cap * sizeof *grown_ids);
            size_t *grown_n = realloc(n_ids, cap * sizeof *grown_n);
            bodies = grown ? grown : bodies;
            ids = grown_ids ? grown_ids : ids;
            n_ids = grown_n ? grown_n : n_ids;
            if (!grown || !grown_ids || !grown_n) {
                free(body);
                free(sentence);
                break;
            }
        }
        ids[count] = sentence;
        n_ids[count] = n_tok;
        bodies[count++] = body;
    }
    free(line);
    fclose(f);
    *n = count;
    *ids_out = ids;
    *n_ids_out = n_ids;
    return bodies;
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {{"bad", no_argument, NULL, 'x'},
                                          {"direct", required_argument, NULL, 'D'},
                                          {NULL, 0, NULL, 0}};
    const char *direct_model = NULL, *type = NULL;
    int threads = 0;
    run r = {.max_len = 0};
    const char *input = NULL;
    int clients = 1, with_bad = 0, c;
    double seconds = 0;
    while ((c = getopt_long(argc, argv, "p:i:c:n:t:L:k:T:", longs, NULL)) != -1) {
        switch (c) {
        case 'p': r.port = atoi(optarg); break;
        case 'i': input = optarg; break;
        case 'c': clients = atoi(optarg); break;
        case 'n': r.requests = atol(optarg); break;
        case 't': seconds = atof(optarg); break;
        case 'L': r.max_len = atoi(optarg); break;
        case 'x': with_bad = 1; break;
        case 'D': direct_model = optarg; break;
        case 'k': threads = atoi(optarg); break;
        case 'T': type = optarg; break;
        default:
            fprintf(stderr, "Usage: tessera-serve-load -p PORT -i SENTENCES [-c CLIENTS] "
                            "[-n REQUESTS] [-t SECONDS] [-L MAX_LEN] [--bad]\n");
            return 2;
        }
    }
    if (direct_model ? !input || r.requests <= 0
                     : r.port <= 0 || !input || clients < 1 || clients > 1024 ||
                           (!r.requests && seconds <= 0)) {
        fprintf(stderr, "tessera-serve-load: needs -p PORT, -i SENTENCES and -n or -t "
                        "(clients 1 to 1024); --direct MODEL needs -i and -n\n");
        return 2;
    }
    r.bodies = read_bodies(input, r.max_len, &r.n_bodies, &r.ids, &r.n_ids);
    if (!r.bodies || r.n_bodies == 0) {
        fprintf(stderr, "tessera-serve-load: no sentences in %s\n", input);
        return 2;
    }
    pthread_mutex_init(&r.lock, NULL);
    pthread_t *t = calloc((size_t)clients, sizeof *t), bad;
    double t0 = now();
    if (direct_model) {
        clients = 0;
        if (direct(&r, direct_model, threads, type, &t0) != 0)
            return 1;
    }
    if (seconds > 0)
        r.until = t0 + seconds;
    if (with_bad)
        pthread_create(&bad, NULL, bad_client, &r);
    for (int i = 0; i < clients; i++)
        pthread_create(&t[i], NULL, client, &r);
    for (int i = 0; i < clients; i++)
        pthread_join(t[i], NULL);
    double elapsed = now() - t0;
    if (with_bad) {
        pthread_mutex_lock(&r.lock);
        r.stop_bad = 1;
        pthread_mutex_unlock(&r.lock);
        pthread_join(bad, NULL);
    }
    qsort(r.latency, r.n_latency, sizeof *r.latency, by_value);
    printf("clients=%d requests=%ld ok=%ld failed=%ld seconds=%.3f sentences_per_s=%.1f "
           "p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f",
           clients, r.ok + r.failed, r.ok, r.failed, elapsed, (double)r.ok / elapsed,
           1e3 * percentile(r.latency, r.n_latency, 0.50),
           1e3 * percentile(r.latency, r.n_latency, 0.90),
           1e3 * percentile(r.latency, r.n_latency, 0.99),
           1e3 * (r.n_latency ? r.latency[r.n_latency - 1] : 0));
    if (with_bad)
        printf(" bad_sent=%ld bad_refused=%ld bad_other=%ld", r.bad_sent, r.bad_refused,
               r.bad_other);
    printf("\n");
    if (r.first_failure[0])
        fprintf(stderr, "tessera-serve-load: first failure: %s\n", r.first_failure);
    for (size_t i = 0; i < r.n_bodies; i++) {
        free(r.bodies[i]);
        free(r.ids[i]);
    }
    free(r.ids);
    free(r.n_ids);
    free(r.bodies);
    free(r.latency);
    free(t);
    return r.failed || r.bad_other ? 1 : 0;
}
