/* tessera score: teacher-forced log-probabilities of target sentences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera score -m DIR|NAME [OPTIONS] < pairs > logprobs\n"
            "\n"
            "Reads one 'SOURCE<TAB>TARGET' pair per line (token ids separated by spaces;\n"
            "TARGET may be empty) and writes one line per input line: the natural-log\n"
            "probability of each target token and then of EOS, space separated, with the\n"
            "decoder fed BOS + TARGET (teacher forcing).\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME", "the model (required):");
    fprintf(f,
            "  --batch N               score up to N pairs together (default 1; the output\n"
            "                          is identical whatever N)\n"
            "  --threads N             threads (default: TESSERA_NUM_THREADS, OMP_NUM_THREADS,\n"
            "                          or one per core this process may use)\n"
            "  --numa POLICY           weights on NUMA nodes: replicate (a copy per node),\n"
            "                          interleave, local, off, or auto (the default, or\n"
            "                          TESSERA_NUMA): chosen from the topology and model size\n"
            "  --smt                   with the default thread count, use SMT siblings too\n");
    cli_usage_compute_type(f);
    fprintf(f,
            "  --tokens                sentences are tokens, mapped through vocab.src.txt /\n"
            "                          vocab.tgt.txt (unknown tokens -> unk_id)\n"
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are scored and printed first.\n");
}

typedef struct batch {
    const cli_model *cm;
    cli_ids *src_ids, *tgt_ids;
    tessera_tokens *src, *tgt;
    cli_line line;
} batch;

static int parse_pair(void *ctx, const char *line, size_t len, size_t index, char *err,
                      size_t err_len)
{
    batch *b = ctx;
    const tessera_config *c = b->cm->cfg;
    const char *tab = memchr(line, '\t', len);
    if (!tab) {
        snprintf(err, err_len, "expected SOURCE<TAB>TARGET, found no tab");
        return -1;
    }
    size_t src_len = (size_t)(tab - line), tgt_len = len - src_len - 1;
    if (memchr(tab + 1, '\t', tgt_len)) {
        snprintf(err, err_len, "expected SOURCE<TAB>TARGET, found more than one tab");
        return -1;
    }
    cli_ids *s = &b->src_ids[index], *t = &b->tgt_ids[index];
    if (cli_parse_sentence(line, src_len, b->cm->src_vocab, c->src_vocab_size, c->unk_id,
                           "source", s, err, err_len) != 0 ||
        cli_parse_sentence(tab + 1, tgt_len, b->cm->tgt_vocab, c->tgt_vocab_size, c->unk_id,
                           "target", t, err, err_len) != 0)
        return -1;
    if (s->len == 0) {
        snprintf(err, err_len, "empty source sentence");
        return -1;
    }
    if (s->len > (size_t)c->max_positions) {
        snprintf(err, err_len, "%zu source tokens, more than max_positions (%d)", s->len,
                 c->max_positions);
        return -1;
    }
    if (t->len + 1 > (size_t)c->max_positions) {
        snprintf(err, err_len, "%zu target tokens: BOS + target is longer than max_positions (%d)",
                 t->len, c->max_positions);
        return -1;
    }
    b->src[index] = (tessera_tokens){s->ids, s->len};
    b->tgt[index] = (tessera_tokens){t->ids, t->len};
    return 0;
}

static int print_scores(float **scores, const tessera_tokens *tgt, size_t n, cli_line *line)
{
    for (size_t i = 0; i < n; i++) {
        cli_line_reset(line);
        for (size_t t = 0; t <= tgt[i].len; t++)
            if (cli_line_printf(line, t ? " %.9g" : "%.9g", (double)scores[i][t]) != 0)
                return cli_error("out of memory writing output");
        if (cli_line_emit(line) != 0)
            return 1;
    }
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}

static int score_batch(void *ctx, size_t n)
{
    batch *b = ctx;
    float **scores;
    char err[1024];
    if (tessera_score(b->cm->model, b->src, b->tgt, n, (int)n, &scores, err, sizeof err) != 0)
        return cli_error("%s", err);
    int status = print_scores(scores, b->tgt, n, &b->line);
    tessera_scores_free(scores, n);
    return status;
}

static int run(const cli_options *o, cli_model *cm)
{
    size_t cap = (size_t)o->batch;
    batch b = {cm, calloc(cap, sizeof(cli_ids)), calloc(cap, sizeof(cli_ids)),
               calloc(cap, sizeof(tessera_tokens)), calloc(cap, sizeof(tessera_tokens)), {0}};
    int status = b.src_ids && b.tgt_ids && b.src && b.tgt
                     ? cli_run_batches(cap, parse_pair, score_batch, &b)
                     : cli_error("out of memory");
    for (size_t i = 0; i < cap; i++) {
        if (b.src_ids)
            free(b.src_ids[i].ids);
        if (b.tgt_ids)
            free(b.tgt_ids[i].ids);
    }
    free(b.src_ids);
    free(b.tgt_ids);
    free(b.src);
    free(b.tgt);
    cli_line_free(&b.line);
    return status;
}

int cli_score(int argc, char **argv)
{
    cli_options o;
    cli_model cm;
    int rc = cli_parse_options(argc, argv, "score", "batch tokens", &o, usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (cli_model_open(&o, &cm) != 0)
        return 1;
    rc = run(&o, &cm);
    cli_model_close(&cm);
    return rc;
}
