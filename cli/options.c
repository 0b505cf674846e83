/* Errors, flag values, and opening the model: what every subcommand shares. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/model_path.h"

int cli_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fflush(stdout);
    fprintf(stderr, "tessera: %s\n", msg);
    return 1;
}

/* The note, if any, for the end of a successful run. */
static char note[256];

void cli_note(const char *fmt, ...)
{
    if (note[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(note, sizeof note, fmt, ap);
    va_end(ap);
}

void cli_print_note(void)
{
    if (note[0])
        fprintf(stderr, "tessera: note: %s\n", note);
}

int cli_fail(char *err, size_t err_len, const char *fmt, ...)
{
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int cli_parse_int(const char *flag, const char *text, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || *end || errno)
        return cli_error("%s: '%s' is not a whole number", flag, text);
    if (v < lo || v > hi)
        return cli_error("%s: %ld is out of range [%ld, %ld]", flag, v, lo, hi);
    *out = (int)v;
    return 0;
}

int cli_parse_float(const char *flag, const char *text, double lo, double hi, float *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v))
        return cli_error("%s: '%s' is not a number", flag, text);
    if (v < lo || v > hi)
        return cli_error("%s: %g is out of range [%g, %g]", flag, v, lo, hi);
    *out = (float)v;
    return 0;
}

/* A seed: a whole number in [0, 2^64). */
static int parse_seed(const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || *end || errno || text[strspn(text, " \t")] == '-')
        return cli_error("--seed: '%s' is not a whole number in [0, 18446744073709551615]", text);
    *out = (uint64_t)v;
    return 0;
}

int cli_parse_compute_type(const char *text, tessera_compute_type *out)
{
    char err[256];
    if (tessera_compute_type_parse(text, out, err, sizeof err) != 0)
        return cli_error("--compute-type: %s", err);
    return 0;
}

void cli_usage_compute_type(FILE *f)
{
    fprintf(f,
            "  --compute-type TYPE     how the linear layers hold their weights: f32 (the\n"
            "                          default, or TESSERA_COMPUTE_TYPE); bf16: rounded to\n"
            "                          bfloat16, half the bytes to stream, math in float32;\n"
            "                          int8: per-row int8 weights, activations quantized per\n"
            "                          token, int32 sums: a quarter of the bytes and the\n"
            "                          same results on every kernel set (`tessera info`\n"
            "                          names the int8 kernel)\n");
}

void cli_usage_batching(FILE *f, const char *what)
{
    fprintf(f,
            "  --batch-tokens T        a batch also holds at most T source tokens (a longer\n"
            "                          line alone), 1..%d; lines are read into a batch\n"
            "                          until the next would pass T (and at most --batch\n"
            "                          of them, %d when --batch is not given); inside\n"
            "                          it, %s are taken shortest first. The output is\n"
            "                          identical whatever T\n"
            "  --max-memory SIZE       working memory each worker may plan to hold at once\n"
            "                          (activations, KV caches, logits, search state; not\n"
            "                          the weights): bytes, or with a K, M, G or T suffix\n"
            "                          (powers of 1024), 1M..1T. A batch that would need\n"
            "                          more is run as smaller ones (identical output); a\n"
            "                          line that alone needs more is an error. Default:\n"
            "                          half the memory available at start, shared by the\n"
            "                          workers ('tessera info -m MODEL' shows what a\n"
            "                          sentence needs)\n",
            CLI_BATCH_TOKENS_MAX, CLI_BATCH_MAX, what);
}

int cli_parse_size(const char *flag, const char *text, size_t lo, size_t hi, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || errno || text[strspn(text, " \t")] == '-')
        return cli_error("%s: '%s' is not a size (bytes, or with K, M, G or T)", flag, text);
    unsigned shift = 0;
    if (*end) {
        const char *units = "KMGT", *u = strchr(units, end[0] & ~0x20);
        if (!u || !end[0] || end[1])
            return cli_error("%s: '%s' is not a size (bytes, or with K, M, G or T)", flag, text);
        shift = 10 * (unsigned)(u - units + 1);
    }
    if (v > (ULLONG_MAX >> shift) || (v << shift) < lo || (v << shift) > hi)
        return cli_error("%s: %s is out of range [%zuM, %zuT]", flag, text, lo >> 20, hi >> 40);
    *out = (size_t)(v << shift);
    return 0;
}

