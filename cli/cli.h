/* The tessera command: shared pieces of the subcommands. */
#ifndef TSR_CLI_CLI_H
#define TSR_CLI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/tessera.h"

/* Prints "tessera: MESSAGE" as one line on stderr. Returns 1 (the exit status
 * for every error) so callers can `return cli_error(...)`. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A note on how the run went (one, the first asked for), printed as one
 * line on stderr at the end of a run that succeeded, so that a failing run
 * still prints exactly one line (its error). */
void cli_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_print_note(void);

/* printf into err (when err_len > 0) and return -1: a message for the caller
 * to prefix (with the line number, say) and print. */
int cli_fail(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --batch and --batch-tokens at most; --batch's default with --batch-tokens. */
#define CLI_BATCH_MAX 65536
#define CLI_BATCH_TOKENS_MAX (1 << 24)

/* How sentences are written on the command's lines (docs/model-format.md
 * section 3): ids; pieces (vocabulary lines) separated by spaces; or text,
 * through the model's tokenizers. */
typedef enum cli_form {
    CLI_FORM_DEFAULT = 0, /* text when the model has tokenizers, else ids */
    CLI_IDS,
    CLI_PIECES,
    CLI_TEXT
} cli_form;

/* Options shared by translate and score (and some by bench). */
typedef struct cli_options {
    const char *model_dir; /* as given to -m: a directory or an installed model's name */
    int workers;           /* --workers N: runtimes computing batches at once */
    int threads;           /* --threads K: each worker's; 0: the default */
    const char *numa; /* NULL: TESSERA_NUMA, else auto */
    int smt;
    int batch;
    int batch_given;
    int batch_tokens;      /* --batch-tokens: source tokens a batch holds at most; 0: no limit */
    size_t max_memory;     /* --max-memory: each worker's memory budget; 0: the default */
    int form;              /* CLI_FORM_DEFAULT, or --ids, --pieces (--tokens), --text */
    int text_or_pieces;    /* serve: without tokenizers this build reads, text is pieces
                              when the directory has both vocabularies, else ids only */
    tessera_translate_options translate;
    int n_best_given;
    int prefix;                        /* translate --prefix: SOURCE<TAB>PREFIX lines */
    int stream;                        /* translate --stream: tokens written as decoded */
    int workers_given;
    tessera_compute_type compute_type; /* --compute-type, else TESSERA_COMPUTE_DEFAULT */
    const char *pool;   /* encode --pool: none, mean, first (default none) */
    const char *format; /* encode --format: text, binary (default text) */
    /* translate and serve: a vocabulary shortlist (cli/shortlist.c) */
    const char *vmap;      /* --vmap FILE */
    int use_vmap;          /* --use-vmap: the model directory's vmap.txt */
    const char *shortlist; /* --shortlist FILE, a Marian lexical shortlist */
    size_t shortlist_first, shortlist_best; /* TESSERA_SHORTLIST_DEFAULT_COUNT: not given */
    float shortlist_threshold;
    int shortlist_threshold_given;
} cli_options;

/* Parses a whole number flag value in [lo, hi]; prints the error itself. */
int cli_parse_int(const char *flag, const char *text, long lo, long hi, int *out);
int cli_parse_float(const char *flag, const char *text, double lo, double hi, float *out);

/* Parses the flags of translate or score (`allowed` lists the long names the
 * command accepts besides -m/--model and --help). Returns 0 to go on, -1
 * after printing --help (exit 0), 1 after printing an error. */
int cli_parse_options(int argc, char **argv, const char *cmd, const char *allowed, cli_options *o,
                      void (*usage)(FILE *));

/* A message of tessera_translate_options_check (or of the target prefix
 * check) into out, each option it names as the command's flag: "min_len"
 * becomes "--min-len". Always NUL-terminates out (size > 0). */
void cli_flag_names(const char *msg, char *out, size_t size);

/* tessera_translate_options_check of t (cfg NULL: the rules of any model);
 * 0, or 1 after printing "CMD: MESSAGE" with the command's flag names. */
int cli_check_decoding(const char *cmd, const tessera_config *cfg,
                       const tessera_translate_options *t);

/* tessera_model_check_languages of --source-lang and --target-lang (with_target
 * 0: encode, no target side); 0, or 1 after printing "CMD: MESSAGE" with the
 * flags' names. */
int cli_check_languages(const char *cmd, const tessera_model *model, const char *source_lang,
                        const char *target_lang, int with_target);

/* Prints the --help lines of --source-lang (and --target-lang). */
void cli_usage_languages(FILE *f, int with_target);

/* Parses a --compute-type value; prints the error itself. */
int cli_parse_compute_type(const char *text, tessera_compute_type *out);

/* Prints the --help lines of --compute-type. */
void cli_usage_compute_type(FILE *f);

/* Prints the --help lines of --text, --ids and --pieces (--tokens). */
void cli_usage_forms(FILE *f);

/* Prints the --help lines of --workers, --threads, --numa and --smt. */
void cli_usage_threads(FILE *f);

/* Prints the --help lines of --batch-tokens and --max-memory; `what`:
 * "sentences", "pairs". */
void cli_usage_batching(FILE *f, const char *what);

/* Parses a size in bytes with an optional K, M, G or T suffix (powers of
 * 1024); prints the error itself, naming flag. */
int cli_parse_size(const char *flag, const char *text, size_t lo, size_t hi, size_t *out);

/* Makes runtime `worker` of `workers` (--threads, --numa, --smt as given);
 * returns 0, or 1 after printing an error. */
int cli_runtime_open(const cli_options *o, int worker, tessera_runtime **rt);

/* The model (and its vocabularies for pieces), loaded for a subcommand. */
typedef struct cli_model {
    tessera_model *model;
    const tessera_config *cfg;
    tessera_runtime **runtimes;       /* o->workers of them */
    int n_runtimes;
    cli_form form;                    /* how its lines are read and written: never DEFAULT */
    const tessera_vocabulary *src_vocab, *tgt_vocab; /* pieces', a shortlist's; else NULL */
    tessera_vocabulary *owned_vocab[2]; /* loaded here when the model holds none */
    char dir[4096];                   /* the directory o->model_dir resolved to */
    tessera_shortlist *shortlist;     /* cli_model_open_shortlist's, or NULL */
} cli_model;

/* Resolves o->model_dir (cli/model_path.h) and loads the model from there,
 * decides the form of its lines (o->form; by default text when the model
 * has tokenizers), loads the vocabularies pieces need, and makes the
 * workers' runtimes; returns 0, or 1 after printing an error. */
int cli_model_open(const cli_options *o, cli_model *cm);
void cli_model_close(cli_model *cm);
/* 0 when a line's working memory (`need`, from tessera_translate_memory and
 * its kin for that line alone) fits the workers' memory budget; else -1 with
 * the message in err. Checked as each line is read, so that the lines
 * before it are still answered (the library checks again, per batch). */
int cli_check_budget(const cli_model *cm, size_t need, size_t tokens, char *err, size_t err_len);

/* cm->src_vocab and cm->tgt_vocab: the model's, else its directory's
 * vocab.src.txt and vocab.tgt.txt; 0, or -1 with a message naming the file
 * and `flag` (NULL: none), what needs them. */
int cli_model_load_vocabularies(cli_model *cm, const char *flag, char *err, size_t err_len);
/* 0 when the model has a decoder; else prints an error naming cmd and the
 * model, closes it and returns 1. */
int cli_model_require_decoder(cli_model *cm, const char *cmd);

/* The shortlist the options name (--vmap, --use-vmap, --shortlist) read for
 * the model into cm->shortlist (freed by cli_model_close) and set in
 * t->shortlist; none named: nothing. 0, or 1 after printing "CMD: MESSAGE". */
int cli_model_open_shortlist(const char *cmd, const cli_options *o, cli_model *cm,
                             tessera_translate_options *t);
/* Their --help lines. */
void cli_usage_shortlist(FILE *f);
/* Their getopt_long entries, and their values from CLI_OPT_VMAP on (a
 * command's own values stay below it); applying one to o: 0, 1 after
 * printing an error, or 1 when opt is none of them. */
#define CLI_OPT_VMAP 1000
#define CLI_SHORTLIST_OPTIONS                                                                     \
    {"vmap", required_argument, NULL, CLI_OPT_VMAP},                                            \
        {"use-vmap", no_argument, NULL, CLI_OPT_VMAP + 1},                                      \
        {"shortlist", required_argument, NULL, CLI_OPT_VMAP + 2},                               \
        {"shortlist-first", required_argument, NULL, CLI_OPT_VMAP + 3},                         \
        {"shortlist-best", required_argument, NULL, CLI_OPT_VMAP + 4},                          \
    {                                                                                           \
        "shortlist-threshold", required_argument, NULL, CLI_OPT_VMAP + 5                        \
    }
int cli_apply_shortlist_option(int opt, const char *arg, cli_options *o);

/* Prints the --help lines of the model option: flag (e.g. "-m, --model DIR|NAME")
 * and what the command does with the model, then what DIR and NAME mean and
 * where installed models are looked up. */
void cli_usage_model(FILE *f, const char *flag, const char *what);

/* ---- Input lines -------------------------------------------------------- */

/* A growable list of ids. */
/* Text from outside (a token as typed, a request's URL), for an error line:
 * printable ASCII as is, every other byte (control bytes, a terminal's
 * escape sequences, invalid or any UTF-8) as \xNN, so that input cannot
 * forge or garble a log line, nor make a JSON message invalid UTF-8; at most
 * CLI_QUOTE_MAX bytes of it, then "...". buf holds CLI_QUOTE_BUF bytes. */
#define CLI_QUOTE_MAX 40
#define CLI_QUOTE_BUF (4 * CLI_QUOTE_MAX + 8)
const char *cli_quote(const char *text, size_t len, char *buf, size_t size);

typedef struct cli_ids {
    int32_t *ids;
    size_t len, cap;
} cli_ids;

/* Parses one sentence (ids, or pieces through vocab when vocab != NULL) and
 * checks each id against vocab_size. On error returns -1 with a message
 * (without the line number) in err. */
int cli_parse_sentence(const char *text, size_t len, const tessera_vocabulary *vocab,
                       int vocab_size, int unk_id, const char *side, cli_ids *out, char *err,
                       size_t err_len);

/* One sentence of a side in the model's form (cm->form): ids, pieces, or
 * text through the side's tokenizer. */
int cli_parse_side(const cli_model *cm, tessera_side side, const char *text, size_t len,
                   cli_ids *out, char *err, size_t err_len);

/* The sentences of one batch of input lines: their parsed ids (owned) and
 * the views of them the library takes. */
typedef struct cli_sentences {
    cli_ids *ids;
    tessera_tokens *seqs;
} cli_sentences;

/* Room for cap sentences, zeroed; 0, or -1 when out of memory (free it all
 * the same). */
int cli_sentences_init(cli_sentences *s, size_t cap);
void cli_sentences_free(cli_sentences *s, size_t cap);

/* Splits a line of two fields at its one TAB: line[0..*first_len) and
 * *second[0..*second_len). -1 with "expected EXPECTED, found no tab" (or
 * more than one) in err otherwise. */
int cli_split_at_tab(const char *line, size_t len, const char *expected, size_t *first_len,
                     const char **second, size_t *second_len, char *err, size_t err_len);

/* A source sentence for the model: parsed as cli_parse_side, not empty
 * (unless allow_empty), at most max_positions tokens; *out then borrows ids.
 * -1 with a message otherwise. */
int cli_parse_source(const cli_model *cm, const char *text, size_t len, int allow_empty,
                     cli_ids *ids, tessera_tokens *out, char *err, size_t err_len);

/* ---- Output --------------------------------------------------------------- */

/* A line being built; written whole, or not at all. */
typedef struct cli_line {
    char *text;
    size_t len, cap;
} cli_line;

void cli_line_reset(cli_line *l);
int cli_line_printf(cli_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends ids (or their pieces), space separated. */
int cli_line_ids(cli_line *l, const int32_t *ids, size_t n, const tessera_vocabulary *vocab);
/* Appends a side's sentence in the model's form: ids, pieces, or text (its
 * TABs, CRs and newlines as spaces, so that it stays one field of one
 * line). 0, or -1 with the message in err. */
int cli_line_side(cli_line *l, const cli_model *cm, tessera_side side, const int32_t *ids,
                  size_t n, char *err, size_t err_len);
/* Appends detokenized text as one field of one line: its TABs, CRs and
 * newlines (byte pieces may make them) as spaces. */
int cli_line_text(cli_line *l, const char *text);
/* Appends n raw bytes (binary output). */
int cli_line_bytes(cli_line *l, const void *bytes, size_t n);
/* Writes the line and a newline to stdout; -1 (reported) on a write error. */
int cli_line_emit(cli_line *l);
/* Writes the line as it is, no newline (binary output); -1 (reported) on error. */
int cli_line_write(cli_line *l);
void cli_line_free(cli_line *l);

/* ---- Subcommands -------------------------------------------------------- */
int cli_translate(int argc, char **argv);
int cli_score(int argc, char **argv);
int cli_encode(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_tokenize(int argc, char **argv);   /* cli/tokenize.c */
int cli_detokenize(int argc, char **argv); /* cli/tokenize.c */
int cli_serve(int argc, char **argv); /* cli/serve/serve.c, when built with libmicrohttpd */

#endif
