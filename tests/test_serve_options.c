/* The decoding options of tessera serve against the command's: for each
 * option a request's answer is, bit for bit, what `tessera translate` prints
 * with the same option (requests sent at once, so that any option the
 * batching key missed would mix them up), and a bad value gets the same
 * message from both, each in its own names. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tessera.h"
#include "tests/http_client.h"
#include "tests/serve_util.h"
#include "tests/testutil.h"

#define MODEL_DIR "models/numbers-en-de"

/* The sentences every case translates, as the command reads them and as a
 * request's "source" holds them. */
static const char input[] = "31 18\n5 6 7\n12 4 9 20\n7 7 7 7 7\n";
static const char source[] = "[[31, 18], [5, 6, 7], [12, 4, 9, 20], [7, 7, 7, 7, 7]]";

typedef struct option_case {
    const char *fields; /* the request's decoding fields */
    const char *flags;  /* the command's, space separated */
} option_case;

static const option_case cases[] = {
    {"\"sampling_topk\": 0, \"seed\": 5", "--sampling-topk 0 --seed 5"},
    /* The same options again: batched with the first, each sentence still
     * samples from its own index in its request. */
    {"\"seed\": 5, \"sampling_topk\": 0", "--sampling-topk 0 --seed 5"},
    {"\"sampling_topk\": 0, \"seed\": 6", "--sampling-topk 0 --seed 6"},
    {"\"sampling_topk\": 5, \"sampling_topp\": 0.9, \"sampling_temperature\": 1.5, \"seed\": 11",
     "--sampling-topk 5 --sampling-topp 0.9 --sampling-temperature 1.5 --seed 11"},
    {"\"min_len\": 6, \"max_len\": 10", "--min-len 6 --max-len 10"},
    {"\"no_repeat_ngram\": 1", "--no-repeat-ngram 1"},
    {"\"repetition_penalty\": 1.5", "--repetition-penalty 1.5"},
    {"\"disable_unk\": true, \"max_len\": 3", "--disable-unk --max-len 3"},
    {"\"end_token\": 28", "--end-token 28"},
    {"\"beam\": 4, \"n_best\": 2, \"length_penalty\": 0.6, \"return_alignments\": true",
     "--beam 4 --n-best 2 --length-penalty 0.6 --alignments"},
    {"\"target_prefix\": [[10], [12, 13], [], [28]]", "--prefix"},
    /* The defaults: batched with the prefixed request, its sentences
     * without a prefix. */
    {"\"max_len\": 256", "--max-len 256"},
};
#define N_CASES (sizeof cases / sizeof cases[0])

/* The command's input for a case: with --prefix each line also carries
 * the case's prefix. */
static const char *case_input(const option_case *c)
{
    return strstr(c->flags, "--prefix") ? "31 18\t10\n5 6 7\t12 13\n12 4 9 20\t\n7 7 7 7 7\t28\n"
                                        : input;
}