void cli_usage_threads(FILE *f)
{
    fprintf(f,
            "  --workers N             N workers, 1..256 (default 1), each computing its own\n"
            "                          batches on threads and cores of its own, all reading\n"
            "                          the one loaded model; the output is identical\n"
            "                          whatever N\n"
            "  --threads K             threads of each worker, 1..4096 and at most 8 per CPU\n"
            "                          in all the workers (default: TESSERA_NUM_THREADS,\n"
            "                          OMP_NUM_THREADS, or the cores this process may use\n"
            "                          shared among the workers)\n"
            "  --numa POLICY           weights on NUMA nodes: replicate (a copy per node),\n"
            "                          interleave, local, off, or auto (the default, or\n"
            "                          TESSERA_NUMA): chosen from the topology and model size\n"
            "  --smt                   with the default thread count, use SMT siblings too\n");
}

int cli_runtime_open(const cli_options *o, int worker, tessera_runtime **rt)
{
    char err[512];
    tessera_runtime_options ro;
    tessera_runtime_options_init(&ro);
    ro.threads = o->threads;
    ro.workers = o->workers;
    ro.worker = worker;
    ro.numa = o->numa;
    ro.use_smt = o->smt;
    ro.max_memory = o->max_memory;
    if (tessera_runtime_create(&ro, rt, err, sizeof err) != 0) {
        if (o->numa && strstr(err, "NUMA policy"))
            return cli_error("--numa: %s", err);
        if (o->threads && strncmp(err, "threads ", 8) == 0)
            return cli_error("--threads: %s", err);
        return cli_error("%s", err);
    }
    /* Once for all workers, naming what asked for that many, however it
     * was asked. */
    long threads = (long)tessera_runtime_threads(*rt) * o->workers;
    const char *own = getenv("TESSERA_NUM_THREADS"), *omp = getenv("OMP_NUM_THREADS");
    const char *who = o->threads        ? "--threads"
                      : own && *own     ? "TESSERA_NUM_THREADS"
                      : omp && *omp     ? "OMP_NUM_THREADS"
                                        : "--workers";
    if (worker == 0 && threads > tessera_cpus())
        cli_note("%ld threads on %d CPUs (%s): they take turns, which is slower than one per "
                 "CPU", threads, tessera_cpus(), who);
    return 0;
}

/* The sides a command reads and writes: the source, and the target when the
 * model has a decoder. */
static int sides(const cli_model *cm) { return cm->cfg->n_decoder_layers > 0 ? 2 : 1; }

/* The vocabulary files of a model directory, source and target. */
static const char *const vocab_files[2] = {"vocab.src.txt", "vocab.tgt.txt"};

/* Whether the model has its vocabularies (a CTranslate2 directory's), or dir
 * both vocabulary files (a target one unless an encoder alone). */
static int has_vocabularies(const cli_model *cm)
{
    if (tessera_model_vocabulary(cm->model, TESSERA_SOURCE))
        return 1;
    for (int s = 0; s < sides(cm); s++) {
        char path[sizeof cm->dir + 32];
        snprintf(path, sizeof path, "%s/%s", cm->dir, vocab_files[s]);
        if (access(path, R_OK) != 0)
            return 0;
    }
    return 1;
}

/* The vocabularies pieces need: the model's own, or read from its directory
 * (flag names what asked for them in the message). */
int cli_model_load_vocabularies(cli_model *cm, const char *flag, char *err, size_t err_len)
{
    const tessera_vocabulary **vocab[2] = {&cm->src_vocab, &cm->tgt_vocab};
    for (int s = 0; s < sides(cm); s++) {
        *vocab[s] = tessera_model_vocabulary(cm->model, (tessera_side)s);
        if (*vocab[s])
            continue;
        char path[sizeof cm->dir + 32], why[1024];
        snprintf(path, sizeof path, "%s/%s", cm->dir, vocab_files[s]);
        if (tessera_vocabulary_load(path,
                                    (size_t)(s ? cm->cfg->tgt_vocab_size : cm->cfg->src_vocab_size),
                                    &cm->owned_vocab[s], why, sizeof why) != 0)
            return cli_fail(err, err_len, "%s%s%s%s", why, flag ? " (needed by " : "",
                            flag ? flag : "", flag ? ")" : "");
        *vocab[s] = cm->owned_vocab[s];
    }
    return 0;
}

