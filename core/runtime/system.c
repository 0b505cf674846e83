/* tessera_describe_system: what this machine offers and what tessera will
 * use on it, for `tessera info` and for applications that log it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/text.h"
#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "simd/gemm/gemm.h"
#include "simd/tuning.h"
#include "text/spm.h"
#include "threads/topology.h"

int tessera_describe_system(char *buf, size_t len, char *err, size_t err_len)
{
    char line[512];
    tsr_text t = {buf, len, 0};
    if (len == 0)
        return 0;
    if (!buf)
        return tsr_fail(err, err_len, "describe system: the buffer is NULL");
    buf[0] = '\0';
    const char *chosen = tessera_kernel_set(err, err_len);
    if (!chosen)
        return TESSERA_ERR_INPUT;
    const tsr_cpu_features *f = tsr_cpu_features_get();
    tsr_cpu_features_describe(f, line, sizeof line);
    tsr_text_add(&t, "cpu: %s; features: %s\n", f->arch, line);
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        const char *name = tsr_kernel_sets[i].name;
        if (tsr_kernels_lookup(name, line, sizeof line))
            tsr_text_add(&t, "kernel set %-7s usable\n", name);
        else
            tsr_text_add(&t, "kernel set %-7s unusable: %s\n", name, line);
    }
    const char *forced = getenv("TESSERA_ISA");
    tsr_text_add(&t, "kernel set chosen: %s%s\n", chosen,
        forced && *forced ? " (forced by TESSERA_ISA)" : "");
    const tsr_kernels *set = tsr_kernels_lookup(chosen, line, sizeof line);
    tsr_text_add(&t, "int8 kernel: %s\n", set && set->gemm && set->gemm->i8
                                     ? set->gemm->i8->name
                                     : "the portable reference (simd/scalar/i8-linear.c)");
    int tuning_forced;
    const tsr_tuning *tuning = tsr_tuning_chosen(&tuning_forced);
    tsr_text_add(&t, "tuning: %s, %s%s", tuning->name, tuning->family,
                 tuning_forced ? " (forced by TESSERA_TUNING)" : "");
    if (f->vendor[0]) /* x86 */
        tsr_text_add(&t, "; CPUID %s family 0x%x model 0x%x", f->vendor, f->family, f->model);
    tsr_text_add(&t, "\n");
    tsr_topology_describe(line, sizeof line);
    tsr_text_add(&t, "topology: %s\n", line);
    tsr_text_add(&t, "text: %s\n",
                 tsr_spm_available() ? "SentencePiece (the tokenizers model directories name)"
                                     : "not built in (no SentencePiece): ids and pieces only");
    return 0;
}
