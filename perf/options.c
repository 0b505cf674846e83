/* The command line of tessera-perf. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"
#include "simd/sets.h"

static const struct {
    const char *name;
    unsigned bit;
    int shape_dims; /* numbers a --shape for this op has */
} op_names[] = {
    {"gemm", PERF_OP_GEMM, 3},           {"ffn", PERF_OP_FFN, 3},
    {"attention", PERF_OP_ATTENTION, 3}, {"layernorm", PERF_OP_LAYERNORM, 2},
    {"softmax", PERF_OP_SOFTMAX, 2},     {"activation", PERF_OP_ACTIVATION, 2},
    {"embed", PERF_OP_EMBED, 2},         {"widen", PERF_OP_WIDEN, 1},
};
#define N_OPS (sizeof op_names / sizeof op_names[0])

static void usage(FILE *f)
{
    char sets[256];
    tsr_kernel_set_list(sets, sizeof sets);
    fprintf(f,
            "Usage: tessera-perf [OPTIONS]\n"
            "\n"
            "Times each kernel of tessera's kernel table for each kernel set this build and CPU\n"
            "can run, and prints one line of key=value pairs per case (see perf/README.md).\n"
            "The FMA peak of each set and the memory bandwidth are measured first.\n"
            "\n"
            "Options:\n"
            "  --op LIST        comma-separated: gemm, ffn, attention, layernorm, softmax,\n"
            "                   activation, embed, widen, or all (default all)\n"
            "  --isa NAME       time one kernel set only (%s)\n"
            "  --threads N      threads for tessera's kernels and the peers (default 1)\n"
            "  --type f32|bf16|int8  how tessera holds the gemm and ffn weights (default\n"
            "                   f32); with bf16 every candidate, peers too, multiplies by\n"
            "                   the same bf16-rounded weights; with int8 the peers run\n"
            "                   float32 on the original weights (a reference time, their\n"
            "                   results not compared), each set's int8 kernel gets its\n"
            "                   own int8 peak (op=peak-int8: the kernel's instructions\n"
            "                   with no loads), and its pct_peak is against that\n"
            "  --shape S        one shape instead of the built-in ones, for a single --op:\n"
            "                   gemm MxNxK (rows, outputs, inputs); ffn MxD_FFxD;\n"
            "                   attention NQxNKxD (run unmasked and causal);\n"
            "                   layernorm, softmax, activation, embed ROWSxN; widen N\n"
            "  --repeat R       timed runs per case at least (default 5)\n"
            "  --min-time S     seconds of timed runs per case at least (default 0.1)\n"
            "  --max-time S     stop a case after S seconds, with one run at least (default 1)\n"
            "  --clock wall|cpu time cases by wall time (default) or by this thread's CPU\n"
            "                   time, which leaves out time other work holds the core\n"
            "                   (a shared machine); cpu needs --threads 1\n"
            "  --quick          smoke run of a few seconds: small shapes, short timings\n"
            "  --no-peers       skip OpenBLAS / oneDNN even when built with them\n"
            "  --no-ceilings    skip measuring the FMA peaks and the bandwidth (no pct_*\n"
            "                   fields): for profiling a case alone (perf/perf-compare.sh)\n"
            "  -h, --help       this help\n",
            sets);
}

static int parse_ops(const char *arg, unsigned *ops, int *dims)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    *ops = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            *ops |= PERF_OP_ALL;
            continue;
        }
        size_t i = 0;
        while (i < N_OPS && strcmp(tok, op_names[i].name) != 0)
            i++;
        if (i == N_OPS) {
            fprintf(stderr, "tessera-perf: unknown --op '%s'\n", tok);
            return -1;
        }
        *ops |= op_names[i].bit;
        *dims = op_names[i].shape_dims;
    }
    return *ops ? 0 : -1;
}

static int parse_count(const char *opt, const char *arg, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || *v < lo || *v > hi) {
        fprintf(stderr, "tessera-perf: %s expects an integer in [%ld, %ld], not '%s'\n", opt, lo,
                hi, arg);
        return -1;
    }
    return 0;
}

static int parse_seconds(const char *opt, const char *arg, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(arg, &end);
    if (errno || end == arg || *end || !(*v >= 0 && *v <= 3600)) {
        fprintf(stderr, "tessera-perf: %s expects seconds in [0, 3600], not '%s'\n", opt, arg);
        return -1;
    }
    return 0;
}

/* "128x512x512" into up to three positive sizes; returns how many, -1 if bad. */
static int parse_shape(const char *arg, size_t shape[3])
{
    int n = 0;
    const char *p = arg;
    while (n < 3) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || end == p || v == 0 || v > (1ull << 26) || *p == '-')
            return -1;
        shape[n++] = (size_t)v;
        if (*end == '\0')
            return n;
        if (*end != 'x')
            return -1;
        p = end + 1;
    }
    return -1;
}

