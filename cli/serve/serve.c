/* tessera serve: options, startup and an orderly shutdown (cli/serve/server.h says
 * how the pieces fit). The listening socket opens first, so that health
 * checks can say "loading" while the model loads; SIGTERM, SIGINT and SIGHUP
 * stop accepting connections, let the accepted requests be answered within
 * --drain-timeout (the rest are cancelled and answered 503), then exit 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/model_path.h"
#include "cli/serve/server.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera serve -m DIR|NAME [OPTIONS]\n"
            "\n"
            "An HTTP server that holds the model and answers JSON requests, batching the\n"
            "sentences of concurrent requests together. Each answer is what translate or\n"
            "score prints for the same sentence and options, whatever it was batched with.\n"
            "\n"
            "Endpoints:\n"
            "  POST /v1/translate  {\"source\": [[ids...], ...]} or {\"text\": [\"tokens ...\"]}\n"
            "                      with optional beam, max_len, length_penalty, n_best ->\n"
            "                      {\"translations\": [{ids, score, tokens?, n_best?}]}\n"
            "  POST /v1/score      {\"source\": [[ids]], \"target\": [[ids]]} (or text and\n"
            "                      target_text) -> {\"scores\": [[log-probs..., eos]]}\n"
            "  GET /v1/health      200 {\"status\": \"ready\"}; 503 while loading or stopping\n"
            "  GET /v1/model       the model's config, compute type, kernel set, workers,\n"
            "                      languages\n"
            "  GET /metrics        Prometheus text: requests, errors, queue, batches, latency\n"
            "Errors are {\"error\": {\"kind\", \"message\"}} naming the field and sentence: 400\n"
            "bad input, 404, 405, 413 body too large, 503 queue full, timed out or stopping\n"
            "(with Retry-After); malformed HTTP gets 400, 414, 431, 501 or 505, and a\n"
            "connection past the limits 503, the same way.\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME",
                    "the model (required); text requests need its\n"
                    "                          vocab.src.txt and vocab.tgt.txt");
    fprintf(f,
            "  --host ADDR             address to listen on (default 127.0.0.1: this machine\n"
            "                          only; 0.0.0.0 or :: for every interface)\n"
            "  --port N                TCP port (default 8080; 0: any free one, printed)\n"
            "  --max-batch S           sentences decoded together, at most (default 32)\n"
            "  --max-batch-tokens T    source tokens in a batch, at most (default 8192)\n"
            "  --batch-wait-ms W       longest wait for a batch to fill (default 5)\n"
            "  --max-queue Q           sentences waiting, at most; a request that does not\n"
            "                          fit is refused with 503 (default 4096)\n"
            "  --max-body BYTES        request body size limit (default 1048576)\n"
            "  --max-sentences N       sentences in one request, at most (default 256)\n"
            "  --max-connections N     open connections, at most (default 256); one more is\n"
            "                          answered 503 and closed\n"
            "  --max-connections-per-client N\n"
            "                          open connections from one client address, at most\n"
            "                          (default half of --max-connections: no address can\n"
            "                          hold them all; behind a proxy, every client has the\n"
            "                          proxy's address: raise it to --max-connections)\n"
            "  --read-timeout S        seconds a connection has to send one whole request,\n"
            "                          headers and body (from its opening or its previous\n"
            "                          answer); a slower one is answered 408 and closed\n"
            "                          (default 10)\n"
            "  --request-timeout S     seconds from a request's arrival to its answer; past\n"
            "                          them, its work is cancelled: 503 (default 60)\n"
            "  --drain-timeout S       seconds shutdown waits for the requests accepted\n"
            "                          before it cancels them with 503 (default 30)\n"
            "  --max-memory SIZE       each worker's memory budget (bytes, or K, M, G, T;\n"
            "                          default half the memory available, shared by the\n"
            "                          workers): batches that would pass it are decoded as\n"
            "                          smaller ones; a sentence that alone would is refused\n");
    cli_usage_shortlist(f);
    cli_usage_threads(f);
    cli_usage_compute_type(f);
    fprintf(f,
            "  -h, --help              this help\n"
            "\n"
            "Prints 'listening on http://HOST:PORT' when the socket is open and 'ready'\n"
            "once the model is loaded. SIGTERM, SIGINT or SIGHUP: stop accepting, answer\n"
            "the requests already accepted (those not answered within --drain-timeout get\n"
            "503), exit 0. A bad option or model: one line on stderr, exit 1.\n");
}

enum {
    OPT_HOST = 256, OPT_PORT, OPT_MAX_BATCH, OPT_MAX_BATCH_TOKENS, OPT_BATCH_WAIT, OPT_MAX_QUEUE,
    OPT_MAX_BODY, OPT_MAX_SENTENCES, OPT_MAX_CONNECTIONS, OPT_WORKERS, OPT_THREADS, OPT_NUMA,
    OPT_SMT, OPT_COMPUTE_TYPE, OPT_MAX_MEMORY, OPT_MAX_PER_CLIENT, OPT_READ_TIMEOUT,
    OPT_REQUEST_TIMEOUT, OPT_DRAIN_TIMEOUT
};

static int parse_options(int argc, char **argv, srv_settings *s)
{
    static const struct option longs[] = {
        {"model", required_argument, NULL, 'm'},
        {"host", required_argument, NULL, OPT_HOST},
        {"port", required_argument, NULL, OPT_PORT},
        {"max-batch", required_argument, NULL, OPT_MAX_BATCH},
        {"max-batch-tokens", required_argument, NULL, OPT_MAX_BATCH_TOKENS},
        {"batch-wait-ms", required_argument, NULL, OPT_BATCH_WAIT},
        {"max-queue", required_argument, NULL, OPT_MAX_QUEUE},
        {"max-body", required_argument, NULL, OPT_MAX_BODY},
        {"max-sentences", required_argument, NULL, OPT_MAX_SENTENCES},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
        {"max-connections-per-client", required_argument, NULL, OPT_MAX_PER_CLIENT},
        {"read-timeout", required_argument, NULL, OPT_READ_TIMEOUT},
        {"request-timeout", required_argument, NULL, OPT_REQUEST_TIMEOUT},
        {"drain-timeout", required_argument, NULL, OPT_DRAIN_TIMEOUT},
        {"workers", required_argument, NULL, OPT_WORKERS},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"numa", required_argument, NULL, OPT_NUMA},
        {"smt", no_argument, NULL, OPT_SMT},
        {"compute-type", required_argument, NULL, OPT_COMPUTE_TYPE},
        {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
        CLI_SHORTLIST_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(s, 0, sizeof *s);
    s->cli.workers = 1;
    s->cli.batch = 1;
    s->cli.compute_type = TESSERA_COMPUTE_DEFAULT;
    tessera_translate_options_init(&s->cli.translate);
    s->cli.shortlist_first = s->cli.shortlist_best = TESSERA_SHORTLIST_DEFAULT_COUNT;
    s->host = "127.0.0.1";
    s->port = 8080;
    s->max_batch = 32;
    s->max_batch_tokens = 8192;
    s->batch_wait_ms = 5;
    s->max_queue = 4096;
    s->max_sentences = 256;
    s->max_connections = 256;
    s->max_per_client = 0; /* half of --max-connections, below */
    int max_body = 1 << 20, read_timeout = 10, request_timeout = 60, drain_timeout = 30;
    opterr = 0;
    optind = 1;
    int c, bad = 0;
    while (!bad && (c = getopt_long(argc, argv, ":m:h", longs, NULL)) != -1) {
        switch (c) {
        case 'm': s->cli.model_dir = optarg; break;
        case 'h': usage(stdout); return -1;
        case OPT_HOST: s->host = optarg; break;
        case OPT_MAX_MEMORY:
            bad = cli_parse_size("--max-memory", optarg, (size_t)1 << 20, (size_t)1 << 40,
                                 &s->cli.max_memory);
            break;
        case OPT_PORT: bad = cli_parse_int("--port", optarg, 0, 65535, &s->port); break;
        case OPT_MAX_BATCH:
            bad = cli_parse_int("--max-batch", optarg, 1, 4096, &s->max_batch);
            break;
        case OPT_MAX_BATCH_TOKENS:
            bad = cli_parse_int("--max-batch-tokens", optarg, 1, 1 << 24, &s->max_batch_tokens);
            break;
        case OPT_BATCH_WAIT:
            bad = cli_parse_int("--batch-wait-ms", optarg, 0, 10000, &s->batch_wait_ms);
            break;
        case OPT_MAX_QUEUE:
            bad = cli_parse_int("--max-queue", optarg, 1, 1 << 20, &s->max_queue);
            break;
        case OPT_MAX_BODY: bad = cli_parse_int("--max-body", optarg, 64, 1 << 30, &max_body); break;
        case OPT_MAX_SENTENCES:
            bad = cli_parse_int("--max-sentences", optarg, 1, 1 << 16, &s->max_sentences);
            break;
        case OPT_MAX_CONNECTIONS:
            bad = cli_parse_int("--max-connections", optarg, 1, 65536, &s->max_connections);
            break;
        case OPT_MAX_PER_CLIENT:
            bad = cli_parse_int("--max-connections-per-client", optarg, 1, 65536,
                                &s->max_per_client);
            break;
        case OPT_READ_TIMEOUT:
            bad = cli_parse_int("--read-timeout", optarg, 1, 3600, &read_timeout);
            break;
        case OPT_REQUEST_TIMEOUT:
            bad = cli_parse_int("--request-timeout", optarg, 1, 86400, &request_timeout);
            break;
        case OPT_DRAIN_TIMEOUT:
            bad = cli_parse_int("--drain-timeout", optarg, 0, 86400, &drain_timeout);
            break;
        case OPT_WORKERS: bad = cli_parse_int("--workers", optarg, 1, 256, &s->cli.workers); break;
        case OPT_THREADS: bad = cli_parse_int("--threads", optarg, 1, 4096, &s->cli.threads); break;
        case OPT_NUMA: s->cli.numa = optarg; break;
        case OPT_SMT: s->cli.smt = 1; break;
        case OPT_COMPUTE_TYPE: bad = cli_parse_compute_type(optarg, &s->cli.compute_type); break;
        case ':': return cli_error("serve: %s needs a value (try 'tessera serve --help')",
                                   argv[optind - 1]);
        case CLI_OPT_VMAP:
        case CLI_OPT_VMAP + 1:
        case CLI_OPT_VMAP + 2:
        case CLI_OPT_VMAP + 3:
        case CLI_OPT_VMAP + 4:
        case CLI_OPT_VMAP + 5: bad = cli_apply_shortlist_option(c, optarg, &s->cli); break;
        default: return cli_error("serve: unknown option '%s' (try 'tessera serve --help')",
                                  argv[optind - 1]);
        }
    }
    if (bad)
        return 1;
    if (optind < argc)
        return cli_error("serve: unexpected argument '%s' (try 'tessera serve --help')",
                         argv[optind]);
    if (!s->cli.model_dir)
        return cli_error("serve: -m MODEL is required (try 'tessera serve --help')");
    if (s->max_sentences > s->max_queue)
        return cli_error("--max-sentences %d is more than --max-queue %d: such a request could "
                         "never be queued", s->max_sentences, s->max_queue);
    s->max_body = (size_t)max_body;
    if (s->max_per_client == 0)
        s->max_per_client = s->max_connections > 1 ? s->max_connections / 2 : 1;
    s->read_timeout = read_timeout;
    s->request_timeout = request_timeout;
    s->drain_timeout = drain_timeout;
    return 0;
}

