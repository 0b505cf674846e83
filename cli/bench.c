/* tessera bench: timed runs on built-in Transformer configurations with
 * random weights, so that no files are needed, or on a model directory
 * (--model). Each case prints one line of key=value pairs; times are medians
 * over --repeat runs after one warm-up. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/bench.h"
#include "cli/cli.h"

typedef struct bench_options {
    const char *config; /* base, big, all; NULL: not given */
    const char *model;  /* --model DIR|NAME, or NULL */
    const char *cases;  /* comma list or "all" */
    int threads, src_len, tgt_len, repeat, batch; /* lengths 0: the default */
    tessera_compute_type compute_type;            /* --compute-type, else the default */
    int shortlist;                                /* --shortlist N; 0: none */
    const tessera_shortlist *list;                /* its shortlist, once made for the model */
} bench_options;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera bench [OPTIONS]\n"
            "\n"
            "Times built-in configurations on reproducible random weights (no files needed):\n");
    for (size_t i = 0; i < cli_bench_config_count; i++)
        fprintf(f, "  %-9s %s\n", cli_bench_configs[i].name, cli_bench_configs[i].what);
    fprintf(f,
            "or, with --model, a real model. Sentences are reproducible random ids from the\n"
            "source (and, for score, target) vocabulary, special ids (unk, pad, bos, eos)\n"
            "excluded.\n"
            "Cases (one output line each, key=value pairs):\n"
            "  encoder   encoder latency for one sentence of --src-len tokens: the encoder\n"
            "            stack alone (median_ms), and with the decoder's cross-attention\n"
            "            K/V projections that translation adds before its first step\n"
            "            (with_cross_kv_ms)\n"
            "  greedy    greedy decoding, one sentence at a time (target tokens/s)\n"
            "  greedy-batch  greedy decoding, --batch sentences together (tokens/s)\n"
            "  align-batch  greedy-batch with alignments (--alignments)\n"
            "  beam4     beam search with beam 4, --batch sentences together (tokens/s)\n"
            "  sample-batch  sampling (top-k 10, top-p 0.9, temperature 0.8), --batch\n"
            "            sentences together, EOS held back until --tgt-len (tokens/s)\n"
            "  score     teacher-forced scoring of --batch pairs together (tokens/s)\n"
            "  encode-batch  the encoder's output vectors of --batch sentences (tessera\n"
            "            encode; source tokens/s)\n"
            "  text-batch  greedy-batch on text (a model with tokenizers, --model): the\n"
            "            sources' text tokenized, translated, the output detokenized;\n"
            "            text_ms= is the tokenizing and detokenizing, text_pct= its share\n"
            "  load      loading the model (load_ms) against reading its weights file from\n"
            "            the page cache into fresh huge-page memory (read_ms), alternated,\n"
            "            the best of --repeat each, and ratio=load_ms/read_ms; a built-in\n"
            "            configuration is first written as an F32 model to a temporary\n"
            "            directory ($TMPDIR, else /tmp; 226 MB for base, 804 MB for big,\n"
            "            2.5 GB for nllb600m).\n"
            "            Not part of 'all': name it.\n"
            "Decoding runs exactly --tgt-len tokens per sentence on the built-in\n"
            "configurations (the random generator never prefers EOS). A real model may stop\n"
            "at EOS sooner: its lines add tgt_tokens=, the target tokens produced (EOS not\n"
            "counted; beam4: the best hypotheses), over which tok_per_s is computed.\n"
            "Lines name the model as config=base (a built-in configuration's name), or\n"
            "config=NAME, the last component of the model's directory.\n"
            "Each line ends with the case's work per run: f32_flops= (multiplies and adds\n"
            "of linear layers on f32 or bf16 weights, and of attention), i8_ops= (of linear\n"
            "layers on int8 weights), bytes= (what must stream at the least: each layer's\n"
            "weights once per application, keys and values, logits); work=modeled when it\n"
            "is computed from the configuration (built-in ones), work=counted when the\n"
            "library counted it as it ran (--model, text). serial_pct= is the share of the\n"
            "time the runtime's leader spent outside work divided among the threads: run\n"
            "with --threads 1, T threads take at best serial + (100 - serial) / T percent\n"
            "of the time (perf/README.md). imbalance_pct= is the share the threads spent,\n"
            "on average, waiting at the divided loops' barriers for the slowest one: with\n"
            "T threads, what neither more threads nor a faster kernel wins back.\n"
            "\n"
            "Options:\n"
            "  --config LIST           comma-separated built-in configurations, or all: every\n"
            "                          one (default base)\n");
    cli_usage_model(f, "--model DIR|NAME", "time this model instead of a built-in one:");
    fprintf(f,
            "  --case LIST             comma-separated cases, or all: every case but load\n"
            "                          (default all)\n"
            "  --src-len N             source tokens per sentence (default 30; with --model\n"
            "                          min(30, max_positions), and at most max_positions)\n"
            "  --tgt-len N             target tokens per sentence (default 30; with --model\n"
            "                          min(30, max_positions - 1), and at most\n"
            "                          max_positions - 1, as BOS + target must fit)\n"
            "  --batch N               sentences per batch in the batch cases (default 16)\n"
            "  --repeat N              timed runs per case; the median is reported (default 5)\n"
            "  --threads N             threads (default as for translate)\n"
            "  --shortlist N           decode over a synthetic vocabulary shortlist of about\n"
            "                          N candidates per sentence (half fixed, half each\n"
            "                          source token's); its lines say shortlist=N and give\n"
            "                          the work counted as it ran\n");
    cli_usage_compute_type(f);
    fprintf(f, "  -h, --help              this help\n");
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

