/* Results do not depend on the thread count, the batch size, the workers or
 * the weight placement: the tessera command gives byte-identical output with
 * 1, 2, 3, 4 and 7 threads, batches of 5 and of 1, 2 and 3 workers (each
 * computing its own batches on its own runtime), and with per-node weight
 * copies on a (synthetic) two-node topology, for every kernel set this build
 * and CPU can run and every compute type. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd/dispatch.h"
#include "tests/testutil.h"

#define MODEL "prenorm-gelu-f16"

typedef struct thread_case {
    char isa[32];
    char model[32]; /* under tests/golden */
    char kind[16]; /* score, translate, beam */
    char type[8];  /* --compute-type */
} thread_case;

static void free_params(struct criterion_test_params *p) { cr_free(p->params); }

ParameterizedTestParameters(threads, output_independent_of_threads)
{
    static const char *const kinds[] = {"score", "translate", "beam"};
    static const char *const types[] = {"f32", "bf16", "int8"};
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n_sets = test_selected_kernel_sets(sets);
    size_t n = n_sets * 3 * 3;
    thread_case *cases = cr_malloc(n * sizeof *cases);
    for (size_t s = 0, i = 0; s < n_sets; s++)
        for (size_t k = 0; k < 3; k++)
            for (size_t t = 0; t < 3; t++, i++) {
                snprintf(cases[i].isa, sizeof cases[i].isa, "%s", sets[s]);
                snprintf(cases[i].model, sizeof cases[i].model, "%s", MODEL);
                snprintf(cases[i].kind, sizeof cases[i].kind, "%s", kinds[k]);
                snprintf(cases[i].type, sizeof cases[i].type, "%s", types[t]);
            }
    return cr_make_param_array(thread_case, cases, n, free_params);
}

/* Runs one case in batches of `batch` on `workers` workers of `threads`
 * threads; `topology` (or NULL) goes to TESSERA_TOPOLOGY with --numa
 * replicate. */
static char *run(const thread_case *c, const char *input, int workers, int threads, int batch,
                 const char *topology)
{
    char model_dir[1024], isa_env[64], topo_env[128], threads_arg[16], batch_arg[16];
    char workers_arg[16];
    snprintf(model_dir, sizeof model_dir, "%s/tests/golden/%s", test_srcdir(), c->model);
    snprintf(isa_env, sizeof isa_env, "TESSERA_ISA=%s", c->isa);
    snprintf(topo_env, sizeof topo_env, "TESSERA_TOPOLOGY=%s", topology ? topology : "");
    snprintf(threads_arg, sizeof threads_arg, "%d", threads);
    snprintf(batch_arg, sizeof batch_arg, "%d", batch);
    snprintf(workers_arg, sizeof workers_arg, "%d", workers);
    char *env[] = {isa_env, topo_env, NULL};
    int score = strcmp(c->kind, "score") == 0, beam = strcmp(c->kind, "beam") == 0;
    char *argv[] = {(char *)test_tessera_all_sets_path(), score ? "score" : "translate", "-m", model_dir,
                    "--compute-type", (char *)c->type, "--workers", workers_arg, "--threads",
                    threads_arg, "--batch", batch_arg, "--numa", topology ? "replicate" : "auto",
                    "--max-len", "20", beam ? "--beam" : NULL, "4", "--n-best", "2", NULL};
    if (score)
        argv[14] = NULL; /* no --max-len for score */
    test_run r = test_run_command(argv, input, env);
    cr_assert_eq(r.exit_status, 0, "%s %s %s --workers %d --threads %d --batch %d%s%s failed: %s",
                 c->isa, c->type, c->kind, workers, threads, batch, topology ? " on " : "",
                 topology ? topology : "", r.err);
    cr_assert(strlen(r.out) > 0, "%s %s %s printed nothing", c->isa, c->type, c->kind);
    free(r.err);
    return r.out;
}