/* cm->form from o->form: text by default when the model's tokenizers can
 * read every side. */
static int choose_form(const cli_options *o, cli_model *cm, char *err, size_t err_len)
{
    int tokenizers = 1, named = 0;
    for (int s = 0; s < sides(cm); s++) {
        tokenizers &= tessera_model_has_tokenizer(cm->model, (tessera_side)s);
        named |= (s == 0 ? cm->cfg->source_tokenizer : cm->cfg->target_tokenizer)[0] != 0;
    }
    if (!o->form && !tokenizers && o->text_or_pieces) {
        cm->form = has_vocabularies(cm) ? CLI_PIECES : CLI_IDS;
        return 0;
    }
    /* A model that names tokenizers reads text by default, also where this
     * build cannot: then it says so rather than read the text as ids. */
    cm->form = o->form ? (cli_form)o->form : tokenizers || named ? CLI_TEXT : CLI_IDS;
    if (cm->form != CLI_TEXT || tokenizers)
        return 0;
    if (named && tessera_model_vocabulary(cm->model, TESSERA_SOURCE))
        return cli_fail(err, err_len,
                        "%s names SentencePiece tokenizers, but this tessera was built without "
                        "SentencePiece, so it reads no text: give --ids or --pieces", cm->dir);
    return cli_fail(err, err_len,
                    "--text: %s has no %stokenizer (config.json key 'tokenizer', "
                    "docs/model-format.md section 3): give --ids or --pieces", cm->dir,
                    named ? "target " : "");
}

int cli_model_open(const cli_options *o, cli_model *cm)
{
    char err[1024];
    memset(cm, 0, sizeof *cm);
    if (!tessera_kernel_set(err, sizeof err))
        return cli_error("%s", err);
    if (cli_model_path_resolve(o->model_dir, cm->dir, sizeof cm->dir, err, sizeof err) != 0)
        return cli_error("%s", err);
    /* The runtimes first: a bad --numa, --threads or TESSERA_NUM_THREADS is
     * reported before the model is read. */
    cm->runtimes = calloc((size_t)o->workers, sizeof *cm->runtimes);
    if (!cm->runtimes)
        return cli_error("out of memory for %d workers", o->workers);
    for (; cm->n_runtimes < o->workers; cm->n_runtimes++)
        if (cli_runtime_open(o, cm->n_runtimes, &cm->runtimes[cm->n_runtimes]) != 0) {
            cli_model_close(cm);
            return 1;
        }
    tessera_load_options load;
    tessera_load_options_init(&load);
    load.compute_type = o->compute_type;
    load.numa = o->numa;
    load.threads = o->threads;
    if (tessera_model_load_with(cm->dir, &load, &cm->model, err, sizeof err) != 0) {
        cli_model_close(cm);
        return cli_error("%s", err);
    }
    cm->cfg = tessera_model_config(cm->model);
    if (choose_form(o, cm, err, sizeof err) != 0 ||
        (cm->form == CLI_PIECES &&
         cli_model_load_vocabularies(cm, o->form == CLI_PIECES ? "--pieces" : NULL, err,
                                     sizeof err) != 0)) {
        cli_model_close(cm);
        return cli_error("%s", err);
    }
    return 0;
}

void cli_usage_forms(FILE *f)
{
    fprintf(f,
            "  --text                  lines are UTF-8 text, through the model's tokenizers\n"
            "                          (the default when its config.json names them)\n"
            "  --ids                   lines are token ids separated by spaces (the default\n"
            "                          for a model without tokenizers)\n"
            "  --pieces, --tokens      lines are pieces (lines of vocab.src.txt / vocab.tgt.txt)\n"
            "                          separated by spaces; an unknown one is unk_id\n");
}


