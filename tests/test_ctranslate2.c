/* CTranslate2's own test model, run as CTranslate2 ships it: every
 * expectation of CTranslate2's tests/translator_test.cc and
 * python/tests/test_translator.py that applies to tessera's options, for the
 * model's five directories (binary versions 1 and 2; float32, int16, int8),
 * under every selected kernel set (tests/ctranslate2-conformance.sh finds
 * the models, in ../shared/models/ctranslate2-tests or
 * $TESSERA_TEST_CT2_MODELS, and SKIPs by name without them).
 *
 * The expected tokens and log-probabilities are CTranslate2's (its tests
 * name them); where a variant's weights are quantized, its log-probs are
 * checked against tools/ctranslate2_reference.py's float64 reading of the
 * same file (tests/ctranslate2/reference.txt). Where tessera's options mean
 * something else than CTranslate2's, the case says so and checks tessera's
 * own definition:
 * - CTranslate2's beam search (its default: beam 2, length penalty 1, score
 *   / length^1 with </s> counted) stops once beam-size hypotheses have
 *   finished; tessera's stops only when no live hypothesis can still beat
 *   the finished ones (core/search/beam.c says why), so with a length
 *   penalty it may grow a hypothesis CTranslate2 cuts off (here, after the
 *   prefix "<unk> t", a loop of "e h" that length^1 favours). The beam cases
 *   run without a penalty, where both searches end with the best hypothesis;
 *   TranslatePrefixWithLargeBeam needs CTranslate2's penalty (unnormalized,
 *   </s> right after the prefix is best) and runs with it.
 * - An empty source translates to nothing in CTranslate2; for tessera an
 *   empty line of pieces is an error naming the line (docs/model-format.md).
 * - Not run, as tessera has no such option: suppress_sequences,
 *   prefix_bias_beta, return_alternatives, max_input_length,
 *   replace_unknowns, vmap.txt, token streaming; sampling_topk with
 *   set_random_seed (tessera's generator is its own, so the samples differ
 *   by design). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

typedef struct ct2_case {
    char isa[32];
    char variant[48];
} ct2_case;

static const char *const variants[] = {"v1/aren-transliteration", "v1/aren-transliteration-i16",
                                       "v2/aren-transliteration", "v2/aren-transliteration-i16",
                                       "v2/aren-transliteration-i8"};
/* The directory CTranslate2's own tests load (default_model_dir()): the one
 * that runs every option below; the others run the variant tests
 * (ModelVariantTest, test_score_api). */
#define DEFAULT_VARIANT "v2/aren-transliteration"

#define S1 "آ ت ز م و ن"
#define S2 "آ ت ش ي س و ن"
#define S3 "آ ز ا"

static void free_params(struct criterion_test_params *p) { cr_free(p->params); }

static struct criterion_test_params cases(void)
{
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n_sets = test_selected_kernel_sets(sets);
    size_t n_variants = sizeof variants / sizeof *variants, n = n_sets * n_variants;
    ct2_case *c = cr_malloc((n ? n : 1) * sizeof *c);
    for (size_t s = 0; s < n_sets; s++)
        for (size_t v = 0; v < n_variants; v++) {
            ct2_case *k = &c[s * n_variants + v];
            memset(k, 0, sizeof *k);
            snprintf(k->isa, sizeof k->isa, "%s", sets[s]);
            snprintf(k->variant, sizeof k->variant, "%s", variants[v]);
        }
    return cr_make_param_array(ct2_case, c, n, free_params);
}

static const char *models_dir(void)
{
    const char *dir = getenv("TESSERA_TEST_CT2_MODELS");
    cr_assert(dir && *dir, "TESSERA_TEST_CT2_MODELS is not set (tests/ctranslate2-conformance.sh "
                           "sets it)");
    return dir;
}

/* `tessera KIND -m VARIANT --pieces --threads 1 FLAGS...` under the case's
 * set; flags are words separated by spaces. */
static test_run run(const ct2_case *c, const char *kind, const char *flags, const char *input)
{
    char dir[1024], isa_env[64], words[512];
    snprintf(dir, sizeof dir, "%s/%s", models_dir(), c->variant);
    snprintf(isa_env, sizeof isa_env, "TESSERA_ISA=%s", c->isa);
    snprintf(words, sizeof words, "%s", flags);
    char *env[] = {isa_env, NULL};
    char *argv[40];
    size_t a = 0;
    argv[a++] = (char *)test_tessera_all_sets_path();
    argv[a++] = (char *)kind;
    argv[a++] = "-m";
    argv[a++] = dir;
    argv[a++] = "--pieces";
    argv[a++] = "--threads";
    argv[a++] = "1";
    for (char *w = strtok(words, " "); w; w = strtok(NULL, " ")) {
        cr_assert(a + 1 < sizeof argv / sizeof *argv);
        argv[a++] = w;
    }
    argv[a] = NULL;
    return test_run_command(argv, input, env);
}