typedef struct bench_case {
    const char *name;
    int sentences; /* 0: --batch */
    int beam;
    int score;
    int encoder_only;
    int sampling; /* top-k 10, top-p 0.9, temperature 0.8, min-len --tgt-len */
    int encode;   /* tessera_encode of the batch */
    int align;    /* translate with return_alignments */
    int text;     /* greedy on text: tokenize, translate, detokenize */
} bench_case;

static const bench_case cases[] = {
    {"encoder", 1, 1, 0, 1, 0, 0, 0, 0},
    {"greedy", 1, 1, 0, 0, 0, 0, 0, 0},
    {"greedy-batch", 0, 1, 0, 0, 0, 0, 0, 0},
    {"align-batch", 0, 1, 0, 0, 0, 0, 1, 0},
    {"beam4", 0, 4, 0, 0, 0, 0, 0, 0},
    {"sample-batch", 0, 1, 0, 0, 1, 0, 0, 0},
    {"score", 0, 1, 1, 0, 0, 0, 0, 0},
    {"encode-batch", 0, 1, 0, 0, 0, 1, 0, 0},
    {"text-batch", 0, 1, 0, 0, 0, 0, 0, 1},
};

static double bench_failed(const char *err)
{
    cli_error("bench: %s", err);
    return -1.0;
}

/* The encoder stack alone over one sentence, timed (the library's
 * translate always goes on to the cross-attention memory). */
static double run_encoder(tessera_runtime *rt, const tessera_model *m, const tessera_tokens *src)
{
    char err[512];
    float **out;
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    double t0 = now_ms();
    int rc = tessera_encode_with(rt, m, src, 1, &eo, &out, err, sizeof err);
    double ms = now_ms() - t0;
    if (rc != 0)
        return bench_failed(err);
    tessera_encodings_free(out, 1);
    return ms;
}

/* One timed run of a case; returns milliseconds, or a negative value on error.
 * *produced gets the target tokens: decoding, the tokens of the best
 * hypotheses (EOS not counted); scoring, the target tokens fed.
 * With max_len 0, translate is the encoder and the cross-attention keys and
 * values, no decoding step (the encoder case's with_cross_kv_ms). */
