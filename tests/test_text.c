/* Text in and out (docs/model-format.md section 3) on the shipped model,
 * whose tokenizers are SentencePiece word models: the command's text mode
 * against its own id mode through tokenize/detokenize (the tokenizers
 * themselves are held to python3-sentencepiece by tests/text-tokenize.sh, the
 * model's outputs to its held-out references by tests/eval-demo.sh and the
 * sets' runs), bad text and bad tokenizer files, and the library's text
 * calls against the command, from several threads at once. In a build
 * without SentencePiece every test is a SKIP by name. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/tessera.h"
#include "tests/testutil.h"

#define MAX_ARGS 24

static char model_dir[4096];
static tessera_model *model;

static void setup(void)
{
    snprintf(model_dir, sizeof model_dir, "%s/models/numbers-en-de", test_srcdir());
    char err[512];
    tessera_load_options o;
    tessera_load_options_init(&o);
    o.compute_type = TESSERA_COMPUTE_F32;
    cr_assert_eq(tessera_model_load_with(model_dir, &o, &model, err, sizeof err), 0, "%s", err);
    if (!tessera_model_has_tokenizer(model, TESSERA_SOURCE))
        cr_skip_test("this build has no SentencePiece: no text to test");
}

static void teardown(void)
{
    tessera_model_free(model);
    model = NULL;
}

TestSuite(text, .init = setup, .fini = teardown, .timeout = 120);

static char *const one_thread[] = {"TESSERA_NUM_THREADS=1", NULL};

/* tessera ARGS... -m MODEL < input (len bytes; -1: strlen). */
static test_run run_in(const char *dir, const char *input, long len, const char *arg, ...)
{
    char *argv[MAX_ARGS + 4];
    size_t n = 0;
    argv[n++] = (char *)test_tessera_path();
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(n, MAX_ARGS);
        argv[n++] = (char *)a;
    }
    va_end(ap);
    argv[n++] = "-m";
    argv[n++] = (char *)dir;
    argv[n] = NULL;
    return test_run_command_bytes(argv, input, len < 0 ? strlen(input) : (size_t)len, one_thread);
}

#define run(input, ...) run_in(model_dir, input, -1, __VA_ARGS__, NULL)

static void expect_ok(const test_run *r)
{
    cr_assert_eq(r->exit_status, 0, "exit status %d, stderr: %s", r->exit_status, r->err);
    cr_expect_str_empty(r->err);
}

/* One stderr line naming needle, status 1, and exactly `out` on stdout. */
static void expect_error(const test_run *r, const char *needle, const char *out)
{
    cr_expect_eq(r->exit_status, 1, "exit status %d (wanted 1 and \"%s\"); stderr: %s",
                 r->exit_status, needle, r->err);
    size_t len = strlen(r->err);
    cr_expect(len > 0 && strchr(r->err, '\n') == r->err + len - 1,
              "stderr should be one line: \"%s\"", r->err);
    cr_expect(strstr(r->err, needle), "stderr \"%s\" should name \"%s\"", r->err, needle);
    cr_expect_str_eq(r->out, out);
}

static const char sources[] = "twenty one\n"
                              "three hundred forty five thousand six hundred seventy eight\n"
                              "nine hundred ninety nine thousand nine hundred ninety nine\n"
                              "  seven   hundred  one  \n"
                              "zero\n";

/* Text in, text out is the id path with the tokenizers around it. */
Test(text, translate_on_text_is_translate_on_the_tokenizers_ids)
{
    test_run text = run(sources, "translate", "--batch", "3");
    expect_ok(&text);
    static const char readme[] = "ein und zwanzig\ndrei hundert fünf und vierzig tausend sechs "
                                 "hundert acht und siebzig\n";
    cr_expect(strncmp(text.out, readme, sizeof readme - 1) == 0, "the README's translations: %s",
              text.out);
    test_run ids = run(sources, "tokenize", "--ids");
    expect_ok(&ids);
    test_run out_ids = run(ids.out, "translate", "--ids");
    expect_ok(&out_ids);
    test_run back = run(out_ids.out, "detokenize");
    expect_ok(&back);
    cr_expect_str_eq(back.out, text.out);
    test_run as_pieces = run("\xe2\x96\x81twenty \xe2\x96\x81one\n", "translate", "--pieces");
    expect_ok(&as_pieces);
    cr_expect_str_eq(as_pieces.out, "\xe2\x96\x81" "ein \xe2\x96\x81und \xe2\x96\x81zwanzig\n");
    test_run_free(&text);
    test_run_free(&ids);
    test_run_free(&out_ids);
    test_run_free(&back);
    test_run_free(&as_pieces);
}

