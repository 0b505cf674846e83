/* tessera translate: one output line of target ids (or tokens) per source line. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/workers.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera translate -m DIR|NAME [OPTIONS] < sources > translations\n"
            "\n"
            "Reads one source sentence per line (token ids separated by spaces) and writes\n"
            "one line per input line: the target ids, without BOS and EOS.\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME", "the model (required):");
    fprintf(f,
            "  --beam N                beam size; 1 (the default) is greedy decoding\n"
            "  --max-len N             at most N target tokens (default 256; also capped so\n"
            "                          that BOS + output fits the model's max_positions)\n"
            "  --length-penalty A      beam: rank hypotheses by log-prob / length^A (default 0)\n"
            "  --n-best K              beam: write the K best hypotheses, each as\n"
            "                          'IDS<TAB>SCORE', tab separated, best first\n"
            "  --batch N               decode up to N sentences together (default 1; the\n"
            "                          output is identical whatever N)\n");
    cli_usage_threads(f);
    cli_usage_compute_type(f);
    fprintf(f,
            "  --tokens                input and output are tokens, mapped through the model's\n"
            "                          vocab.src.txt / vocab.tgt.txt (unknown tokens -> unk_id)\n"
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are translated and printed first.\n");
}

/* The command's state, shared by the workers (read-only) and the printer. */
typedef struct command {
    const cli_options *o;
    const cli_model *cm;
    cli_line line;
} command;

/* One batch of lines and, once computed, its hypotheses. */
typedef struct slot {
    cli_ids *ids;
    tessera_tokens *src;
    tessera_hypothesis *h;
    size_t n_h;
} slot;

static int slot_init(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    s->ids = calloc(cap, sizeof *s->ids);
    s->src = calloc(cap, sizeof *s->src);
    return s->ids && s->src ? 0 : -1;
}

static void slot_free(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    for (size_t i = 0; s->ids && i < cap; i++)
        free(s->ids[i].ids);
    free(s->ids);
    free(s->src);
    tessera_hypotheses_free(s->h, s->n_h);
}

static int parse_source(void *ctx, void *state, const char *line, size_t len, size_t index,
                        char *err, size_t err_len)
{
    const command *c = ctx;
    slot *s = state;
    return cli_parse_source(c->cm, line, len, &s->ids[index], &s->src[index], err, err_len);
}

static int translate_slot(void *ctx, void *state, size_t n, tessera_runtime *rt, char *err,
                          size_t err_len)
{
    const command *c = ctx;
    slot *s = state;
    tessera_translate_options opts = c->o->translate;
    opts.batch = (int)n;
    if (tessera_translate_with(rt, c->cm->model, s->src, n, &opts, &s->h, err, err_len) != 0)
        return -1;
    s->n_h = n * (size_t)opts.n_best;
    return 0;
}

static int print_slot(void *ctx, void *state, size_t n)
{
    command *c = ctx;
    slot *s = state;
    size_t K = (size_t)c->o->translate.n_best;
    int status = 0;
    for (size_t i = 0; status == 0 && i < n; i++) {
        cli_line_reset(&c->line);
        for (size_t k = 0; status == 0 && k < K; k++) {
            const tessera_hypothesis *hy = &s->h[i * K + k];
            if ((k && cli_line_printf(&c->line, "\t") != 0) ||
                cli_line_ids(&c->line, hy->ids, hy->len, c->cm->tgt_vocab) != 0 ||
                (c->o->n_best_given && cli_line_printf(&c->line, "\t%.9g", hy->score) != 0))
                status = cli_error("out of memory writing output");
        }
        if (status == 0 && cli_line_emit(&c->line) != 0)
            status = 1;
    }
    tessera_hypotheses_free(s->h, s->n_h);
    s->h = NULL;
    s->n_h = 0;
    if (status == 0 && fflush(stdout) != 0)
        status = cli_error("error writing standard output");
    return status;
}

static const cli_work translate_work = {sizeof(slot), slot_init, slot_free, parse_source,
                                        translate_slot, print_slot};

int cli_translate(int argc, char **argv)
{
    cli_options o;
    cli_model cm;
    int rc = cli_parse_options(argc, argv, "translate",
                               "beam max-len batch tokens length-penalty n-best", &o, usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (cli_model_open(&o, &cm) != 0 || cli_model_require_decoder(&cm, "translate") != 0)
        return 1;
    command c = {&o, &cm, {0}};
    rc = cli_run_workers(&translate_work, &c, (size_t)o.batch, cm.runtimes, o.workers);
    cli_line_free(&c.line);
    cli_model_close(&cm);
    return rc;
}