static double run_once(tessera_runtime *rt, const tessera_model *m, const bench_case *bc,
                       const bench_options *o, const tessera_tokens *src,
                       const tessera_tokens *tgt, char *const *texts, int n, long *produced,
                       double *text_ms)
{
    char err[512];
    *produced = 0;
    double t0 = now_ms();
    if (bc->text) {
        return cli_bench_text_once(rt, m, texts, n, o->tgt_len, text_ms, produced);
    } else if (bc->encode) {
        float **vectors;
        tessera_encode_options eo;
        tessera_encode_options_init(&eo);
        eo.batch = n;
        if (tessera_encode_with(rt, m, src, (size_t)n, &eo, &vectors, err, sizeof err) != 0)
            return bench_failed(err);
        tessera_encodings_free(vectors, (size_t)n);
        for (int i = 0; i < n; i++)
            *produced += (long)src[i].len;
    } else if (bc->score) {
        float **scores;
        tessera_score_options so;
        tessera_score_options_init(&so);
        so.batch = n;
        if (tessera_score_with(rt, m, src, tgt, (size_t)n, &so, &scores, err, sizeof err) != 0)
            return bench_failed(err);
        tessera_scores_free(scores, (size_t)n);
        for (int i = 0; i < n; i++)
            *produced += (long)tgt[i].len;
    } else {
        tessera_translate_options t;
        tessera_hypothesis *h;
        tessera_translate_options_init(&t);
        t.beam = bc->beam;
        t.max_len = bc->encoder_only ? 0 : o->tgt_len;
        t.batch = n;
        t.return_alignments = bc->align;
        t.shortlist = o->list;
        if (bc->sampling) {
            t.sampling_topk = 10;
            t.sampling_topp = 0.9f;
            t.sampling_temperature = 0.8f;
            t.min_len = t.max_len;
        }
        if (tessera_translate_with(rt, m, src, (size_t)n, &t, &h, err, sizeof err) != 0)
            return bench_failed(err);
        for (int i = 0; i < n; i++) /* n_best is 1: one hypothesis per sentence */
            *produced += (long)h[i].len;
        tessera_hypotheses_free(h, (size_t)n);
    }
    return now_ms() - t0;
}

static double median_of(double *ms, int n)
{
    qsort(ms, (size_t)n, sizeof *ms, by_value);
    return ms[n / 2];
}

static void add_stats(tessera_runtime_stats *sum, const tessera_runtime_stats *one)
{
    sum->calls += one->calls;
    sum->seconds += one->seconds;
    sum->divided_seconds += one->divided_seconds;
    sum->waited_seconds += one->waited_seconds;
    sum->f32_flops += one->f32_flops;
    sum->i8_ops += one->i8_ops;
    sum->bytes += one->bytes;
}

/* The machine's limits for a model, and the read bandwidth at the size
 * each kind of case streams again and again (cli_bench_bound), by
 * cli_bench_kind. */
typedef struct bench_limits {
    tessera_limits machine;
    double stream_bytes[3], stream_bytes_per_s[3];
} bench_limits;

/* The line's work: modeled from the configuration when every sentence is
 * known to run its full length (the built-in configurations, ids), else as
 * the library counted it (a real model stops at EOS; text is tokenized to
 * lengths of its own); per run. Then the serial share: the time the
 * runtime's leader spent outside work divided among its threads. */
static void print_work(const tessera_model *m, const bench_case *bc, const bench_options *o, int n,
                       int real, const tessera_runtime_stats *runs, int repeat,
                       const bench_limits *limits, double median_ms)
{
    cli_bench_work w = {runs->f32_flops / repeat, runs->i8_ops / repeat, runs->bytes / repeat};
    const cli_bench_kind kind = bc->score                        ? CLI_BENCH_SCORE
                                : bc->encode || bc->encoder_only ? CLI_BENCH_ENCODE
                                                                 : CLI_BENCH_DECODE;
    int modeled = !real && !bc->text && !(o->list && kind == CLI_BENCH_DECODE);
    if (modeled) {
        cli_bench_shape shape = {
            .kind = kind,
            .sentences = n, .src_len = o->src_len, .tgt_len = o->tgt_len, .beam = bc->beam,
        };
        cli_bench_work_of(tessera_model_config(m), tessera_model_compute_type(m), &shape, &w);
    }
    printf(" work=%s f32_flops=%.4g i8_ops=%.4g bytes=%.4g serial_pct=%.2f imbalance_pct=%.2f",
           modeled ? "modeled" : "counted", w.f32_flops, w.i8_ops, w.bytes,
           runs->seconds > 0 ? 100.0 * (runs->seconds - runs->divided_seconds) / runs->seconds
                             : 0.0,
           runs->seconds > 0 ? 100.0 * runs->waited_seconds / runs->seconds : 0.0);
    cli_bench_bound_of b;
    cli_bench_bound(&w, limits->stream_bytes[kind], limits->stream_bytes_per_s[kind],
                    &limits->machine, &b);
    if (b.seconds > 0)
        printf(" stream_gbps=%.1f bound_ms=%.3f limit=%s pct_limit=%.1f\n",
               limits->stream_bytes_per_s[kind] / 1e9, 1e3 * b.seconds, b.limit,
               100.0 * 1e3 * b.seconds / median_ms);
    else
        printf(" pct_limit=none (no peak measured for int8 here)\n");
}

