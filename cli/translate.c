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
            "Reads one source sentence per line and writes one line per input line: its\n"
            "translation, without BOS and EOS (with --n-best, each hypothesis followed by a\n"
            "TAB and its score; with --alignments, then by a TAB and its alignment). Text\n"
            "when the model has tokenizers (an empty line gives an empty line), else token\n"
            "ids separated by spaces: see --text, --ids, --pieces.\n"
            "\n"
            "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME", "the model (required):");
    fprintf(f,
            "  --beam N                beam size, 1..%d; 1 (the default) is greedy decoding\n"
            "  --max-len N             at most N target tokens, 0..%d (default 256; also\n"
            "                          capped so that BOS (and a target language) + output\n"
            "                          fits max_positions)\n"
            "  --length-penalty A      beam: rank hypotheses by log-prob / length^A, A in\n"
            "                          [0, %g] (default 0)\n"
            "  --n-best K              beam: write the K best hypotheses (1..--beam), each as\n"
            "                          'IDS<TAB>SCORE', tab separated, best first\n"
            "  --batch N               decode up to N sentences together, 1..65536 (default\n"
            "                          1; the output is identical whatever N)\n",
            TESSERA_BEAM_MAX, TESSERA_MAX_LEN_MAX, (double)TESSERA_LENGTH_PENALTY_MAX);
    cli_usage_batching(f, "sentences");
    cli_usage_languages(f, 1);
    fprintf(f,
            "\n"
            "Decoding options (README \"Decoding options\" has the exact rules):\n"
            "  --sampling-topk K       sample each token from the K most likely (0: from\n"
            "                          all; default 1: greedy, no sampling); needs --beam 1\n"
            "  --sampling-topp P       sample only from the most likely tokens whose\n"
            "                          probabilities sum to P, in (0, 1] (default 1)\n"
            "  --sampling-temperature T  divide the log-probabilities by T before sampling,\n"
            "                          in [%g, %g] (default 1)\n"
            "  --seed S                the random seed, 0..2^64-1 (default 0); line i draws\n"
            "                          from its own stream, so the output is the same for\n"
            "                          any --batch, --threads or --workers\n"
            "  --prefix                input lines are 'SOURCE<TAB>PREFIX': the PREFIX target\n"
            "                          ids (or tokens) are forced first and decoding goes on\n"
            "                          from there; the output and its score include them\n"
            "  --min-len N             no EOS (or --end-token) before N target tokens,\n"
            "                          0..max-len (default 0)\n"
            "  --no-repeat-ngram N     never produce an N-gram twice, 0..%d (0: off)\n"
            "  --repetition-penalty R  make every token already produced less likely (CTRL:\n"
            "                          logit/R if positive, logit*R if negative), [%g, %g]\n"
            "                          (default 1: off)\n"
            "  --disable-unk           never produce the model's unk_id\n"
            "  --end-token ID          target id that also ends a hypothesis, as EOS does\n"
            "                          (not printed; its log-prob is in the score)\n"
            "These shape the tokens chosen after the prefix; prefix tokens are forced and\n"
            "scored as the model gives them.\n"
            "  --alignments            after each hypothesis (and its score), a TAB and one\n"
            "                          'I-J' pair per target token J (from 0): I is the source\n"
            "                          position J attended to most in the last decoder layer's\n"
            "                          cross-attention, averaged over the heads (positions\n"
            "                          of tokens: pieces, for text)\n"
            "  --stream                write each translation's tokens as they are decoded,\n"
            "                          a line at a time (beam search: its best hypothesis\n"
            "                          once final; not with --n-best, --alignments, --batch\n"
            "                          or --workers); each line ends as it would without\n"
            "                          --stream\n",
            (double)TESSERA_SAMPLING_TEMPERATURE_MIN, (double)TESSERA_SAMPLING_TEMPERATURE_MAX,
            TESSERA_NO_REPEAT_NGRAM_MAX, (double)TESSERA_REPETITION_PENALTY_MIN,
            (double)TESSERA_REPETITION_PENALTY_MAX);
    cli_usage_shortlist(f);
    cli_usage_forms(f);
    cli_usage_threads(f);
    cli_usage_compute_type(f);
    fprintf(f,
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line, a bad model) print one line on stderr naming the culprit and\n"
            "exit with status 1; lines before a bad line are translated and printed first.\n");
}

/* --stream: the line being decoded, as far as it is written (on the one
 * worker's thread: a line at a time). */
typedef struct stream {
    const cli_model *cm;
    int32_t *ids;
    size_t len, cap;
    size_t written; /* bytes of the line's rendering written so far */
    cli_line text;  /* a rendering of the tokens so far */
} stream;

