/* The tessera command against docs/model-format.md section 2: every bad input gives a
 * non-zero status, exactly one stderr line "tessera: ..." naming the culprit,
 * and only complete lines on stdout (for a bad line N, the N-1 lines before
 * it); good input gives one line per input line. The models are the tiny
 * ones of model_writer: d_model 8, vocab 11 (source) / 13 (target),
 * max_positions 16, bos 2, eos 3, unk 0. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/model_writer.h"
#include "tests/testutil.h"

#define SRC_VOCAB 11
#define TGT_VOCAB 13
#define MAX_POSITIONS 16
#define EOS_ID 3
#define MAX_ARGS 32
#define MAX_LINES 64

static char *dir;
static mw_model *model;

/* Every test starts from a valid tiny model in its own directory. Seed 15
 * gives outputs that vary with the source, one of them empty (EOS first). */
static void write_tiny_model(void)
{
    dir = test_make_temp_dir();
    model = mw_model_tiny(15);
    mw_write(model, dir);
}

static void remove_model(void)
{
    mw_model_free(model);
    test_remove_dir(dir);
    free(dir);
}

TestSuite(cli, .init = write_tiny_model, .fini = remove_model, .timeout = 60);

static char *const one_thread[] = {"TESSERA_NUM_THREADS=1", NULL};

/* tessera ARGS... < input, with env added to the environment; the argument
 * list ends with NULL. "-m" "DIR" stands for the model directory. */
static test_run run_env(const char *input, char *const env[], const char *arg, ...)
{
    char *argv[MAX_ARGS + 2];
    size_t n = 0;
    argv[n++] = (char *)test_tessera_path();
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(n, MAX_ARGS);
        argv[n++] = strcmp(a, "DIR") == 0 ? dir : (char *)a;
    }
    va_end(ap);
    argv[n] = NULL;
    return test_run_command(argv, input, env);
}

#define run(input, ...) run_env(input, one_thread, __VA_ARGS__, NULL)
#define translate(input, ...) run(input, "translate", "-m", "DIR", ##__VA_ARGS__)
#define score(input, ...) run(input, "score", "-m", "DIR", ##__VA_ARGS__)
#define encode(input, ...) run(input, "encode", "-m", "DIR", ##__VA_ARGS__)

/* Splits stdout into lines, insisting that the last one is complete. */
static size_t output_lines(const test_run *r, char **lines, size_t max)
{
    size_t len = strlen(r->out);
    cr_assert(len == 0 || r->out[len - 1] == '\n', "stdout ends in a partial line: \"%s\"",
              r->out);
    size_t n = 0;
    for (const char *p = r->out; *p;) {
        const char *nl = strchr(p, '\n');
        cr_assert_lt(n, max, "too many output lines");
        lines[n++] = strndup(p, (size_t)(nl - p));
        p = nl + 1;
    }
    return n;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
}

static size_t count_lines(const test_run *r)
{
    char *lines[MAX_LINES];
    size_t n = output_lines(r, lines, MAX_LINES);
    free_lines(lines, n);
    return n;
}

static void expect_success(const test_run *r)
{
    cr_assert_eq(r->exit_status, 0, "exit status %d, stderr: %s", r->exit_status, r->err);
    cr_expect_str_empty(r->err);
}

/* Non-zero status without a crash, one stderr line "tessera: ..." holding
 * both needles (needle2 may be NULL), and `lines_before` complete stdout lines. */
static void expect_failure(const test_run *r, const char *needle, const char *needle2,
                           size_t lines_before)
{
    cr_expect_neq(r->exit_status, 0, "should fail (wanted \"%s\"); stdout: %s", needle, r->out);
    cr_expect_lt(r->exit_status, 128, "killed by signal %d; stderr: %s", r->exit_status - 128,
                 r->err);
    const char *err = r->err;
    size_t len = strlen(err);
    cr_expect(len > 0 && err[len - 1] == '\n' && strchr(err, '\n') == err + len - 1,
              "stderr should be exactly one line: \"%s\"", err);
    cr_expect(strncmp(err, "tessera: ", 9) == 0, "stderr should start with \"tessera: \": \"%s\"",
              err);
    cr_expect(strstr(err, needle) != NULL, "stderr \"%s\" should name \"%s\"", err, needle);
    if (needle2)
        cr_expect(strstr(err, needle2) != NULL, "stderr \"%s\" should name \"%s\"", err, needle2);
    cr_expect_eq(count_lines(r), lines_before, "stdout should hold %zu complete lines: \"%s\"",
                 lines_before, r->out);
}

/* Space-separated integers; returns how many, or -1 if a token is not one. */
static int parse_ids(const char *line, long *ids, int max)
{
    int n = 0;
    const char *p = line;
    while (*p) {
        if (*p == ' ') {
            p++;
            continue;
        }
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || (*end && *end != ' ') || n == max)
            return -1;
        ids[n++] = v;
        p = end;
    }
    return n;
}

/* A translation: target ids, no EOS, short enough that [bos] + ids fits. */
static int expect_translation(const char *line, long *ids)
{
    int n = parse_ids(line, ids, MAX_POSITIONS);
    cr_assert(n >= 0 && n <= MAX_POSITIONS - 1, "not a translation of at most %d ids: \"%s\"",
              MAX_POSITIONS - 1, line);
    for (int i = 0; i < n; i++) {
        cr_expect(ids[i] >= 0 && ids[i] < TGT_VOCAB, "id %ld out of the target vocabulary", ids[i]);
        cr_expect_neq(ids[i], EOS_ID, "EOS in the output: \"%s\"", line);
    }
    return n;
}

/* Log-probabilities: finite, <= 0, written with enough digits; returns how many. */
static int parse_scores(const char *line, double *v, int max)
{
    int n = 0;
    const char *p = line;
    while (*p) {
        if (*p == ' ') {
            p++;
            continue;
        }
        char *end;
        double x = strtod(p, &end);
        cr_assert(end != p && (*end == '\0' || *end == ' '), "not a number at \"%s\"", p);
        cr_assert_lt(n, max);
        cr_expect(isfinite(x) && x <= 0.0, "not a log-probability: %g", x);
        v[n++] = x;
        p = end;
    }
    return n;
}

/* ---- translate: success ------------------------------------------------------------ */

Test(cli, translate_writes_one_line_per_input_line)
{
    test_run r = translate("4 5 6\n7 8\n1 2 3 4 5 6 7 8 9 10\n0\n10 9\n5\n6 6 6\n");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 7, "stdout: %s", r.out);
    long ids[MAX_POSITIONS];
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        expect_translation(lines[i], ids);
        size_t j = 0;
        while (j < i && strcmp(lines[j], lines[i]) != 0)
            j++;
        distinct += j == i;
    }
    /* PyTorch gives 6 different lines for this model: the source matters. */
    cr_expect_geq(distinct, 4, "the output hardly depends on the source: %s", r.out);
    free_lines(lines, n);
    test_run_free(&r);
}

Test(cli, translate_reads_the_last_line_without_newline)
{
    test_run with = translate("4 5 6\n7 8\n");
    test_run without = translate("4 5 6\n7 8");
    expect_success(&with);
    expect_success(&without);
    cr_expect_str_eq(without.out, with.out);
    test_run_free(&with);
    test_run_free(&without);
}

Test(cli, crlf_and_runs_of_spaces_are_accepted)
{
    test_run plain = translate("4 5 6\n7 8 9\n");
    test_run crlf = translate("4 5 6\r\n7 8 9\r\n");
    test_run spaces = translate("4   5  6\n7  8     9\n");
    expect_success(&plain);
    expect_success(&crlf);
    expect_success(&spaces);
    cr_expect_eq(count_lines(&plain), 2);
    cr_expect_str_eq(crlf.out, plain.out, "CRLF changed the output");
    cr_expect_str_eq(spaces.out, plain.out, "runs of spaces changed the output");
    test_run_free(&plain);
    test_run_free(&crlf);
    test_run_free(&spaces);
}

Test(cli, batch_and_threads_do_not_change_the_output)
{
    const char *input = "4 5 6\n7 8\n1 2 3 4 5 6 7 8 9 10\n0\n10 9\n";
    test_run one = translate(input);
    test_run batched = translate(input, "--batch", "3", "--threads", "2");
    expect_success(&one);
    expect_success(&batched);
    cr_expect_eq(count_lines(&one), 5);
    cr_expect_str_eq(batched.out, one.out);
    test_run_free(&one);
    test_run_free(&batched);
}

Test(cli, source_of_exactly_max_positions_tokens)
{
    test_run r = translate("1 2 3 4 5 6 7 8 9 10 1 2 3 4 5 6\n");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 1);
    test_run_free(&r);
}

Test(cli, max_len_limits_the_output)
{
    test_run r = translate("4 5 6\n7 8\n1 2 3\n", "--max-len", "1");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 3);
    long ids[MAX_POSITIONS];
    for (size_t i = 0; i < n; i++)
        cr_expect_leq(expect_translation(lines[i], ids), 1, "\"%s\" exceeds --max-len 1", lines[i]);
    free_lines(lines, n);
    test_run_free(&r);
}

/* Values that are multiples of 1/256 are exact in F16 and BF16, so widening
 * at load must reproduce the F32 model's output exactly. */
Test(cli, half_precision_weights_match_f32)
{
    const char *input = "4 5 6\n7 8\n1 2 3 4 5 6 7 8 9 10\n";
    test_run f32 = translate(input);
    expect_success(&f32);
    for (size_t i = 0; i < model->n_tensors; i++)
        mw_set_dtype(model, model->tensors[i].name, i % 2 ? "F16" : "BF16");
    mw_write(model, dir);
    test_run half = translate(input);
    expect_success(&half);
    cr_expect_str_eq(half.out, f32.out);
    test_run_free(&f32);
    test_run_free(&half);
}

/* The same exactness for the bf16 compute type: rounding values that
 * bfloat16 holds exactly changes nothing, so the output must be f32's. */
Test(cli, compute_type_bf16_on_exact_weights_matches_f32)
{
    const char *input = "4 5 6\n7 8\n1 2 3 4 5 6 7 8 9 10\n";
    test_run f32 = translate(input);
    expect_success(&f32);
    test_run bf16 = translate(input, "--compute-type", "bf16", "--beam", "1");
    expect_success(&bf16);
    cr_expect_str_eq(bf16.out, f32.out);
    test_run_free(&bf16);

    char *const env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_COMPUTE_TYPE=bf16", NULL};
    test_run from_env = run_env(input, env, "translate", "-m", dir, NULL);
    expect_success(&from_env);
    cr_expect_str_eq(from_env.out, f32.out);
    test_run_free(&from_env);
    test_run_free(&f32);

    test_run s32 = run("4 5 6\t7 8 9\n", "score", "-m", dir);
    test_run s16 = run("4 5 6\t7 8 9\n", "score", "-m", dir, "--compute-type", "bf16");
    expect_success(&s32);
    expect_success(&s16);
    cr_expect_str_eq(s16.out, s32.out);
    test_run_free(&s32);
    test_run_free(&s16);
}

