/* End-to-end golden tests: the tessera command on models made with PyTorch's
 * nn.Transformer (tests/golden, see its README), under every kernel set this
 * build and CPU can run (the others are skipped by name). Scores must agree
 * with PyTorch's float64 reference; greedy and beam-search ids must be
 * identical; --batch must not change a single byte of the output.
 *
 * A case is one model under one set, and runs every variant of its group
 * (batch sizes, kinds, pools) in turn: Criterion starts a process for each
 * case, which cost as much as the tessera runs it made when a case was one
 * variant (175 cases a set then, 69 now). Every message names the variant. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simd/dispatch.h"
#include "tests/testutil.h"

/* |tessera - pytorch| <= ABS_TOL + REL_TOL * |pytorch|: float32 against a
 * float64 reference through a few layers drifts by ~1e-6; a wrong mask,
 * norm or scale moves log-probs by far more than 1e-4. */
#define ABS_TOL 1e-4
#define REL_TOL 1e-5

typedef struct golden_case {
    char isa[32];
    char model[64];
    char kind[16];   /* "score" or "translate" */
    char suffix[48]; /* "" or ".tokens"; ".beam" in beam_against_pytorch; the
                        case's path in the model's directory in options_against_pytorch
                        ("options/sample-topk", "shortlist/vmap-greedy") */
    int batch;
} golden_case;

/* The beam search of translate.beam.expected (see tests/golden/README.md). */
static const char *const beam_flags[] = {"--beam", "4", "--n-best", "3", "--length-penalty", "0.6",
                                         "--max-len", "15", NULL};

static void free_params(struct criterion_test_params *p) { cr_free(p->params); }

static const char *const models[] = {"postnorm-relu-f32",     "prenorm-gelu-f16",
                                     "postnorm-silu-bf16",    "postnorm-relu-std-f32",
                                     "prenorm-gelu-std-unbiased-f32"};

#define MAX_FAMILY_MODELS 32
static char family_names[MAX_FAMILY_MODELS][64];
static size_t family_count = SIZE_MAX;

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* The models converted from other toolkits (tests/golden/families/NAME,
 * each a directory with a config.json; tools/make-family-golden), as
 * "families/NAME", in name order: their fixtures come from each family's
 * own reference, and they run as the models above do. */
static size_t family_models(void)
{
    if (family_count != SIZE_MAX)
        return family_count;
    family_count = 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/golden/families", test_srcdir());
    DIR *d = opendir(dir);
    cr_assert(d, "cannot list %s", dir);
    for (struct dirent *e; (e = readdir(d));) {
        char config[1400];
        snprintf(config, sizeof config, "%s/%s/config.json", dir, e->d_name);
        if (e->d_name[0] == '.' || access(config, R_OK) != 0)
            continue;
        cr_assert(family_count < MAX_FAMILY_MODELS, "more than %d family models",
                  MAX_FAMILY_MODELS);
        cr_assert(strlen(e->d_name) <= 50, "family model name too long: %s", e->d_name);
        snprintf(family_names[family_count++], sizeof family_names[0], "families/%.50s",
                 e->d_name);
    }
    closedir(d);
    qsort(family_names, family_count, sizeof family_names[0], by_name);
    return family_count;
}

/* Whether the families' fixtures run under kernel set `set`: always, unless
 * TESSERA_TEST_FAMILIES says "none" or names the sets (comma-separated)
 * that run them. .ci/no-avx512 reruns under qemu the machine code make
 * check ran natively, and .ci/asan runs three sets where the families' code
 * paths are the same in each: they run them for none, or one set. */