/* Runs `tessera translate --ids --n-best K FLAGS` on text. */
static test_run run_translate(const char *flags, const char *text)
{
    char model[1024], words[512];
    snprintf(model, sizeof model, "%s/%s", test_srcdir(), MODEL_DIR);
    snprintf(words, sizeof words, "%s", flags);
    char *argv[32] = {(char *)test_tessera_path(), "translate", "-m", model, "--ids"};
    int argc = 5;
    if (!strstr(flags, "--n-best"))
        argv[argc++] = "--n-best", argv[argc++] = "1"; /* print the scores */
    for (char *w = strtok(words, " "); w && argc < 31; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    return test_run_command(argv, text, NULL);
}

/* One hypothesis as the command prints it: IDS<TAB>SCORE[<TAB>ALIGNMENT]. */
static size_t print_hypothesis(json_t *h, char *out, size_t len)
{
    size_t at = 0, t;
    json_t *v;
    json_array_foreach(json_object_get(h, "ids"), t, v)
        at += (size_t)snprintf(out + at, len - at, "%s%lld", t ? " " : "",
                               (long long)json_integer_value(v));
    at += (size_t)snprintf(out + at, len - at, "\t%.9g",
                           json_number_value(json_object_get(h, "score")));
    json_t *alignment = json_object_get(h, "alignment");
    if (alignment)
        at += (size_t)snprintf(out + at, len - at, "\t");
    json_array_foreach(alignment, t, v)
        at += (size_t)snprintf(out + at, len - at, "%s%lld-%zu", t ? " " : "",
                               (long long)json_integer_value(v), t);
    return at;
}

/* An answer as the command's output: a line per sentence, its hypotheses
 * separated by tabs. */
static void answer_as_lines(const char *body, char *out, size_t len)
{
    json_t *root = json_loads(body ? body : "", 0, NULL);
    size_t at = 0, i;
    json_t *item;
    out[0] = '\0';
    json_array_foreach(json_object_get(root, "translations"), i, item) {
        json_t *all = json_object_get(item, "n_best");
        size_t k, n = all ? json_array_size(all) : 1;
        for (k = 0; k < n && at < len; k++) {
            if (k)
                at += (size_t)snprintf(out + at, len - at, "\t");
            at += print_hypothesis(all ? json_array_get(all, k) : item, out + at, len - at);
        }
        if (at < len)
            at += (size_t)snprintf(out + at, len - at, "\n");
    }
    json_decref(root);
}

typedef struct request {
    const server *s;
    const option_case *c;
    http_reply r;
} request;

static void *send_case(void *arg)
{
    request *q = arg;
    char body[1024];
    snprintf(body, sizeof body, "{\"source\": %s, %s}", source, q->c->fields);
    q->r = serve_call(q->s, "POST", "/v1/translate", body);
    return NULL;
}

/* Every case's request at once (one worker waiting to fill its batches):
 * each answer is the command's output for its options. */
Test(serve_options, each_option_answers_as_the_command, .timeout = 120)
{
    static const char *const opts[] = {"--workers", "1", "--threads", "1", "--batch-wait-ms",
                                       "200", NULL};
    server s;
    serve_start(&s, MODEL_DIR, opts);
    request q[N_CASES];
    pthread_t t[N_CASES];
    for (size_t i = 0; i < N_CASES; i++) {
        q[i] = (request){&s, &cases[i], {0}};
        cr_assert_eq(pthread_create(&t[i], NULL, send_case, &q[i]), 0);
    }
    for (size_t i = 0; i < N_CASES; i++)
        pthread_join(t[i], NULL);
    for (size_t i = 0; i < N_CASES; i++) {
        test_run cli = run_translate(cases[i].flags, case_input(&cases[i]));
        char got[4096];
        answer_as_lines(q[i].r.body, got, sizeof got);
        cr_expect_eq(q[i].r.status, 200, "%s: %s", cases[i].fields, q[i].r.body);
        cr_expect_eq(cli.exit_status, 0, "%s: %s", cases[i].flags, cli.err);
        cr_expect_str_eq(got, cli.out, "%s: the server's\n%sthe command's (%s)\n%s",
                         cases[i].fields, got, cases[i].flags, cli.out);
        test_run_free(&cli);
        http_reply_free(&q[i].r);
    }
    serve_stop(&s);
}

/* A bad value: the server's message, and the command's one line, which
 * says the same in its flags' names. */
typedef struct refusal {
    const char *fields, *flags, *server, *command;
} refusal;

static const refusal refusals[] = {
    {"\"beam\": 0", "--beam 0", "beam: 0 is out of range [1, 1024]",
     "--beam: 0 is out of range [1, 1024]"},
    {"\"beam\": 2, \"n_best\": 3", "--beam 2 --n-best 3", "n_best: 3 is out of range [1, beam (2)]",
     "--n-best: 3 is out of range [1, --beam (2)]"},
    {"\"max_len\": -1", "--max-len -1", "max_len: -1 is out of range [0, 1048576]",
     "--max-len: -1 is out of range [0, 1048576]"},
    {"\"min_len\": 30, \"max_len\": 20", "--min-len 30 --max-len 20",
     "min_len: 30 is out of range [0, max_len (20)]",
     "--min-len: 30 is out of range [0, --max-len (20)]"},
    {"\"length_penalty\": 101", "--length-penalty 101", "length_penalty: 101 is out of range [0, 100]",
     "--length-penalty: 101 is out of range [0, 100]"},
    {"\"sampling_topk\": -1", "--sampling-topk -1",
     "sampling_topk: -1 is out of range [0, 1048576]",
     "--sampling-topk: -1 is out of range [0, 1048576]"},
    {"\"sampling_topk\": 0, \"sampling_topp\": 1.5", "--sampling-topk 0 --sampling-topp 1.5",
     "sampling_topp: 1.5 is out of range (0, 1]", "--sampling-topp: 1.5 is out of range (0, 1]"},
    {"\"sampling_topp\": 0.5", "--sampling-topp 0.5",
     "sampling_topp: 0.5 needs sampling_topk 0 or above 1 (1 is greedy decoding)",
     "--sampling-topp: 0.5 needs --sampling-topk 0 or above 1 (1 is greedy decoding)"},
    {"\"sampling_topk\": 0, \"sampling_temperature\": 0", "--sampling-topk 0 --sampling-temperature 0",
     "sampling_temperature: 0 is out of range [0.001, 100]",
     "--sampling-temperature: 0 is out of range [0.001, 100]"},
    {"\"sampling_topk\": 5, \"beam\": 2", "--sampling-topk 5 --beam 2",
     "sampling_topk: 5 samples, which needs beam 1, not 2",
     "--sampling-topk: 5 samples, which needs --beam 1, not 2"},
    {"\"no_repeat_ngram\": 1025", "--no-repeat-ngram 1025",
     "no_repeat_ngram: 1025 is out of range [0, 1024]",
     "--no-repeat-ngram: 1025 is out of range [0, 1024]"},
    {"\"repetition_penalty\": 0", "--repetition-penalty 0",
     "repetition_penalty: 0 is out of range [0.01, 100]",
     "--repetition-penalty: 0 is out of range [0.01, 100]"},
    {"\"end_token\": 36", "--end-token 36", "end_token: 36 is out of range [-1, 36) (-1: none)",
     "--end-token: 36 is out of range [-1, 36) (-1: none)"},
    {"\"end_token\": 28, \"target_prefix\": [[10, 28]]", "--end-token 28 --prefix",
     "target_prefix[0]: holds the ending token 28 (end_token)",
     "line 1: target prefix: holds the ending token 28 (--end-token)"},
};

Test(serve_options, a_bad_value_says_the_same_as_the_command, .timeout = 120)
{
    server s;
    serve_start(&s, MODEL_DIR, NULL);
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        const refusal *c = &refusals[i];
        char body[512], want[512];
        snprintf(body, sizeof body, "{\"source\": [[5, 6, 7]], %s}", c->fields);
        http_reply r = serve_call(&s, "POST", "/v1/translate", body);
        json_t *root = json_loads(r.body ? r.body : "", 0, NULL);
        const char *msg = root ? serve_error_message(root) : NULL;
        cr_expect_eq(r.status, 400, "%s: %d %s", body, r.status, r.body);
        cr_expect_str_eq(msg ? msg : "(none)", c->server, "%s", body);
        json_decref(root);
        http_reply_free(&r);

        test_run cli = run_translate(c->flags, strstr(c->flags, "--prefix") ? "5 6 7\t10 28\n"
                                                                              : "5 6 7\n");
        snprintf(want, sizeof want, "tessera: %s%s\n",
                 strncmp(c->command, "line", 4) ? "translate: " : "", c->command);
        cr_expect_eq(cli.exit_status, 1, "%s", c->flags);
        cr_expect_str_eq(cli.err, want, "%s", c->flags);
        test_run_free(&cli);
    }
    serve_stop(&s);
}