static const char *golden_model(void);

/* int8 changes the values (weights and activations are quantized), so only
 * the form of the output is checked here; its accuracy is run-set.sh's. */
Test(cli, compute_type_int8_translates_and_scores)
{
    test_run r = translate("4 5 6\n7 8\n", "--compute-type", "int8");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 2, "stdout: %s", r.out);
    test_run_free(&r);
    r = run("4 5 6\t7 8 9\n", "score", "-m", dir, "--compute-type", "int8");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 1, "stdout: %s", r.out);
    test_run_free(&r);
    r = run("", "bench", "--model", golden_model(), "--case", "greedy", "--repeat", "1",
            "--compute-type", "int8");
    expect_success(&r);
    cr_expect(strstr(r.out, " compute_type=int8 ") != NULL, "\"%s\"", r.out);
    test_run_free(&r);
}

Test(cli, compute_type_errors)
{
    test_run r = translate("4 5\n", "--compute-type", "fp16");
    expect_failure(&r, "--compute-type", "'fp16'", 0);
    test_run_free(&r);


    char *const env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_COMPUTE_TYPE=double", NULL};
    r = run_env("4 5\n", env, "score", "-m", dir, NULL);
    expect_failure(&r, "TESSERA_COMPUTE_TYPE", "'double'", 0);
    test_run_free(&r);
    r = run_env("", env, "info", NULL);
    expect_failure(&r, "TESSERA_COMPUTE_TYPE", "'double'", 0);
    test_run_free(&r);

    r = translate("4 5\n", "--compute-type", "INT8");
    expect_failure(&r, "--compute-type", "'INT8'", 0);
    test_run_free(&r);

    r = run("", "bench", "--compute-type", "half");
    expect_failure(&r, "--compute-type", "'half'", 0);
    test_run_free(&r);
}

Test(cli, optional_tensors_are_accepted)
{
    mw_add_optional_tensors(model);
    mw_add(model, "transformer.encoder.layers.7.linear1.weight", 2, (size_t[]){3, 3});
    mw_write(model, dir);
    test_run r = translate("4 5 6\n");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 1);
    test_run_free(&r);
}

/* ---- score: success ---------------------------------------------------------------- */

Test(cli, score_writes_tgt_len_plus_one_values)
{
    test_run r = score("4 5 6\t7 8\n4\t\n1 2\t0 1 2 3 4 5 6 7 8 9 10 11 12\n");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 3, "stdout: %s", r.out);
    static const int expected[] = {3, 1, 14};
    double v[MAX_POSITIONS + 1];
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(parse_scores(lines[i], v, MAX_POSITIONS + 1), expected[i], "line %zu: \"%s\"",
                     i + 1, lines[i]);
    free_lines(lines, n);
    test_run_free(&r);
}

Test(cli, score_accepts_crlf)
{
    test_run lf = score("4 5 6\t7 8\n");
    test_run crlf = score("4 5 6\t7 8\r\n");
    expect_success(&lf);
    expect_success(&crlf);
    cr_expect_str_eq(crlf.out, lf.out);
    test_run_free(&lf);
    test_run_free(&crlf);
}

Test(cli, target_of_max_positions_minus_one_tokens)
{
    test_run r = score("4 5\t1 2 3 4 5 6 7 8 9 10 11 12 0 1 2\n");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 1);
    double v[MAX_POSITIONS + 1];
    cr_expect_eq(parse_scores(lines[0], v, MAX_POSITIONS + 1), MAX_POSITIONS);
    free_lines(lines, n);
    test_run_free(&r);
}

/* Greedy decoding picks the most likely token at each step, so scoring its
 * own output must give every token (and the final EOS, when the output ended
 * with it) a probability of at least 1 / TGT_VOCAB. */
Test(cli, greedy_tokens_score_as_argmax)
{
    static const char *const sources[] = {"4 5 6", "7 8", "1 2 3 4 5 6 7 8 9 10", "0"};
    char input[512] = "", pairs[1024] = "";
    for (size_t i = 0; i < 4; i++) {
        strcat(input, sources[i]);
        strcat(input, "\n");
    }
    test_run tr = translate(input);
    expect_success(&tr);
    char *lines[MAX_LINES];
    size_t n = output_lines(&tr, lines, MAX_LINES);
    cr_assert_eq(n, 4);
    int lens[4];
    long ids[MAX_POSITIONS];
    for (size_t i = 0; i < n; i++) {
        lens[i] = expect_translation(lines[i], ids);
        snprintf(pairs + strlen(pairs), sizeof pairs - strlen(pairs), "%s\t%s\n", sources[i],
                 lines[i]);
    }
    free_lines(lines, n);

    test_run sc = score(pairs);
    expect_success(&sc);
    n = output_lines(&sc, lines, MAX_LINES);
    cr_assert_eq(n, 4);
    double v[MAX_POSITIONS + 1];
    /* Slack for the scorer's float rounding, far below log(2). */
    const double floor = -log((double)TGT_VOCAB) - 1e-3;
    for (size_t i = 0; i < n; i++) {
        int m = parse_scores(lines[i], v, MAX_POSITIONS + 1);
        cr_assert_eq(m, lens[i] + 1, "line %zu: \"%s\"", i + 1, lines[i]);
        int ended_with_eos = lens[i] < MAX_POSITIONS - 1;
        for (int k = 0; k < m - 1 + ended_with_eos; k++)
            cr_expect_geq(v[k], floor, "line %zu, token %d: log-probability %g is not an argmax",
                          i + 1, k + 1, v[k]);
    }
    free_lines(lines, n);
    test_run_free(&tr);
    test_run_free(&sc);
}

/* ---- --tokens ------------------------------------------------------------------------ */

Test(cli, tokens_map_through_the_vocab_files)
{
    mw_write_vocab(dir, &model->config);
    test_run ids = translate("4 5 6\n7 0\n");
    test_run toks = translate("s4 s5 s6\ns7 no-such-token\n", "--tokens");
    expect_success(&ids);
    expect_success(&toks);
    /* The same sentences (an unknown token is unk_id 0), as "t<id>" tokens. */
    char expected[1024] = "";
    for (const char *p = ids.out; *p; p++) {
        if (*p >= '0' && *p <= '9' && (p == ids.out || p[-1] == ' ' || p[-1] == '\n'))
            strcat(expected, "t");
        strncat(expected, p, 1);
    }
    cr_expect_str_eq(toks.out, expected);
    test_run_free(&ids);
    test_run_free(&toks);
}

Test(cli, tokens_without_vocab_files)
{
    test_run r = translate("s4 s5\n", "--tokens");
    expect_failure(&r, "vocab", NULL, 0);
    test_run_free(&r);
}

/* Vocabulary shortlists: the output keeps to a sentence's candidates (the
 * map's for its source pieces, and the specials: unk 0, pad 1, bos 2, eos
 * 3), and every misuse of the flags is one line naming it. */
Test(cli, shortlist_flags)
{
    char *vmap = mw_path(dir, "map.txt"); /* not vmap.txt: --use-vmap finds none */
    test_run r = translate("4 5\n", "--vmap", vmap);
    expect_failure(&r, "--vmap", "vocab.src.txt", 0); /* pieces need the vocabularies */
    test_run_free(&r);
    mw_write_vocab(dir, &model->config);
    static const char map[] = "\tt9\ns4\tt5 t6\n";
    test_write_file(vmap, map, strlen(map));
    r = translate("4 5\n4\n7\n", "--vmap", vmap, "--max-len", "8");
    expect_success(&r);
    for (char *p = r.out, *end; *p; p = end) { /* ids 0-4 and 9; 5 and 6 after source 4 */
        long id = strtol(p, &end, 10);
        if (end == p) {
            end = p + 1;
            continue;
        }
        cr_assert((id >= 0 && id <= 6) || id == 9, "output '%s' leaves the candidates", r.out);
    }
    test_run_free(&r);
    static const struct {
        const char *flag, *value, *flag2, *value2, *needle, *needle2;
    } bad[] = {
        {"--vmap", "DIR/nowhere.txt", NULL, NULL, "nowhere.txt", "cannot open"},
        {"--vmap", "DIR/map.txt", "--shortlist", "DIR/map.txt", "give one of them", NULL},
        {"--shortlist-best", "3", NULL, NULL, "need --shortlist FILE", NULL},
        {"--shortlist", "DIR/map.txt", "--shortlist-threshold", "2", "--shortlist-threshold",
         "out of range"},
        {"--use-vmap", NULL, NULL, NULL, "--use-vmap", "has no vmap.txt"},
        {"--shortlist", "DIR/map.txt", NULL, NULL, "map.txt: line 1", "<probability>"},
        {"--vmap", "DIR/bad.txt", NULL, NULL, "bad.txt: line 2 has no tab", NULL},
    };
    char *bad_file = mw_path(dir, "bad.txt");
    static const char no_tab[] = "\tt4\ns4 t5\n";
    test_write_file(bad_file, no_tab, strlen(no_tab));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char value[4096], value2[4096];
        const char *args[6] = {bad[i].flag, NULL, NULL, NULL, NULL, NULL};
        size_t n = 1;
        if (bad[i].value) {
            snprintf(value, sizeof value, "%s", bad[i].value);
            if (strncmp(value, "DIR/", 4) == 0)
                snprintf(value, sizeof value, "%s/%s", dir, bad[i].value + 4);
            args[n++] = value;
        }
        if (bad[i].flag2) {
            args[n++] = bad[i].flag2;
            snprintf(value2, sizeof value2, "%s", bad[i].value2);
            if (strncmp(value2, "DIR/", 4) == 0)
                snprintf(value2, sizeof value2, "%s/%s", dir, bad[i].value2 + 4);
            args[n++] = value2;
        }
        r = translate("4 5\n", args[0], args[1], args[2], args[3]);
        expect_failure(&r, bad[i].needle, bad[i].needle2, 0);
        test_run_free(&r);
    }
    r = score("4 5\t6\n", "--vmap", vmap);
    expect_failure(&r, "--vmap", "does not apply", 0);
    test_run_free(&r);
    free(vmap);
    free(bad_file);
}

/* A vocabulary path that is a FIFO or a directory is refused at once (a plain
 * open of a FIFO would wait for a writer forever); so is a config.json that
 * is one. */