static int families_run_for(const char *set)
{
    const char *only = getenv("TESSERA_TEST_FAMILIES");
    if (!only)
        return 1;
    size_t n = strlen(set);
    for (const char *p = only; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        if (strncmp(p, set, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
        if (!strchr(p, ','))
            break;
    }
    return 0;
}

/* The models of against_pytorch and the beam tests under `set`: the
 * fixtures made with PyTorch's nn.Transformer, then the families'. */
static size_t golden_model_count(const char *set)
{
    return sizeof models / sizeof models[0] + (families_run_for(set) ? family_models() : 0);
}

static const char *golden_model(size_t i)
{
    size_t own = sizeof models / sizeof models[0];
    return i < own ? models[i] : family_names[i - own];
}

/* A case per selected set and golden model: (set, model) pairs, the fields
 * a case's variants fill in as they run left empty. */
static struct criterion_test_params model_cases(void)
{
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n = 0, n_sets = test_selected_kernel_sets(sets);
    for (size_t s = 0; s < n_sets; s++)
        n += golden_model_count(sets[s]);
    golden_case *cases = cr_malloc((n ? n : 1) * sizeof *cases);
    for (size_t s = 0, i = 0; s < n_sets; s++)
        for (size_t m = 0; m < golden_model_count(sets[s]); m++, i++) {
            memset(&cases[i], 0, sizeof cases[i]);
            snprintf(cases[i].isa, sizeof cases[i].isa, "%s", sets[s]);
            snprintf(cases[i].model, sizeof cases[i].model, "%s", golden_model(m));
        }
    return cr_make_param_array(golden_case, cases, n, free_params);
}

/* Runs `tessera KIND -m MODEL_DIR --batch N [--tokens] EXTRA...` under the kernel
 * set isa; extra is a NULL-terminated list of further arguments, or NULL. */
static test_run run_tessera(const char *isa, const char *kind, const char *model_dir,
                            const char *input, int batch, int tokens, const char *const *extra)
{
    char isa_env[64], batch_arg[16];
    snprintf(isa_env, sizeof isa_env, "TESSERA_ISA=%s", isa);
    snprintf(batch_arg, sizeof batch_arg, "%d", batch);
    char *env[] = {isa_env, NULL};
    char *argv[48];
    size_t a = 0;
    argv[a++] = (char *)test_tessera_all_sets_path();
    argv[a++] = (char *)kind;
    argv[a++] = "-m";
    argv[a++] = (char *)model_dir;
    argv[a++] = "--batch";
    argv[a++] = batch_arg;
    /* One thread alone, two with batches: the fixtures hold for both. */
    argv[a++] = "--threads";
    argv[a++] = batch > 1 ? "2" : "1";
    /* Ids, or pieces with --tokens, also for a model with a tokenizer (the
     * multilingual fixtures carry theirs), which would read text. */
    argv[a++] = tokens ? "--tokens" : "--ids";
    for (; extra && *extra; extra++) {
        cr_assert(a + 1 < sizeof argv / sizeof argv[0], "too many arguments for tessera");
        argv[a++] = (char *)*extra;
    }
    /* A multilingual fixture is made with its languages (languages.flags,
     * tests/golden/families/README-hf-m2m100.md): every run takes them. */
    char path[1100];
    snprintf(path, sizeof path, "%s/languages.flags", model_dir);
    char *languages = access(path, R_OK) == 0 ? test_read_file(path, NULL) : NULL;
    for (char *save = NULL, *tok = languages ? strtok_r(languages, " \t\n", &save) : NULL; tok;
         tok = strtok_r(NULL, " \t\n", &save)) {
        cr_assert(a + 1 < sizeof argv / sizeof argv[0], "too many arguments for tessera");
        argv[a++] = tok;
    }
    argv[a] = NULL;
    test_run r = test_run_command(argv, input, env);
    free(languages);
    return r;
}

static char *read_fixture(const char *model, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s/%s", test_srcdir(), model, name);
    char *text = test_read_file(path, NULL);
    cr_assert(text, "cannot read fixture %s", path);
    return text;
}

/* Compares score output with the expected log-probs, line by line. */
static void compare_scores(const golden_case *c, const char *got, const char *want)
{
    size_t line = 1;
    double worst = 0;
    while (*want) {
        cr_assert(*got, "%s %s: output ends at line %zu", c->isa, c->model, line);
        const char *want_end = strchr(want, '\n'), *got_end = strchr(got, '\n');
        cr_assert(want_end && got_end, "%s %s: line %zu is not newline-terminated", c->isa,
                  c->model, line);
        while (want < want_end) {
            char *we, *ge;
            double w = strtod(want, &we), g = strtod(got, &ge);
            cr_assert(we != want && ge != got && ge <= got_end,
                      "%s %s line %zu: expected as many values as PyTorch", c->isa, c->model, line);
            double diff = fabs(g - w);
            if (diff > worst)
                worst = diff;
            cr_expect(diff <= ABS_TOL + REL_TOL * fabs(w),
                      "%s %s%s --batch %d line %zu: log-prob %.9g, PyTorch %.9g (diff %.3g)",
                      c->isa, c->model, c->suffix, c->batch, line, g, w, diff);
            want = we;
            got = ge;
            while (*want == ' ')
                want++;
        }
        cr_assert(got == got_end, "%s %s line %zu: more values than PyTorch", c->isa, c->model,
                  line);
        want = want_end + 1;
        got = got_end + 1;
        line++;
    }
    cr_assert(*got == '\0', "%s %s: output has more lines than inputs", c->isa, c->model);
    cr_log_info("%s %s score%s --batch %d: worst |diff| %.3g", c->isa, c->model, c->suffix,
                c->batch, worst);
}

/* One kind (score or translate), with or without --tokens, at one batch
 * size: its output against PyTorch's. */
static void against_pytorch_once(golden_case *c, const char *kind, const char *suffix, int batch)
{
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    snprintf(c->suffix, sizeof c->suffix, "%s", suffix);
    c->batch = batch;
    char model_dir[1024], in_name[96], expected_name[96];
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), c->model);
    snprintf(in_name, sizeof in_name, "%s%s.in", c->kind, c->suffix);
    snprintf(expected_name, sizeof expected_name, "%s%s.expected", c->kind, c->suffix);
    char *input = read_fixture(c->model, in_name);
    char *expected = read_fixture(c->model, expected_name);
    int translate = strcmp(c->kind, "translate") == 0;
    static const char *const greedy_flags[] = {"--max-len", "20", NULL};
    test_run r = run_tessera(c->isa, c->kind, model_dir, input, c->batch, c->suffix[0] != '\0',
                             translate ? greedy_flags : NULL);
    cr_assert_eq(r.exit_status, 0, "%s %s %s%s --batch %d failed: %s", c->isa, c->model, c->kind,
                 c->suffix, c->batch, r.err);
    cr_assert_str_empty(r.err, "%s %s %s%s --batch %d: unexpected stderr: %s", c->isa, c->model,
                        c->kind, c->suffix, c->batch, r.err);
    if (translate)
        cr_expect_str_eq(r.out, expected, "%s %s%s: greedy ids differ from PyTorch (--batch %d)",
                         c->isa, c->model, c->suffix, c->batch);
    else
        compare_scores(c, r.out, expected);
    test_run_free(&r);
    free(input);
    free(expected);
}