/* Runs and reports one case. `real`: a model from files, which may stop at
 * EOS before --tgt-len, so its line says how many target tokens it produced. */
static int run_case(tessera_runtime *rt, const tessera_model *m, const char *label, int real,
                    const bench_case *bc, const bench_options *o, const tessera_tokens *src,
                    const tessera_tokens *tgt, const bench_limits *limits)
{
    int n = bc->sentences ? bc->sentences : o->batch, failed = 0;
    long produced = 0;
    char err[256];
    if (bc->text && !tessera_model_has_tokenizer(m, TESSERA_SOURCE)) {
        printf("case=%s config=%s isa=%s skipped=no_tokenizers (bench --model a model "
               "directory whose config.json names them)\n",
               bc->name, label, tessera_kernel_set(err, sizeof err));
        return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
    }
    char **texts = NULL;
    if (bc->text && cli_bench_texts(m, src, n, &texts) != 0)
        return 1;
    double *ms = malloc((size_t)o->repeat * sizeof *ms);
    double *enc_ms = malloc((size_t)o->repeat * sizeof *enc_ms); /* or text_ms */
    if (!ms || !enc_ms) {
        free(ms);
        free(enc_ms);
        cli_bench_texts_free(texts, n);
        return cli_error("bench: out of memory");
    }
    /* One warm-up, then the timed runs (the encoder alone interleaved with
     * its translate counterpart, so both see the same machine). */
    failed = run_once(rt, m, bc, o, src, tgt, texts, n, &produced, &enc_ms[0]) < 0 ||
             (bc->encoder_only && run_encoder(rt, m, src) < 0);
    /* The counters of the runs the line reports: the encoder case's are its
     * encoder-alone runs, every other case's its own. */
    tessera_runtime_stats runs = {0}, one;
    tessera_runtime_stats_get(rt, &one, 1);
    for (int r = 0; !failed && r < o->repeat; r++) {
        failed = (ms[r] = run_once(rt, m, bc, o, src, tgt, texts, n, &produced, &enc_ms[r])) < 0;
        tessera_runtime_stats_get(rt, &one, 1);
        if (!failed && bc->encoder_only) {
            failed = (enc_ms[r] = run_encoder(rt, m, src)) < 0;
            tessera_runtime_stats_get(rt, &one, 1);
        }
        add_stats(&runs, &one);
    }
    cli_bench_texts_free(texts, n);
    if (!failed) {
        double median = median_of(ms, o->repeat);
        printf("case=%s config=%s isa=%s compute_type=%s threads=%d sentences=%d src_len=%d",
               bc->name, label, tessera_kernel_set(err, sizeof err),
               tessera_compute_type_name(tessera_model_compute_type(m)),
               tessera_runtime_threads(rt), n,
               o->src_len);
        if (o->list && !bc->score && !bc->encode && !bc->encoder_only)
            printf(" shortlist=%d", o->shortlist);
        if (bc->encoder_only)
            printf(" median_ms=%.3f with_cross_kv_ms=%.3f", median_of(enc_ms, o->repeat),
                   median);
        else if (bc->text)
            printf(" tgt_len=%d tgt_tokens=%ld median_ms=%.3f text_ms=%.3f text_pct=%.2f",
                   o->tgt_len, produced, median, median_of(enc_ms, o->repeat),
                   100.0 * median_of(enc_ms, o->repeat) / median);
        else if (bc->encode)
            printf(" median_ms=%.3f src_tok_per_s=%.1f", median,
                   (double)produced / (median / 1e3));
        else if (real)
            printf(" tgt_len=%d tgt_tokens=%ld median_ms=%.3f tok_per_s=%.1f", o->tgt_len,
                   produced, median, (double)produced / (median / 1e3));
        else
            printf(" tgt_len=%d median_ms=%.3f tok_per_s=%.1f", o->tgt_len, median,
                   (double)n * o->tgt_len / (median / 1e3));
        print_work(m, bc, o, n, real, &runs, o->repeat, limits,
                   bc->encoder_only ? median_of(enc_ms, o->repeat) : median);
    }
    free(ms);
    free(enc_ms);
    if (failed)
        return 1;
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}

