/* tessera info: what this machine offers and what tessera will use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-config.h"
#include "core/cli.h"
#include "core/model_path.h"
#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "threads/topology.h"

static void usage(FILE *f)
{
    fprintf(f, "Usage: tessera info\n\n"
               "Prints the CPU features found, the kernel sets this build has and whether\n"
               "this CPU can run them, the set chosen (TESSERA_ISA forces one), the compute\n"
               "type (TESSERA_COMPUTE_TYPE chooses one), the thread count, the hwloc topology and the thread placement, and the names of the\n"
               "models installed in\n"
               "  %s\n"
               "(where -m NAME looks after the directories of TESSERA_MODELS_PATH).\n",
            tsr_models_dir());
}

int cli_info(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc > 1)
        return cli_error("info: unexpected argument '%s' (try 'tessera info --help')", argv[1]);

    const tsr_cpu_features *f = tsr_cpu_features_get();
    char buf[512], err[512];
    /* Checked before anything is printed: a bad value is the only output. */
    const char *env_type = getenv("TESSERA_COMPUTE_TYPE");
    tessera_compute_type type = TESSERA_COMPUTE_F32;
    if (env_type && *env_type && tessera_compute_type_parse(env_type, &type, err, sizeof err) != 0)
        return cli_error("TESSERA_COMPUTE_TYPE: %s", err);
    tsr_cpu_features_describe(f, buf, sizeof buf);
    printf("tessera %s\n", PACKAGE_VERSION);
    printf("cpu: %s; features: %s\n", f->arch, buf);
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        const char *name = tsr_kernel_set_names[i];
        if (tsr_kernels_lookup(name, buf, sizeof buf))
            printf("kernel set %-7s usable\n", name);
        else
            printf("kernel set %-7s unusable: %s\n", name, buf);
    }
    const char *chosen = tessera_kernel_set(err, sizeof err);
    if (!chosen)
        return cli_error("%s", err);
    printf("kernel set chosen: %s%s\n", chosen,
           getenv("TESSERA_ISA") && *getenv("TESSERA_ISA") ? " (forced by TESSERA_ISA)" : "");
    const tsr_kernels *chosen_set = tsr_kernels_lookup(chosen, buf, sizeof buf);
    printf("int8 kernel: %s\n", chosen_set && chosen_set->gemm && chosen_set->gemm->i8
                                     ? chosen_set->gemm->i8->name
                                     : "the portable reference (simd/scalar/i8-linear.c)");
    printf("compute type: %s%s; available: f32, bf16, int8 (--compute-type or TESSERA_COMPUTE_TYPE)\n",
           tessera_compute_type_name(type),
           env_type && *env_type ? " (from TESSERA_COMPUTE_TYPE)" : " (the default)");
    if (cli_apply_threads(0, NULL, 0) != 0)
        return 1;
    printf("threads: %d\n", tessera_threads());
    tsr_topology_describe(buf, sizeof buf);
    printf("topology: %s\n", buf);
    char plan[4096];
    if (tessera_describe_placement(plan, sizeof plan, err, sizeof err) != 0)
        return cli_error("%s", err);
    printf("%s%s", plan, plan[0] && plan[strlen(plan) - 1] != '\n' ? "\n" : "");
    char names[4096];
    tsr_model_names(tsr_models_dir(), names, sizeof names);
    printf("installed models (%s): %s\n", tsr_models_dir(), names);
    return fflush(stdout) == 0 ? 0 : cli_error("error writing standard output");
}