Test(text, empty_lines_give_empty_lines)
{
    test_run r = run("twenty one\n\n   \nzero\n", "translate", "--batch", "4");
    expect_ok(&r);
    cr_expect_str_eq(r.out, "ein und zwanzig\n\n\nnull\n");
    test_run_free(&r);
    r = run("\n\ntwenty\n", "tokenize");
    expect_ok(&r);
    cr_expect_str_eq(r.out, "\n\n\xe2\x96\x81twenty\n");
    test_run_free(&r);
}

/* Each bad line after a good one: the good one's output, then one error. */
Test(text, bad_text_is_one_error_naming_its_line_after_the_lines_before)
{
    static const struct {
        const char *input;
        size_t len;
        const char *needle;
    } cases[] = {
        {"twenty one\nzero\xc0\xaf\n", 17, "line 2: invalid UTF-8 at byte 5"},   /* overlong */
        {"twenty one\n\xed\xa0\x80\n", 15, "line 2: invalid UTF-8 at byte 1"},   /* surrogate */
        {"twenty one\nzero \xe2\x82\n", 18, "line 2: invalid UTF-8 at byte 6"},  /* cut short */
        {"twenty one\nze\0ro\n", 17, "line 2: contains a NUL byte"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_run r = run_in(model_dir, cases[i].input, (long)cases[i].len, "translate", NULL);
        expect_error(&r, cases[i].needle, "ein und zwanzig\n");
        test_run_free(&r);
        r = run_in(model_dir, cases[i].input, (long)cases[i].len, "tokenize", "--ids", NULL);
        expect_error(&r, cases[i].needle, "31 18\n");
        test_run_free(&r);
    }
    test_run r = run_in(model_dir, "twenty one\tein und zwanzig\nzero\tnu\xffll\n", -1, "score",
                        NULL);
    cr_expect_eq(r.exit_status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "line 2: target: invalid UTF-8 at byte 3"), "%s", r.err);
    test_run_free(&r);
}

/* A 10 MB line is refused by its size, before any tokenizing: at once, in
 * little memory, after the line before it. */
Test(text, a_huge_line_is_refused_before_it_is_tokenized)
{
    size_t big = 10u << 20;
    char *input = malloc(big + 64);
    cr_assert(input);
    size_t at = (size_t)sprintf(input, "twenty one\n");
    for (size_t i = 0; i < big / 4; i++, at += 4)
        memcpy(input + at, "one ", 4);
    at += (size_t)sprintf(input + at, "\nzero\n");
    test_run r = run_in(model_dir, input, (long)at, "translate", NULL);
    expect_error(&r, "line 2: 10485760 bytes of text, more than 32 tokens can hold", "ein und zwanzig\n");
    test_run_free(&r);
    /* score: the same for a source. */
    char *pairs = malloc(at + 16);
    cr_assert(pairs);
    size_t n = (size_t)sprintf(pairs, "one\tnull\n");
    memcpy(pairs + n, input + 11, big);
    n += big;
    n += (size_t)sprintf(pairs + n, "\tnull\n");
    r = run_in(model_dir, pairs, (long)n, "score", NULL);
    cr_expect_eq(r.exit_status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "line 2: 10485760 bytes of text"), "%s", r.err);
    cr_expect_eq(strchr(r.out, '\n') - r.out + 1, (long)strlen(r.out), "one line: %s", r.out);
    free(pairs);
    test_run_free(&r);
    free(input);
}