/* Text: a target prefix as text, read as the source is. */
Test(serve_options, a_text_prefix_answers_as_the_command, .timeout = 120)
{
    if (!serve_reads_text(MODEL_DIR))
        cr_skip_test("this build has no SentencePiece: the server reads no text");
    server s;
    serve_start(&s, MODEL_DIR, NULL);
    http_reply r = serve_call(&s, "POST", "/v1/translate",
                              "{\"text\": [\"twenty one\", \"zero\"], "
                              "\"target_prefix_text\": [\"zwei\", \"\"]}");
    json_t *root = json_loads(r.body ? r.body : "", 0, NULL);
    char got[512] = "";
    size_t at = 0, i;
    json_t *item;
    json_array_foreach(json_object_get(root, "translations"), i, item)
        at += (size_t)snprintf(got + at, sizeof got - at, "%s\n",
                               json_string_value(json_object_get(item, "text")));
    char model[1024];
    snprintf(model, sizeof model, "%s/%s", test_srcdir(), MODEL_DIR);
    char *argv[] = {(char *)test_tessera_path(), "translate", "-m", model, "--prefix", NULL};
    test_run cli = test_run_command(argv, "twenty one\tzwei\nzero\t\n", NULL);
    cr_expect_eq(r.status, 200, "%s", r.body);
    cr_expect_str_eq(got, cli.out, "server %s, command %s %s", got, cli.out, cli.err);
    cr_expect(strncmp(got, "zwei", 4) == 0, "the prefix does not start the answer: %s", got);
    json_decref(root);
    http_reply_free(&r);
    test_run_free(&cli);
    serve_stop(&s);
}