Test(cli, model_files_that_are_no_regular_files, .timeout = 60)
{
    mw_write_vocab(dir, &model->config);
    char *vocab = mw_path(dir, "vocab.src.txt");
    cr_assert_eq(remove(vocab), 0);
    cr_assert_eq(mkfifo(vocab, 0600), 0);
    test_run r = translate("s4 s5\n", "--tokens");
    expect_failure(&r, "vocab.src.txt", "not a regular file", 0);
    test_run_free(&r);
    cr_assert_eq(remove(vocab), 0);
    cr_assert_eq(mkdir(vocab, 0700), 0);
    r = translate("s4 s5\n", "--tokens");
    expect_failure(&r, "vocab.src.txt", "is a directory", 0);
    test_run_free(&r);
    free(vocab);

    char *config = mw_path(dir, "config.json");
    cr_assert_eq(remove(config), 0);
    cr_assert_eq(mkfifo(config, 0600), 0);
    r = translate("4 5\n");
    expect_failure(&r, "config.json", "not a regular file (a FIFO)", 0);
    test_run_free(&r);
    free(config);
}

/* ---- bad input lines ----------------------------------------------------------------- */

Test(cli, source_id_out_of_range)
{
    test_run r = translate("4 5\n6 7\n1 11 2\n3\n");
    expect_failure(&r, "line 3", NULL, 2);
    test_run_free(&r);
}

Test(cli, source_id_out_of_range_in_a_batch)
{
    test_run r = translate("4 5\n6 7\n1 11 2\n3\n", "--batch", "4");
    expect_failure(&r, "line 3", NULL, 2);
    test_run_free(&r);
}

Test(cli, target_id_out_of_range)
{
    test_run r = score("4 5\t6 7\n1 2\t1 13 2\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
}

Test(cli, negative_id)
{
    test_run r = translate("4 -1 5\n");
    expect_failure(&r, "line 1", NULL, 0);
    test_run_free(&r);
    r = score("4 5\t6 7\n4 5\t6 -7\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
}

Test(cli, non_numeric_token)
{
    static const char *const inputs[] = {"4 5\n4 x 5\n", "4 5\n4 5x\n", "4 5\n4\t5\n",
                                         "4 5\n4 5.0\n", "4 5\n99999999999999999999\n"};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
        test_run r = translate(inputs[i]);
        expect_failure(&r, "line 2", NULL, 1);
        test_run_free(&r);
    }
}

/* What an error line quotes of the input is safe to log: control bytes and
 * bytes outside printable ASCII as \xNN (a terminal escape cannot recolour
 * or forge the line), at most 40 bytes then "...", and numbers as typed
 * (not the value a saturating parse made of them). */
Test(cli, quoted_input_is_escaped_cut_and_as_typed)
{
    test_run r = translate("4 5\nab\x1b[31mc\n");
    expect_failure(&r, "line 2: 'ab\\x1b[31mc' is not a source token id", NULL, 1);
    test_run_free(&r);
    r = translate("4 5\n4 \xff\xfe\n");
    expect_failure(&r, "line 2: '\\xff\\xfe' is not a source token id", NULL, 1);
    test_run_free(&r);
    r = translate("99999999999999999999999 5\n");
    expect_failure(&r, "source token id 99999999999999999999999 out of range [0, 11)", NULL, 0);
    test_run_free(&r);
    r = translate("-99999999999999999999999\n");
    expect_failure(&r, "source token id -99999999999999999999999 out of range", NULL, 0);
    test_run_free(&r);
    char line[128];
    memset(line, 'x', 60);
    strcpy(line + 60, "\n");
    r = translate(line);
    char want[128];
    snprintf(want, sizeof want, "'%.40s...' is not a source token id", line);
    expect_failure(&r, want, NULL, 0);
    test_run_free(&r);
    r = score("4 5\t6 \x01\n");
    expect_failure(&r, "'\\x01' is not a target token id", NULL, 0);
    test_run_free(&r);
}

/* A NUL byte inside a line is refused by line number, in id and in token
 * mode; invalid UTF-8 in token mode is a token like any other (not in the
 * vocabulary: unk_id), as an unknown token is. */
Test(cli, nul_bytes_and_invalid_utf8)
{
    char *argv[] = {(char *)test_tessera_path(), "translate", "-m", dir, NULL};
    static const char with_nul[] = "4 5\n4 \0 5\n6\n";
    test_run r = test_run_command_bytes(argv, with_nul, sizeof with_nul - 1, one_thread);
    expect_failure(&r, "line 2: contains a NUL byte", NULL, 1);
    test_run_free(&r);

    mw_write_vocab(dir, &model->config);
    char *targv[] = {(char *)test_tessera_path(), "translate", "-m", dir, "--tokens", NULL};
    static const char tokens_nul[] = "s4 s\0 5\n";
    r = test_run_command_bytes(targv, tokens_nul, sizeof tokens_nul - 1, one_thread);
    expect_failure(&r, "line 1: contains a NUL byte", NULL, 0);
    test_run_free(&r);
    test_run bad = translate("s4 \xc3\x28 s5 \xff\n", "--tokens");
    test_run unk = translate("s4 no-such-token s5 s0\n", "--tokens");
    expect_success(&bad);
    expect_success(&unk);
    cr_expect_str_eq(bad.out, unk.out, "invalid UTF-8 should translate as unknown tokens");
    test_run_free(&bad);
    test_run_free(&unk);
}

/* The largest resident size of any child this process has waited for, KiB. */
static long children_max_rss_kib(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
    return ru.ru_maxrss;
}

/* Input is read as it is translated: 100 000 short lines need no more
 * memory than 1 000 (2 MB of margin, against 3 MB of input), and one line of 1 MB is refused by
 * its length in bounded memory. Resident sizes come from getrusage of the
 * children, in order of growing input, so each run's peak shows as a rise. */
Test(cli, many_lines_and_a_megabyte_line_in_bounded_memory, .timeout = 300)
{
#ifdef TEST_UNDER_SANITIZER
    cr_skip_test("built with a sanitizer, whose quarantine of freed memory makes the resident "
                 "sizes its own");
#endif
    if (getenv("TESSERA_TEST_RUNNER"))
        cr_skip_test("tessera runs under an emulator ($TESSERA_TEST_RUNNER): 100 000 sentences "
                     "would take minutes there");
    /* 3 MB of input in all: holding it at once would show. */
    const char *sentence = "4 5 6 7 8 9 10 4 5 6 7 8 9 10\n";
    size_t slen = strlen(sentence), many = 100000;
    char *input = malloc(many * slen + 1);
    cr_assert_not_null(input);
    for (size_t i = 0; i < many; i++)
        memcpy(input + i * slen, sentence, slen);
    input[many * slen] = '\0';

    test_run small = translate(input + (many - 1000) * slen, "--max-len", "2");
    expect_success(&small);
    long rss_small = children_max_rss_kib();
    test_run large = translate(input, "--max-len", "2");
    expect_success(&large);
    size_t newlines = 0;
    for (const char *p = large.out; (p = strchr(p, '\n')); p++)
        newlines++;
    cr_expect_eq(newlines, many);
    long rss_large = children_max_rss_kib();
    cr_log_info("max RSS: 1 000 lines %ld KiB, 100 000 lines %ld KiB", rss_small, rss_large);
    cr_expect_leq(rss_large, rss_small + 2 * 1024,
                  "100 000 lines took %ld KiB against %ld KiB for 1 000", rss_large, rss_small);
    test_run_free(&small);
    test_run_free(&large);
    free(input);

    /* 1 MB of ids on one line, after a good line. */
    size_t mb = 1 << 20;
    char *line = malloc(mb + 16);
    cr_assert_not_null(line);
    strcpy(line, "4 5\n");
    for (size_t i = 4; i + 2 < mb; i += 2)
        memcpy(line + i, "5 ", 2);
    strcpy(line + mb - 2, "5\n");
    test_run r = translate(line);
    expect_failure(&r, "line 2", "max_positions", 1);
    long rss_line = children_max_rss_kib();
    cr_log_info("max RSS after a 1 MB line: %ld KiB", rss_line);
    cr_expect_leq(rss_line, rss_large + 16 * 1024, "a 1 MB line took %ld KiB", rss_line);
    test_run_free(&r);
    free(line);
}

Test(cli, source_longer_than_max_positions)
{
    test_run r = translate("4 5\n1 2 3 4 5 6 7 8 9 10 1 2 3 4 5 6 7\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
}

Test(cli, empty_source_line)
{
    test_run r = translate("4 5\n\n6\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
    r = score("4 5\t6\n\t6 7\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
}

Test(cli, score_line_without_tab)
{
    test_run r = score("4 5\t6\n4 5\t6\n4 5 6\n");
    expect_failure(&r, "line 3", NULL, 2);
    test_run_free(&r);
}

Test(cli, score_target_longer_than_max_positions)
{
    /* [bos] + 16 target ids is 17 positions. */
    test_run r = score("4\t5\n4 5\t1 2 3 4 5 6 7 8 9 10 11 12 0 1 2 4\n");
    expect_failure(&r, "line 2", NULL, 1);
    test_run_free(&r);
}

/* ---- bad models ---------------------------------------------------------------------- */

Test(cli, missing_model_dir)
{
    test_run r = run("4 5\n", "translate", "-m", "/nonexistent/tessera-model");
    expect_failure(&r, "/nonexistent/tessera-model", NULL, 0);
    test_run_free(&r);
}

Test(cli, missing_config_json)
{
    char *path = mw_path(dir, "config.json");
    cr_assert_eq(unlink(path), 0);
    free(path);
    test_run r = translate("4 5\n");
    expect_failure(&r, "config.json", NULL, 0);
    test_run_free(&r);
}

Test(cli, missing_model_safetensors)
{
    char *path = mw_path(dir, "model.safetensors");
    cr_assert_eq(unlink(path), 0);
    free(path);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors", NULL, 0);
    test_run_free(&r);
}

Test(cli, config_key_missing)
{
    mw_set_config_text(model, "{\"n_heads\": 2, \"d_ff\": 12, \"n_encoder_layers\": 1,"
                              " \"n_decoder_layers\": 1, \"src_vocab_size\": 11,"
                              " \"tgt_vocab_size\": 13, \"max_positions\": 16}");
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "config.json: key 'd_model'", NULL, 0);
    test_run_free(&r);
}

Test(cli, config_n_heads_not_dividing)
{
    model->config.n_heads = 3;
    mw_write(model, dir);
    test_run r = score("4 5\t6\n");
    expect_failure(&r, "config.json: key 'n_heads'", NULL, 0);
    test_run_free(&r);
}

Test(cli, config_not_json)
{
    mw_set_config_text(model, "{\n\"d_model\": 8,\n");
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "config.json", NULL, 0);
    test_run_free(&r);
}

Test(cli, missing_tensor)
{
    mw_drop(model, "transformer.decoder.layers.0.norm3.weight");
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors", "'transformer.decoder.layers.0.norm3.weight'", 0);
    test_run_free(&r);
}

/* A config that declares far more layers than the file holds fails at once,
 * naming the first missing tensor, before anything is sized from it (not
 * "out of memory" after trying to allocate 16 777 216 layers): the whole run
 * stays under 50 MB resident. Under a sanitizer or an emulator the resident
 * size is theirs, and not checked. */
Test(cli, config_with_more_layers_than_the_file, .timeout = 30)
{
    model->config.n_encoder_layers = 16777216;
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors",
                   "tensor 'transformer.encoder.layers.1.self_attn.in_proj_bias': missing", 0);
    test_run_free(&r);
    long rss = children_max_rss_kib();
    cr_log_info("max RSS of the run: %ld KiB", rss);
#ifndef TEST_UNDER_SANITIZER
    if (!getenv("TESSERA_TEST_RUNNER"))
        cr_expect_lt(rss, 50 * 1024, "the failing load took %ld KiB", rss);
#endif
}

/* A NaN or an infinity in the weights is an error at load that names the
 * tensor and the first bad value, whatever the compute type. */
Test(cli, weights_must_be_finite)
{
    mw_find(model, "transformer.decoder.layers.0.linear1.weight")->values[13] = NAN;
    mw_write(model, dir);
    static const char *const types[] = {"f32", "bf16", "int8"};
    for (size_t i = 0; i < 3; i++) {
        test_run r = translate("4 5\n", "--compute-type", types[i]);
        expect_failure(&r, "tensor 'transformer.decoder.layers.0.linear1.weight': value 13 is NaN",
                       NULL, 0);
        test_run_free(&r);
    }
    mw_find(model, "transformer.decoder.layers.0.linear1.weight")->values[13] = 0.5f;
    mw_find(model, "src_tok_emb.embedding.weight")->values[20] = -INFINITY;
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "tensor 'src_tok_emb.embedding.weight': value 20 is -inf", NULL, 0);
    test_run_free(&r);
    mw_set_dtype(model, "src_tok_emb.embedding.weight", "F16");
    mw_write(model, dir);
    r = translate("4 5\n");
    expect_failure(&r, "tensor 'src_tok_emb.embedding.weight': value 20 is -inf", NULL, 0);
    test_run_free(&r);
}