ParameterizedTestParameters(golden, against_pytorch)
{
    return model_cases();
}

/* Scores and greedy ids at batch 1 (one thread) and 8 (two threads); the
 * model with vocab files also through --tokens. */
ParameterizedTest(golden_case *c, golden, against_pytorch, .timeout = 240)
{
    test_kernel_set_or_skip(c->isa);
    static const char *const kinds[] = {"score", "translate"};
    int tokens_too = strcmp(c->model, "postnorm-silu-bf16") == 0;
    for (size_t k = 0; k < 2; k++)
        for (int tokens = 0; tokens <= tokens_too; tokens++)
            for (int batch = 1; batch <= 8; batch += 7)
                against_pytorch_once(c, kinds[k], tokens ? ".tokens" : "", batch);
}

/* Compares n-best lines (IDS<TAB>SCORE pairs, TAB separated; with
 * `aligned`, IDS<TAB>SCORE<TAB>ALIGNMENT triples) with PyTorch's: the same
 * number of hypotheses, identical ids and alignments, and each score (a
 * length-normalised log-prob) within the score tolerance. The fixtures hold
 * no sentence where a decision of the search came within 1e-3 of a tie, nor
 * an alignment whose two best positions came within 1e-4, so float32
 * rounding cannot change the ids or the alignments. */