/* Whether `name` is an item of the comma-separated list, or the list is
 * "all". */
static int in_list(const char *list, const char *name)
{
    if (strcmp(list, "all") == 0)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* "all" is every case but load. */
static int case_selected(const char *list, const char *name)
{
    return strcmp(list, "all") == 0 ? strcmp(name, "load") != 0 : in_list(list, name);
}

/* Every item of --config names a built-in configuration (or is all). */
static int check_configs(const char *list)
{
    if (strcmp(list, "all") == 0)
        return 0;
    char names[256] = "";
    for (size_t i = 0; i < cli_bench_config_count; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ",
                 cli_bench_configs[i].name);
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        int known = 0;
        for (size_t i = 0; i < cli_bench_config_count; i++)
            known |= strlen(cli_bench_configs[i].name) == n &&
                     strncmp(cli_bench_configs[i].name, p, n) == 0;
        if (!known)
            return cli_error("bench: --config '%.*s': no such configuration (%sall)", (int)n, p,
                             names);
        p += n;
        if (*p == '\0')
            return 0;
    }
}

/* Reproducible random ids from a vocabulary, its special ids left out. */
typedef struct id_draw {
    int vocab, n_special;
    int special[4]; /* the special ids inside the vocabulary: ascending, distinct */
} id_draw;

/* Returns -1 when the vocabulary holds nothing but special ids. */
static int id_draw_init(id_draw *d, int vocab, const tessera_config *c)
{
    int ids[4] = {c->unk_id, c->pad_id, c->bos_id, c->eos_id};
    for (int i = 1; i < 4; i++) /* insertion sort */
        for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
            int t = ids[j];
            ids[j] = ids[j - 1];
            ids[j - 1] = t;
        }
    d->vocab = vocab;
    d->n_special = 0;
    for (int i = 0; i < 4; i++) {
        int seen = d->n_special > 0 && d->special[d->n_special - 1] == ids[i];
        if (ids[i] >= 0 && ids[i] < vocab && !seen)
            d->special[d->n_special++] = ids[i];
    }
    return vocab > d->n_special ? 0 : -1;
}

/* The r-th ordinary id, r uniform: each special id at or below it moves it
 * up one. With the default special ids 0..3 this is 4 + r, what the built-in
 * configurations have always drawn. */
static int32_t id_draw_next(const id_draw *d, uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    int32_t id = (int32_t)((*state >> 33) % (uint64_t)(d->vocab - d->n_special));
    for (int i = 0; i < d->n_special; i++)
        id += id >= d->special[i];
    return id;
}

/* --src-len and --tgt-len against what max_positions allows (the decoder
 * holds BOS + target); lengths not given become min(30, that limit). */
static int fit_lengths(bench_options *o, const char *label, int max_positions)
{
    int src_max = max_positions, tgt_max = max_positions - 1;
    if (o->src_len > src_max)
        return cli_error("bench: --src-len %d is more than %s's max_positions (%d)", o->src_len,
                         label, src_max);
    if (o->tgt_len > tgt_max)
        return cli_error("bench: --tgt-len %d is more than %s's max_positions (%d) allows: at "
                         "most %d, as BOS + target must fit", o->tgt_len, label, max_positions,
                         tgt_max);
    if (o->src_len == 0)
        o->src_len = src_max < 30 ? src_max : 30;
    if (o->tgt_len == 0)
        o->tgt_len = tgt_max < 30 ? tgt_max : 30;
    return 0;
}