/* A copy of the shipped model whose file `name` holds `bytes` (NULL:
 * removed); the path, to free with test_remove_dir. */
static char *model_with(const char *name, const char *bytes, size_t len)
{
    char *dir = test_make_temp_dir();
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.src.txt",
                                        "vocab.tgt.txt", "source.spm", "target.spm"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char from[4200], to[4200];
        snprintf(from, sizeof from, "%s/%s", model_dir, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        size_t n;
        char *data = test_read_file(from, &n);
        if (strcmp(files[i], name) == 0) {
            if (bytes)
                test_write_file(to, bytes, len);
        } else {
            test_write_file(to, data, n);
        }
        free(data);
    }
    return dir;
}

Test(text, a_missing_or_broken_tokenizer_is_one_line_naming_its_file)
{
    size_t n;
    char path[4200];
    snprintf(path, sizeof path, "%s/source.spm", model_dir);
    char *spm = test_read_file(path, &n);
    static const char junk[] = "\x0a\x05hello\x12\xff\xff\xff\xff\x0f not a model";
    struct {
        const char *file;
        const char *bytes;
        size_t len;
        const char *needle;
    } cases[] = {
        {"source.spm", NULL, 0, "source.spm: cannot open"},
        {"target.spm", junk, sizeof junk - 1, "target.spm: not a SentencePiece model"},
        {"source.spm", spm, n / 2, "source.spm: not a SentencePiece model"},
        {"source.spm", "", 0, "source.spm"},
        {"vocab.tgt.txt", NULL, 0, "vocab.tgt.txt"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *dir = model_with(cases[i].file, cases[i].bytes, cases[i].len);
        test_run r = run_in(dir, "twenty one\n", -1, "translate", NULL);
        expect_error(&r, cases[i].needle, "");
        test_run_free(&r);
        r = run_in(dir, "twenty one\n", -1, "tokenize", NULL);
        expect_error(&r, cases[i].needle, "");
        test_run_free(&r);
        test_remove_dir(dir);
        free(dir);
    }
    free(spm);
}

/* The decoding options work on text as on ids: n-best with scores, piece
 * alignments, sampling the same in any batch. */
Test(text, n_best_alignments_and_sampling_on_text)
{
    test_run r = run("twenty one\n", "translate", "--beam", "4", "--n-best", "2");
    expect_ok(&r);
    cr_expect(strncmp(r.out, "ein und zwanzig\t-", 17) == 0, "%s", r.out);
    size_t tabs = 0;
    for (const char *p = r.out; *p; p++)
        tabs += *p == '\t';
    cr_expect_eq(tabs, 3, "TEXT<TAB>SCORE<TAB>TEXT<TAB>SCORE: %s", r.out);
    test_run_free(&r);

    r = run("twenty one\n", "translate", "--alignments");
    expect_ok(&r);
    cr_expect(strncmp(r.out, "ein und zwanzig\t", 16) == 0, "%s", r.out);
    const char *pairs = strchr(r.out, '\t') + 1;
    size_t n = 1;
    for (const char *p = pairs; *p && *p != '\n'; p++)
        n += *p == ' ';
    cr_expect_eq(n, 3, "a pair per target piece (3): %s", r.out);
    test_run_free(&r);

    static const char *const sample[] = {"--sampling-topk", "0", "--sampling-temperature", "3",
                                         "--seed", "5"};
    test_run one = run(sources, "translate", sample[0], sample[1], sample[2], sample[3], sample[4],
                       sample[5], "--batch", "1");
    test_run all = run(sources, "translate", sample[0], sample[1], sample[2], sample[3], sample[4],
                       sample[5], "--batch", "5");
    expect_ok(&one);
    expect_ok(&all);
    cr_expect_str_eq(one.out, all.out);
    test_run_free(&one);
    test_run_free(&all);

    r = run("twenty one\tein und\n", "translate", "--prefix");
    expect_ok(&r);
    cr_expect_str_eq(r.out, "ein und zwanzig\n", "a text prefix, forced");
    test_run_free(&r);
}

Test(text, score_takes_text_pairs)
{
    test_run text = run("twenty one\tein und zwanzig\nzero\t\n", "score");
    expect_ok(&text);
    /* The ids tokenize --ids gives for these words. */
    test_run ids = run("31 18\t10 28 33\n33\t\n", "score", "--ids");
    expect_ok(&ids);
    cr_expect_str_eq(text.out, ids.out);
    test_run_free(&text);
    test_run_free(&ids);
}

Test(text, forms_are_chosen_once_and_refused_where_they_cannot_be)
{
    test_run r = run("1 2\n", "translate", "--ids", "--pieces");
    expect_error(&r, "give one of them", "");
    test_run_free(&r);
    char golden[4200];
    snprintf(golden, sizeof golden, "%s/tests/golden/postnorm-silu-bf16", test_srcdir());
    r = run_in(golden, "4 5\n", -1, "translate", "--text", NULL);
    expect_error(&r, "has no tokenizer", "");
    test_run_free(&r);
    r = run_in(golden, "4 5\n", -1, "tokenize", NULL);
    expect_error(&r, "has no source tokenizer", "");
    test_run_free(&r);
}

Test(text, bench_times_the_text_around_a_batch)
{
    char *argv[] = {(char *)test_tessera_path(), "bench", "--model", model_dir, "--case",
                    "text-batch", "--repeat", "1", "--batch", "4", NULL};
    test_run r = test_run_command(argv, "", one_thread);
    expect_ok(&r);
    cr_expect(strstr(r.out, "case=text-batch") && strstr(r.out, " text_ms=") &&
                  strstr(r.out, " text_pct="),
              "%s", r.out);
    test_run_free(&r);
}

/* ---- the library --------------------------------------------------------------------- */

static const char *const lines[] = {"twenty one", "", "seven hundred one",
                                    "three hundred forty five thousand six hundred seventy eight",
                                    ">>deu<< zero"};
#define N_LINES (sizeof lines / sizeof lines[0])

/* The command's text translation of lines, one per line. */
static char *command_translation(void)
{
    char input[512] = "";
    for (size_t i = 0; i < N_LINES; i++)
        strcat(strcat(input, lines[i]), "\n");
    test_run r = run(input, "translate");
    expect_ok(&r);
    char *out = strdup(r.out);
    test_run_free(&r);
    return out;
}

static char *joined(const tessera_text_hypothesis *h, size_t n)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(h[i].text) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; i < n; i++)
        strcat(strcat(s, h[i].text), "\n");
    return s;
}