static void compare_nbest(const golden_case *c, const char *got, const char *want, int aligned)
{
    size_t line = 1;
    double worst = 0;
    while (*want) {
        cr_assert(*got, "%s %s: output ends at line %zu", c->isa, c->model, line);
        const char *want_end = strchr(want, '\n'), *got_end = strchr(got, '\n');
        cr_assert(want_end && got_end, "%s %s: line %zu is not newline-terminated", c->isa,
                  c->model, line);
        for (size_t hyp = 1;; hyp++) {
            const char *want_tab = memchr(want, '\t', (size_t)(want_end - want));
            const char *got_tab = memchr(got, '\t', (size_t)(got_end - got));
            cr_assert(want_tab, "%s: fixture line %zu has ids without a score", c->model, line);
            cr_assert(got_tab, "%s %s line %zu: hypothesis %zu has no score: %.*s", c->isa,
                      c->model, line, hyp, (int)(got_end - got), got);
            int want_len = (int)(want_tab - want), got_len = (int)(got_tab - got);
            cr_expect(want_len == got_len && memcmp(want, got, (size_t)want_len) == 0,
                      "%s %s line %zu hypothesis %zu (--batch %d): ids '%.*s', PyTorch '%.*s'",
                      c->isa, c->model, line, hyp, c->batch, got_len, got, want_len, want);
            char *we, *ge;
            double w = strtod(want_tab + 1, &we), g = strtod(got_tab + 1, &ge);
            cr_assert(we != want_tab + 1 && we <= want_end, "%s: fixture line %zu: bad score",
                      c->model, line);
            cr_assert(ge != got_tab + 1 && ge <= got_end,
                      "%s %s line %zu hypothesis %zu: bad score", c->isa, c->model, line, hyp);
            double diff = g == w ? 0 : fabs(g - w);
            if (diff > worst)
                worst = diff;
            cr_expect(diff <= ABS_TOL + REL_TOL * fabs(w),
                      "%s %s line %zu hypothesis %zu (--batch %d): score %.9g, PyTorch %.9g "
                      "(diff %.3g)", c->isa, c->model, line, hyp, c->batch, g, w, diff);
            want = we;
            got = ge;
            if (aligned) {
                cr_assert(*want == '\t', "%s: fixture line %zu: no alignment", c->model, line);
                cr_assert(*got == '\t', "%s %s line %zu hypothesis %zu: no alignment", c->isa,
                          c->model, line, hyp);
                want++;
                got++;
                size_t want_n = strcspn(want, "\t\n"), got_n = strcspn(got, "\t\n");
                cr_expect(want_n == got_n && memcmp(want, got, want_n) == 0,
                          "%s %s line %zu hypothesis %zu (--batch %d): alignment '%.*s', "
                          "PyTorch '%.*s'", c->isa, c->model, line, hyp, c->batch, (int)got_n,
                          got, (int)want_n, want);
                want += want_n;
                got += got_n;
            }
            if (want == want_end) {
                cr_assert(got == got_end, "%s %s line %zu: more than the %zu hypotheses of PyTorch",
                          c->isa, c->model, line, hyp);
                break;
            }
            cr_assert(*want == '\t', "%s: fixture line %zu: junk after a score", c->model, line);
            cr_assert(*got == '\t', "%s %s line %zu: %zu hypotheses where PyTorch has more, or "
                      "junk after a score", c->isa, c->model, line, hyp);
            want++;
            got++;
        }
        want = want_end + 1;
        got = got_end + 1;
        line++;
    }
    cr_assert(*got == '\0', "%s %s: output has more lines than inputs", c->isa, c->model);
    cr_log_info("%s %s %s --batch %d: worst |diff| %.3g", c->isa, c->model, c->suffix, c->batch,
                worst);
}