int cli_serve(int argc, char **argv)
{
    srv_settings s;
    int rc = parse_options(argc, argv, &s);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    /* A model that cannot be found is reported before listening; the rest
     * of its checks come with the load. */
    char dir[4096], err[1024];
    if (cli_model_path_resolve(s.cli.model_dir, dir, sizeof dir, err, sizeof err) != 0)
        return cli_error("%s", err);
    char config[4200];
    snprintf(config, sizeof config, "%s/config.json", dir);
    if (access(config, R_OK) != 0)
        return cli_error("%s: cannot open: %s", config, strerror(errno));
    s.cli.text_or_pieces = 1;

    /* Every thread started from here on (HTTP, workers, runtimes) inherits
     * this mask; the main thread takes the signals with sigwait. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* Each connection holds a descriptor: the soft limit (often 1024) is
     * raised to the hard one, so that --max-connections is what limits. */
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &files);
    }
#ifdef __GLIBC__
    /* glibc raises its mmap and trim thresholds to the largest block freed
     * (up to 32 and 64 MiB), after which the memory of a large batch stays
     * in its arena when the batch ends, and a server's RSS stays at its
     * largest batch's (measured: 8 MB idle, 87 MB after one heavy request).
     * Fixed thresholds keep them where they start: blocks of 128 KiB and
     * more are mapped and given back when freed. */
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
#endif

    srv_metrics *metrics = srv_metrics_new();
    if (!metrics)
        return cli_error("out of memory");
    srv_http *http = srv_http_start(&s, metrics, err, sizeof err);
    if (!http) {
        srv_metrics_free(metrics);
        return cli_error("serve: %s", err);
    }
    printf("tessera serve: listening on http://%s%s%s:%d\n", strchr(s.host, ':') ? "[" : "",
           s.host, strchr(s.host, ':') ? "]" : "", srv_http_port(http));
    fflush(stdout);

    cli_model cm;
    if (cli_model_open(&s.cli, &cm) != 0 || cli_model_require_decoder(&cm, "serve") != 0 ||
        cli_model_open_shortlist("serve", &s.cli, &cm, &s.cli.translate) != 0) {
        srv_http_stop(http);
        cli_model_close(&cm); /* what opened; nothing when the open failed */
        srv_metrics_free(metrics);
        return 1;
    }
    srv_batcher *batcher = srv_batcher_start(&cm, &s, metrics, err, sizeof err);
    if (!batcher) {
        srv_http_stop(http);
        cli_model_close(&cm);
        srv_metrics_free(metrics);
        return cli_error("serve: %s", err);
    }
    srv_http_ready(http, &cm, batcher);
    printf("tessera serve: ready: %s, %s, %d worker%s of %d thread%s%s\n", cm.dir,
           tessera_compute_type_name(tessera_model_compute_type(cm.model)), cm.n_runtimes,
           cm.n_runtimes == 1 ? "" : "s", tessera_runtime_threads(cm.runtimes[0]),
           tessera_runtime_threads(cm.runtimes[0]) == 1 ? "" : "s",
           cm.form == CLI_TEXT     ? ", text requests too (its tokenizers)"
           : cm.form == CLI_PIECES ? ", text requests of pieces too"
                                   : "");
    fflush(stdout);

    int sig;
    sigwait(&stop, &sig);
    printf("tessera serve: %s: no new connections; answering the requests accepted "
           "(at most %g s)\n",
           sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP", s.drain_timeout);
    fflush(stdout);
    srv_http_quiesce(http);
    srv_http_drain(http);
    srv_batcher_stop(batcher);
    srv_http_stop(http);
    cli_model_close(&cm);
    srv_metrics_free(metrics);
    printf("tessera serve: stopped\n");
    fflush(stdout);
    return 0;
}