int cli_check_budget(const cli_model *cm, size_t need, size_t tokens, char *err, size_t err_len)
{
    size_t budget = tessera_runtime_memory_budget(cm->runtimes[0]);
    if (need <= budget)
        return 0;
    return cli_fail(err, err_len,
                    "%zu tokens need %.1f MiB of working memory, more than the memory budget "
                    "(%.1f MiB; --max-memory)", tokens, (double)need / (1 << 20),
                    (double)budget / (1 << 20));
}

int cli_model_require_decoder(cli_model *cm, const char *cmd)
{
    if (cm->cfg->n_decoder_layers > 0)
        return 0;
    int rc = cli_error("%s: %s is an encoder alone (n_decoder_layers 0): only 'tessera encode' "
                       "runs it", cmd, cm->dir);
    cli_model_close(cm);
    return rc;
}

void cli_usage_model(FILE *f, const char *flag, const char *what)
{
    fprintf(f,
            "  %-22s  %s\n"
            "                          a model directory (config.json, model.safetensors),\n"
            "                          a CTranslate2 model directory (model.bin), an Argos\n"
            "                          Translate package (FILE.argosmodel or its folder;\n"
            "                          one line in, one line out: the package's sentence\n"
            "                          splitter is not run),\n"
            "                          or the NAME of an installed model: the first\n"
            "                          directory NAME in the directories of\n"
            "                          TESSERA_MODELS_PATH (colon-separated), then in\n"
            "                          %s\n",
            flag, what, cli_models_dir());
}

void cli_model_close(cli_model *cm)
{
    for (int i = 0; i < cm->n_runtimes; i++)
        tessera_runtime_free(cm->runtimes[i]);
    free(cm->runtimes);
    tessera_model_free(cm->model);
    tessera_vocabulary_free(cm->owned_vocab[0]);
    tessera_vocabulary_free(cm->owned_vocab[1]);
    tessera_shortlist_free(cm->shortlist);
    memset(cm, 0, sizeof *cm);
}

/* Flags of translate and score: which ones a command accepts is `allowed`. */
enum {
    OPT_MODEL = 'm',
    OPT_HELP = 'h',
    OPT_BEAM = 256,
    OPT_MAX_LEN,
    OPT_THREADS,
    OPT_BATCH,
    OPT_TOKENS,
    OPT_IDS,
    OPT_PIECES,
    OPT_TEXT,
    OPT_LENGTH_PENALTY,
    OPT_N_BEST,
    OPT_NUMA,
    OPT_SMT,
    OPT_COMPUTE_TYPE,
    OPT_WORKERS,
    OPT_POOL,
    OPT_FORMAT,
    OPT_SAMPLING_TOPK,
    OPT_SAMPLING_TOPP,
    OPT_SAMPLING_TEMPERATURE,
    OPT_SEED,
    OPT_PREFIX,
    OPT_MIN_LEN,
    OPT_NO_REPEAT_NGRAM,
    OPT_REPETITION_PENALTY,
    OPT_DISABLE_UNK,
    OPT_END_TOKEN,
    OPT_ALIGNMENTS,
    OPT_STREAM,
    OPT_BATCH_TOKENS,
    OPT_MAX_MEMORY,
    OPT_SOURCE_LANG,
    OPT_TARGET_LANG,
    OPT_VMAP = CLI_OPT_VMAP,
    OPT_USE_VMAP,
    OPT_SHORTLIST,
    OPT_SHORTLIST_FIRST,
    OPT_SHORTLIST_BEST,
    OPT_SHORTLIST_THRESHOLD,
};

