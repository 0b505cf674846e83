/* tessera bench: timed runs on built-in Transformer configurations with
 * random weights, so that no files are needed. Each case prints one line of
 * key=value pairs; times are medians over --repeat runs after one warm-up. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cli.h"
#include "core/config.h"
#include "core/encoder.h"
#include "core/memory.h"

typedef struct bench_options {
    const char *config; /* base, big, all */
    const char *cases;  /* comma list or "all" */
    int threads, src_len, tgt_len, repeat, batch;
} bench_options;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera bench [OPTIONS]\n"
            "\n"
            "Times built-in configurations on reproducible random weights (no files needed):\n"
            "  base: d_model 512, 8 heads, d_ff 2048, 6+6 layers, vocab 8000\n"
            "  big:  d_model 1024, 16 heads, d_ff 4096, 6+6 layers, vocab 8000\n"
            "Cases (one output line each, key=value pairs):\n"
            "  encoder   encoder latency for one sentence of --src-len tokens: the encoder\n"
            "            stack alone (median_ms), and with the decoder's cross-attention\n"
            "            K/V projections that translation adds before its first step\n"
            "            (with_cross_kv_ms)\n"
            "  greedy    greedy decoding, one sentence at a time (target tokens/s)\n"
            "  greedy-batch  greedy decoding, --batch sentences together (tokens/s)\n"
            "  beam4     beam search with beam 4, --batch sentences together (tokens/s)\n"
            "  score     teacher-forced scoring of --batch pairs together (tokens/s)\n"
            "Decoding runs exactly --tgt-len tokens per sentence (the random generator\n"
            "never prefers EOS).\n"
            "\n"
            "Options:\n"
            "  --config base|big|all   configurations to run (default base)\n"
            "  --case LIST             comma-separated cases, or all (default all)\n"
            "  --src-len N             source tokens per sentence (default 30)\n"
            "  --tgt-len N             target tokens per sentence (default 30)\n"
            "  --batch N               sentences per batch in the batch cases (default 16)\n"
            "  --repeat N              timed runs per case; the median is reported (default 5)\n"
            "  --threads N             threads (default as for translate)\n"
            "  -h, --help              this help\n");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The sizes of a built-in configuration; everything else is config.json's
 * defaults (post-norm, ReLU, max_positions 1024, the usual special ids). */
static void config_of(const char *name, tessera_config *c)
{
    int big = strcmp(name, "big") == 0;
    tsr_config_defaults(c);
    c->d_model = big ? 1024 : 512;
    c->n_heads = big ? 16 : 8;
    c->d_ff = big ? 4096 : 2048;
    c->n_encoder_layers = c->n_decoder_layers = 6;
    c->src_vocab_size = c->tgt_vocab_size = 8000;
}

typedef struct bench_case {
    const char *name;
    int sentences; /* 0: --batch */
    int beam;
    int score;
    int encoder_only;
} bench_case;

static const bench_case cases[] = {
    {"encoder", 1, 1, 0, 1},
    {"greedy", 1, 1, 0, 0},
    {"greedy-batch", 0, 1, 0, 0},
    {"beam4", 0, 4, 0, 0},
    {"score", 0, 1, 1, 0},
};

static double bench_failed(const char *err)
{
    cli_error("bench: %s", err);
    return -1.0;
}

/* The encoder stack alone over one sentence, timed (the library's
 * translate always goes on to the cross-attention memory). */
static double run_encoder(const tessera_model *m, const tessera_tokens *src)
{
    char err[512];
    size_t row0 = 0, len = src->len;
    tsr_packing p = {.n = 1, .row0 = &row0, .len = &len, .rows = len};
    float *memory = tsr_alloc_floats(len * m->d);
    if (!memory)
        return bench_failed("out of memory for the encoder output");
    double t0 = now_ms();
    int rc = tsr_encode(m, src, &p, memory, err, sizeof err);
    double ms = now_ms() - t0;
    tsr_free(memory);
    return rc == 0 ? ms : bench_failed(err);
}

/* One timed run of a case; returns milliseconds, or a negative value on error.
 * With max_len 0, translate is the encoder and the cross-attention keys and
 * values, no decoding step (the encoder case's with_cross_kv_ms). */
static double run_once(const tessera_model *m, const bench_case *bc, const bench_options *o,
                       const tessera_tokens *src, const tessera_tokens *tgt, int n)
{
    char err[512];
    double t0 = now_ms();
    if (bc->score) {
        float **scores;
        if (tessera_score(m, src, tgt, (size_t)n, n, &scores, err, sizeof err) != 0)
            return bench_failed(err);
        tessera_scores_free(scores, (size_t)n);
    } else {
        tessera_translate_options t;
        tessera_hypothesis *h;
        tessera_translate_options_init(&t);
        t.beam = bc->beam;
        t.max_len = bc->encoder_only ? 0 : o->tgt_len;
        t.batch = n;
        if (tessera_translate(m, src, (size_t)n, &t, &h, err, sizeof err) != 0)
            return bench_failed(err);
        tessera_hypotheses_free(h, (size_t)n);
    }
    return now_ms() - t0;
}

static double median_of(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof *ms, by_value);
    return ms[n / 2];
}