Test(cli, wrong_shape)
{
    mw_set_shape(model, "transformer.encoder.layers.0.linear2.weight", 2, (size_t[]){12, 8});
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors", "'transformer.encoder.layers.0.linear2.weight'", 0);
    test_run_free(&r);
}

Test(cli, wrong_dtype)
{
    mw_set_dtype(model, "generator.weight", "I32");
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "'generator.weight'", "I32", 0);
    test_run_free(&r);
}

/* ---- I8 weights with per-row scales (docs/model-format.md) ------------------------------ */

/* An I8 model gives exactly the output of the F32 model holding q * scale,
 * each product rounded once: what loading dequantizes to. */
Test(cli, i8_weights_with_scales_match_their_f32_values)
{
    const char *input = "4 5 6\n7 8\n1 2 3 4 5 6 7 8 9 10\n";
    size_t n = model->n_tensors, quantized = 0;
    for (size_t i = 0; i < n; i++)
        if (mw_is_linear_weight(&model->tensors[i])) {
            mw_quantize_i8(model, model->tensors[i].name);
            quantized++;
        }
    cr_assert_geq(quantized, 10, "the tiny model should have 10 linear weights or more");
    mw_write(model, dir);
    test_run i8 = translate(input);
    expect_success(&i8);
    test_run i8_score = run("4 5 6\t7 8 9\n", "score", "-m", dir);
    expect_success(&i8_score);

    for (size_t i = 0; i < n; i++) {
        mw_tensor *w = &model->tensors[i];
        if (strcmp(w->dtype, "I8") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s_scale", w->name);
        const float *scale = mw_find(model, name)->values;
        size_t cols = w->shape[1];
        for (size_t j = 0; j < w->count; j++)
            w->values[j] = (float)lroundf(w->values[j] * 100.0f) * scale[j / cols];
        mw_set_dtype(model, w->name, "F32");
    }
    mw_write(model, dir);
    test_run f32 = translate(input);
    expect_success(&f32);
    test_run f32_score = run("4 5 6\t7 8 9\n", "score", "-m", dir);
    expect_success(&f32_score);
    cr_expect_str_eq(i8.out, f32.out);
    cr_expect_str_eq(i8_score.out, f32_score.out);
    test_run_free(&i8);
    test_run_free(&i8_score);
    test_run_free(&f32);
    test_run_free(&f32_score);
}

/* One broken I8 model per case, each error naming the culprit tensor. */
Test(cli, i8_weights_are_checked)
{
    static const char *const w = "transformer.decoder.layers.0.linear1.weight";
    static const char *const s = "transformer.decoder.layers.0.linear1.weight_scale";
    static const struct {
        const char *what;
        const char *needle;
    } cases[] = {
        {"no scale", "'transformer.decoder.layers.0.linear1.weight'"},
        {"scale F16", "'transformer.decoder.layers.0.linear1.weight_scale'"},
        {"scale shape", "'transformer.decoder.layers.0.linear1.weight_scale'"},
        {"scale zero", "scale 1 is 0"},
        {"scale negative", "scale 1 is -"},
        {"scale NaN", "scale 1 is nan"},
        {"scale inf", "scale 1 is inf"},
        {"I8 bias", "'generator.bias'"},
        {"I8 norm", "'transformer.encoder.layers.0.norm1.weight'"},
        {"I8 embedding", "'src_tok_emb.embedding.weight'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        mw_model_free(model);
        model = mw_model_tiny(15);
        if (c > 0 && c < 7)
            mw_quantize_i8(model, w);
        float *scale = c > 0 && c < 7 ? mw_find(model, s)->values : NULL;
        switch (c) {
        case 0: mw_set_dtype(model, w, "I8"); break;
        case 1: mw_set_dtype(model, s, "F16"); break;
        case 2: mw_set_shape(model, s, 1, (size_t[]){3}); break;
        case 3: scale[1] = 0.0f; break;
        case 4: scale[1] = -0.5f; break;
        case 5: scale[1] = NAN; break;
        case 6: scale[1] = INFINITY; break;
        case 7: mw_set_dtype(model, "generator.bias", "I8"); break;
        case 8: mw_set_dtype(model, "transformer.encoder.layers.0.norm1.weight", "I8"); break;
        case 9: mw_set_dtype(model, "src_tok_emb.embedding.weight", "I8"); break;
        }
        mw_write(model, dir);
        /* f32 dequantizes the I8 weights, int8 takes them as they are:
         * both check them alike. */
        for (int as_int8 = 0; as_int8 < 2; as_int8++) {
            test_run r = as_int8 ? translate("4 5\n", "--compute-type", "int8") : translate("4 5\n");
            cr_expect(strstr(r.err, cases[c].needle) != NULL,
                      "%s%s: stderr \"%s\" should hold \"%s\"", cases[c].what,
                      as_int8 ? " (int8)" : "", r.err, cases[c].needle);
            expect_failure(&r, cases[c].needle, NULL, 0);
            test_run_free(&r);
        }
    }
}

Test(cli, overlapping_tensors)
{
    mw_overlap(model, "src_tok_emb.embedding.weight", "generator.bias");
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors", "'generator.bias'", 0);
    test_run_free(&r);
}

Test(cli, truncated_weights)
{
    model->truncate_bytes = 5;
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "model.safetensors", "'generator.bias'", 0);
    test_run_free(&r);
}

Test(cli, pos_embedding_too_short)
{
    mw_add_optional_tensors(model);
    mw_set_shape(model, "positional_encoding.pos_embedding", 3, (size_t[]){MAX_POSITIONS - 1, 1, 8});
    mw_write(model, dir);
    test_run r = translate("4 5\n");
    expect_failure(&r, "'positional_encoding.pos_embedding'", NULL, 0);
    test_run_free(&r);
}

/* ---- models by name, bench on a model ------------------------------------------------- */

/* A model from files with vocabulary files: max_positions 40, source vocabulary 41. */
static const char *golden_model(void)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/tests/golden/postnorm-silu-bf16", test_srcdir());
    return path;
}

/* -m NAME finds NAME in a directory of TESSERA_MODELS_PATH (after skipping
 * one that does not exist) and behaves as -m with its path, vocabularies too. */
Test(cli, model_found_by_name_in_the_models_path)
{
    char *models = test_make_temp_dir();
    char *link = mw_path(models, "tessera-test-model");
    char *target = realpath(golden_model(), NULL);
    cr_assert(target && symlink(target, link) == 0, "cannot link %s: %s", link, strerror(errno));
    char models_path[4200];
    snprintf(models_path, sizeof models_path,
             "TESSERA_MODELS_PATH=/nonexistent/tessera-models:%s/", models);
    char *const env[] = {"TESSERA_NUM_THREADS=1", models_path, NULL};

    const char *ids = "4 5 6\n7 8 9 10\n";
    test_run by_path = run(ids, "translate", "-m", target);
    test_run by_name = run_env(ids, env, "translate", "-m", "tessera-test-model", NULL);
    expect_success(&by_path);
    expect_success(&by_name);
    cr_expect_eq(count_lines(&by_path), 2);
    cr_expect_str_eq(by_name.out, by_path.out);
    test_run_free(&by_path);
    test_run_free(&by_name);

    char *tokens_in = mw_path(golden_model(), "translate.tokens.in");
    char *tokens = test_read_file(tokens_in, NULL);
    cr_assert(tokens, "cannot read %s", tokens_in);
    by_path = run(tokens, "translate", "-m", target, "--tokens");
    by_name = run_env(tokens, env, "translate", "-m", "tessera-test-model", "--tokens", NULL);
    expect_success(&by_path);
    expect_success(&by_name);
    cr_expect_str_eq(by_name.out, by_path.out, "--tokens: the vocabularies differ by name");
    test_run_free(&by_path);
    test_run_free(&by_name);

    free(tokens);
    free(tokens_in);
    free(target);
    free(link);
    test_remove_dir(models);
    free(models);
}