ParameterizedTest(thread_case *c, threads, output_independent_of_threads, .timeout = 180)
{
    test_kernel_set_or_skip(c->isa);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s/%s.in", test_srcdir(), c->model,
             strcmp(c->kind, "score") == 0 ? "score" : "translate");
    char *input = test_read_file(path, NULL);
    cr_assert(input, "cannot read %s", path);
    char *one = run(c, input, 1, 1, 5, NULL);
    static const int counts[] = {2, 3, 4, 7};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char *other = run(c, input, 1, counts[i], 5, NULL);
        cr_assert_str_eq(other, one, "%s %s %s: --threads %d differs from --threads 1", c->isa,
                         c->type, c->kind, counts[i]);
        free(other);
    }
    char *unbatched = run(c, input, 1, 2, 1, NULL);
    cr_assert_str_eq(unbatched, one, "%s %s %s: --batch 1 differs from --batch 5", c->isa,
                     c->type, c->kind);
    free(unbatched);
    /* Workers take batches in turn and the output is put back in order. */
    char *two = run(c, input, 2, 1, 1, NULL);
    cr_assert_str_eq(two, one, "%s %s %s: --workers 2 differs from one worker", c->isa, c->type,
                     c->kind);
    free(two);
    char *three = run(c, input, 3, 2, 2, NULL);
    cr_assert_str_eq(three, one, "%s %s %s: --workers 3 --threads 2 differs from one worker",
                     c->isa, c->type, c->kind);
    free(three);
    /* Two weight copies, threads 0-1 reading copy 0 and 2 reading copy 1. */
    char *replicated = run(c, input, 1, 3, 5, "pack:2 numa:1 core:2 pu:1");
    cr_assert_str_eq(replicated, one, "%s %s %s: per-node weight copies change the output",
                     c->isa, c->type, c->kind);
    free(replicated);
    /* Two workers, one per node, each reading its node's copy. */
    char *per_node = run(c, input, 2, 2, 3, "pack:2 numa:1 core:2 pu:1");
    cr_assert_str_eq(per_node, one, "%s %s %s: a worker per node changes the output", c->isa,
                     c->type, c->kind);
    free(per_node);
    free(one);
    free(input);
}

/* The models with the other LayerNorm forms (std, std_unbiased): greedy and
 * beam output the same with 1, 2 and 3 threads and batches of 5 and 1. */
ParameterizedTestParameters(threads, layer_norm_forms_independent_of_threads)
{
    static const char *const models[] = {"postnorm-relu-std-f32", "prenorm-gelu-std-unbiased-f32"};
    static const char *const kinds[] = {"translate", "beam"};
    const char *sets[TEST_MAX_KERNEL_SETS];
    size_t n_sets = test_selected_kernel_sets(sets);
    size_t n = n_sets * 2 * 2;
    thread_case *cases = cr_malloc(n * sizeof *cases);
    for (size_t s = 0, i = 0; s < n_sets; s++)
        for (size_t m = 0; m < 2; m++)
            for (size_t k = 0; k < 2; k++, i++) {
                snprintf(cases[i].isa, sizeof cases[i].isa, "%s", sets[s]);
                snprintf(cases[i].model, sizeof cases[i].model, "%s", models[m]);
                snprintf(cases[i].kind, sizeof cases[i].kind, "%s", kinds[k]);
                snprintf(cases[i].type, sizeof cases[i].type, "f32");
            }
    return cr_make_param_array(thread_case, cases, n, free_params);
}

ParameterizedTest(thread_case *c, threads, layer_norm_forms_independent_of_threads, .timeout = 120)
{
    test_kernel_set_or_skip(c->isa);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s/translate.in", test_srcdir(), c->model);
    char *input = test_read_file(path, NULL);
    cr_assert(input, "cannot read %s", path);
    char *one = run(c, input, 1, 1, 5, NULL);
    static const int threads[] = {2, 3, 2}, batches[] = {5, 5, 1};
    for (size_t i = 0; i < 3; i++) {
        char *other = run(c, input, 1, threads[i], batches[i], NULL);
        cr_assert_str_eq(other, one, "%s %s %s: --threads %d --batch %d differs from 1 thread, "
                         "batch 5", c->isa, c->model, c->kind, threads[i], batches[i]);
        free(other);
    }
    free(one);
    free(input);
}