/* Whether the list names a case of the cases table (every case but load). */
static int any_decoding_case(const char *list)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (case_selected(list, cases[i].name))
            return 1;
    return 0;
}

/* A runtime of --threads threads, or NULL after printing why not. */
static tessera_runtime *bench_runtime(const bench_options *o)
{
    tessera_runtime_options ro;
    tessera_runtime *rt;
    char err[512];
    tessera_runtime_options_init(&ro);
    ro.threads = o->threads;
    if (tessera_runtime_create(&ro, &rt, err, sizeof err) != 0) {
        cli_error("bench: %s", err);
        return NULL;
    }
    return rt;
}

/* The threads a runtime of --threads gets (the environment's, or the
 * machine's default): the load case loads with as many. */
static int runtime_threads(const bench_options *o, int *threads)
{
    tessera_runtime *rt = bench_runtime(o);
    if (!rt)
        return 1;
    *threads = tessera_runtime_threads(rt);
    tessera_runtime_free(rt);
    return 0;
}

static int bench_load(const char *dir, const char *label, const bench_options *o)
{
    tessera_load_options load;
    tessera_load_options_init(&load);
    load.compute_type = o->compute_type;
    if (runtime_threads(o, &load.threads) != 0)
        return 1;
    return cli_bench_load(dir, label, &load, load.threads, o->repeat);
}

/* The load case on a built-in configuration: its files written to a
 * temporary directory, removed afterwards. */
