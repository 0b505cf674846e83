/* tessera translate: one output line of target ids (or tokens) per source line. */
#include <stdio.h>
#include <stdlib.h>

#include "core/cli.h"

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
            "                          output is identical whatever N)\n"
            "  --threads N             threads (default: TESSERA_NUM_THREADS, OMP_NUM_THREADS,\n"
            "                          or one per core this process may use)\n"
            "  --numa POLICY           weights on NUMA nodes: replicate (a copy per node),\n"
            "                          interleave, local, off, or auto (the default, or\n"
            "                          TESSERA_NUMA): chosen from the topology and model size\n"
            "  --smt                   with the default thread count, use SMT siblings too\n");
    cli_usage_compute_type(f);
    fprintf(f,
            "  --tokens                input and output are tokens, mapped through the model's\n"
            "                          vocab.src.txt / vocab.tgt.txt (unknown tokens -> unk_id)\n"
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are translated and printed first.\n");
}

typedef struct batch {
    const cli_options *o;
    const cli_model *cm;
    cli_ids *ids;
    tessera_tokens *src;
    cli_line line;
} batch;

static int parse_source(void *ctx, const char *line, size_t len, size_t index, char *err,
                        size_t err_len)
{
    batch *b = ctx;
    const tessera_config *c = b->cm->cfg;
    cli_ids *ids = &b->ids[index];
    if (cli_parse_sentence(line, len, b->cm->src_vocab, c->src_vocab_size, c->unk_id, "source",
                           ids, err, err_len) != 0)
        return -1;
    if (ids->len == 0) {
        snprintf(err, err_len, "empty source sentence");
        return -1;
    }
    if (ids->len > (size_t)c->max_positions) {
        snprintf(err, err_len, "%zu source tokens, more than max_positions (%d)", ids->len,
                 c->max_positions);
        return -1;
    }
    b->src[index] = (tessera_tokens){ids->ids, ids->len};
    return 0;
}

static int print_results(const cli_options *o, const cli_model *cm, const tessera_hypothesis *h,
                         size_t n, cli_line *line)
{
    size_t K = (size_t)o->translate.n_best;
    for (size_t i = 0; i < n; i++) {
        cli_line_reset(line);
        for (size_t k = 0; k < K; k++) {
            const tessera_hypothesis *hy = &h[i * K + k];
            if ((k && cli_line_printf(line, "\t") != 0) ||
                cli_line_ids(line, hy->ids, hy->len, cm->tgt_vocab) != 0 ||
                (o->n_best_given && cli_line_printf(line, "\t%.9g", hy->score) != 0))
                return cli_error("out of memory writing output");
        }
        if (cli_line_emit(line) != 0)
            return 1;
    }
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}

static int translate_batch(void *ctx, size_t n)
{
    batch *b = ctx;
    tessera_translate_options opts = b->o->translate;
    tessera_hypothesis *h;
    char err[1024];
    opts.batch = (int)n;
    if (tessera_translate(b->cm->model, b->src, n, &opts, &h, err, sizeof err) != 0)
        return cli_error("%s", err);
    int status = print_results(b->o, b->cm, h, n, &b->line);
    tessera_hypotheses_free(h, n * (size_t)opts.n_best);
    return status;
}

static int run(const cli_options *o, cli_model *cm)
{
    size_t cap = (size_t)o->batch;
    batch b = {o, cm, calloc(cap, sizeof(cli_ids)), calloc(cap, sizeof(tessera_tokens)), {0}};
    int status = b.ids && b.src ? cli_run_batches(cap, parse_source, translate_batch, &b)
                                : cli_error("out of memory");
    for (size_t i = 0; b.ids && i < cap; i++)
        free(b.ids[i].ids);
    free(b.ids);
    free(b.src);
    cli_line_free(&b.line);
    return status;
}

int cli_translate(int argc, char **argv)
{
    cli_options o;
    cli_model cm;
    int rc = cli_parse_options(argc, argv, "translate",
                               "beam max-len batch tokens length-penalty n-best", &o, usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (cli_model_open(&o, &cm) != 0)
        return 1;
    rc = run(&o, &cm);
    cli_model_close(&cm);
    return rc;
}