static const struct option all_options[] = {
    {"model", required_argument, NULL, OPT_MODEL},
    {"help", no_argument, NULL, OPT_HELP},
    {"beam", required_argument, NULL, OPT_BEAM},
    {"max-len", required_argument, NULL, OPT_MAX_LEN},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"tokens", no_argument, NULL, OPT_TOKENS},
    {"ids", no_argument, NULL, OPT_IDS},
    {"pieces", no_argument, NULL, OPT_PIECES},
    {"text", no_argument, NULL, OPT_TEXT},
    {"length-penalty", required_argument, NULL, OPT_LENGTH_PENALTY},
    {"n-best", required_argument, NULL, OPT_N_BEST},
    {"numa", required_argument, NULL, OPT_NUMA},
    {"smt", no_argument, NULL, OPT_SMT},
    {"compute-type", required_argument, NULL, OPT_COMPUTE_TYPE},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"pool", required_argument, NULL, OPT_POOL},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"sampling-topk", required_argument, NULL, OPT_SAMPLING_TOPK},
    {"sampling-topp", required_argument, NULL, OPT_SAMPLING_TOPP},
    {"sampling-temperature", required_argument, NULL, OPT_SAMPLING_TEMPERATURE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"prefix", no_argument, NULL, OPT_PREFIX},
    {"min-len", required_argument, NULL, OPT_MIN_LEN},
    {"no-repeat-ngram", required_argument, NULL, OPT_NO_REPEAT_NGRAM},
    {"repetition-penalty", required_argument, NULL, OPT_REPETITION_PENALTY},
    {"disable-unk", no_argument, NULL, OPT_DISABLE_UNK},
    {"end-token", required_argument, NULL, OPT_END_TOKEN},
    {"alignments", no_argument, NULL, OPT_ALIGNMENTS},
    {"stream", no_argument, NULL, OPT_STREAM},
    {"batch-tokens", required_argument, NULL, OPT_BATCH_TOKENS},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"source-lang", required_argument, NULL, OPT_SOURCE_LANG},
    {"target-lang", required_argument, NULL, OPT_TARGET_LANG},
    CLI_SHORTLIST_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* The shortlist flags (cli/shortlist.c loads what they name). */
int cli_apply_shortlist_option(int opt, const char *arg, cli_options *o)
{
    int n;
    switch (opt - CLI_OPT_VMAP) {
    case 0: o->vmap = arg; return 0;
    case 1: o->use_vmap = 1; return 0;
    case 2: o->shortlist = arg; return 0;
    case 3:
    case 4:
        if (cli_parse_int(opt == CLI_OPT_VMAP + 3 ? "--shortlist-first" : "--shortlist-best", arg,
                          0, INT_MAX, &n) != 0)
            return 1;
        *(opt == CLI_OPT_VMAP + 3 ? &o->shortlist_first : &o->shortlist_best) = (size_t)n;
        return 0;
    case 5:
        o->shortlist_threshold_given = 1;
        return cli_parse_float("--shortlist-threshold", arg, 0.0, 1.0, &o->shortlist_threshold);
    default: return 1;
    }
}