Test(cli, model_name_not_found)
{
    char *const env[] = {"TESSERA_NUM_THREADS=1",
                         "TESSERA_MODELS_PATH=/nonexistent/models-a:/nonexistent/models-b", NULL};
    static const char *const commands[] = {"translate", "score"};
    for (size_t i = 0; i < 2; i++) {
        test_run r = run_env("4 5\t6\n", env, commands[i], "-m", "no-such-tessera-model", NULL);
        expect_failure(&r, "'no-such-tessera-model'",
                       "/nonexistent/models-a, /nonexistent/models-b", 0);
        cr_expect_str_empty(r.out);
        /* ... and the installed models' directory, $(datadir)/tessera/models. */
        cr_expect(strstr(r.err, "/tessera/models") != NULL, "stderr \"%s\" should name %s", r.err,
                  "the installed models' directory");
        test_run_free(&r);
    }
}

/* tgt_tokens=N on a bench line about the golden model; -1 when absent. */
static long bench_tgt_tokens(const char *line)
{
    const char *p = strstr(line, " tgt_tokens=");
    return p ? strtol(p + 12, NULL, 10) : -1;
}

Test(cli, bench_times_a_model_directory)
{
    test_run r = run("", "bench", "--model", golden_model(), "--case", "greedy", "--repeat", "1");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 2, "stdout: %s", r.out);
    /* First the machine's limits, then the case against them. */
    cr_expect(strncmp(lines[0], "limits config=postnorm-silu-bf16 ", 33) == 0, "\"%s\"", lines[0]);
    cr_expect(strstr(lines[0], " f32_gflops=") && strstr(lines[0], " memory_gbps="), "\"%s\"",
              lines[0]);
    cr_expect(strncmp(lines[1], "case=greedy ", 12) == 0, "\"%s\"", lines[1]);
    cr_expect(strstr(lines[1], " config=postnorm-silu-bf16 ") != NULL,
              "the line should name the model: \"%s\"", lines[1]);
    /* The lengths default to min(30, what max_positions 40 allows). */
    cr_expect(strstr(lines[1], " src_len=30 ") && strstr(lines[1], " tgt_len=30 "), "\"%s\"",
              lines[1]);
    long produced = bench_tgt_tokens(lines[1]);
    cr_expect(produced >= 0 && produced <= 30, "tgt_tokens should be in [0, 30]: \"%s\"",
              lines[1]);
    cr_expect(strstr(lines[1], " tok_per_s=") != NULL, "\"%s\"", lines[1]);
    cr_expect(strstr(lines[1], " compute_type=f32 ") != NULL, "\"%s\"", lines[1]);
    /* A real model stops at EOS: its work is what the library counted. */
    cr_expect(strstr(lines[1], " work=counted ") && strstr(lines[1], " serial_pct=") &&
                  strstr(lines[1], " pct_limit="),
              "\"%s\"", lines[1]);
    free_lines(lines, n);
    test_run_free(&r);

    r = run("", "bench", "--model", golden_model(), "--case", "greedy", "--repeat", "1",
            "--compute-type", "bf16");
    expect_success(&r);
    cr_expect(strstr(r.out, " compute_type=bf16 ") != NULL, "\"%s\"", r.out);
    test_run_free(&r);
}

/* The number after " key=" on a line; -1 when absent. */
static double bench_value(const char *line, const char *key)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, " %s=", key);
    const char *p = strstr(line, pattern);
    return p ? strtod(p + strlen(pattern), NULL) : -1.0;
}

/* The load case: one line with the load and the read of the same file
 * (times positive, ratio theirs), not part of 'all', and beside the
 * decoding cases when named with them. */
Test(cli, bench_load_case)
{
    test_run r = run("", "bench", "--model", golden_model(), "--case", "load", "--repeat", "2",
                     "--threads", "2");
    expect_success(&r);
    char *lines[MAX_LINES];
    size_t n = output_lines(&r, lines, MAX_LINES);
    cr_assert_eq(n, 1, "stdout: %s", r.out);
    cr_expect(strncmp(lines[0], "case=load config=postnorm-silu-bf16 ", 36) == 0, "\"%s\"",
              lines[0]);
    cr_expect(strstr(lines[0], " threads=2 ") != NULL, "\"%s\"", lines[0]);
    double load = bench_value(lines[0], "load_ms"), read = bench_value(lines[0], "read_ms");
    double ratio = bench_value(lines[0], "ratio");
    cr_expect(load > 0 && read > 0, "\"%s\"", lines[0]);
    cr_expect(fabs(ratio - load / read) <= 0.01 + 0.02 * ratio, "ratio is load over read: \"%s\"",
              lines[0]);
    struct stat sb;
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", golden_model());
    cr_assert_eq(stat(path, &sb), 0);
    cr_expect(fabs(bench_value(lines[0], "file_mb") - (double)sb.st_size / 1e6) < 0.06,
              "file_mb is the file's size: \"%s\"", lines[0]);
    free_lines(lines, n);
    test_run_free(&r);

    r = run("", "bench", "--model", golden_model(), "--case", "load,greedy", "--repeat", "1");
    expect_success(&r);
    n = output_lines(&r, lines, MAX_LINES);
    cr_expect_eq(n, 3, "the load, the limits, greedy: %s", r.out);
    free_lines(lines, n);
    test_run_free(&r);

    r = run("", "bench", "--model", golden_model(), "--repeat", "1");
    expect_success(&r);
    cr_expect(strstr(r.out, "case=load") == NULL, "'all' leaves load out: %s", r.out);
    test_run_free(&r);
}

Test(cli, bench_lengths_beyond_max_positions)
{
    test_run r = run("", "bench", "--model", golden_model(), "--case", "greedy", "--src-len", "41");
    expect_failure(&r, "--src-len", "40", 0);
    test_run_free(&r);
    /* BOS + target must fit in max_positions. */
    r = run("", "bench", "--model", golden_model(), "--case", "greedy", "--tgt-len", "40");
    expect_failure(&r, "--tgt-len", "39", 0);
    test_run_free(&r);
}

Test(cli, bench_model_and_config_together)
{
    test_run r = run("", "bench", "--model", golden_model(), "--config", "base");
    expect_failure(&r, "--model", "--config", 0);
    test_run_free(&r);
}

/* A configuration that is not built in is named, with the ones that are,
 * before anything runs (here after one that is). */
Test(cli, bench_unknown_config)
{
    test_run r = run("", "bench", "--config", "argos,nllb-600m", "--case", "greedy");
    expect_failure(&r, "--config 'nllb-600m'", "base, big, argos, opus-mt, nllb600m, all", 0);
    test_run_free(&r);
}

/* ---- options and environment ------------------------------------------------------- */

Test(cli, unknown_flag)
{
    test_run r = translate("4 5\n", "--bogus");
    expect_failure(&r, "--bogus", NULL, 0);
    test_run_free(&r);
}

Test(cli, unknown_command)
{
    test_run r = run("", "frobnicate");
    expect_failure(&r, "frobnicate", NULL, 0);
    test_run_free(&r);
}

Test(cli, missing_model_option)
{
    test_run r = run("4 5\n", "translate");
    expect_failure(&r, "-m", NULL, 0);
    test_run_free(&r);
}

Test(cli, bad_beam)
{
    static const char *const values[] = {"0", "-1", "abc", "2x", ""};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        test_run r = translate("4 5\n", "--beam", values[i]);
        expect_failure(&r, "--beam", NULL, 0);
        test_run_free(&r);
    }
}

Test(cli, bad_threads)
{
    static const char *const values[] = {"-1", "abc", "1.5"};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        test_run r = translate("4 5\n", "--threads", values[i]);
        expect_failure(&r, "--threads", NULL, 0);
        test_run_free(&r);
    }
}

Test(cli, n_best_above_beam)
{
    test_run r = translate("4 5\n", "--beam", "2", "--n-best", "3");
    expect_failure(&r, "--n-best", NULL, 0);
    test_run_free(&r);
}

Test(cli, option_value_missing)
{
    test_run r = translate("4 5\n", "--beam");
    expect_failure(&r, "--beam", NULL, 0);
    test_run_free(&r);
}

Test(cli, unknown_isa)
{
    char *const env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_ISA=bogus", NULL};
    test_run r = run_env("4 5\n", env, "translate", "-m", dir, NULL);
    expect_failure(&r, "TESSERA_ISA=bogus", NULL, 0);
    test_run_free(&r);
}

Test(cli, unknown_tuning)
{
    char *const env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_TUNING=bogus", NULL};
    test_run r = run_env("4 5\n", env, "translate", "-m", dir, NULL);
    expect_failure(&r, "TESSERA_TUNING=bogus", NULL, 0);
    test_run_free(&r);
}

Test(cli, bad_placement_settings)
{
    char *const numa_env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_NUMA=bogus", NULL};
    test_run r = run_env("4 5\n", numa_env, "translate", "-m", dir, NULL);
    expect_failure(&r, "TESSERA_NUMA", NULL, 0);
    test_run_free(&r);

    char *const topo_env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_TOPOLOGY=/nonexistent.xml", NULL};
    r = run_env("4 5\n", topo_env, "score", "-m", dir, NULL);
    expect_failure(&r, "TESSERA_TOPOLOGY", NULL, 0);
    test_run_free(&r);

    r = run("4 5\n", "translate", "-m", dir, "--numa", "sideways");
    expect_failure(&r, "--numa", NULL, 0);
    test_run_free(&r);
}

Test(cli, scalar_isa_is_always_available)
{
    char *const env[] = {"TESSERA_NUM_THREADS=1", "TESSERA_ISA=scalar", NULL};
    test_run r = run_env("4 5\n", env, "translate", "-m", dir, NULL);
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 1);
    test_run_free(&r);
}

/* ---- Decoding options (the outputs themselves: test_golden against PyTorch) ---- */

