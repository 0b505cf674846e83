/* tessera info: what this machine offers and what tessera will use. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/model_path.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera info [-m DIR|NAME] [--compute-type TYPE] [--max-memory SIZE]\n"
            "                    [--workers N] [--threads K] [--numa POLICY] [--smt]\n"
            "\n"
            "Prints the CPU features found, the kernel sets this build has and whether\n"
            "this CPU can run them, the set chosen (TESSERA_ISA forces one), the int8\n"
            "kernel, the microarchitecture the kernels tune for (TESSERA_TUNING forces\n"
            "one), the compute type (TESSERA_COMPUTE_TYPE chooses one), the hwloc\n"
            "topology, the plan of the workers' threads (cores, NUMA nodes, weight copies)\n"
            "that translate and score would make with the same options, and the names of\n"
            "the models installed in\n"
            "  %s\n"
            "(where -m NAME looks after the directories of TESSERA_MODELS_PATH), and each\n"
            "worker's memory budget. With -m, also the model's resident size (its weights\n"
            "in the compute type) and the working memory one sentence as long as the\n"
            "model allows needs, translated greedily and with beam 4 to the longest\n"
            "output, and scored: what --max-memory is held against.\n"
            "\n"
            "Options:\n",
            cli_models_dir());
    cli_usage_model(f, "-m, --model DIR|NAME", "a model to size (optional):");
    cli_usage_compute_type(f);
    fprintf(f, "  --max-memory SIZE       each worker's memory budget (see 'tessera translate\n"
               "                          --help'); default: half the memory available\n");
    cli_usage_threads(f);
    fprintf(f, "  -h, --help              this help\n");
}

/* The options that shape the plan; 0 to go on, -1 after --help, 1 after an
 * error. */
static int parse(int argc, char **argv, cli_options *o)
{
    static const struct option opts[] = {
        {"workers", required_argument, NULL, 'w'}, {"threads", required_argument, NULL, 'j'},
        {"numa", required_argument, NULL, 'n'},    {"smt", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {"model", required_argument, NULL, 'm'},
        {"compute-type", required_argument, NULL, 'c'},
        {"max-memory", required_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->workers = 1;
    o->compute_type = TESSERA_COMPUTE_DEFAULT;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":hm:", opts, NULL)) != -1) {
        switch (opt) {
        case 'm': o->model_dir = optarg; break;
        case 'c':
            if (cli_parse_compute_type(optarg, &o->compute_type) != 0)
                return 1;
            break;
        case 'M':
            if (cli_parse_size("--max-memory", optarg, (size_t)1 << 20, (size_t)1 << 40,
                               &o->max_memory) != 0)
                return 1;
            break;
        case 'w':
            if (cli_parse_int("--workers", optarg, 1, 256, &o->workers) != 0)
                return 1;
            break;
        case 'j':
            if (cli_parse_int("--threads", optarg, 1, 4096, &o->threads) != 0)
                return 1;
            break;
        case 'n': o->numa = optarg; break;
        case 's': o->smt = 1; break;
        case 'h': usage(stdout); return -1;
        case ':': return cli_error("info: option '%s' needs a value", argv[optind - 1]);
        default:
            return cli_error("info: unknown option '%s' (try 'tessera info --help')",
                             argv[optind - 1]);
        }
    }
    if (optind < argc)
        return cli_error("info: unexpected argument '%s' (try 'tessera info --help')",
                         argv[optind]);
    return 0;
}

static double mib(size_t bytes) { return (double)bytes / (1 << 20); }

/* Each worker's memory budget, and where it comes from. */
static void print_budget(const tessera_runtime *rt, const cli_options *o)
{
    size_t budget = tessera_runtime_memory_budget(rt);
    if (budget == SIZE_MAX)
        printf("memory budget: none (the memory available cannot be read here)\n");
    else
        printf("memory budget: %.1f MiB per worker (%s)\n", mib(budget),
               o->max_memory ? "--max-memory"
                             : "half the memory available now, shared by the workers");
}