/* serve --vmap: every request decodes over the server's shortlist, and its
 * answer is the command's with the same flag (which test_golden holds to
 * PyTorch). */
Test(serve_options, a_shortlist_answers_as_the_command, .timeout = 120)
{
    static const char model[] = "tests/golden/postnorm-silu-bf16";
    char vmap[1200], model_path[1024], in_path[1200];
    snprintf(model_path, sizeof model_path, "%s/%s", test_srcdir(), model);
    snprintf(vmap, sizeof vmap, "%s/shortlist/vmap.txt", model_path);
    snprintf(in_path, sizeof in_path, "%s/shortlist/vmap-beam.in", model_path);
    char *text = test_read_file(in_path, NULL);
    cr_assert(text, "cannot read %s", in_path);
    char body[8192] = "{\"source\": [", *at = body + strlen(body), *words = strdup(text);
    for (char *line = words, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0'; /* strtok cuts the copy up, not the command's input */
        at += sprintf(at, "%s[", line == words ? "" : ", ");
        for (char *w = strtok(line, " "); w; w = strtok(NULL, " "))
            at += sprintf(at, "%s%s", at[-1] == '[' ? "" : ", ", w);
        at += sprintf(at, "]");
    }
    free(words);
    sprintf(at, "], \"beam\": 4, \"n_best\": 2, \"length_penalty\": 0.6, \"max_len\": 15}");
    const char *const opts[] = {"--workers", "1", "--threads", "1", "--vmap", vmap, NULL};
    server s;
    serve_start(&s, model, opts);
    http_reply r = serve_call(&s, "POST", "/v1/translate", body);
    cr_assert_eq(r.status, 200, "%s", r.body);
    char got[8192];
    answer_as_lines(r.body, got, sizeof got);
    char *argv[] = {(char *)test_tessera_path(), "translate", "-m", model_path, "--ids",
                    "--vmap", vmap, "--beam", "4", "--n-best", "2", "--length-penalty", "0.6",
                    "--max-len", "15", NULL};
    test_run cli = test_run_command(argv, text, NULL);
    cr_assert_eq(cli.exit_status, 0, "%s", cli.err);
    cr_expect_str_eq(got, cli.out, "the server's\n%sthe command's\n%s", got, cli.out);
    test_run_free(&cli);
    http_reply_free(&r);
    serve_stop(&s);
    free(text);
}