typedef struct worker {
    tessera_runtime *rt;
    char *out;
} worker;

static void *translate_lines(void *arg)
{
    worker *w = arg;
    char err[512];
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.batch = 2;
    tessera_text_hypothesis *h;
    for (int k = 0; k < 5; k++) {
        if (tessera_translate_text(w->rt, model, lines, N_LINES, &o, &h, err, sizeof err) != 0)
            return strdup(err);
        free(w->out);
        w->out = joined(h, N_LINES);
        tessera_text_hypotheses_free(h, N_LINES);
    }
    return NULL;
}

Test(text, the_library_translates_text_as_the_command_does_from_any_thread)
{
    char *expected = command_translation();
    enum { THREADS = 4 };
    worker w[THREADS] = {{0}};
    pthread_t t[THREADS];
    tessera_runtime_options ro;
    tessera_runtime_options_init(&ro);
    ro.threads = 1;
    char err[512];
    for (int i = 0; i < THREADS; i++) {
        cr_assert_eq(tessera_runtime_create(&ro, &w[i].rt, err, sizeof err), 0, "%s", err);
        cr_assert_eq(pthread_create(&t[i], NULL, translate_lines, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        void *failed;
        pthread_join(t[i], &failed);
        cr_expect_null(failed, "thread %d: %s", i, (char *)failed);
        cr_expect_str_eq(w[i].out, expected, "thread %d", i);
        free(w[i].out);
        tessera_runtime_free(w[i].rt);
    }
    free(expected);
}

Test(text, the_library_scores_and_tokenizes_text)
{
    char err[512];
    tessera_runtime *rt;
    cr_assert_eq(tessera_runtime_create(NULL, &rt, err, sizeof err), 0, "%s", err);
    const char *src[] = {"twenty one"}, *tgt[] = {"ein und zwanzig"};
    float **text_scores, **id_scores;
    cr_assert_eq(tessera_score_text(rt, model, src, tgt, 1, NULL, &text_scores, err, sizeof err),
                 0, "%s", err);
    tessera_tokenized s, t;
    cr_assert_eq(tessera_tokenize(model, TESSERA_SOURCE, src[0], strlen(src[0]), 1, &s, err,
                                  sizeof err), 0, "%s", err);
    cr_assert_eq(tessera_tokenize(model, TESSERA_TARGET, tgt[0], strlen(tgt[0]), 0, &t, err,
                                  sizeof err), 0, "%s", err);
    cr_expect_eq(s.len, 2);
    cr_expect_str_eq(s.pieces[1], "\xe2\x96\x81one");
    cr_expect_eq(s.ids[1], 18, "pieces map through the model's vocabulary");
    tessera_tokens st = {s.ids, s.len}, tt = {t.ids, t.len};
    tessera_score_options so;
    tessera_score_options_init(&so);
    cr_assert_eq(tessera_score_with(rt, model, &st, &tt, 1, &so, &id_scores, err, sizeof err), 0,
                 "%s", err);
    cr_expect(memcmp(text_scores[0], id_scores[0], (t.len + 1) * sizeof(float)) == 0);
    tessera_scores_free(text_scores, 1);
    tessera_scores_free(id_scores, 1);

    /* The tag rule: a >>tag<< the vocabulary lacks is text like any other. */
    tessera_tokenized tag;
    cr_assert_eq(tessera_tokenize(model, TESSERA_SOURCE, ">>deu<< one", 11, 1, &tag, err,
                                  sizeof err), 0, "%s", err);
    cr_expect_gt(tag.len, 1);
    cr_expect_eq(tag.ids[tag.len - 1], 18);
    tessera_tokenized_free(&tag);

    char *text;
    cr_assert_eq(tessera_detokenize(model, TESSERA_TARGET, t.ids, t.len, &text, err, sizeof err),
                 0, "%s", err);
    cr_expect_str_eq(text, "ein und zwanzig");
    tessera_text_free(text);
    int32_t bad = 1000;
    cr_expect_eq(tessera_detokenize(model, TESSERA_TARGET, &bad, 1, &text, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "id 1000"), "%s", err);
    tessera_tokenized_free(&s);
    tessera_tokenized_free(&t);

    /* NULL arguments are refused, never dereferenced. */
    tessera_tokenized none;
    cr_expect_eq(tessera_tokenize(NULL, TESSERA_SOURCE, "a", 1, 0, &none, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect_eq(tessera_tokenize(model, TESSERA_SOURCE, NULL, 1, 0, &none, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect_eq(tessera_tokenize(model, (tessera_side)7, "a", 1, 0, &none, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect_eq(tessera_detokenize(model, TESSERA_TARGET, NULL, 2, &text, err, sizeof err),
                 TESSERA_ERR_INPUT);
    tessera_text_hypothesis *h;
    cr_expect_eq(tessera_translate_text(rt, model, NULL, 1, NULL, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    const char *null_line[] = {NULL};
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    cr_expect_eq(tessera_translate_text(rt, model, null_line, 1, &o, &h, err, sizeof err),
                 TESSERA_ERR_INPUT);
    cr_expect(strstr(err, "sentence 1"), "%s", err);
    cr_expect_eq(tessera_score_text(rt, model, src, NULL, 1, NULL, &id_scores, err, sizeof err),
                 TESSERA_ERR_INPUT);
    tessera_runtime_free(rt);
}
