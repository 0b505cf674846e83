/* tessera: translate, score, encode, tokenize, detokenize, info, bench, serve. */
#include <stdio.h>
#include <string.h>

#include "tessera-config.h"
#include "cli/cli.h"
#include "cli/model_path.h"

/* tests/tessera-test, the command that the per-set tests start hundreds of
 * times, is built without the server (TSR_CLI_WITHOUT_SERVE, Makefile.am):
 * it never serves, and links less. */
#if defined(HAVE_SERVE) && !defined(TSR_CLI_WITHOUT_SERVE)
#define CLI_SERVE 1
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: tessera COMMAND [OPTIONS]\n"
            "\n"
            "CPU inference for encoder-decoder Transformer models (Vaswani et al.).\n"
            "Sentences are read from standard input, one per line; one line is written per\n"
            "input line, in order.\n"
            "\n"
            "Commands:\n"
            "  translate -m MODEL  translate sentences (greedy or beam search): text when\n"
            "                      the model has tokenizers, else token ids\n"
            "  score -m MODEL      log-probabilities of target tokens, teacher forced\n"
            "  encode -m MODEL     the encoder's output vectors (per token, or pooled)\n"
            "  tokenize -m MODEL   text to the model's pieces or ids, as translate reads it\n"
            "  detokenize -m MODEL ids or pieces to text, as translate writes it\n"
            "  info                CPU features, kernel set, threads, topology, and the\n"
            "                      installed models\n"
            "  bench               timed runs on built-in Transformer-base/-big models,\n"
            "                      or on a model (--model MODEL)\n"
            "  serve -m MODEL      an HTTP server answering translate and score requests,\n"
            "                      batching concurrent ones%s\n"
            "MODEL is a model directory, or the name of an installed model (looked up in\n"
            "TESSERA_MODELS_PATH's directories, then in %s).\n"
            "\n"
            "'tessera COMMAND --help' describes each command's options.\n"
            "Environment: TESSERA_ISA=NAME forces a kernel set ('tessera info' lists\n"
            "them and which this build and CPU can run; by default tessera takes the\n"
            "best of those); TESSERA_TUNING=NAME forces the microarchitecture row the\n"
            "kernels tune by (speed only); TESSERA_NUM_THREADS sets the thread count;\n"
            "TESSERA_MODELS_PATH (colon-separated directories) is searched for models\n"
            "before the installed ones.\n",
#if defined(CLI_SERVE)
            "",
#elif defined(TSR_CLI_WITHOUT_SERVE)
            " (not in the tests' tessera-test)",
#else
            " (not in this build: configured without it, or no epoll)",
#endif
            cli_models_dir());
}

/* The subcommand named by argv[1]; its exit status. */
static int run(int argc, char **argv)
{
    const char *cmd = argv[1];
    if (strcmp(cmd, "translate") == 0)
        return cli_translate(argc - 1, argv + 1);
    if (strcmp(cmd, "score") == 0)
        return cli_score(argc - 1, argv + 1);
    if (strcmp(cmd, "encode") == 0)
        return cli_encode(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0)
        return cli_info(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0)
        return cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize") == 0)
        return cli_tokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "detokenize") == 0)
        return cli_detokenize(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
#if defined(CLI_SERVE)
        return cli_serve(argc - 1, argv + 1);
#elif defined(TSR_CLI_WITHOUT_SERVE)
        return cli_error("serve: tests/tessera-test is built without the server "
                         "(the tests serve with tests/command/tessera)");
#else
        return cli_error("serve: this tessera was built without its server "
                         "(configure --disable-serve, or a system without epoll)");
#endif
    return cli_error("unknown command '%s' (try 'tessera --help')", cmd);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("tessera %s\n", tessera_version());
        return 0;
    }
    int rc = run(argc, argv);
    if (rc == 0)
        cli_print_note();
    return rc;
}
