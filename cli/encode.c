/* tessera encode: the encoder's output vectors of source sentences, per token
 * or pooled per sentence, as text or as little-endian float32 records. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/workers.h"

/* The binary stream starts with these 8 bytes, then d_model as a u32. */
static const char binary_magic[8] = {'T', 'S', 'R', 'E', 'N', 'C', '1', '\n'};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera encode -m DIR|NAME [OPTIONS] < sources > vectors\n"
            "\n"
            "Reads one source sentence per line (text when the model has tokenizers, else\n"
            "token ids separated by spaces) and writes,\n"
            "per input line, the encoder's output (after its final norm when the model has\n"
            "one): d_model floats per token, or one pooled vector.\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME", "the model (required):");
    fprintf(f,
            "  --pool none|mean|first  none (the default): every token's vector, token after\n"
            "                          token (len x d_model floats on the line); mean: their\n"
            "                          average; first: the first token's vector\n"
            "  --format text|binary    text (the default): one line per sentence, floats\n"
            "                          with %%.9g separated by spaces; binary: the 8 bytes\n"
            "                          'TSRENC1\\n', d_model as a little-endian u32, then per\n"
            "                          sentence the number of vectors (u32) and their floats\n"
            "                          (float32), all little-endian\n"
            "  --batch N               encode up to N sentences together, 1..65536 (default\n"
            "                          1; the output is identical whatever N)\n");
    cli_usage_batching(f, "sentences");
    cli_usage_languages(f, 0);
    cli_usage_forms(f);
    cli_usage_threads(f);
    cli_usage_compute_type(f);
    fprintf(f,
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are encoded and printed first.\n");
}

typedef enum pooling { POOL_NONE, POOL_MEAN, POOL_FIRST } pooling;

/* The command's state, shared by the workers (read-only) and the printer. */
typedef struct command {
    const cli_model *cm;
    int batch_tokens;
    pooling pool;
    int binary;
    cli_line line;
    float *pooled; /* d_model floats */
    const char *source_lang; /* --source-lang */
} command;

/* One batch of sentences and, once computed, their vectors. */
typedef struct slot {
    cli_sentences src;
    float **vectors;
    size_t n_vectors;
} slot;

static int slot_init(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    return cli_sentences_init(&s->src, cap);
}

static void slot_free(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    cli_sentences_free(&s->src, cap);
    tessera_encodings_free(s->vectors, s->n_vectors);
}

static int parse_source(void *ctx, void *state, const char *line, size_t len, size_t index,
                        size_t *tokens, char *err, size_t err_len)
{
    const command *c = ctx;
    slot *s = state;
    if (cli_parse_source(c->cm, line, len, 0, &s->src.ids[index], &s->src.seqs[index], err,
                         err_len) != 0)
        return -1;
    *tokens = s->src.seqs[index].len;
    size_t need = tessera_encode_memory(c->cm->runtimes[0], c->cm->model, 1, *tokens);
    return cli_check_budget(c->cm, need, *tokens, err, err_len);
}

static int encode_slot(void *ctx, void *state, size_t n, size_t first_line, tessera_runtime *rt,
                       char *err, size_t err_len)
{
    (void)first_line;
    const command *c = ctx;
    slot *s = state;
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    eo.batch = (int)n;
    eo.batch_tokens = c->batch_tokens;
    eo.source_lang = c->source_lang;
    if (tessera_encode_with(rt, c->cm->model, s->src.seqs, n, &eo, &s->vectors, err, err_len) != 0)
        return -1;
    s->n_vectors = n;
    return 0;
}

/* Appends v as 4 little-endian bytes, whatever the host's byte order. */
static int append_u32(cli_line *l, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return cli_line_bytes(l, b, 4);
}