static int run_case(const tessera_model *m, const char *config, const bench_case *bc,
                    const bench_options *o, const tessera_tokens *src, const tessera_tokens *tgt)
{
    int n = bc->sentences ? bc->sentences : o->batch, failed = 0;
    double *ms = malloc((size_t)o->repeat * sizeof *ms);
    double *enc_ms = malloc((size_t)o->repeat * sizeof *enc_ms);
    if (!ms || !enc_ms) {
        free(ms);
        free(enc_ms);
        return cli_error("bench: out of memory");
    }
    /* One warm-up, then the timed runs (the encoder alone interleaved with
     * its translate counterpart, so both see the same machine). */
    failed = run_once(m, bc, o, src, tgt, n) < 0 || (bc->encoder_only && run_encoder(m, src) < 0);
    for (int r = 0; !failed && r < o->repeat; r++) {
        failed = (ms[r] = run_once(m, bc, o, src, tgt, n)) < 0;
        if (!failed && bc->encoder_only)
            failed = (enc_ms[r] = run_encoder(m, src)) < 0;
    }
    if (!failed) {
        char err[256];
        double median = median_of(ms, o->repeat);
        printf("case=%s config=%s isa=%s threads=%d sentences=%d src_len=%d", bc->name, config,
               tessera_kernel_set(err, sizeof err), tessera_threads(), n, o->src_len);
        if (bc->encoder_only)
            printf(" median_ms=%.3f with_cross_kv_ms=%.3f\n", median_of(enc_ms, o->repeat),
                   median);
        else
            printf(" tgt_len=%d median_ms=%.3f tok_per_s=%.1f\n", o->tgt_len, median,
                   (double)n * o->tgt_len / (median / 1e3));
    }
    free(ms);
    free(enc_ms);
    if (failed)
        return 1;
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}

static int case_selected(const char *list, const char *name)
{
    if (strcmp(list, "all") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

static int bench_config(const char *name, const bench_options *o)
{
    tessera_config c;
    tessera_model *m;
    char err[512];
    config_of(name, &c);
    if (tessera_model_random(&c, 42, &m, err, sizeof err) != 0)
        return cli_error("bench: %s", err);
    int n = o->batch > 1 ? o->batch : 1, status = 0;
    int32_t *ids = malloc((size_t)n * (size_t)(o->src_len + o->tgt_len) * sizeof *ids);
    tessera_tokens *src = malloc((size_t)n * sizeof *src), *tgt = malloc((size_t)n * sizeof *tgt);
    if (!ids || !src || !tgt)
        status = cli_error("bench: out of memory");
    uint64_t state = 7;
    for (int i = 0; status == 0 && i < n; i++) {
        int32_t *s = ids + (size_t)i * (size_t)(o->src_len + o->tgt_len);
        for (int t = 0; t < o->src_len + o->tgt_len; t++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            s[t] = 4 + (int32_t)((state >> 33) % (uint64_t)(c.tgt_vocab_size - 4));
        }
        src[i] = (tessera_tokens){s, (size_t)o->src_len};
        tgt[i] = (tessera_tokens){s + o->src_len, (size_t)o->tgt_len};
    }
    for (size_t i = 0; status == 0 && i < sizeof cases / sizeof cases[0]; i++)
        if (case_selected(o->cases, cases[i].name))
            status = run_case(m, name, &cases[i], o, src, tgt);
    free(ids);
    free(src);
    free(tgt);
    tessera_model_free(m);
    return status;
}

int cli_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"case", required_argument, NULL, 'k'},
        {"src-len", required_argument, NULL, 's'}, {"tgt-len", required_argument, NULL, 't'},
        {"batch", required_argument, NULL, 'b'},  {"repeat", required_argument, NULL, 'r'},
        {"threads", required_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bench_options o = {"base", "all", 0, 30, 30, 5, 16};
    int opt, bad = 0;
    opterr = 0;
    optind = 1;
    while (!bad && (opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': o.config = optarg; break;
        case 'k': o.cases = optarg; break;
        case 's': bad = cli_parse_int("--src-len", optarg, 1, 1000, &o.src_len); break;
        case 't': bad = cli_parse_int("--tgt-len", optarg, 1, 1000, &o.tgt_len); break;
        case 'b': bad = cli_parse_int("--batch", optarg, 1, 4096, &o.batch); break;
        case 'r': bad = cli_parse_int("--repeat", optarg, 1, 1000, &o.repeat); break;
        case 'j': bad = cli_parse_int("--threads", optarg, 1, 4096, &o.threads); break;
        case 'h': usage(stdout); return 0;
        case ':': return cli_error("bench: option '%s' needs a value", argv[optind - 1]);
        default: return cli_error("bench: unknown option '%s' (try 'tessera bench --help')",
                                  argv[optind - 1]);
        }
    }
    if (bad)
        return 1;
    if (optind < argc)
        return cli_error("bench: unexpected argument '%s'", argv[optind]);
    int base = strcmp(o.config, "base") == 0 || strcmp(o.config, "all") == 0;
    int big = strcmp(o.config, "big") == 0 || strcmp(o.config, "all") == 0;
    if (!base && !big)
        return cli_error("bench: --config '%s': expected base, big or all", o.config);
    for (size_t i = 0, any = 0; i <= sizeof cases / sizeof cases[0]; i++) {
        if (i == sizeof cases / sizeof cases[0]) {
            if (!any)
                return cli_error("bench: --case '%s': no such case (encoder, greedy, "
                                 "greedy-batch, beam4, score, all)", o.cases);
            break;
        }
        any |= (size_t)case_selected(o.cases, cases[i].name);
    }
    if (cli_apply_threads(o.threads, NULL, 0) != 0)
        return 1;
    if (base && bench_config("base", &o) != 0)
        return 1;
    if (big && bench_config("big", &o) != 0)
        return 1;
    return 0;
}