/* Each bad value or combination: one line naming the flag, nothing printed. */
Test(cli, decoding_option_errors)
{
    static const struct {
        const char *flag, *value, *flag2, *value2, *says;
    } cases[] = {
        {"--sampling-topp", "1.5", "--sampling-topk", "0", "--sampling-topp"},
        {"--sampling-topp", "0", "--sampling-topk", "0", "--sampling-topp"},
        {"--sampling-topp", "0.5", NULL, NULL, "--sampling-topp: 0.5 needs --sampling-topk 0 or above 1"},
        {"--sampling-temperature", "0", "--sampling-topk", "0", "--sampling-temperature"},
        {"--sampling-temperature", "2", NULL, NULL, "--sampling-temperature: 2 needs --sampling-topk"},
        {"--sampling-topk", "-1", NULL, NULL, "--sampling-topk"},
        {"--sampling-topk", "5", "--beam", "2", "needs --beam 1"},
        {"--seed", "-1", NULL, NULL, "--seed"},
        {"--seed", "18446744073709551616", NULL, NULL, "--seed"},
        {"--seed", "x", NULL, NULL, "--seed"},
        {"--min-len", "30", "--max-len", "20", "--min-len: 30 is out of range [0, --max-len (20)]"},
        {"--no-repeat-ngram", "2000", NULL, NULL, "--no-repeat-ngram"},
        {"--repetition-penalty", "0", NULL, NULL, "--repetition-penalty"},
        {"--end-token", "13", NULL, NULL, "--end-token: 13 is out of range [-1, 13) (-1: none)"},
        {"--end-token", "-2", NULL, NULL, "--end-token"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_run r = cases[i].flag2
                         ? translate("4 5\n", cases[i].flag, cases[i].value, cases[i].flag2,
                                     cases[i].value2)
                         : translate("4 5\n", cases[i].flag, cases[i].value);
        expect_failure(&r, cases[i].says, NULL, 0);
        test_run_free(&r);
    }
    test_run r = score("4 5\t6\n", "--seed", "1");
    expect_failure(&r, "'--seed' does not apply", NULL, 0);
    test_run_free(&r);
}

/* --prefix: the line's target prefix is checked where it is read, so the
 * lines before it are printed and the error names its line. */
Test(cli, prefix_errors_name_the_line)
{
    static const struct {
        const char *input, *says;
    } cases[] = {
        {"4 5\t1\n4 5\n", "line 2: expected SOURCE<TAB>PREFIX (--prefix), found no tab"},
        {"4 5\t1\n4 5\t1\t2\n", "line 2: expected SOURCE<TAB>PREFIX (--prefix), found more"},
        {"4 5\t1\n4 5\t13\n", "line 2"},
        {"4 5\t1\n4 5\t1 3\n", "line 2: target prefix: holds the ending token 3 (eos_id)"},
        {"4 5\t1\n4 5\t1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", "line 2: target prefix: 16 tokens"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_run r = translate(cases[i].input, "--prefix");
        expect_failure(&r, cases[i].says, NULL, 1);
        test_run_free(&r);
    }
    test_run r = translate("4 5\t1 7\n", "--prefix", "--end-token", "7");
    expect_failure(&r, "line 1: target prefix: holds the ending token 7 (--end-token)", NULL, 0);
    test_run_free(&r);
}

/* A forced prefix starts the output; an empty one changes nothing. */
Test(cli, prefix_starts_the_output)
{
    test_run plain = translate("4 5 6\n", "--max-len", "8");
    expect_success(&plain);
    test_run empty = translate("4 5 6\t\n", "--prefix", "--max-len", "8");
    expect_success(&empty);
    cr_expect_str_eq(empty.out, plain.out);
    test_run forced = translate("4 5 6\t9 8 7\n", "--prefix", "--max-len", "8");
    expect_success(&forced);
    cr_expect(strncmp(forced.out, "9 8 7", 5) == 0 && (forced.out[5] == ' ' || forced.out[5] == '\n'),
              "output \"%s\" should start with the prefix", forced.out);
    test_run_free(&plain);
    test_run_free(&empty);
    test_run_free(&forced);
}

/* Checks one output line of --alignments: per hypothesis, IDS, then (with
 * n-best) SCORE, then I-J pairs, one per id, J counting from 0, I inside a
 * source of src_len tokens. Returns the number of hypotheses. */
static size_t expect_aligned_line(const char *line, size_t src_len, int with_score)
{
    char *copy = strdup(line), *rest = copy;
    cr_assert(copy);
    size_t hyps = 0;
    while (rest) { /* strsep keeps empty fields: an empty hypothesis has two */
        char *ids = strsep(&rest, "\t");
        if (with_score)
            cr_assert_not_null(strsep(&rest, "\t"), "no score in \"%s\"", line);
        char *pairs = strsep(&rest, "\t");
        cr_assert_not_null(pairs, "no alignment in \"%s\"", line);
        size_t n_ids = 0, j = 0;
        for (char *p = ids; *p;) {
            char *start = p;
            strtol(p, &p, 10);
            cr_assert(p != start, "not an id at \"%s\"", start);
            n_ids++;
            while (*p == ' ')
                p++;
        }
        for (char *p = pairs; *p; j++) {
            char *start = p;
            long i = strtol(p, &p, 10);
            cr_assert(p != start && *p == '-', "pair %zu of \"%s\" is not I-J", j, pairs);
            long jj = strtol(p + 1, &p, 10);
            cr_expect(i >= 0 && (size_t)i < src_len, "source position %ld of %zu", i, src_len);
            cr_expect_eq((size_t)jj, j, "pairs must count the target tokens: \"%s\"", pairs);
            while (*p == ' ')
                p++;
        }
        cr_expect_eq(j, n_ids, "%zu pairs for %zu ids in \"%s\"", j, n_ids, line);
        hyps++;
    }
    free(copy);
    return hyps;
}

/* --alignments: a field after each hypothesis (and its score), one pair per
 * target token; the ids are those printed without it. */
Test(cli, alignments_follow_each_hypothesis)
{
    test_run plain = translate("4 5 6\n9\n", "--max-len", "8");
    expect_success(&plain);
    test_run r = translate("4 5 6\n9\n", "--max-len", "8", "--alignments");
    expect_success(&r);
    char *second = strchr(r.out, '\n');
    cr_assert(second && second[1]);
    *second++ = '\0';
    cr_expect_eq(expect_aligned_line(r.out, 3, 0), 1);
    second[strcspn(second, "\n")] = '\0';
    cr_expect_eq(expect_aligned_line(second, 1, 0), 1);
    size_t ids_len = strcspn(plain.out, "\n");
    cr_expect(strncmp(r.out, plain.out, ids_len) == 0 && r.out[ids_len] == '\t',
              "the ids should be unchanged: \"%s\" vs \"%s\"", r.out, plain.out);
    test_run_free(&r);
    test_run_free(&plain);

    r = translate("4 5 6 7\n", "--max-len", "8", "--beam", "3", "--n-best", "2", "--alignments");
    expect_success(&r);
    r.out[strcspn(r.out, "\n")] = '\0';
    cr_expect_eq(expect_aligned_line(r.out, 4, 1), 2);
    test_run_free(&r);

    r = score("4 5\t6\n", "--alignments");
    expect_failure(&r, "'--alignments' does not apply", NULL, 0);
    test_run_free(&r);
}

Test(cli, help)
{
    test_run r = run("", "--help");
    cr_expect_eq(r.exit_status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "translate") && strstr(r.out, "score"),
              "usage should list the commands: \"%s\"", r.out);
    test_run_free(&r);

    r = run("", "translate", "--help");
    cr_expect_eq(r.exit_status, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "--beam") && strstr(r.out, "-m, --model DIR|NAME") &&
                  strstr(r.out, "--sampling-topk") && strstr(r.out, "--sampling-topp") &&
                  strstr(r.out, "--sampling-temperature") && strstr(r.out, "--seed") &&
                  strstr(r.out, "--prefix") && strstr(r.out, "--min-len") &&
                  strstr(r.out, "--no-repeat-ngram") && strstr(r.out, "--repetition-penalty") &&
                  strstr(r.out, "--disable-unk") && strstr(r.out, "--end-token") &&
                  strstr(r.out, "--alignments") &&
                  strstr(r.out, "TESSERA_MODELS_PATH") && strstr(r.out, "/tessera/models"),
              "translate usage should list its options: \"%s\"", r.out);
    test_run_free(&r);
}

/* ---- tessera encode (the values themselves: test_golden against PyTorch) ---- */

