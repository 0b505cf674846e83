/* tessera tokenize and tessera detokenize: the mapping between text and the
 * model's ids or pieces, as translate, score and encode apply it
 * (docs/model-format.md section 3), one line out per line in, for checks and
 * pipelines. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/line_reader.h"
#include "cli/model_path.h"

static void usage(FILE *f, int detokenize)
{
    if (!detokenize)
        fprintf(f,
                "Usage: tessera tokenize -m DIR|NAME [--side source|target] [--ids] < text\n"
                "\n"
                "Reads UTF-8 text, one sentence per line, and writes per line its tokens as the\n"
                "model's tokenizer and vocabulary give them (docs/model-format.md section 3):\n"
                "the tokenizer's pieces separated by spaces, or with --ids the model's ids (a\n"
                "piece absent from the vocabulary is unk_id). Nothing is added: no BOS, no EOS,\n"
                "no source_suffix. An empty line gives an empty line.\n"
                "\n"
                "Options:\n");
    else
        fprintf(f,
                "Usage: tessera detokenize -m DIR|NAME [--side target|source] [--pieces] < ids\n"
                "\n"
                "Reads one sentence per line, the model's ids separated by spaces (or with\n"
                "--pieces its pieces), and writes per line the text the tokenizer makes of them,\n"
                "BOS, EOS and padding left out (docs/model-format.md section 3).\n"
                "\n"
                "Options:\n");
    cli_usage_model(f, "-m, --model DIR|NAME",
                    "the model (required): its config.json names its tokenizers");
    fprintf(f,
            "  --side SIDE             source or target (default %s)\n"
            "  %s\n"
            "  -h, --help              this help\n"
            "\n"
            "Errors (a bad line: invalid UTF-8, a NUL byte, an id out of range) print one\n"
            "line on stderr naming the line and exit with status 1, after the lines before\n"
            "it are written.\n",
            detokenize ? "target" : "source",
            detokenize ? "--pieces                input lines are pieces, not ids"
                       : "--ids                   write ids, not pieces");
}

typedef struct tok_command {
    const char *model_dir;
    tessera_side side;
    int other_form; /* tokenize --ids, detokenize --pieces */
    tessera_model *model;
} tok_command;

static int parse_flags(int argc, char **argv, int detokenize, tok_command *c)
{
    const char *cmd = detokenize ? "detokenize" : "tokenize";
    static const struct option options[] = {
        {"model", required_argument, NULL, 'm'}, {"side", required_argument, NULL, 's'},
        {"ids", no_argument, NULL, 'i'},         {"pieces", no_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    memset(c, 0, sizeof *c);
    c->side = detokenize ? TESSERA_TARGET : TESSERA_SOURCE;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":m:h", options, NULL)) != -1) {
        const char *given = argv[optind - 1];
        switch (opt) {
        case 'm': c->model_dir = optarg; break;
        case 'h': usage(stdout, detokenize); return -1;
        case 's':
            if (strcmp(optarg, "source") == 0)
                c->side = TESSERA_SOURCE;
            else if (strcmp(optarg, "target") == 0)
                c->side = TESSERA_TARGET;
            else
                return cli_error("%s: --side: unknown side '%s' (source, target)", cmd, optarg);
            break;
        case 'i':
        case 'p':
            if ((opt == 'i') != !detokenize)
                return cli_error("%s: option '%s' does not apply to this command", cmd, given);
            c->other_form = 1;
            break;
        case ':': return cli_error("%s: option '%s' needs a value", cmd, given);
        default:
            return cli_error("%s: unknown option '%s' (try 'tessera %s --help')", cmd, given, cmd);
        }
    }
    if (optind < argc)
        return cli_error("%s: unexpected argument '%s'", cmd, argv[optind]);
    if (!c->model_dir)
        return cli_error("%s: -m DIR|NAME is required (try 'tessera %s --help')", cmd, cmd);
    return 0;
}

static int open_model(tok_command *c, const char *cmd)
{
    char dir[4096], err[1024];
    if (cli_model_path_resolve(c->model_dir, dir, sizeof dir, err, sizeof err) != 0)
        return cli_error("%s", err);
    tessera_load_options load;
    tessera_load_options_init(&load);
    load.compute_type = TESSERA_COMPUTE_F32;
    if (tessera_model_load_with(dir, &load, &c->model, err, sizeof err) != 0)
        return cli_error("%s", err);
    if (tessera_model_has_tokenizer(c->model, c->side))
        return 0;
    const tessera_config *cfg = tessera_model_config(c->model);
    int named = (c->side == TESSERA_SOURCE ? cfg->source_tokenizer : cfg->target_tokenizer)[0];
    tessera_model_free(c->model);
    return cli_error("%s: %s %s", cmd, dir,
                     named ? "names a tokenizer, but this tessera was built without SentencePiece"
                     : c->side == TESSERA_SOURCE
                         ? "has no source tokenizer (config.json key 'tokenizer')"
                         : "has no target tokenizer (config.json key 'tokenizer')");
}