static test_run run_ok(const ct2_case *c, const char *kind, const char *flags, const char *input)
{
    test_run r = run(c, kind, flags, input);
    cr_assert_eq(r.exit_status, 0, "%s %s, tessera %s %s: exit %d: %s", c->isa, c->variant, kind,
                 flags, r.exit_status, r.err);
    return r;
}

/* The output must be exactly `want` (lines). */
static void expect_output(const ct2_case *c, const char *what, const char *flags,
                          const char *input, const char *want)
{
    test_run r = run_ok(c, "translate", flags, input);
    cr_expect_str_eq(r.out, want, "%s %s, %s (translate %s): got\n%s\nexpected\n%s", c->isa,
                     c->variant, what, flags, r.out, want);
    test_run_free(&r);
}

static size_t count_words(const char *s, const char *end)
{
    size_t n = 0;
    for (int in = 0; s < end; s++) {
        int space = *s == ' ';
        n += !space && !in;
        in = !space;
    }
    return n;
}

/* The one line of output: its tokens (before a TAB), counted. */
static size_t output_tokens(const ct2_case *c, const char *flags, const char *input, char *line,
                            size_t line_len)
{
    test_run r = run_ok(c, "translate", flags, input);
    char *end = strpbrk(r.out, "\t\n");
    cr_assert(end, "%s %s, translate %s: no output line", c->isa, c->variant, flags);
    snprintf(line, line_len, "%.*s", (int)(end - r.out), r.out);
    test_run_free(&r);
    return count_words(line, line + strlen(line));
}

/* ---- CTranslate2's expectations, each under the name of its test ---- */

/* TranslateBatch, test_batch_translation, test_file_translation; with a
 * compute type, ModelVariantTest's. */
static void translate_batch(const ct2_case *c, const char *type)
{
    const char *in = S1 "\n" S2 "\n" S3 "\n";
    const char *want = "a t z m o n\na c h i s o n\na z z a\n";
    char flags[96];
    snprintf(flags, sizeof flags, "--compute-type %s", type);
    expect_output(c, "TranslateBatch, greedy", flags, in, want);
    snprintf(flags, sizeof flags, "--compute-type %s --beam 4", type);
    expect_output(c, "TranslateBatch, beam 4", flags, in, want);
}

/* TranslateWithPrefix, TranslateBatchWithHardPrefixAndEmpty,
 * ReturnAttentionWithPrefix, TranslatePrefixWithLargeBeam. */
static void prefixes(const ct2_case *c)
{
    const char *in = S1 "\ta t s\n" S1 "\t\n" S1 "\ta t z o\n" S3 "\t\n" S1 "\t<unk> t\n";
    const char *want = "a t s u m o n\na t z m o n\na t z o m o n\na z z a\n<unk> t z m o n\n";
    expect_output(c, "hard prefixes, greedy", "--prefix", in, want);
    expect_output(c, "hard prefixes, beam 4", "--prefix --beam 4", in, want);
    /* CTranslate2's issue 277: </s> right after the prefix must not win. */
    expect_output(c, "TranslatePrefixWithLargeBeam", "--prefix --beam 5 --length-penalty 1",
                  "أ و ل ي س س\tu l i s e\n", "u l i s e s\n");
}

/* SetMaxDecodingLength, SetMinDecodingLength, test_max_decoding_length,
 * test_min_decoding_length. */
static void lengths(const ct2_case *c)
{
    char line[256];
    expect_output(c, "test_max_decoding_length", "--max-len 2", S1 "\n", "a t\n");
    static const char *const beams[] = {"--beam 1", "--beam 4"};
    for (int b = 0; b < 2; b++) {
        char flags[96];
        snprintf(flags, sizeof flags, "%s --max-len 3", beams[b]);
        cr_expect_eq(output_tokens(c, flags, S1 "\n", line, sizeof line), 3,
                     "%s %s, SetMaxDecodingLength (%s): '%s'", c->isa, c->variant, flags, line);
        snprintf(flags, sizeof flags, "%s --min-len 8", beams[b]);
        cr_expect_eq(output_tokens(c, flags, S1 "\n", line, sizeof line), 8,
                     "%s %s, SetMinDecodingLength (%s): '%s'", c->isa, c->variant, flags, line);
    }
    cr_expect_gt(output_tokens(c, "--min-len 7", S1 "\n", line, sizeof line), 6,
                 "%s %s, test_min_decoding_length: '%s'", c->isa, c->variant, line);
}