/* How many numbers a line holds (strtod from start to end). */
static size_t count_numbers(const char *line)
{
    size_t n = 0;
    for (char *end;; line = end, n++) {
        strtod(line, &end);
        if (end == line)
            break;
    }
    while (*line == ' ')
        line++;
    cr_expect_eq(*line, '\0', "junk after the numbers: \"%s\"", line);
    return n;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

Test(cli, encode_text_has_len_times_d_values_or_one_pooled_vector)
{
    size_t d = (size_t)model->config.d_model;
    test_run r = encode("4 5 6\n7\n");
    expect_success(&r);
    char *lines[MAX_LINES];
    cr_assert_eq(output_lines(&r, lines, MAX_LINES), 2);
    cr_expect_eq(count_numbers(lines[0]), 3 * d);
    cr_expect_eq(count_numbers(lines[1]), d);
    free_lines(lines, 2);
    test_run_free(&r);
    static const char *const pools[] = {"mean", "first"};
    for (size_t p = 0; p < 2; p++) {
        r = encode("4 5 6\n7\n", "--pool", pools[p], "--batch", "2");
        expect_success(&r);
        cr_assert_eq(output_lines(&r, lines, MAX_LINES), 2);
        cr_expect_eq(count_numbers(lines[0]), d, "--pool %s", pools[p]);
        cr_expect_eq(count_numbers(lines[1]), d, "--pool %s", pools[p]);
        free_lines(lines, 2);
        test_run_free(&r);
    }
}

/* --format binary: the header, then per sentence a count and the same float
 * bits as the text output prints (%.9g reads back to the same float). */
Test(cli, encode_binary_matches_text)
{
    size_t d = (size_t)model->config.d_model;
    test_run text = encode("4 5 6\n7 8\n");
    expect_success(&text);
    test_run bin = encode("4 5 6\n7 8\n", "--format", "binary");
    expect_success(&bin);
    const unsigned char *p = (const unsigned char *)bin.out;
    size_t want = 8 + 4 + (4 + 3 * d * 4) + (4 + 2 * d * 4);
    cr_assert_eq(bin.out_len, want, "binary output of %zu bytes, expected %zu", bin.out_len,
                 want);
    cr_expect_eq(memcmp(p, "TSRENC1\n", 8), 0);
    cr_expect_eq(le32(p + 8), d);
    p += 12;
    const char *t = text.out;
    for (size_t sentence = 0; sentence < 2; sentence++) {
        size_t count = le32(p);
        cr_assert_eq(count, sentence == 0 ? 3u : 2u);
        p += 4;
        for (size_t i = 0; i < count * d; i++, p += 4) {
            char *end;
            float f = strtof(t, &end);
            cr_assert(end != t, "text output ran out at value %zu", i);
            t = end;
            uint32_t bits;
            memcpy(&bits, &f, 4);
            cr_expect_eq(le32(p), bits, "sentence %zu value %zu", sentence, i);
        }
    }
    test_run_free(&text);
    test_run_free(&bin);
    /* No input: the header alone. */
    bin = encode("", "--format", "binary", "--pool", "mean");
    expect_success(&bin);
    cr_expect_eq(bin.out_len, 12u);
    test_run_free(&bin);
}

Test(cli, encode_errors)
{
    test_run r = encode("4 5\n", "--pool", "max");
    expect_failure(&r, "--pool", "'max'", 0);
    test_run_free(&r);
    r = encode("4 5\n", "--format", "csv");
    expect_failure(&r, "--format", "'csv'", 0);
    test_run_free(&r);
    r = translate("4 5\n", "--pool", "mean");
    expect_failure(&r, "'--pool' does not apply", NULL, 0);
    test_run_free(&r);
    r = encode("4 5\n", "--beam", "2");
    expect_failure(&r, "'--beam' does not apply", NULL, 0);
    test_run_free(&r);
    r = encode("4 5\n6 7\n1 11 2\n", "--pool", "mean");
    expect_failure(&r, "line 3", NULL, 2);
    test_run_free(&r);
    r = encode("4 5\n\n");
    expect_failure(&r, "line 2", "empty", 1);
    test_run_free(&r);
}

/* ---- an address-space limit (ulimit -v) ---------------------------------------- */

/* `tessera translate` of `input` on the model in `model_dir`, one thread,
 * under `ulimit -v kib` (0: none). */
static test_run translate_limited(const char *model_dir, long kib, const char *input)
{
    char limit[128];
    snprintf(limit, sizeof limit, kib > 0 ? "ulimit -v %ld && exec \"$@\"" : "exec \"$@\"", kib);
    char *argv[] = {"/bin/sh", "-c", limit, "sh", (char *)test_tessera_path(), "translate", "-m",
                    (char *)model_dir, "--threads", "1", NULL};
    return test_run_command(argv, input, NULL);
}

/* Under an address-space limit too small for the model, the load fails with
 * one line that says it ran out of memory, never a crash; above it the
 * output is the unlimited one. The limit where loading starts to fail is
 * found by bisection, and every run on the way is checked. */
Test(cli, address_space_limit_fails_cleanly, .timeout = 180)
{
#ifdef TEST_UNDER_SANITIZER
    cr_skip_test("built with a sanitizer, which reserves more address space than any limit allows");
#endif
    if (getenv("TESSERA_TEST_RUNNER"))
        cr_skip_test("tessera runs under an emulator ($TESSERA_TEST_RUNNER): the limit would "
                     "bound the emulator");
    /* About 20 MB of weights, so that they, not the process's libraries,
     * are what stops fitting. */
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cfg.d_model = 256;
    cfg.n_heads = 4;
    cfg.d_ff = 1024;
    cfg.n_encoder_layers = cfg.n_decoder_layers = 2;
    cfg.src_vocab_size = cfg.tgt_vocab_size = 4000;
    mw_model *big = mw_model_new(&cfg, 3);
    char *big_dir = mw_path(dir, "big");
    cr_assert_eq(mkdir(big_dir, 0700), 0);
    mw_write(big, big_dir);
    mw_model_free(big);
    const char *input = "4 5 6\n7 8\n";

    test_run free_run = translate_limited(big_dir, 0, input);
    expect_success(&free_run);
    long fits = 4L << 20, fails = 0; /* KiB: 4 GiB fits */
    test_run first = translate_limited(big_dir, fits, input);
    expect_success(&first);
    cr_expect_str_eq(first.out, free_run.out);
    test_run_free(&first);
    char last_failure[512] = "";
    while (fits - fails > 1024) {
        long mid = fails + (fits - fails) / 2;
        test_run r = translate_limited(big_dir, mid, input);
        cr_assert_lt(r.exit_status, 128, "ulimit -v %ld: killed by signal %d; stderr: %s", mid,
                     r.exit_status - 128, r.err);
        if (r.exit_status == 0) {
            cr_expect_str_eq(r.out, free_run.out, "ulimit -v %ld: other output", mid);
            cr_expect_str_empty(r.err);
            fits = mid;
        } else {
            expect_failure(&r, "", NULL, 0);
            snprintf(last_failure, sizeof last_failure, "%s", r.err);
            fails = mid;
        }
        test_run_free(&r);
    }
    cr_log_info("the model loads and translates from ulimit -v %ld KiB; below %ld KiB: %s", fits,
                fails, last_failure);
    /* Just below the threshold it is the model that does not fit. */
    cr_expect(strstr(last_failure, "out of memory") != NULL,
              "below the limit that fits, the error should say out of memory: \"%s\"",
              last_failure);
    test_run_free(&free_run);
    free(big_dir);
}

/* ---- Memory budgets and batches by tokens ---------------------------------------- */

/* The model of these tests: d_model and d_ff as asked, 4 heads, 2 + 2
 * layers, 40 source and 50 target tokens, max_positions 64, in `dir` in
 * place of the tiny one. */
static void write_budget_model(int d_model, int d_ff)
{
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cfg.d_model = d_model;
    cfg.n_heads = 4;
    cfg.d_ff = d_ff;
    cfg.n_encoder_layers = cfg.n_decoder_layers = 2;
    cfg.src_vocab_size = 40;
    cfg.tgt_vocab_size = 50;
    cfg.max_positions = 64;
    mw_model_free(model);
    model = mw_model_new(&cfg, 9);
    mw_write(model, dir);
}

/* n lines of 1 to 40 source ids (and, for score, a target after a TAB). */
static char *budget_lines(size_t n, int pairs)
{
    size_t cap = n * 512, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    for (size_t i = 0; i < n; i++) {
        size_t words = 1 + (i * 7) % 40;
        for (size_t w = 0; w < words; w++)
            len += (size_t)snprintf(text + len, cap - len, w ? " %zu" : "%zu", 4 + (i + w * 3) % 36);
        if (pairs)
            len += (size_t)snprintf(text + len, cap - len, "\t%zu %zu", 4 + i % 40, 5 + i % 40);
        text[len++] = '\n';
    }
    text[len] = '\0';
    return text;
}

/* tessera CMD -m DIR [--max-len 8] common... more... < input, on one thread. */
static test_run run_with(const char *cmd, const char *input, char *const common[],
                         char *const more[])
{
    char *argv[MAX_ARGS + 2];
    size_t n = 0;
    argv[n++] = (char *)test_tessera_path();
    const char *fixed[] = {cmd, "-m", dir, "--max-len", "8"};
    for (size_t i = 0; i < (strcmp(cmd, "translate") == 0 ? 5u : 3u); i++)
        argv[n++] = (char *)fixed[i];
    for (char *const *list[] = {common, more}, *const **l = list; l < list + 2; l++)
        for (size_t i = 0; *l && (*l)[i]; i++) {
            cr_assert_lt(n, MAX_ARGS);
            argv[n++] = (*l)[i];
        }
    argv[n] = NULL;
    return test_run_command(argv, input, one_thread);
}

/* The command's output with the options `common` and `batching` equals its
 * output with `common` and --batch 1. */
static void expect_same_as_batch_one(const char *cmd, const char *input, char *const common[],
                                     char *const batching[], const char *what)
{
    char *one[] = {"--batch", "1", NULL};
    test_run want = run_with(cmd, input, common, one), got = run_with(cmd, input, common, batching);
    expect_success(&want);
    expect_success(&got);
    cr_expect(got.out_len == want.out_len && memcmp(got.out, want.out, want.out_len) == 0,
              "%s %s: the output differs from --batch 1", cmd, what);
    test_run_free(&want);
    test_run_free(&got);
}

/* --batch-tokens forms batches by source tokens (and, inside, shortest
 * first): translate (greedy and beam), score and encode write what --batch 1
 * writes. */
Test(cli, batches_by_tokens_write_the_same)
{
    write_budget_model(64, 128);
    char *lines = budget_lines(24, 0), *pairs = budget_lines(24, 1);
    char *beam[] = {"--beam", "3", NULL};
    char *t30[] = {"--batch-tokens", "30", NULL}, *t7[] = {"--batch-tokens", "7", NULL};
    char *capped[] = {"--batch-tokens", "60", "--batch", "3", NULL};
    expect_same_as_batch_one("translate", lines, NULL, t30, "--batch-tokens 30");
    expect_same_as_batch_one("translate", lines, beam, t7, "--beam 3 --batch-tokens 7");
    expect_same_as_batch_one("translate", lines, NULL, capped, "--batch-tokens 60 --batch 3");
    expect_same_as_batch_one("score", pairs, NULL, t30, "--batch-tokens 30");
    expect_same_as_batch_one("encode", lines, NULL, t7, "--batch-tokens 7");
    free(lines);
    free(pairs);
}

/* The working memory the command plans for n lines of `tokens` source
 * tokens (beam search when beam > 1, to --max-len 8), as tessera_translate_memory
 * computes it for the command's runtime of one thread. */
static size_t lines_memory(size_t n, size_t tokens, int beam)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = 8;
    o.beam = beam;
    return test_translate_memory(dir, n, tokens, &o);
}

/* A budget between one line's plan and a long line's: the lines that fit
 * are translated (split from their batch of 8), a line past it is one error
 * naming it and its length, after the lines before it; the same budget
 * splits translate, beam, score and encode batches with the output of
 * --batch 1. Its model is wider than the others' (see below): 45 s under
 * qemu-aarch64 alone, more beside other tests, past Criterion's 60 s. */
Test(cli, a_memory_budget_splits_batches_and_names_a_line_past_it, .timeout = 300)
{
    /* Wide enough that one line's plan passes the floor of --max-memory (1M)
     * on every kernel set: the scalar and NEON sets' packing scratch is a
     * fraction of the x86 sets', and a d_model of 64 plans under 1M there. */
    write_budget_model(256, 1024);
    size_t small = lines_memory(1, 40, 4), large = lines_memory(1, 63, 4);
    cr_assert_gt(small, (size_t)3 << 19, "one line plans %zu bytes, too near the 1M floor", small);
    cr_assert_gt(large, small);
    size_t middle = small + (large - small) / 2;
    cr_assert_gt(lines_memory(2, 20, 4), middle, "the budget would not split a batch");
    char budget[32];
    snprintf(budget, sizeof budget, "%zu", middle);
    char *lines = budget_lines(16, 0), *pairs = budget_lines(16, 1);
    char *beam[] = {"--beam", "4", NULL};
    char *budgeted[] = {"--batch", "8", "--max-memory", budget, NULL};
    expect_same_as_batch_one("translate", lines, beam, budgeted, "--beam 4 --max-memory");
    expect_same_as_batch_one("translate", lines, NULL, budgeted, "--max-memory");
    expect_same_as_batch_one("score", pairs, NULL, budgeted, "--max-memory");
    expect_same_as_batch_one("encode", lines, NULL, budgeted, "--max-memory");

    /* Two lines that fit, then one of 63 tokens. */
    char input[1024];
    size_t len = (size_t)snprintf(input, sizeof input, "4 5 6\n7 8\n");
    for (int w = 0; w < 63; w++)
        len += (size_t)snprintf(input + len, sizeof input - len, w ? " %d" : "%d", 4 + w % 30);
    snprintf(input + len, sizeof input - len, "\n9 10\n");
    test_run r = translate(input, "--batch", "8", "--beam", "4", "--max-len", "8",
                           "--max-memory", budget);
    expect_failure(&r, "line 3: 63 tokens need", "--max-memory", 2);
    test_run_free(&r);
    free(lines);
    free(pairs);
}

