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
            "Usage: tessera info [--workers N] [--threads K] [--numa POLICY] [--smt]\n"
            "\n"
            "Prints the CPU features found, the kernel sets this build has and whether\n"
            "this CPU can run them, the set chosen (TESSERA_ISA forces one), the int8\n"
            "kernel, the compute type (TESSERA_COMPUTE_TYPE chooses one), the hwloc\n"
            "topology, the plan of the workers' threads (cores, NUMA nodes, weight copies)\n"
            "that translate and score would make with the same options, and the names of\n"
            "the models installed in\n"
            "  %s\n"
            "(where -m NAME looks after the directories of TESSERA_MODELS_PATH).\n"
            "\n"
            "Options:\n",
            cli_models_dir());
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
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->workers = 1;
    opterr = 0;
    optind = 1;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (opt) {
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
    tessera_runtime *rt;
    if (cli_runtime_open(&o, 0, &rt) != 0)
        return 1;
    char plan[8192];
    tessera_runtime_describe(rt, plan, sizeof plan);
    printf("tessera %s\n%s", tessera_version(), system);
    printf("compute type: %s%s; available: f32, bf16, int8 (--compute-type or "
           "TESSERA_COMPUTE_TYPE)\n",
           tessera_compute_type_name(type),
           env_type && *env_type ? " (from TESSERA_COMPUTE_TYPE)" : " (the default)");
    printf("threads: %d per worker, %d worker%s\n", tessera_runtime_threads(rt), o.workers,
           o.workers == 1 ? "" : "s");
    printf("%s%s", plan, plan[0] && plan[strlen(plan) - 1] != '\n' ? "\n" : "");
    tessera_runtime_free(rt);
    char names[4096];
    cli_model_names(cli_models_dir(), names, sizeof names);
    printf("installed models (%s): %s\n", cli_models_dir(), names);
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}