/* test_num_hypotheses, ReturnAllHypotheses: --n-best K gives K hypotheses. */
static void hypotheses(const ct2_case *c)
{
    static const struct {
        const char *flags;
        size_t n;
    } runs[] = {{"--beam 4 --n-best 2", 2},
                {"--beam 4 --n-best 4", 4},
                {"--beam 1 --n-best 1", 1}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        test_run r = run_ok(c, "translate", runs[i].flags, S1 "\n");
        size_t tabs = 0;
        for (const char *p = r.out; *p; p++)
            tabs += *p == '\t';
        cr_expect_eq(tabs, 2 * runs[i].n - 1, "%s %s, %s: '%s' is not %zu hypotheses", c->isa,
                     c->variant, runs[i].flags, r.out, runs[i].n);
        test_run_free(&r);
    }
}

/* The id of a target token, from the variant's vocabulary (its line). */
static int target_id(const ct2_case *c, const char *token)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/target_vocabulary.txt", models_dir(), c->variant);
    char *text = test_read_file(path, NULL);
    cr_assert(text, "cannot read %s", path);
    int id = 0, found = -1;
    for (char *line = strtok(text, "\n"); line && found < 0; line = strtok(NULL, "\n"), id++)
        if (strcmp(line, token) == 0)
            found = id;
    free(text);
    cr_assert(found >= 0, "%s has no line '%s'", path, token);
    return found;
}

/* The words of line, split in place at spaces. */
static size_t split_words(char *line, char **words, size_t max)
{
    size_t n = 0;
    for (char *w = strtok(line, " "); w && n < max; w = strtok(NULL, " "))
        words[n++] = w;
    return n;
}

/* EndToken; RepetitionPenalty (every token once); NoRepeatNgram (no 3-gram
 * twice): each greedy and beam 4. */
static void rules(const ct2_case *c)
{
    static const char *const beams[] = {"--beam 1", "--beam 4"};
    char line[1024], flags[128], fifty[1024] = "";
    char *w[256];
    for (int i = 0; i < 50; i++)
        strcat(fifty, i ? " ن" : "ن");
    strcat(fifty, "\n");
    for (int b = 0; b < 2; b++) {
        snprintf(flags, sizeof flags, "%s --end-token %d", beams[b], target_id(c, "m"));
        expect_output(c, "EndToken", flags, S1 "\n", "a t z\n");

        snprintf(flags, sizeof flags, "%s --repetition-penalty 100", beams[b]);
        output_tokens(c, flags, "ن ن ن ن ن\n", line, sizeof line);
        size_t n = split_words(line, w, 256);
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++)
                cr_expect(strcmp(w[i], w[j]) != 0,
                          "%s %s, RepetitionPenalty (%s): token %zu and %zu are both '%s'",
                          c->isa, c->variant, flags, i + 1, j + 1, w[i]);

        snprintf(flags, sizeof flags, "%s --no-repeat-ngram 3", beams[b]);
        output_tokens(c, flags, fifty, line, sizeof line);
        n = split_words(line, w, 256);
        cr_expect_gt(n, 3, "%s %s, NoRepeatNgram (%s): %zu tokens", c->isa, c->variant, flags, n);
        for (size_t i = 0; i + 3 <= n; i++)
            for (size_t j = i + 1; j + 3 <= n; j++)
                cr_expect(strcmp(w[i], w[j]) || strcmp(w[i + 1], w[j + 1]) ||
                              strcmp(w[i + 2], w[j + 2]),
                          "%s %s, NoRepeatNgram (%s): the 3-gram at %zu again at %zu", c->isa,
                          c->variant, flags, i + 1, j + 1);
    }
}

static double nbest_score(const ct2_case *c, const char *flags, size_t *tokens)
{
    test_run r = run_ok(c, "translate", flags, S1 "\n");
    char *tab = strchr(r.out, '\t');
    cr_assert(tab, "%s %s, %s: no score in '%s'", c->isa, c->variant, flags, r.out);
    *tokens = count_words(r.out, tab);
    double score = strtod(tab + 1, NULL);
    test_run_free(&r);
    return score;
}

