/*
 * tessera-perf: the kernel benchmark. Measures the ceilings first (FMA peak
 * of every kernel set this build and CPU can run, streaming bandwidth), then
 * times each kernel of the table for each chosen set on the built-in or
 * given shapes, next to OpenBLAS and oneDNN when configure found them.
 * Output: `#` comment lines, then one key=value line per case
 * (perf/README.md describes every field).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "perf/perf.h"
#include "simd/gemm/gemm.h"

/* The "model name" line of /proc/cpuinfo, when there is one. */
static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, len, "%s", colon);
            break;
        }
    }
    fclose(f);
}

static void print_header(const perf_options *o)
{
    char model[128], features[256], date[32];
    time_t now = time(NULL);
    cpu_model(model, sizeof model);
    tsr_cpu_features_describe(tsr_cpu_features_get(), features, sizeof features);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
    printf("# tessera-perf %s: cpu=\"%s\" features=\"%s\" threads=%d clock=%s%s\n", date, model,
           features, o->threads, o->cpu_clock ? "cpu" : "wall", o->quick ? " (quick)" : "");
}

/* The int8 peak of set t's int8 kernel, printed as an op=peak-int8 line
 * naming the kernel (spaces in its name become '-'), or 0 when the set
 * runs the portable int8 layer or perf has no loop for its kernel. */
static double measure_int8_peak(const perf_options *o, const tsr_kernels *t)
{
    perf_fma_loop_fn loop = perf_int8_loop_for(t);
    if (!loop) {
        printf("# isa=%s: no int8 loop for its int8 kernel (%s), so no int8 pct_peak\n", t->name,
               t->gemm && t->gemm->i8 ? t->gemm->i8->name : "the portable layer");
        return 0;
    }
    char kernel[64];
    snprintf(kernel, sizeof kernel, "%s", t->gemm->i8->name);
    for (char *c = kernel; *c; c++)
        if (*c == ' ')
            *c = '-';
    double peak = perf_measure_peak(loop, o->threads, o->quick);
    printf("op=peak-int8 isa=%s int8_kernel=%s threads=%d gops=%.4g\n", t->name, kernel,
           o->threads, peak * 1e-9);
    return peak;
}

/* Every set this build and CPU can run gets its peak measured (peers are
 * compared with the best of them); only the chosen ones are timed. Returns
 * -1 when --isa names a set that cannot run here. */
static int measure_sets(const perf_options *o, perf_machine *mc)
{
    char why[200];
    if (o->isa && !tsr_kernels_lookup(o->isa, why, sizeof why)) {
        fprintf(stderr, "tessera-perf: --isa %s: %s\n", o->isa, why);
        return -1;
    }
    mc->scalar = tsr_kernels_lookup("scalar", why, sizeof why);
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        const char *name = tsr_kernel_sets[i].name;
        int chosen = !o->isa || strcmp(o->isa, name) == 0;
        const tsr_kernels *t = tsr_kernels_lookup(name, why, sizeof why);
        if (!t) {
            printf("# isa=%s skipped: %s\n", name, why);
            continue;
        }
        perf_fma_loop_fn loop = o->ceilings ? perf_fma_loop_for(name) : NULL;
        double peak = loop ? perf_measure_peak(loop, o->threads, o->quick) : 0;
        if (loop)
            printf("op=peak isa=%s threads=%d gflops=%.4g\n", name, o->threads, peak * 1e-9);
        else if (o->ceilings)
            printf("# isa=%s: perf has no FMA loop for this set, so no pct_peak\n", name);
        if (peak > mc->best_peak) {
            mc->best_peak = peak;
            mc->best_peak_isa = name;
        }
        if (chosen && mc->n_sets == PERF_MAX_SETS)
            printf("# isa=%s not timed: tessera-perf times %d sets at most (PERF_MAX_SETS)\n",
                   name, PERF_MAX_SETS);
        else if (chosen) {
            mc->sets[mc->n_sets] = t;
            mc->peak_int8[mc->n_sets] = o->ceilings && o->weight_type == TSR_WEIGHTS_INT8
                                            ? measure_int8_peak(o, t)
                                            : 0;
            mc->peak[mc->n_sets++] = peak;
        }
    }
    return 0;
}

static void print_peers(const perf_options *o, const perf_machine *mc)
{
    const char *names[PERF_MAX_PEERS];
    size_t n = perf_peer_names(names);
    if (!o->peers) {
        printf("# peers: skipped (--no-peers)\n");
        return;
    }
    if (n == 0) {
        printf("# peers: none (configure found neither OpenBLAS nor oneDNN)\n");
        return;
    }
    printf("# peers:");
    for (size_t i = 0; i < n; i++)
        printf(" %s", names[i]);
    if (mc->best_peak_isa)
        printf(" (their pct_peak is against the %s peak)", mc->best_peak_isa);
    putchar('\n');
}

int main(int argc, char **argv)
{
    perf_options o;
    perf_machine mc = {0};
    int r = perf_parse_options(argc, argv, &o);
    if (r != 0)
        return r > 0 ? 0 : 2;
    o.threads = perf_set_threads(o.threads);
    print_header(&o);
    perf_print_thread_notes(o.threads);
    if (measure_sets(&o, &mc) != 0)
        return 1;
    mc.stream_bytes = perf_stream_bytes();
    if (o.ceilings) {
        mc.bandwidth = perf_measure_bandwidth(mc.stream_bytes, o.threads, o.quick,
                                              &mc.bandwidth_one_stream);
        printf("op=bandwidth threads=%d bytes=%zu gbps=%.4g gbps_one_stream=%.4g\n", o.threads,
               mc.stream_bytes, mc.bandwidth * 1e-9, mc.bandwidth_one_stream * 1e-9);
    } else {
        printf("# ceilings not measured (--no-ceilings): no pct_peak, no pct_bw\n");
    }
    print_peers(&o, &mc);
    fflush(stdout);

    static const struct {
        unsigned bit;
        void (*run)(const perf_options *o, const perf_machine *mc);
    } ops[] = {
        {PERF_OP_GEMM, perf_run_gemm},
        {PERF_OP_FFN, perf_run_ffn},
        {PERF_OP_ATTENTION, perf_run_attention},
        {PERF_OP_LAYERNORM, perf_run_layernorm},
        {PERF_OP_SOFTMAX, perf_run_softmax},
        {PERF_OP_ACTIVATION, perf_run_activation},
        {PERF_OP_EMBED, perf_run_embed},
        {PERF_OP_WIDEN, perf_run_widen},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (o.ops & ops[i].bit)
            ops[i].run(&o, &mc);
    return 0;
}