int perf_parse_options(int argc, char **argv, perf_options *o)
{
    enum { OPT_OP = 256, OPT_ISA, OPT_THREADS, OPT_SHAPE, OPT_REPEAT, OPT_MIN_TIME,
           OPT_MAX_TIME, OPT_QUICK, OPT_NO_PEERS, OPT_NO_CEILINGS, OPT_CLOCK, OPT_TYPE };
    static const struct option longopts[] = {
        {"op", required_argument, NULL, OPT_OP},
        {"isa", required_argument, NULL, OPT_ISA},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"shape", required_argument, NULL, OPT_SHAPE},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"min-time", required_argument, NULL, OPT_MIN_TIME},
        {"max-time", required_argument, NULL, OPT_MAX_TIME},
        {"quick", no_argument, NULL, OPT_QUICK},
        {"no-peers", no_argument, NULL, OPT_NO_PEERS},
        {"no-ceilings", no_argument, NULL, OPT_NO_CEILINGS},
        {"clock", required_argument, NULL, OPT_CLOCK},
        {"type", required_argument, NULL, OPT_TYPE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int op_dims = 0, have_repeat = 0, have_min = 0, have_max = 0, c;
    const char *shape_arg = NULL;
    long v;

    *o = (perf_options){.ops = PERF_OP_ALL, .threads = 1, .repeat = 5, .min_time = 0.1,
                        .max_time = 1.0, .peers = 1, .ceilings = 1};
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_OP:
            if (parse_ops(optarg, &o->ops, &op_dims) != 0)
                return -1;
            break;
        case OPT_ISA:
            o->isa = optarg;
            break;
        case OPT_THREADS:
            if (parse_count("--threads", optarg, 1, 256, &v) != 0)
                return -1;
            o->threads = (int)v;
            break;
        case OPT_SHAPE:
            shape_arg = optarg;
            break;
        case OPT_REPEAT:
            if (parse_count("--repeat", optarg, 1, 1000, &v) != 0)
                return -1;
            o->repeat = (int)v;
            have_repeat = 1;
            break;
        case OPT_MIN_TIME:
            if (parse_seconds("--min-time", optarg, &o->min_time) != 0)
                return -1;
            have_min = 1;
            break;
        case OPT_MAX_TIME:
            if (parse_seconds("--max-time", optarg, &o->max_time) != 0)
                return -1;
            have_max = 1;
            break;
        case OPT_QUICK:
            o->quick = 1;
            break;
        case OPT_NO_PEERS:
            o->peers = 0;
            break;
        case OPT_NO_CEILINGS:
            o->ceilings = 0;
            break;
        case OPT_CLOCK:
            if (strcmp(optarg, "wall") != 0 && strcmp(optarg, "cpu") != 0) {
                fprintf(stderr, "tessera-perf: --clock expects wall or cpu, not '%s'\n", optarg);
                return -1;
            }
            o->cpu_clock = strcmp(optarg, "cpu") == 0;
            break;
        case OPT_TYPE:
            if (strcmp(optarg, "f32") == 0) {
                o->weight_type = TSR_WEIGHTS_F32;
            } else if (strcmp(optarg, "bf16") == 0) {
                o->weight_type = TSR_WEIGHTS_BF16;
            } else if (strcmp(optarg, "int8") == 0) {
                o->weight_type = TSR_WEIGHTS_INT8;
            } else {
                fprintf(stderr, "tessera-perf: --type expects f32, bf16 or int8, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            fprintf(stderr, "tessera-perf: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tessera-perf: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->quick) {
        o->repeat = have_repeat ? o->repeat : 3;
        o->min_time = have_min ? o->min_time : 0.01;
        o->max_time = have_max ? o->max_time : 0.1;
    }
    if (o->cpu_clock && o->threads > 1) {
        fprintf(stderr, "tessera-perf: --clock cpu measures one thread: use it with --threads 1\n");
        return -1;
    }
    if (shape_arg) {
        int single = (o->ops & (o->ops - 1)) == 0;
        if (!single) {
            fprintf(stderr, "tessera-perf: --shape needs a single --op\n");
            return -1;
        }
        o->shape_dims = parse_shape(shape_arg, o->shape);
        if (o->shape_dims != op_dims) {
            fprintf(stderr, "tessera-perf: --shape '%s' should have %d positive size%s for this "
                            "--op (see --help)\n", shape_arg, op_dims, op_dims > 1 ? "s" : "");
            return -1;
        }
    }
    return 0;
}