/* NormalizeScores, NormalizeScoresNoEos: length penalty 1 divides the score
 * by the length, </s> counted when the hypothesis has it. */
static void normalized_scores(const ct2_case *c)
{
    static const char *const beams[] = {"--beam 1", "--beam 4"};
    for (int b = 0; b < 2; b++)
        for (int eos = 1; eos >= 0; eos--) {
            char raw[128], norm[128];
            snprintf(raw, sizeof raw, "%s --n-best 1 --length-penalty 0%s", beams[b],
                     eos ? "" : " --max-len 6");
            snprintf(norm, sizeof norm, "%s --n-best 1 --length-penalty 1%s", beams[b],
                     eos ? "" : " --max-len 6");
            size_t n0, n1;
            double s0 = nbest_score(c, raw, &n0), s1 = nbest_score(c, norm, &n1);
            cr_expect_eq(n0, n1, "%s %s: %s and %s differ in length", c->isa, c->variant, raw,
                         norm);
            double length = (double)n1 + eos;
            cr_expect(fabs(s1 - s0 / length) <= 1e-6,
                      "%s %s, NormalizeScores%s (%s): %.9g, expected %.9g / %g", c->isa,
                      c->variant, eos ? "" : "NoEos", beams[b], s1, s0, length);
        }
}

/* ReturnAttention, TranslateWithPrefix's attention: one alignment pair per
 * target token, each to a source position. */
static void alignments(const ct2_case *c)
{
    static const struct {
        const char *flags, *input;
        size_t src, tgt;
    } runs[] = {{"--beam 1 --n-best 1 --alignments", S3 "\n", 3, 4},
                {"--beam 4 --n-best 4 --alignments", S1 "\n", 6, 6},
                {"--beam 4 --n-best 4 --alignments --prefix", S1 "\ta t s\n",
                 6, 7}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        test_run r = run_ok(c, "translate", runs[i].flags, runs[i].input);
        /* IDS TAB SCORE TAB ALIGNMENT; the first hypothesis's. */
        char *a = strchr(r.out, '\t');
        a = a ? strchr(a + 1, '\t') : NULL;
        cr_assert(a, "%s %s, %s: no alignment in '%s'", c->isa, c->variant, runs[i].flags, r.out);
        char *end = strpbrk(a + 1, "\t\n");
        size_t pairs = 0;
        for (char *p = a + 1; p < end;) {
            char *next;
            long src = strtol(p, &next, 10);
            cr_assert(next != p && *next == '-', "%s %s: alignment '%.*s'", c->isa, c->variant,
                      (int)(end - a - 1), a + 1);
            cr_expect(src >= 0 && (size_t)src < runs[i].src, "%s %s, %s: source position %ld",
                      c->isa, c->variant, runs[i].flags, src);
            strtol(next + 1, &p, 10);
            pairs++;
            while (*p == ' ')
                p++;
        }
        cr_expect_eq(pairs, runs[i].tgt, "%s %s, %s: %zu pairs for %zu target tokens", c->isa,
                     c->variant, runs[i].flags, pairs, runs[i].tgt);
        test_run_free(&r);
    }
}

/* TranslateBatchWithEmptySource: tessera's own rule (see the top). */
static void empty_source(const ct2_case *c)
{
    test_run r = run(c, "translate", "", S3 "\n\n");
    cr_expect_neq(r.exit_status, 0, "%s %s: an empty line of pieces must be an error", c->isa,
                  c->variant);
    cr_expect_str_eq(r.out, "a z z a\n", "%s %s: the line before the empty one: '%s'", c->isa,
                     c->variant, r.out);
    cr_expect(strstr(r.err, "line 2"), "%s %s: the message names no line: %s", c->isa,
              c->variant, r.err);
    test_run_free(&r);
}

/* ---- Scores: test_score_api ---- */

#define SCORE_INPUT S1 "\ta t z m o n\n" S2 "\ta c h i s o n\n" S1 "\t\n"

/* test_score_api's log-probs of the first two lines (CTranslate2 on the
 * float model, which CTranslate2 checks at rtol 1e-4). */
static const char *const ct2_scores[] = {
    "-0.106023 -0.065410 -0.056002 -0.447953 -0.230714 -0.092184 -0.063463",
    "-0.072660 -0.300309 -0.181187 -0.395671 -0.025631 -0.123466 -0.002034 -0.012639"};

/* The quantized variants hold the float model's weights truncated, so no
 * runtime gives test_score_api's values from them: what CTranslate2 4.8.1
 * itself prints for the same two lines at compute type float32
 * (ct2-translator --task score --with_tokens_score --compute_type float32;
 * the v1 and v2 int16 files give the same). */
