/* tessera score: teacher-forced log-probabilities of target sentences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/workers.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera score -m DIR|NAME [OPTIONS] < pairs > logprobs\n"
            "\n"
            "Reads one 'SOURCE<TAB>TARGET' pair per line (text when the model has\n"
            "tokenizers, else token ids separated by spaces; TARGET may be empty) and writes\n"
            "one line per input line: the natural-log probability of each target token and\n"
            "then of EOS, space separated, with the decoder fed BOS + TARGET (teacher\n"
            "forcing; BOS, the target language + TARGET for a multilingual model, whose\n"
            "language token is not scored).\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME", "the model (required):");
    fprintf(f,
            "  --batch N               score up to N pairs together, 1..65536 (default 1;\n"
            "                          the output is identical whatever N)\n");
    cli_usage_batching(f, "pairs");
    cli_usage_languages(f, 1);
    cli_usage_forms(f);
    cli_usage_threads(f);
    cli_usage_compute_type(f);
    fprintf(f,
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are scored and printed first.\n");
}

/* The command's state, shared by the workers (read-only) and the printer. */
typedef struct command {
    const cli_model *cm;
    int batch_tokens;
    cli_line line;
    const char *source_lang, *target_lang; /* --source-lang, --target-lang */
} command;

/* One batch of pairs and, once computed, their scores. */
typedef struct slot {
    cli_sentences src, tgt;
    float **scores;
    size_t n_scores;
} slot;

static int slot_init(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    return cli_sentences_init(&s->src, cap) | cli_sentences_init(&s->tgt, cap);
}

static void slot_free(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    cli_sentences_free(&s->src, cap);
    cli_sentences_free(&s->tgt, cap);
    tessera_scores_free(s->scores, s->n_scores);
}

static int parse_pair(void *ctx, void *state, const char *line, size_t len, size_t index,
                      size_t *tokens, char *err, size_t err_len)
{
    const command *c = ctx;
    slot *b = state;
    const tessera_config *cfg = c->cm->cfg;
    const char *tgt_text;
    size_t src_len, tgt_len;
    if (cli_split_at_tab(line, len, "SOURCE<TAB>TARGET", &src_len, &tgt_text, &tgt_len, err,
                         err_len) != 0)
        return -1;
    cli_ids *t = &b->tgt.ids[index];
    if (cli_parse_source(c->cm, line, src_len, 0, &b->src.ids[index], &b->src.seqs[index], err,
                         err_len) != 0)
        return -1;
    if (cli_parse_side(c->cm, TESSERA_TARGET, tgt_text, tgt_len, t, err, err_len) != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        return cli_fail(err, err_len, "target: %s", why);
    }
    if (t->len + 1 > (size_t)cfg->max_positions)
        return cli_fail(err, err_len,
                        "%zu target tokens: BOS + target is longer than max_positions (%d)",
                        t->len, cfg->max_positions);
    b->tgt.seqs[index] = (tessera_tokens){t->ids, t->len};
    *tokens = b->src.seqs[index].len;
    size_t need = tessera_score_memory(c->cm->runtimes[0], c->cm->model, 1, *tokens, t->len);
    return cli_check_budget(c->cm, need, *tokens, err, err_len);
}

static int score_slot(void *ctx, void *state, size_t n, size_t first_line, tessera_runtime *rt,
                      char *err, size_t err_len)
{
    (void)first_line;
    const command *c = ctx;
    slot *s = state;
    tessera_score_options so;
    tessera_score_options_init(&so);
    so.batch = (int)n;
    so.batch_tokens = c->batch_tokens;
    so.source_lang = c->source_lang;
    so.target_lang = c->target_lang;
    if (tessera_score_with(rt, c->cm->model, s->src.seqs, s->tgt.seqs, n, &so, &s->scores, err, err_len) !=
        0)
        return -1;
    s->n_scores = n;
    return 0;
}

static int print_slot(void *ctx, void *state, size_t n)
{
    command *c = ctx;
    slot *s = state;
    int status = 0;
    for (size_t i = 0; status == 0 && i < n; i++) {
        cli_line_reset(&c->line);
        for (size_t t = 0; status == 0 && t <= s->tgt.seqs[i].len; t++)
            if (cli_line_printf(&c->line, t ? " %.9g" : "%.9g", (double)s->scores[i][t]) != 0)
                status = cli_error("out of memory writing output");
        if (status == 0 && cli_line_emit(&c->line) != 0)
            status = 1;
    }
    tessera_scores_free(s->scores, s->n_scores);
    s->scores = NULL;
    s->n_scores = 0;
    if (status == 0 && fflush(stdout) != 0)
        status = cli_error("error writing standard output");
    return status;
}

static const cli_work score_work = {sizeof(slot), slot_init, slot_free, parse_pair,
                                    score_slot, print_slot};

int cli_score(int argc, char **argv)
{
    cli_options o;
    cli_model cm;
    int rc = cli_parse_options(argc, argv, "score",
                               "batch batch-tokens max-memory tokens source-lang target-lang", &o,
                               usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (cli_model_open(&o, &cm) != 0 || cli_model_require_decoder(&cm, "score") != 0)
        return 1;
    if (cli_check_languages("score", cm.model, o.translate.source_lang, o.translate.target_lang,
                            1) != 0) {
        cli_model_close(&cm);
        return 1;
    }
    command c = {&cm, o.batch_tokens, {0}, o.translate.source_lang, o.translate.target_lang};
    rc = cli_run_workers(&score_work, &c, (size_t)o.batch, (size_t)o.batch_tokens, cm.runtimes,
                         o.workers);
    cli_line_free(&c.line);
    cli_model_close(&cm);
    return rc;
}