static int apply_option(int opt, const char *arg, cli_options *o)
{
    tessera_translate_options *t = &o->translate;
    switch (opt) {
    case OPT_MODEL: o->model_dir = arg; return 0;
    case OPT_BEAM: return cli_parse_int("--beam", arg, INT_MIN, INT_MAX, &t->beam);
    case OPT_MAX_LEN: return cli_parse_int("--max-len", arg, INT_MIN, INT_MAX, &t->max_len);
    case OPT_THREADS: return cli_parse_int("--threads", arg, 1, 4096, &o->threads);
    case OPT_WORKERS:
        o->workers_given = 1;
        return cli_parse_int("--workers", arg, 1, 256, &o->workers);
    case OPT_BATCH:
        o->batch_given = 1;
        return cli_parse_int("--batch", arg, 1, CLI_BATCH_MAX, &o->batch);
    case OPT_BATCH_TOKENS:
        return cli_parse_int("--batch-tokens", arg, 1, CLI_BATCH_TOKENS_MAX, &o->batch_tokens);
    case OPT_MAX_MEMORY:
        return cli_parse_size("--max-memory", arg, (size_t)1 << 20, (size_t)1 << 40,
                              &o->max_memory);
    case OPT_TOKENS:
    case OPT_IDS:
    case OPT_PIECES:
    case OPT_TEXT: {
        int form = opt == OPT_IDS ? CLI_IDS : opt == OPT_TEXT ? CLI_TEXT : CLI_PIECES;
        if (o->form && o->form != form)
            return cli_error("--ids, --pieces (--tokens) and --text: give one of them");
        o->form = form;
        return 0;
    }
    case OPT_LENGTH_PENALTY:
        return cli_parse_float("--length-penalty", arg, -HUGE_VAL, HUGE_VAL, &t->length_penalty);
    case OPT_N_BEST:
        o->n_best_given = 1;
        return cli_parse_int("--n-best", arg, INT_MIN, INT_MAX, &t->n_best);
    case OPT_NUMA: o->numa = arg; return 0;
    case OPT_SMT: o->smt = 1; return 0;
    case OPT_COMPUTE_TYPE: return cli_parse_compute_type(arg, &o->compute_type);
    case OPT_POOL:
        if (strcmp(arg, "none") && strcmp(arg, "mean") && strcmp(arg, "first"))
            return cli_error("--pool: unknown pooling '%s' (none, mean, first)", arg);
        o->pool = arg;
        return 0;
    case OPT_FORMAT:
        if (strcmp(arg, "text") && strcmp(arg, "binary"))
            return cli_error("--format: unknown format '%s' (text, binary)", arg);
        o->format = arg;
        return 0;
    case OPT_SAMPLING_TOPK:
        return cli_parse_int("--sampling-topk", arg, INT_MIN, INT_MAX, &t->sampling_topk);
    case OPT_SAMPLING_TOPP:
        return cli_parse_float("--sampling-topp", arg, -HUGE_VAL, HUGE_VAL, &t->sampling_topp);
    case OPT_SAMPLING_TEMPERATURE:
        return cli_parse_float("--sampling-temperature", arg, -HUGE_VAL, HUGE_VAL,
                               &t->sampling_temperature);
    case OPT_SEED: return parse_seed(arg, &t->seed);
    case OPT_PREFIX: o->prefix = 1; return 0;
    case OPT_MIN_LEN: return cli_parse_int("--min-len", arg, INT_MIN, INT_MAX, &t->min_len);
    case OPT_NO_REPEAT_NGRAM:
        return cli_parse_int("--no-repeat-ngram", arg, INT_MIN, INT_MAX, &t->no_repeat_ngram);
    case OPT_REPETITION_PENALTY:
        return cli_parse_float("--repetition-penalty", arg, -HUGE_VAL, HUGE_VAL,
                               &t->repetition_penalty);
    case OPT_DISABLE_UNK: t->disable_unk = 1; return 0;
    case OPT_END_TOKEN: return cli_parse_int("--end-token", arg, INT_MIN, INT_MAX, &t->end_token);
    case OPT_ALIGNMENTS: t->return_alignments = 1; return 0;
    case OPT_STREAM: o->stream = 1; return 0;
    case OPT_SOURCE_LANG: t->source_lang = arg; return 0;
    case OPT_TARGET_LANG: t->target_lang = arg; return 0;
    default: return cli_apply_shortlist_option(opt, arg, o);
    }
}