static const char *const ct2_i16_scores[] = {
    "-0.107076 -0.0655289 -0.0565643 -0.443987 -0.229119 -0.0936184 -0.0640965",
    "-0.0730705 -0.302178 -0.183722 -0.398921 -0.0252266 -0.123892 -0.00206375 -0.0127888"};
static const char *const ct2_i8_scores[] = {
    "-0.108879 -0.0670099 -0.0561066 -0.465482 -0.228788 -0.0975723 -0.0638361",
    "-0.0744438 -0.297317 -0.19588 -0.399658 -0.0259638 -0.127681 -0.00212097 -0.0133228"};

/* Compares a line of values with `want`: |got - want| <= atol + rtol |want|. */
static void compare_values(const ct2_case *c, const char *what, const char *got, const char *want,
                           double rtol, double atol)
{
    size_t i = 0;
    for (;; i++) {
        char *ge, *we;
        double g = strtod(got, &ge), w = strtod(want, &we);
        if (we == want) {
            cr_expect(ge == got, "%s %s, %s: more values than expected", c->isa, c->variant, what);
            return;
        }
        cr_assert(ge != got, "%s %s, %s: value %zu missing", c->isa, c->variant, what, i + 1);
        cr_expect(fabs(g - w) <= atol + rtol * fabs(w),
                  "%s %s, %s: value %zu is %.9g, expected %.9g", c->isa, c->variant, what, i + 1,
                  g, w);
        got = ge;
        want = we;
    }
}

/* The float64 reference's values of line `line` of SCORE_INPUT for the
 * case's variant (tests/ctranslate2/reference.txt: VARIANT TAB LINE TAB
 * VALUES). */
static char *reference_line(const ct2_case *c, int line)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/ctranslate2/reference.txt", test_srcdir());
    char *text = test_read_file(path, NULL);
    cr_assert(text, "cannot read %s", path);
    char key[96];
    int n = snprintf(key, sizeof key, "%s\t%d\t", c->variant, line);
    for (char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, key, (size_t)n) == 0) {
            char *end = strchr(p, '\n');
            char *values = strndup(p + n, end ? (size_t)(end - p - n) : strlen(p + n));
            free(text);
            return values;
        }
    cr_assert_fail("%s has no line for %s, line %d", path, c->variant, line);
    return NULL;
}

static void scores(const ct2_case *c, const char *type)
{
    char flags[64];
    snprintf(flags, sizeof flags, "--compute-type %s", type);
    test_run r = run_ok(c, "score", flags, SCORE_INPUT);
    int is_float = strstr(c->variant, "-i") == NULL, f32 = strcmp(type, "f32") == 0;
    char *line = r.out;
    for (int i = 0; i < 3; i++) {
        char *end = strchr(line, '\n');
        cr_assert(end, "%s %s: score printed %d lines", c->isa, c->variant, i);
        *end = '\0';
        char what[96], *ref = reference_line(c, i + 1);
        /* Float32 against float64 drifts by 1e-6; int8 activations move a
         * log-prob of this model by up to a few hundredths. */
        snprintf(what, sizeof what, "score %s line %d against the float64 reference", type, i + 1);
        compare_values(c, what, line, ref, f32 ? 1e-4 : 0, f32 ? 1e-6 : 0.05);
        free(ref);
        if (f32 && i < 2) {
            /* CTranslate2's rtol, and half the last digit it printed. */
            const char *const *want = is_float                     ? ct2_scores
                                      : strstr(c->variant, "-i16") ? ct2_i16_scores
                                                                   : ct2_i8_scores;
            snprintf(what, sizeof what, "%s line %d",
                     is_float ? "test_score_api" : "CTranslate2 4.8.1's score", i + 1);
            compare_values(c, what, line, want[i], 1e-4, 5e-7);
        }
        line = end + 1;
    }
    test_run_free(&r);
}

ParameterizedTestParameters(ctranslate2, conformance) { return cases(); }

ParameterizedTest(ct2_case *c, ctranslate2, conformance, .timeout = 600)
{
    test_kernel_set_or_skip(c->isa);
    translate_batch(c, "f32");
    translate_batch(c, "int8");
    scores(c, "f32");
    scores(c, "int8");
    if (strcmp(c->variant, DEFAULT_VARIANT) != 0)
        return;
    prefixes(c);
    lengths(c);
    hypotheses(c);
    rules(c);
    normalized_scores(c);
    alignments(c);
    empty_source(c);
}