static void print_ids(const char *what, const int *ids, int n)
{
    printf("; %s", what);
    for (int i = 0; i < n; i++)
        printf(" %d", ids[i]);
}

/* Where the model came from and the config keys of docs/model-format.md's
 * "Model families" that it sets. */
static void print_family(const tessera_config *cfg)
{
    static const char *const positions[] = {"sinusoid", "sinusoid_halves", "sinusoid_halves_t2t"};
    printf("model family: %s; computed positions (without a table in the file) %s",
           cfg->family[0] ? cfg->family : "(not said)",
           positions[cfg->position_encoding]);
    if (cfg->tie_output_projection)
        printf("; output projection tied to the target embedding");
    if (cfg->share_embeddings)
        printf("; source and target embeddings shared");
    if (cfg->decoder_start == TESSERA_START_ZEROS)
        printf("; decoder starts from a zero vector");
    if (cfg->n_source_suffix > 0)
        print_ids("source suffix", cfg->source_suffix, cfg->n_source_suffix);
    if (cfg->position_offset > 0)
        printf("; positions from row %d", cfg->position_offset);
    if (cfg->min_target_length > 0)
        printf("; no eos before %d target tokens", cfg->min_target_length);
    if (cfg->n_banned_target_ids > 0) {
        print_ids("banned target ids", cfg->banned_target_ids, cfg->n_banned_target_ids);
        printf(cfg->ban_logits ? " (before the softmax)" : " (after the softmax)");
    }
    printf("\n");
}

/* A multilingual model's languages, all of them: how it takes them and each
 * name with its token id, several to a line. */
static void print_languages(const cli_model *cm)
{
    const tessera_config *cfg = cm->cfg;
    size_t n = tessera_model_language_count(cm->model);
    if (cfg->source_language == TESSERA_SOURCE_LANGUAGE_NONE &&
        cfg->target_language == TESSERA_TARGET_LANGUAGE_NONE)
        return;
    static const char *const source[] = {"none", "its token before the source",
                                         "its token after the source"};
    static const char *const target[] = {"none", "its token forced first (not printed)",
                                         "its token starts the decoder (not printed)"};
    printf("languages: %zu; source language (--source-lang): %s; target language "
           "(--target-lang): %s\n",
           n, source[cfg->source_language], target[cfg->target_language]);
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id;
        const char *name = tessera_model_language(cm->model, i, &id);
        char entry[64];
        int w = snprintf(entry, sizeof entry, "%s (%d)", name, (int)id);
        if (col > 0 && col + (size_t)w + 2 > 100) {
            printf("\n");
            col = 0;
        }
        printf("%s%s", col ? ", " : "  ", entry);
        col += (size_t)w + 2;
    }
    if (n > 0)
        printf("\n");
}

/* The model's text: its tokenizers and whether this build reads them. */
static void print_text(const cli_model *cm)
{
    const tessera_config *cfg = cm->cfg;
    if (!cfg->source_tokenizer[0] && !cfg->target_tokenizer[0]) {
        /* A CTranslate2 directory's vocabularies are the model's own. */
        if (tessera_model_vocabulary(cm->model, TESSERA_SOURCE))
            printf("model text: no tokenizers (ids, or --pieces through the model's "
                   "vocabularies: %zu source, %zu target tokens)\n",
                   tessera_vocabulary_size(tessera_model_vocabulary(cm->model, TESSERA_SOURCE)),
                   tessera_vocabulary_size(tessera_model_vocabulary(cm->model, TESSERA_TARGET)));
        else
            printf("model text: no tokenizers (ids, or pieces through vocab.src.txt / "
                   "vocab.tgt.txt)\n");
        return;
    }
    printf("model text: SentencePiece tokenizers, source %s, target %s; %s\n",
           cfg->source_tokenizer[0] ? cfg->source_tokenizer : "(none)",
           cfg->target_tokenizer[0] ? cfg->target_tokenizer : "(none)",
           tessera_model_has_tokenizer(cm->model, TESSERA_SOURCE)
               ? "the command reads and writes text"
               : "this build has no SentencePiece: ids and pieces only");
}