ParameterizedTestParameters(golden, beam)
{
    return model_cases();
}

/* Beam search with n-best output against PyTorch's float64 search (beam_search
 * in tools/tessera_torch.py) at --batch 1 and 8 (sentences that finish at
 * different steps decoded together); and on translate.in, the same bytes
 * in batches of 1, 4 and 7. */
ParameterizedTest(golden_case *c, golden, beam, .timeout = 240)
{
    test_kernel_set_or_skip(c->isa);
    char model_dir[1024];
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), c->model);
    char *input = read_fixture(c->model, "translate.beam.in");
    char *expected = read_fixture(c->model, "translate.beam.expected");
    snprintf(c->kind, sizeof c->kind, "translate");
    snprintf(c->suffix, sizeof c->suffix, ".beam");
    for (c->batch = 1; c->batch <= 8; c->batch += 7) {
        test_run r = run_tessera(c->isa, "translate", model_dir, input, c->batch, 0, beam_flags);
        cr_assert_eq(r.exit_status, 0, "%s %s beam --batch %d failed: %s", c->isa, c->model,
                     c->batch, r.err);
        cr_assert_str_empty(r.err, "%s %s beam --batch %d: unexpected stderr: %s", c->isa,
                            c->model, c->batch, r.err);
        compare_nbest(c, r.out, expected, 0);
        test_run_free(&r);
    }
    free(input);
    free(expected);

    input = read_fixture(c->model, "translate.in");
    char *first = NULL;
    for (int batch = 1; batch <= 7; batch += 3) {
        test_run r = run_tessera(c->isa, "translate", model_dir, input, batch, 0, beam_flags);
        cr_assert_eq(r.exit_status, 0, "%s %s beam (translate.in) --batch %d failed: %s", c->isa,
                     c->model, batch, r.err);
        if (!first) {
            first = strdup(r.out);
            cr_assert(strlen(first) > 0, "%s %s: beam search printed nothing", c->isa, c->model);
        } else {
            cr_expect_str_eq(r.out, first,
                             "%s %s: beam output (translate.in) with --batch %d differs from "
                             "--batch 1", c->isa, c->model, batch);
        }
        test_run_free(&r);
    }
    free(first);
    free(input);
}

/* ---- tessera encode --------------------------------------------------------- */

#define ENCODE_TOL 1e-4 /* |got - PyTorch| <= ENCODE_TOL * (1 + |PyTorch|) */

/* The values of each line of text: rows[i] holds count[i] doubles. */
typedef struct number_lines {
    double **rows;
    size_t *count, n;
} number_lines;

static number_lines parse_lines(const char *text, const char *what)
{
    number_lines l = {0};
    for (const char *p = text; *p; l.n++) {
        const char *end = strchr(p, '\n');
        cr_assert(end, "%s: line %zu is not newline-terminated", what, l.n + 1);
        l.rows = realloc(l.rows, (l.n + 1) * sizeof *l.rows);
        l.count = realloc(l.count, (l.n + 1) * sizeof *l.count);
        cr_assert(l.rows && l.count);
        l.rows[l.n] = NULL;
        l.count[l.n] = 0;
        while (p < end) {
            char *q;
            double v = strtod(p, &q);
            cr_assert(q != p && q <= end, "%s line %zu: not a number at '%.20s'", what, l.n + 1,
                      p);
            l.rows[l.n] = realloc(l.rows[l.n], (l.count[l.n] + 1) * sizeof(double));
            cr_assert(l.rows[l.n]);
            l.rows[l.n][l.count[l.n]++] = v;
            p = q;
            while (*p == ' ')
                p++;
        }
        p = end + 1;
    }
    return l;
}