/* The command's state, shared by the workers (read-only) and the printer. */
typedef struct command {
    const cli_options *o;
    const cli_model *cm;
    cli_line line;
    stream *stream; /* --stream, else NULL */
} command;

/* One batch of lines and, once computed, its hypotheses. */
typedef struct slot {
    cli_sentences src, prefix;
    tessera_hypothesis *h;
    size_t n_h;
} slot;

static int slot_init(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    return cli_sentences_init(&s->src, cap) | cli_sentences_init(&s->prefix, cap);
}

static void slot_free(void *ctx, void *state, size_t cap)
{
    (void)ctx;
    slot *s = state;
    cli_sentences_free(&s->src, cap);
    cli_sentences_free(&s->prefix, cap);
    tessera_hypotheses_free(s->h, s->n_h);
}

/* A target prefix in the model's form, checked as the library will
 * (tessera_target_prefix_check) so that the error names its line. */
static int parse_prefix(const command *c, const char *text, size_t len, cli_ids *ids,
                        tessera_tokens *out, char *err, size_t err_len)
{
    char why[512], named[1024];
    *out = (tessera_tokens){NULL, 0};
    if (cli_parse_side(c->cm, TESSERA_TARGET, text, len, ids, why, sizeof why) == 0) {
        *out = (tessera_tokens){ids->ids, ids->len};
        if (tessera_target_prefix_check(c->cm->cfg, &c->o->translate, out, why, sizeof why) == 0)
            return 0;
    }
    cli_flag_names(why, named, sizeof named);
    return cli_fail(err, err_len, "target prefix: %s", named);
}

/* A source of `tokens` tokens, decoded alone, within the memory budget. */
static int check_budget(const command *c, size_t tokens, char *err, size_t err_len)
{
    size_t need = tessera_translate_memory(c->cm->runtimes[0], c->cm->model, 1, tokens,
                                           &c->o->translate);
    return cli_check_budget(c->cm, need, tokens, err, err_len) != 0 ? -1 : 0;
}

static int parse_source(void *ctx, void *state, const char *line, size_t len, size_t index,
                        size_t *tokens, char *err, size_t err_len)
{
    const command *c = ctx;
    slot *s = state;
    const char *prefix_text = NULL;
    size_t src_len = len, prefix_len = 0;
    /* An empty line of text is an empty line out: not decoded. */
    int allow_empty = c->cm->form == CLI_TEXT;
    if ((c->o->prefix &&
         cli_split_at_tab(line, len, "SOURCE<TAB>PREFIX (--prefix)", &src_len, &prefix_text,
                          &prefix_len, err, err_len) != 0) ||
        cli_parse_source(c->cm, line, src_len, allow_empty, &s->src.ids[index],
                         &s->src.seqs[index], err, err_len) != 0 ||
        (c->o->prefix && parse_prefix(c, prefix_text, prefix_len, &s->prefix.ids[index],
                                      &s->prefix.seqs[index], err, err_len) != 0))
        return -1;
    *tokens = s->src.seqs[index].len;
    return check_budget(c, *tokens, err, err_len);
}

/* Renders ids[0, n) and writes what of it goes past what is written; only
 * a rendering that extends it (a detokenizer may join a piece with the one
 * after it: the newest token's rendering waits for the next). */
static void stream_write(stream *st, size_t n)
{
    char err[256];
    cli_line_reset(&st->text);
    if (cli_line_side(&st->text, st->cm, TESSERA_TARGET, st->ids, n, err, sizeof err) != 0 ||
        st->text.len <= st->written)
        return;
    if (fwrite(st->text.text + st->written, 1, st->text.len - st->written, stdout) ==
        st->text.len - st->written)
        st->written = st->text.len;
    fflush(stdout);
}

/* The library's tessera_token_fn: the token joins the line, and what of
 * the line is sure is written. */
static int stream_token(void *arg, size_t sentence, int32_t id, float logprob, size_t step)
{
    (void)sentence;
    (void)logprob;
    (void)step;
    stream *st = arg;
    if (st->len == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 64;
        int32_t *ids = realloc(st->ids, cap * sizeof *ids);
        if (!ids)
            return 0; /* the line is written whole at its end */
        st->ids = ids;
        st->cap = cap;
    }
    st->ids[st->len++] = id;
    stream_write(st, st->len - 1);
    return 0;
}