static int bench_config_load(const char *name, const tessera_config *c, const bench_options *o)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096], err[1024], path[4200];
    snprintf(dir, sizeof dir, "%s/tessera-bench-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(dir))
        return cli_error("bench: cannot make a temporary directory %s", dir);
    int status = cli_bench_write_model(c, dir, err, sizeof err) == 0
                     ? bench_load(dir, name, o)
                     : cli_error("bench: %s", err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
    return status;
}

/* The machine's limits on the runtime's threads for the model's kernel set
 * and compute type, and the read bandwidth at the sizes its cases stream,
 * measured once before its cases, and printed as a line of their own (no
 * case=: the scripts that read cases pass it over). */
static int measure_limits(tessera_runtime *rt, const tessera_model *m, const char *label,
                          bench_limits *l)
{
    char err[512];
    tessera_limits *machine = &l->machine;
    if (tessera_runtime_limits(rt, m, machine, err, sizeof err) != 0)
        return cli_error("bench: %s", err);
    const tessera_config *c = tessera_model_config(m);
    for (int kind = CLI_BENCH_DECODE; kind <= CLI_BENCH_ENCODE; kind++) {
        double bytes = cli_bench_streamed_weight_bytes(c, tessera_model_compute_type(m), kind);
        l->stream_bytes[kind] = bytes;
        /* Scoring streams a decoding step's weights: measured once. */
        if (kind > CLI_BENCH_DECODE && bytes == l->stream_bytes[CLI_BENCH_DECODE]) {
            l->stream_bytes_per_s[kind] = l->stream_bytes_per_s[CLI_BENCH_DECODE];
            continue;
        }
        if (tessera_runtime_read_bandwidth(rt, m, bytes >= 1 ? (size_t)bytes : 1,
                                           &l->stream_bytes_per_s[kind], err, sizeof err) != 0)
            return cli_error("bench: %s", err);
    }
    printf("limits config=%s isa=%s compute_type=%s threads=%d f32_gflops=%.1f i8_gops=%.1f "
           "memory_gbps=%.1f cache_gbps=%.1f cache_mib=%.1f decode_stream_mib=%.1f "
           "decode_stream_gbps=%.1f encode_stream_mib=%.1f encode_stream_gbps=%.1f\n",
           label, tessera_kernel_set(err, sizeof err),
           tessera_compute_type_name(tessera_model_compute_type(m)), tessera_runtime_threads(rt),
           machine->f32_flops_per_s / 1e9, machine->i8_ops_per_s / 1e9,
           machine->memory_bytes_per_s / 1e9, machine->cache_bytes_per_s / 1e9,
           (double)machine->cache_bytes / (1 << 20), l->stream_bytes[CLI_BENCH_DECODE] / (1 << 20),
           l->stream_bytes_per_s[CLI_BENCH_DECODE] / 1e9,
           l->stream_bytes[CLI_BENCH_ENCODE] / (1 << 20),
           l->stream_bytes_per_s[CLI_BENCH_ENCODE] / 1e9);
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}

/* Runs the selected cases on a model, on the same sentences for each case,
 * on a runtime of --threads threads. */
static int bench_model(const tessera_model *m, const char *label, int real,
                       const bench_options *given)
{
    const tessera_config *c = tessera_model_config(m);
    bench_options with_list = *given, *o = &with_list;
    tessera_shortlist *list = NULL;
    if (o->shortlist && cli_bench_shortlist(m, o->shortlist, o->src_len, &list) != 0)
        return 1;
    o->list = list;
    tessera_runtime *rt = bench_runtime(o);
    if (!rt) {
        tessera_shortlist_free(list);
        return 1;
    }
    id_draw src_draw, tgt_draw;
    if (id_draw_init(&src_draw, c->src_vocab_size, c) != 0 ||
        id_draw_init(&tgt_draw, c->tgt_vocab_size, c) != 0)
        return cli_error("bench: %s: a vocabulary holds nothing but special ids", label);
    int n = o->batch > 1 ? o->batch : 1, status = 0;
    size_t per = (size_t)o->src_len + (size_t)o->tgt_len;
    int32_t *ids = malloc((size_t)n * per * sizeof *ids);
    tessera_tokens *src = malloc((size_t)n * sizeof *src), *tgt = malloc((size_t)n * sizeof *tgt);
    if (!ids || !src || !tgt)
        status = cli_error("bench: out of memory");
    uint64_t state = 7;
    for (int i = 0; status == 0 && i < n; i++) {
        int32_t *s = ids + (size_t)i * per;
        for (int t = 0; t < o->src_len + o->tgt_len; t++)
            s[t] = id_draw_next(t < o->src_len ? &src_draw : &tgt_draw, &state);
        src[i] = (tessera_tokens){s, (size_t)o->src_len};
        tgt[i] = (tessera_tokens){s + o->src_len, (size_t)o->tgt_len};
    }
    bench_limits limits;
    if (status == 0)
        status = measure_limits(rt, m, label, &limits);
    for (size_t i = 0; status == 0 && i < sizeof cases / sizeof cases[0]; i++)
        if (case_selected(o->cases, cases[i].name))
            status = run_case(rt, m, label, real, &cases[i], o, src, tgt, &limits);
    tessera_runtime_free(rt);
    tessera_shortlist_free(list);
    free(ids);
    free(src);
    free(tgt);
    return status;
}

static int bench_config(const cli_bench_config *b, const bench_options *given)
{
    tessera_config c;
    tessera_model *m;
    char err[512];
    bench_options o = *given;
    const char *name = b->name;
    cli_bench_config_of(b, &c);
    if (fit_lengths(&o, name, c.max_positions) != 0)
        return 1;
    if (case_selected(o.cases, "load") && bench_config_load(name, &c, &o) != 0)
        return 1;
    if (!any_decoding_case(o.cases))
        return 0;
    tessera_load_options load;
    tessera_load_options_init(&load);
    load.compute_type = o.compute_type;
    if (tessera_model_random_with(&c, 42, &load, &m, err, sizeof err) != 0)
        return cli_error("bench: %s", err);
    int status = bench_model(m, name, 0, &o);
    tessera_model_free(m);
    return status;
}

/* The last component of path (trailing '/' ignored), into out. */
static void last_component(const char *path, char *out, size_t len)
{
    size_t end = strlen(path), start;
    while (end > 1 && path[end - 1] == '/')
        end--;
    for (start = end; start > 0 && path[start - 1] != '/';)
        start--;
    snprintf(out, len, "%.*s", (int)(end - start), path + start);
}

/* The name bench lines give a model from files: the last component of its
 * directory as named (an installed model's name), of its real path when that
 * says nothing ("." or ".."); blanks made '_' to keep key=value pairs. */
static void model_label(const char *dir, char *out, size_t len)
{
    last_component(dir, out, len);
    char *real = NULL;
    if ((strcmp(out, ".") == 0 || strcmp(out, "..") == 0) && (real = realpath(dir, NULL)))
        last_component(real, out, len);
    free(real);
    for (char *p = out; *p; p++)
        if (*p == ' ' || *p == '\t')
            *p = '_';
}

static int bench_files(const bench_options *given)
{
    cli_options mo = {.model_dir = given->model, .compute_type = given->compute_type};
    cli_model cm;
    char label[256];
    bench_options o = *given;
    if (cli_model_open(&mo, &cm) != 0 || cli_model_require_decoder(&cm, "bench") != 0)
        return 1;
    model_label(cm.dir, label, sizeof label);
    int status = fit_lengths(&o, label, cm.cfg->max_positions);
    if (status == 0 && case_selected(o.cases, "load"))
        status = bench_load(cm.dir, label, &o);
    if (status == 0 && any_decoding_case(o.cases))
        status = bench_model(cm.model, label, 1, &o);
    cli_model_close(&cm);
    return status;
}

int cli_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"model", required_argument, NULL, 'm'},
        {"case", required_argument, NULL, 'k'},   {"src-len", required_argument, NULL, 's'},
        {"tgt-len", required_argument, NULL, 't'}, {"batch", required_argument, NULL, 'b'},
        {"repeat", required_argument, NULL, 'r'}, {"threads", required_argument, NULL, 'j'},
        {"compute-type", required_argument, NULL, 'T'},
        {"shortlist", required_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    bench_options o = {NULL, NULL, "all", 0, 0, 0, 5, 16, TESSERA_COMPUTE_DEFAULT, 0, NULL};
    int opt, bad = 0;
    opterr = 0;
    optind = 1;
    while (!bad && (opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
        case 'c': o.config = optarg; break;
        case 'm': o.model = optarg; break;
        case 'k': o.cases = optarg; break;
        case 's': bad = cli_parse_int("--src-len", optarg, 1, 1 << 20, &o.src_len); break;
        case 't': bad = cli_parse_int("--tgt-len", optarg, 1, 1 << 20, &o.tgt_len); break;
        case 'b': bad = cli_parse_int("--batch", optarg, 1, 4096, &o.batch); break;
        case 'r': bad = cli_parse_int("--repeat", optarg, 1, 1000, &o.repeat); break;
        case 'j': bad = cli_parse_int("--threads", optarg, 1, 4096, &o.threads); break;
        case 'T': bad = cli_parse_compute_type(optarg, &o.compute_type); break;
        case 'S': bad = cli_parse_int("--shortlist", optarg, 1, 1 << 24, &o.shortlist); break;
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
    if (o.model && o.config)
        return cli_error("bench: --model and --config exclude each other (a model from files, "
                         "or built-in configurations)");
    const char *config = o.config ? o.config : "base";
    if (check_configs(config) != 0)
        return 1;
    for (size_t i = 0, any = 0; i <= sizeof cases / sizeof cases[0]; i++) {
        if (i == sizeof cases / sizeof cases[0]) {
            if (!any)
                return cli_error("bench: --case '%s': no such case (encoder, greedy, "
                                 "greedy-batch, align-batch, beam4, sample-batch, score, "
                                 "encode-batch, load, all)", o.cases);
            break;
        }
        any |= (size_t)case_selected(o.cases, cases[i].name);
        if (i == 0)
            any |= (size_t)case_selected(o.cases, "load");
    }
    if (o.model)
        return bench_files(&o);
    for (size_t i = 0; i < cli_bench_config_count; i++)
        if (in_list(config, cli_bench_configs[i].name) && bench_config(&cli_bench_configs[i], &o))
            return 1;
    return 0;
}