static void free_lines(number_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->rows[i]);
    free(l->rows);
    free(l->count);
}

/* PyTorch's per-token rows of one sentence, pooled as `pool` asks: the
 * reference for --pool mean and first is computed here from them. */
static size_t pool_reference(const double *rows, size_t values, size_t d, const char *pool,
                             double *out)
{
    size_t tokens = values / d;
    if (strcmp(pool, "none") == 0) {
        memcpy(out, rows, values * sizeof *out);
        return values;
    }
    for (size_t j = 0; j < d; j++) {
        double sum = 0;
        for (size_t t = 0; t < tokens; t++)
            sum += rows[t * d + j];
        out[j] = strcmp(pool, "first") == 0 ? rows[j] : sum / (double)tokens;
    }
    return d;
}

typedef struct encode_case {
    char isa[32];
    char model[32];
    char pool[8];
} encode_case;

/* The encoder alone of tests/golden: its sentences are encode.in (the other
 * models encode their translate.in). */
#define ENCODER_ONLY "encoder-only-f32"

ParameterizedTestParameters(golden, encode_against_pytorch)
{
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n_sets = test_selected_kernel_sets(sets);
    size_t n_models = sizeof models / sizeof models[0] + 1;
    size_t n = n_sets * n_models;
    encode_case *cases = cr_malloc((n ? n : 1) * sizeof *cases);
    for (size_t s = 0, i = 0; s < n_sets; s++)
        for (size_t m = 0; m < n_models; m++, i++) {
            memset(&cases[i], 0, sizeof cases[i]);
            snprintf(cases[i].isa, sizeof cases[i].isa, "%s", sets[s]);
            snprintf(cases[i].model, sizeof cases[i].model, "%s",
                     m + 1 < n_models ? models[m] : ENCODER_ONLY);
        }
    return cr_make_param_array(encode_case, cases, n, free_params);
}

static void encode_with_pool(const encode_case *c);

/* The encoder's vectors (tessera encode --pool none, mean and first) against
 * PyTorch's float64 encoder output, at batch 1; batch 8 prints the same bytes. */
ParameterizedTest(encode_case *c, golden, encode_against_pytorch, .timeout = 240)
{
    test_kernel_set_or_skip(c->isa);
    static const char *const pools[] = {"none", "mean", "first"};
    for (size_t p = 0; p < 3; p++) {
        snprintf(c->pool, sizeof c->pool, "%s", pools[p]);
        encode_with_pool(c);
    }
}