static int translate_slot(void *ctx, void *state, size_t n, size_t first_line,
                          tessera_runtime *rt, char *err, size_t err_len)
{
    const command *c = ctx;
    slot *s = state;
    tessera_translate_options opts = c->o->translate;
    opts.batch = (int)n;
    opts.batch_tokens = c->o->batch_tokens;
    opts.first_sentence_index = first_line;
    opts.allow_empty = c->cm->form == CLI_TEXT;
    opts.target_prefix = c->o->prefix ? s->prefix.seqs : NULL;
    stream *st = c->stream;
    if (st) {
        st->len = st->written = 0;
        opts.on_token = stream_token;
        opts.on_token_arg = st;
    }
    if (tessera_translate_with(rt, c->cm->model, s->src.seqs, n, &opts, &s->h, err, err_len) != 0)
        return -1;
    s->n_h = n * (size_t)opts.n_best;
    if (st) { /* the rest of the line, as the hypothesis renders whole */
        cli_line_reset(&st->text);
        if (cli_line_side(&st->text, c->cm, TESSERA_TARGET, s->h[0].ids, s->h[0].len, err,
                          err_len) != 0)
            return -1;
        if ((st->text.len > st->written &&
             fwrite(st->text.text + st->written, 1, st->text.len - st->written, stdout) !=
                 st->text.len - st->written) ||
            putchar('\n') == EOF || fflush(stdout) != 0)
            return cli_fail(err, err_len, "error writing standard output");
    }
    return 0;
}

/* TAB, then 'I-J' for each target token J, space separated. */
static int print_alignment(cli_line *line, const tessera_hypothesis *hy)
{
    if (cli_line_printf(line, "\t") != 0)
        return -1;
    for (size_t j = 0; j < hy->len; j++)
        if (cli_line_printf(line, j ? " %d-%zu" : "%d-%zu", (int)hy->alignment[j], j) != 0)
            return -1;
    return 0;
}

static int print_slot(void *ctx, void *state, size_t n)
{
    command *c = ctx;
    slot *s = state;
    size_t K = (size_t)c->o->translate.n_best;
    int status = 0;
    char err[1024];
    for (size_t i = 0; status == 0 && !c->stream && i < n; i++) { /* --stream: written */
        cli_line_reset(&c->line);
        /* An empty source (a line of text without tokens) is an empty line. */
        for (size_t k = 0; status == 0 && s->src.seqs[i].len > 0 && k < K; k++) {
            const tessera_hypothesis *hy = &s->h[i * K + k];
            if (k && cli_line_printf(&c->line, "\t") != 0)
                status = cli_error("out of memory writing output");
            else if (cli_line_side(&c->line, c->cm, TESSERA_TARGET, hy->ids, hy->len, err,
                                   sizeof err) != 0)
                status = cli_error("%s", err);
            else if ((c->o->n_best_given && cli_line_printf(&c->line, "\t%.9g", hy->score) != 0) ||
                     (hy->alignment && print_alignment(&c->line, hy) != 0))
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
                               "beam max-len batch batch-tokens max-memory tokens length-penalty "
                               "n-best sampling-topk sampling-topp sampling-temperature seed "
                               "prefix min-len no-repeat-ngram repetition-penalty disable-unk "
                               "end-token alignments stream source-lang target-lang vmap use-vmap "
                               "shortlist shortlist-first shortlist-best shortlist-threshold",
                               &o, usage);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (o.stream) {
        /* A line at a time, on one worker, as the search makes it. */
        const char *bad = o.n_best_given                         ? "--n-best"
                          : o.translate.return_alignments        ? "--alignments"
                          : o.batch_given && o.batch != 1        ? "--batch above 1"
                          : o.batch_tokens                       ? "--batch-tokens"
                          : o.workers_given && o.workers != 1    ? "--workers above 1"
                                                                 : NULL;
        if (bad)
            return cli_error("--stream: not with %s (it writes each line's tokens as the "
                             "search makes them, a line at a time)", bad);
        o.batch = 1;
        o.workers = 1;
    }
    if (cli_model_open(&o, &cm) != 0 || cli_model_require_decoder(&cm, "translate") != 0)
        return 1;
    if (cli_check_decoding("translate", cm.cfg, &o.translate) != 0 ||
        cli_check_languages("translate", cm.model, o.translate.source_lang,
                            o.translate.target_lang, 1) != 0 ||
        cli_model_open_shortlist("translate", &o, &cm, &o.translate) != 0) {
        cli_model_close(&cm);
        return 1;
    }
    stream st = {.cm = &cm};
    command c = {&o, &cm, {0}, o.stream ? &st : NULL};
    rc = cli_run_workers(&translate_work, &c, (size_t)o.batch, (size_t)o.batch_tokens,
                         cm.runtimes, o.workers);
    cli_line_free(&c.line);
    cli_line_free(&st.text);
    free(st.ids);
    cli_model_close(&cm);
    return rc;
}