static int append_vectors(command *c, const float *v, size_t count, size_t d)
{
    for (size_t i = 0; i < count * d; i++) {
        int rc;
        if (c->binary) {
            uint32_t bits;
            memcpy(&bits, &v[i], 4);
            rc = append_u32(&c->line, bits);
        } else {
            rc = cli_line_printf(&c->line, i ? " %.9g" : "%.9g", (double)v[i]);
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

/* The rows of sentence `len` tokens long as pooling asks: all of them, or
 * one vector (the mean is summed in double, in token order). */
static const float *pooled(command *c, const float *rows, size_t len, size_t d, size_t *count)
{
    if (c->pool == POOL_NONE) {
        *count = len;
        return rows;
    }
    *count = 1;
    if (c->pool == POOL_FIRST)
        return rows;
    for (size_t j = 0; j < d; j++) {
        double sum = 0;
        for (size_t t = 0; t < len; t++)
            sum += rows[t * d + j];
        c->pooled[j] = (float)(sum / (double)len);
    }
    return c->pooled;
}

static int print_slot(void *ctx, void *state, size_t n)
{
    command *c = ctx;
    slot *s = state;
    size_t d = (size_t)c->cm->cfg->d_model;
    int status = 0;
    cli_line_reset(&c->line);
    for (size_t i = 0; status == 0 && i < n; i++) {
        size_t count;
        /* The encoder's output covers the ids the model appends too. */
        size_t len = s->src.seqs[i].len + (size_t)c->cm->cfg->n_source_suffix +
                     (c->cm->cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE);
        const float *v = pooled(c, s->vectors[i], len, d, &count);
        if (!c->binary)
            cli_line_reset(&c->line);
        if ((c->binary && append_u32(&c->line, (uint32_t)count) != 0) ||
            append_vectors(c, v, count, d) != 0) {
            status = cli_error("out of memory writing output");
            break;
        }
        if (!c->binary && cli_line_emit(&c->line) != 0)
            status = 1;
    }
    /* Binary: the whole batch's records at once, or nothing of it. */
    if (status == 0 && c->binary && cli_line_write(&c->line) != 0)
        status = 1;
    tessera_encodings_free(s->vectors, s->n_vectors);
    s->vectors = NULL;
    s->n_vectors = 0;
    if (status == 0 && fflush(stdout) != 0)
        status = cli_error("error writing standard output");
    return status;
}

static const cli_work encode_work = {sizeof(slot), slot_init, slot_free, parse_source,
                                     encode_slot, print_slot};

int cli_encode(int argc, char **argv)
{
    cli_options o;
    cli_model cm;
    int rc = cli_parse_options(argc, argv, "encode",
                               "batch batch-tokens max-memory tokens pool format source-lang", &o,
                               usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (cli_model_open(&o, &cm) != 0)
        return 1;
    if (cli_check_languages("encode", cm.model, o.translate.source_lang, NULL, 0) != 0) {
        cli_model_close(&cm);
        return 1;
    }
    command c = {.cm = &cm,
                 .batch_tokens = o.batch_tokens,
                 .pool = strcmp(o.pool, "mean") == 0    ? POOL_MEAN
                         : strcmp(o.pool, "first") == 0 ? POOL_FIRST
                                                        : POOL_NONE,
                 .binary = strcmp(o.format, "binary") == 0,
                 .source_lang = o.translate.source_lang};
    c.pooled = malloc((size_t)cm.cfg->d_model * sizeof(float));
    if (!c.pooled) {
        cli_model_close(&cm);
        return cli_error("out of memory");
    }
    if (c.binary) {
        /* The header first, so that even no input gives a valid stream. */
        cli_line_reset(&c.line);
        if (cli_line_bytes(&c.line, binary_magic, sizeof binary_magic) != 0 ||
            append_u32(&c.line, (uint32_t)cm.cfg->d_model) != 0)
            rc = cli_error("out of memory writing output");
        else if (cli_line_write(&c.line) != 0)
            rc = 1;
    }
    if (rc == 0)
        rc = cli_run_workers(&encode_work, &c, (size_t)o.batch, (size_t)o.batch_tokens,
                             cm.runtimes, o.workers);
    free(c.pooled);
    cli_line_free(&c.line);
    cli_model_close(&cm);
    return rc;
}