static void encode_with_pool(const encode_case *c)
{
    char model_dir[1024];
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), c->model);
    char *input = read_fixture(c->model, strcmp(c->model, ENCODER_ONLY) == 0 ? "encode.in"
                                                                             : "translate.in");
    char *expected_text = read_fixture(c->model, "encode.expected");
    const char *const pool_flags[] = {"--pool", c->pool, NULL};
    test_run one = run_tessera(c->isa, "encode", model_dir, input, 1, 0, pool_flags);
    cr_assert_eq(one.exit_status, 0, "%s %s encode --pool %s failed: %s", c->isa, c->model,
                 c->pool, one.err);
    cr_assert_str_empty(one.err, "%s %s: unexpected stderr: %s", c->isa, c->model, one.err);
    test_run eight = run_tessera(c->isa, "encode", model_dir, input, 8, 0, pool_flags);
    cr_assert_str_eq(eight.out, one.out, "%s %s --pool %s: --batch 8 differs from --batch 1",
                     c->isa, c->model, c->pool);

    char *config = read_fixture(c->model, "config.json");
    const char *key = strstr(config, "\"d_model\":");
    cr_assert(key, "%s: no d_model in config.json", c->model);
    size_t d = (size_t)strtoul(key + strlen("\"d_model\":"), NULL, 10);
    number_lines got = parse_lines(one.out, "tessera encode"),
                 want = parse_lines(expected_text, "encode.expected");
    cr_assert_eq(got.n, want.n, "%s %s --pool %s: %zu lines, PyTorch has %zu", c->isa, c->model,
                 c->pool, got.n, want.n);
    double worst = 0;
    for (size_t i = 0; i < want.n; i++) {
        cr_assert(want.count[i] > 0 && want.count[i] % d == 0, "encode.expected line %zu", i + 1);
        double *ref = malloc(want.count[i] * sizeof *ref);
        cr_assert(ref);
        size_t values = pool_reference(want.rows[i], want.count[i], d, c->pool, ref);
        cr_assert_eq(got.count[i], values, "%s %s --pool %s line %zu: %zu values, expected %zu",
                     c->isa, c->model, c->pool, i + 1, got.count[i], values);
        for (size_t j = 0; j < values; j++) {
            double diff = fabs(got.rows[i][j] - ref[j]) / (1 + fabs(ref[j]));
            if (diff > worst)
                worst = diff;
            cr_expect(diff <= ENCODE_TOL, "%s %s --pool %s line %zu value %zu: %.9g, PyTorch %.9g",
                      c->isa, c->model, c->pool, i + 1, j, got.rows[i][j], ref[j]);
        }
        free(ref);
    }
    cr_log_info("%s %s encode --pool %s: worst relative diff %.3g", c->isa, c->model, c->pool,
                worst);
    free_lines(&got);
    free_lines(&want);
    free(config);
    test_run_free(&one);
    test_run_free(&eight);
    free(input);
    free(expected_text);
}

/* translate and score refuse an encoder alone, naming it, before any output. */
Test(golden, encoder_only_model_only_encodes)
{
    char model_dir[1024];
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), ENCODER_ONLY);
    static const char *const kinds[] = {"translate", "score"};
    for (size_t k = 0; k < 2; k++) {
        test_run r = run_tessera("scalar", kinds[k], model_dir, "4 5\t6\n", 1, 0, NULL);
        cr_expect_eq(r.exit_status, 1, "%s on an encoder alone: status %d", kinds[k],
                     r.exit_status);
        cr_expect(strstr(r.err, "encoder alone") && strstr(r.err, ENCODER_ONLY), "%s: %s",
                  kinds[k], r.err);
        cr_expect_str_empty(r.out, "%s printed: %s", kinds[k], r.out);
        test_run_free(&r);
    }
}

/* ---- Decoding options (tests/golden/MODEL/options/CASE.*) ------------------- */

static const char *const option_models[] = {"postnorm-relu-f32", "prenorm-gelu-f16"};
static const char *const option_cases[] = {
    "sample-topk",   "sample-topp",       "sample-all",         "prefix-greedy",     "prefix-beam",
    "prefix-sample", "constrained-greedy", "constrained-beam", "constrained-sample",
    "align-greedy",  "align-beam",         "align-sample",     "align-prefix",
};

/* Searches over vocabulary shortlists (tests/golden/MODEL/shortlist/), in
 * the same files. */
static const char shortlist_model[] = "postnorm-silu-bf16";
static const char *const shortlist_cases[] = {
    "vmap-greedy", "vmap-beam", "vmap-sample", "vmap-prefix-beam", "lex-greedy",
    "lex-constrained-beam",
};

static void option_case(golden_case *c, const char *isa, const char *model, const char *dir,
                        const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->isa, sizeof c->isa, "%s", isa);
    snprintf(c->model, sizeof c->model, "%s", model);
    snprintf(c->kind, sizeof c->kind, "translate");
    snprintf(c->suffix, sizeof c->suffix, "%s/%s", dir, name);
}