/* One line's pieces or ids into out. */
static int tokenize_line(const tok_command *c, const char *line, size_t len, cli_line *out,
                         char *err, size_t err_len)
{
    tessera_tokenized t;
    if (tessera_tokenize(c->model, c->side, line, len, !c->other_form, &t, err, err_len) != 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t.len; i++)
        rc = c->other_form ? cli_line_printf(out, i ? " %d" : "%d", (int)t.ids[i])
                           : (i ? cli_line_printf(out, " ") : 0) ||
                                 cli_line_bytes(out, t.pieces[i], strlen(t.pieces[i]));
    tessera_tokenized_free(&t);
    return rc == 0 ? 0 : cli_fail(err, err_len, "out of memory");
}

/* The space-separated words of a line, NUL-terminated in place. */
static size_t split_words(char *line, size_t len, char ***words, size_t *cap)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (line[i] == ' ') {
            line[i++] = '\0';
            continue;
        }
        if (n == *cap) {
            size_t more = *cap ? 2 * *cap : 64;
            char **w = realloc(*words, more * sizeof *w);
            if (!w)
                return (size_t)-1;
            *words = w;
            *cap = more;
        }
        (*words)[n++] = line + i;
        while (i < len && line[i] != ' ')
            i++;
    }
    return n;
}

static int detokenize_line(const tok_command *c, char *line, size_t len, cli_line *out,
                           char *err, size_t err_len)
{
    static char **words;
    static size_t cap;
    char *text;
    int rc;
    if (c->other_form) {
        size_t n = split_words(line, len, &words, &cap);
        if (n == (size_t)-1)
            return cli_fail(err, err_len, "out of memory");
        rc = tessera_detokenize_pieces(c->model, c->side, (const char *const *)words, n, &text,
                                       err, err_len);
    } else {
        cli_ids ids = {0};
        int size = (int)tessera_vocabulary_size(tessera_model_vocabulary(c->model, c->side));
        rc = cli_parse_sentence(line, len, NULL, size, 0,
                                c->side == TESSERA_SOURCE ? "source" : "target", &ids, err,
                                err_len);
        if (rc == 0)
            rc = tessera_detokenize(c->model, c->side, ids.ids, ids.len, &text, err, err_len);
        free(ids.ids);
    }
    if (rc != 0)
        return -1;
    rc = cli_line_text(out, text);
    tessera_text_free(text);
    return rc == 0 ? 0 : cli_fail(err, err_len, "out of memory");
}

static int run(int argc, char **argv, int detokenize)
{
    const char *cmd = detokenize ? "detokenize" : "tokenize";
    tok_command c;
    int rc = parse_flags(argc, argv, detokenize, &c);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    if (open_model(&c, cmd) != 0)
        return 1;
    cli_line_reader r = {.in = stdin};
    cli_line out = {0};
    char *line, err[1024];
    size_t len;
    int status = 0;
    while (status == 0 && (rc = cli_read_line(&r, &line, &len)) == 1) {
        cli_line_reset(&out);
        if (memchr(line, '\0', len))
            status = cli_error("line %zu: contains a NUL byte", r.line_no);
        else if ((detokenize ? detokenize_line(&c, line, len, &out, err, sizeof err)
                             : tokenize_line(&c, line, len, &out, err, sizeof err)) != 0)
            status = cli_error("line %zu: %s", r.line_no, err);
        else if (cli_line_emit(&out) != 0)
            status = 1;
    }
    if (status == 0 && rc < 0)
        status = cli_error("line %zu: cannot read standard input: %s", r.line_no + 1,
                           strerror(r.error));
    if (fflush(stdout) != 0 && status == 0)
        status = cli_error("error writing standard output");
    cli_line_free(&out);
    cli_line_reader_free(&r);
    tessera_model_free(c.model);
    return status;
}

int cli_tokenize(int argc, char **argv) { return run(argc, argv, 0); }

int cli_detokenize(int argc, char **argv) { return run(argc, argv, 1); }