/* The model's resident size and what one sentence as long as it allows
 * needs: translated greedily and with beam 4 to the longest output, and
 * scored with a target as long. */
static void print_model(const cli_model *cm)
{
    const tessera_runtime *rt = cm->runtimes[0];
    const tessera_config *cfg = cm->cfg;
    /* The longest source a caller may pass: the model adds its suffix (and
     * its language token). */
    size_t len = (size_t)(cfg->max_positions - cfg->n_source_suffix -
                          (cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE));
    printf("model: %s: %.1f MiB resident (weights, %s)\n", cm->dir,
           mib(tessera_model_weight_bytes(cm->model)),
           tessera_compute_type_name(tessera_model_compute_type(cm->model)));
    print_family(cfg);
    print_languages(cm);
    print_text(cm);
    if (cfg->n_decoder_layers == 0) {
        printf("working memory of one sentence of %zu tokens: encode %.1f MiB\n", len,
               mib(tessera_encode_memory(rt, cm->model, 1, len)));
        return;
    }
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = cfg->max_positions -
                (cfg->target_language == TESSERA_TARGET_LANGUAGE_FORCED ? 2 : 1);
    size_t greedy = tessera_translate_memory(rt, cm->model, 1, len, &o);
    o.beam = 4;
    size_t beam = tessera_translate_memory(rt, cm->model, 1, len, &o);
    printf("working memory of one sentence of %zu tokens (max_positions), to %d target tokens: "
           "greedy %.1f MiB, beam 4 %.1f MiB, score %.1f MiB\n",
           len, o.max_len, mib(greedy), mib(beam),
           mib(tessera_score_memory(rt, cm->model, 1, len, (size_t)cfg->max_positions - 1)));
}

int cli_info(int argc, char **argv)
{
    cli_options o;
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : 1;
    char err[512];
    /* Checked before anything is printed: a bad value is the only output. */
    const char *env_type = getenv("TESSERA_COMPUTE_TYPE");
    tessera_compute_type type = TESSERA_COMPUTE_F32;
    if (env_type && *env_type && tessera_compute_type_parse(env_type, &type, err, sizeof err) != 0)
        return cli_error("TESSERA_COMPUTE_TYPE: %s", err);
    char system[4096];
    if (tessera_describe_system(system, sizeof system, err, sizeof err) != 0)
        return cli_error("%s", err);
    cli_model cm = {0};
    tessera_runtime *rt;
    if (o.model_dir ? cli_model_open(&o, &cm) != 0 : cli_runtime_open(&o, 0, &rt) != 0)
        return 1;
    if (o.model_dir)
        rt = cm.runtimes[0];
    char plan[8192];
    tessera_runtime_describe(rt, plan, sizeof plan);
    printf("tessera %s\n%s", tessera_version(), system);
    printf("compute type: %s%s; available: f32, bf16, int8 (--compute-type or "
           "TESSERA_COMPUTE_TYPE)\n",
           tessera_compute_type_name(o.compute_type != TESSERA_COMPUTE_DEFAULT ? o.compute_type : type),
           o.compute_type != TESSERA_COMPUTE_DEFAULT ? " (--compute-type)"
           : env_type && *env_type                   ? " (from TESSERA_COMPUTE_TYPE)"
                                                     : " (the default)");
    printf("threads: %d per worker, %d worker%s\n", tessera_runtime_threads(rt), o.workers,
           o.workers == 1 ? "" : "s");
    printf("%s%s", plan, plan[0] && plan[strlen(plan) - 1] != '\n' ? "\n" : "");
    print_budget(rt, &o);
    if (o.model_dir) {
        print_model(&cm);
        cli_model_close(&cm);
    } else {
        tessera_runtime_free(rt);
    }
    char names[4096];
    cli_model_names(cli_models_dir(), names, sizeof names);
    printf("installed models (%s): %s\n", cli_models_dir(), names);
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}