/* Whether the space-separated words of `allowed` include `name`. */
static int allows(const char *allowed, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = allowed; (p = strstr(p, name)) != NULL; p += len)
        if ((p == allowed || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0'))
            return 1;
    return 0;
}

int cli_parse_options(int argc, char **argv, const char *cmd, const char *allowed, cli_options *o,
                      void (*usage)(FILE *))
{
    memset(o, 0, sizeof *o);
    tessera_translate_options_init(&o->translate);
    o->batch = 1;
    o->workers = 1;
    o->compute_type = TESSERA_COMPUTE_DEFAULT;
    o->pool = "none";
    o->format = "text";
    o->shortlist_first = o->shortlist_best = TESSERA_SHORTLIST_DEFAULT_COUNT;
    opterr = 0;
    optind = 1;
    int opt, index;
    while ((opt = getopt_long(argc, argv, ":m:h", all_options, &index)) != -1) {
        const char *given = argv[optind - 1];
        if (opt == '?')
            return cli_error("%s: unknown option '%s' (try 'tessera %s --help')", cmd, given, cmd);
        if (opt == ':')
            return cli_error("%s: option '%s' needs a value", cmd, given);
        if (opt == OPT_HELP) {
            usage(stdout);
            return -1;
        }
        const char *name = NULL;
        for (const struct option *p = all_options; p->name; p++)
            if (p->val == opt)
                name = p->name;
        if (opt != OPT_MODEL && opt != OPT_THREADS && opt != OPT_WORKERS && opt != OPT_NUMA &&
            opt != OPT_SMT && opt != OPT_COMPUTE_TYPE &&
            !allows(allowed, opt == OPT_IDS || opt == OPT_PIECES || opt == OPT_TEXT ? "tokens"
                                                                                     : name))
            return cli_error("%s: option '--%s' does not apply to this command", cmd, name);
        if (apply_option(opt, optarg, o) != 0)
            return 1;
    }
    if (optind < argc)
        return cli_error("%s: unexpected argument '%s'", cmd, argv[optind]);
    if (o->batch_tokens && !o->batch_given)
        o->batch = CLI_BATCH_MAX;
    if (!o->model_dir)
        return cli_error("%s: -m DIR|NAME is required (try 'tessera %s --help')", cmd, cmd);
    return cli_check_decoding(cmd, NULL, &o->translate);
}

/* The decoding options as tessera_translate_options_check names them, each
 * the flag of the same name with dashes (tessera.h: they are whole words,
 * and no other word of its messages is one). */
static const char *const decoding_options[] = {
    "beam", "max_len", "n_best", "batch", "batch_tokens", "length_penalty", "sampling_topk",
    "sampling_topp", "sampling_temperature", "min_len", "no_repeat_ngram", "repetition_penalty",
    "end_token", "source_lang", "target_lang", NULL,
};

static int is_decoding_option(const char *word, size_t len)
{
    for (size_t i = 0; decoding_options[i]; i++)
        if (strlen(decoding_options[i]) == len && strncmp(decoding_options[i], word, len) == 0)
            return 1;
    return 0;
}

void cli_flag_names(const char *msg, char *out, size_t size)
{
    size_t at = 0;
    for (const char *p = msg; *p && at + 3 < size;) {
        /* p starts a run of [a-z_] (the one before it was taken whole) or
         * another character. */
        size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
        int word = len > 0 && (p == msg || !isalnum((unsigned char)p[-1])) &&
                   !isalnum((unsigned char)p[len]);
        if (word && is_decoding_option(p, len)) {
            out[at++] = '-';
            out[at++] = '-';
            for (size_t i = 0; i < len && at + 1 < size; i++)
                out[at++] = p[i] == '_' ? '-' : p[i];
        } else {
            for (size_t i = 0; i < (len ? len : 1) && at + 1 < size; i++)
                out[at++] = p[i];
        }
        p += len ? len : 1;
    }
    out[at] = '\0';
}

int cli_check_languages(const char *cmd, const tessera_model *model, const char *source_lang,
                        const char *target_lang, int with_target)
{
    char err[512], named[1024];
    if (tessera_model_check_languages(model, source_lang, target_lang, with_target, err,
                                      sizeof err) == 0)
        return 0;
    cli_flag_names(err, named, sizeof named);
    return cli_error("%s: %s", cmd, named);
}

void cli_usage_languages(FILE *f, int with_target)
{
    fprintf(f,
            "  --source-lang NAME      the source's language, for a multilingual model (NLLB,\n"
            "                          M2M100, mBART), as its tokenizer spells it: eng_Latn,\n"
            "                          en, en_XX ('tessera info -m MODEL' lists them)\n");
    if (with_target)
        fprintf(f,
                "  --target-lang NAME      the language to produce, likewise: its token is\n"
                "                          forced first and not printed\n");
}

int cli_check_decoding(const char *cmd, const tessera_config *cfg,
                       const tessera_translate_options *t)
{
    char err[512], named[1024];
    if (tessera_translate_options_check(cfg, t, err, sizeof err) == 0)
        return 0;
    cli_flag_names(err, named, sizeof named);
    return cli_error("%s: %s", cmd, named);
}