/* Beam 1024 over batches of 256 (and of 65536) sentences: without a budget
 * the batch would plan over 512 MB; with --max-memory 256M the batches are split
 * to fit, the whole run stays under 600 MB resident (weights included),
 * and both write the same. */
Test(cli, beam_1024_within_a_memory_budget, .timeout = 240)
{
#ifdef TEST_UNDER_SANITIZER
    cr_skip_test("built with a sanitizer, whose quarantine of freed memory makes the resident "
                 "sizes its own");
#endif
    if (getenv("TESSERA_TEST_RUNNER"))
        cr_skip_test("tessera runs under an emulator ($TESSERA_TEST_RUNNER): beam 1024 would "
                     "take minutes there");
    write_budget_model(64, 128);
    char *lines = budget_lines(12, 0);
    cr_assert_gt(lines_memory(12, 40, 1024), (size_t)512 << 20,
                 "one batch of these lines should plan more than twice the budget");
    test_run a = translate(lines, "--beam", "1024", "--batch", "256", "--max-len", "4",
                           "--max-memory", "256M");
    expect_success(&a);
    test_run b = translate(lines, "--beam", "1024", "--batch", "65536", "--max-len", "4",
                           "--max-memory", "256M");
    expect_success(&b);
    long rss = children_max_rss_kib();
    cr_log_info("max RSS of beam 1024 under --max-memory 256M: %ld KiB", rss);
    cr_expect_lt(rss, 600 * 1024, "beam 1024 under --max-memory 256M took %ld KiB", rss);
    cr_expect_str_eq(a.out, b.out, "--batch 256 and --batch 65536 differ");
    cr_expect_eq(count_lines(&a), 12);
    test_run_free(&a);
    test_run_free(&b);
    free(lines);
}

/* Threads past 8 per CPU this process may use are refused, naming --threads
 * (or the variable that asked for them); past the CPUs, a run that succeeds
 * says so once, after its output. */
Test(cli, thread_counts_are_bounded_by_the_cpus)
{
    char many[16], some[16];
    snprintf(many, sizeof many, "%d", 8 * tessera_cpus() + 1);
    snprintf(some, sizeof some, "%d", tessera_cpus() + 1);
    test_run r = translate("4 5\n", "--threads", many);
    expect_failure(&r, "--threads", "per CPU", 0);
    test_run_free(&r);
    char env[64];
    snprintf(env, sizeof env, "TESSERA_NUM_THREADS=%s", many);
    char *const env_many[] = {env, NULL};
    r = run_env("4 5\n", env_many, "translate", "-m", "DIR", NULL);
    expect_failure(&r, "TESSERA_NUM_THREADS=", "per CPU", 0);
    test_run_free(&r);
    r = translate("4 5\n", "--threads", some);
    cr_expect_eq(r.exit_status, 0, "%s", r.err);
    cr_expect(strncmp(r.err, "tessera: note: ", 15) == 0 && strstr(r.err, "CPUs (--threads)") &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
              "one note after the output: \"%s\"", r.err);
    test_run_free(&r);
    /* The same note however the count was set: each variable, and workers
     * (one thread each at least) past the CPUs; once for all workers. */
    static const char *const vars[] = {"TESSERA_NUM_THREADS", "OMP_NUM_THREADS"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(env, sizeof env, "%s=%s", vars[i], some);
        char *const env_some[] = {env, i ? "TESSERA_NUM_THREADS=" : NULL, NULL};
        r = run_env("4 5\n", env_some, "translate", "-m", "DIR", NULL);
        char says[64];
        snprintf(says, sizeof says, "CPUs (%s)", vars[i]);
        cr_expect(r.exit_status == 0 && strstr(r.err, says) &&
                      strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
                  "%s: one note naming it: \"%s\"", env, r.err);
        test_run_free(&r);
    }
    r = translate("4 5\n", "--workers", some, "--threads", "1");
    cr_expect(r.exit_status == 0 && strstr(r.err, "CPUs (--threads)") &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
              "--workers: one note for all workers: \"%s\"", r.err);
    test_run_free(&r);
}

/* info -m sizes a model: its resident weights, and the working memory of one
 * sentence as long as it allows, greedy, beam 4 and scored. */
Test(cli, info_sizes_a_model)
{
    test_run r = run(NULL, "info", "-m", "DIR", "--max-memory", "64M");
    expect_success(&r);
    cr_expect(strstr(r.out, "memory budget: 64.0 MiB per worker (--max-memory)"), "%s", r.out);
    cr_expect(strstr(r.out, "MiB resident (weights, f32)"), "%s", r.out);
    cr_expect(strstr(r.out, "working memory of one sentence of 16 tokens (max_positions), to 15 "
                            "target tokens: greedy "), "%s", r.out);
    cr_expect(strstr(r.out, "beam 4 ") && strstr(r.out, "score "), "%s", r.out);
    test_run_free(&r);
}

/* ---- Files that are not what they claim, and extreme shapes -------------------------- */

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A FIFO in place of each file of a model directory fails at once (opened
 * without blocking, refused by kind) with one line naming it; nothing is
 * left waiting for a writer. An open that waited would wait for ever: the
 * bound below is far above a refusal's milliseconds, so that a loaded
 * machine (a qemu stage beside make check) cannot fail it, and far below
 * the test's timeout. */
Test(cli, a_fifo_for_any_model_file_fails_at_once, .timeout = 60)
{
    static const char *const files[] = {"config.json", "model.safetensors", "vocab.src.txt",
                                        "vocab.tgt.txt"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        mw_write(model, dir);
        mw_write_vocab(dir, &model->config);
        char *path = mw_path(dir, files[i]);
        cr_assert_eq(remove(path), 0);
        cr_assert_eq(mkfifo(path, 0600), 0);
        double start = seconds_now();
        test_run r = translate("s4 s5\n", "--tokens");
        double took = seconds_now() - start;
        expect_failure(&r, files[i], "not a regular file (a FIFO)", 0);
        cr_expect_lt(took, 10.0, "%s as a FIFO took %.2f s to refuse", files[i], took);
        test_run_free(&r);
        cr_assert_eq(remove(path), 0);
        free(path);
    }
}

/* Shapes at the edges, which the sanitizer build (.ci/asan) runs too: one-
 * token sources in a batch, a source of exactly max_positions tokens scored
 * and encoded, a batch of pairs whose every target is empty, and a batch of
 * empty source lines (refused at its first line). */
Test(cli, extreme_shapes)
{
    test_run r = translate("4\n5\n6\n7\n", "--batch", "4", "--beam", "2");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 4);
    test_run_free(&r);
    const char *longest = "1 2 3 4 5 6 7 8 9 10 1 2 3 4 5 6";
    char line[128];
    snprintf(line, sizeof line, "%s\t4\n4\t\n", longest);
    r = score(line, "--batch", "2");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 2);
    test_run_free(&r);
    snprintf(line, sizeof line, "%s\n4\n", longest);
    r = encode(line, "--batch", "2", "--pool", "mean");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 2);
    test_run_free(&r);
    r = score("4\t\n5 6\t\n7\t\n", "--batch", "3");
    expect_success(&r);
    cr_expect_eq(count_lines(&r), 3);
    test_run_free(&r);
    r = translate("\n\n\n", "--batch", "3");
    expect_failure(&r, "line 1", "empty", 0);
    test_run_free(&r);
}

/* A read error on standard input (here: it is a directory) is one line,
 * once, for every command that reads it. */
Test(cli, a_read_error_on_standard_input_is_one_line)
{
    if (getenv("TESSERA_TEST_RUNNER"))
        cr_skip_test("tessera runs under an emulator ($TESSERA_TEST_RUNNER), which the shell "
                     "that redirects its input would not be");
    static const char *const commands[] = {"translate", "score", "encode"};
    for (size_t i = 0; i < 3; i++) {
        char script[4096];
        snprintf(script, sizeof script, "exec '%s' %s -m '%s' < /", test_tessera_path(),
                 commands[i], dir);
        char *const argv[] = {"/bin/sh", "-c", script, NULL};
        test_run r = test_run_command(argv, NULL, one_thread);
        expect_failure(&r, "line 1: cannot read standard input: Is a directory", NULL, 0);
        test_run_free(&r);
    }
}

/* --stream writes each line as the same command without it does, greedy,
 * sampling and beam (the library's streaming, tessera_token_fn, behind it), and
 * refuses what it cannot stream with one line naming the flag. */
Test(cli, stream_writes_what_translate_writes)
{
    static const char input[] = "4 5 6\n7 8\n5\n";
    static const char *const sampling[] = {"--sampling-topk", "0", "--seed", "5"};
    for (int sample = 0; sample < 2; sample++) {
        const char *a = sample ? sampling[0] : "--max-len", *b = sample ? sampling[1] : "8";
        const char *c2 = sample ? sampling[2] : "--max-len", *d = sample ? sampling[3] : "8";
        test_run plain = translate(input, a, b, c2, d);
        test_run streamed = translate(input, a, b, c2, d, "--stream");
        expect_success(&plain);
        expect_success(&streamed);
        cr_expect_eq(count_lines(&streamed), 3);
        cr_expect_str_eq(streamed.out, plain.out, "%s: --stream wrote something else",
                         sample ? "sampling" : "greedy");
        test_run_free(&plain);
        test_run_free(&streamed);
    }
    test_run plain = translate(input, "--beam", "3");
    test_run streamed = translate(input, "--beam", "3", "--stream");
    expect_success(&streamed);
    cr_expect_str_eq(streamed.out, plain.out, "beam: --stream wrote something else");
    test_run_free(&plain);
    test_run_free(&streamed);
    static const char *const refused[][3] = {
        {"--n-best", "1", "--n-best"}, {"--batch", "4", "--batch"},
        {"--workers", "2", "--workers"}};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        test_run r = translate(input, "--stream", refused[i][0], refused[i][1]);
        expect_failure(&r, "--stream", refused[i][2], 0);
        test_run_free(&r);
    }
}