ParameterizedTestParameters(golden, options_against_pytorch)
{
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n_sets = test_selected_kernel_sets(sets);
    size_t n_models = sizeof option_models / sizeof option_models[0],
           n_cases = sizeof option_cases / sizeof option_cases[0],
           n_shortlist = sizeof shortlist_cases / sizeof shortlist_cases[0],
           n = n_sets * (n_models * n_cases + n_shortlist);
    golden_case *cases = cr_malloc(n * sizeof *cases);
    size_t i = 0;
    for (size_t s = 0; s < n_sets; s++) {
        for (size_t m = 0; m < n_models; m++)
            for (size_t k = 0; k < n_cases; k++)
                option_case(&cases[i++], sets[s], option_models[m], "options", option_cases[k]);
        for (size_t k = 0; k < n_shortlist; k++)
            option_case(&cases[i++], sets[s], shortlist_model, "shortlist", shortlist_cases[k]);
    }
    return cr_make_param_array(golden_case, cases, n, free_params);
}

/* Each option case of the fixtures (flags, sources, PyTorch's output with
 * scores; see tests/golden/README.md): ids identical and scores within the
 * tolerance at --batch 1 on 1 thread, and the same bytes at --batch 16 and on
 * 2 threads. Sampling draws from a stream per input line, so batching and
 * threads must not move it; a shortlist's candidates are each sentence's own,
 * so batching must not move them either. A flag value "./FILE" is the file
 * beside the case's. */
ParameterizedTest(golden_case *c, golden, options_against_pytorch, .timeout = 240)
{
    test_kernel_set_or_skip(c->isa);
    char model_dir[1024], name[96], beside[2][1200];
    size_t n_beside = 0;
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), c->model);
    snprintf(name, sizeof name, "%s.flags", c->suffix);
    char *flags = read_fixture(c->model, name);
    char *flags_text = strdup(flags); /* strtok_r cuts flags up */
    cr_assert(flags_text);
    snprintf(name, sizeof name, "%s.in", c->suffix);
    char *input = read_fixture(c->model, name);
    snprintf(name, sizeof name, "%s.expected", c->suffix);
    char *expected = read_fixture(c->model, name);
    size_t dir_len = (size_t)(strchr(c->suffix, '/') - c->suffix);

    const char *args[40];
    size_t n_args = 0;
    for (char *save = NULL, *tok = strtok_r(flags, " \t\n", &save); tok;
         tok = strtok_r(NULL, " \t\n", &save)) {
        cr_assert_lt(n_args, sizeof args / sizeof args[0] - 3, "%s: too many flags", name);
        if (strncmp(tok, "./", 2) == 0) {
            cr_assert_lt(n_beside, 2, "%s: too many files", name);
            snprintf(beside[n_beside], sizeof beside[0], "%s/%.*s/%s", model_dir, (int)dir_len,
                     c->suffix, tok + 2);
            tok = beside[n_beside++];
        }
        args[n_args++] = tok;
    }
    args[n_args++] = "--threads";
    const size_t threads_at = n_args++;
    args[n_args] = NULL;

    static const struct { int batch; const char *threads; } runs[] = {
        {1, "1"}, {16, "1"}, {1, "2"}, {16, "2"}};
    char *first = NULL;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        args[threads_at] = runs[i].threads;
        c->batch = runs[i].batch;
        test_run r = run_tessera(c->isa, "translate", model_dir, input, runs[i].batch, 0, args);
        cr_assert_eq(r.exit_status, 0, "%s %s %s --batch %d --threads %s failed: %s", c->isa,
                     c->model, c->suffix, runs[i].batch, runs[i].threads, r.err);
        cr_assert_str_empty(r.err, "%s %s %s: unexpected stderr: %s", c->isa, c->model, c->suffix,
                            r.err);
        if (!first) {
            compare_nbest(c, r.out, expected, strstr(flags_text, "--alignments") != NULL);
            first = strdup(r.out);
        } else {
            cr_assert_str_eq(r.out, first, "%s %s %s: --batch %d --threads %s differs from "
                             "--batch 1 --threads 1", c->isa, c->model, c->suffix, runs[i].batch,
                             runs[i].threads);
        }
        test_run_free(&r);
    }
    free(first);
    free(flags);
    free(flags_text);
    free(input);
    free(expected);
}
