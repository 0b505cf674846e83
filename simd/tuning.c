/* The microarchitecture table (simd/tuning.h). Families by CPUID's display
 * family and model: AMD family 0x19 is Zen 3 and Zen 4 (models 0x00-0x0f
 * and 0x20-0x5f Zen 3, 0x10-0x1f, 0x60-0x7f and 0xa0-0xaf Zen 4), 0x1a Zen
 * 5. Intel is one row until two Intel machines are measured apart. */
#include "simd/tuning.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const tsr_tuning tsr_tunings[] = {
    {"zen3", "AMD Zen 3 (family 0x19)", 0},
    {"zen4", "AMD Zen 4 (family 0x19)", 0},
    {"zen5", "AMD Zen 5 (family 0x1a)", 0},
    {"amd", "other AMD", 0},
    {"intel", "Intel (measured on a Sapphire Rapids-class AVX-512 guest)", 1},
    {"generic", "any other CPU", 0},
};
const size_t tsr_tuning_count = sizeof tsr_tunings / sizeof tsr_tunings[0];

static const tsr_tuning *by_name(const char *name)
{
    for (size_t i = 0; i < tsr_tuning_count; i++)
        if (strcmp(tsr_tunings[i].name, name) == 0)
            return &tsr_tunings[i];
    return NULL;
}

const tsr_tuning *tsr_tuning_for(const tsr_cpu_features *f)
{
    const char *name = "generic";
    if (strcmp(f->vendor, "AuthenticAMD") == 0) {
        unsigned m = f->model;
        if (f->family == 0x19)
            name = (m >= 0x10 && m <= 0x1f) || (m >= 0x60 && m <= 0x7f) ||
                           (m >= 0xa0 && m <= 0xaf)
                       ? "zen4"
                       : "zen3";
        else if (f->family == 0x1a)
            name = "zen5";
        else
            name = "amd";
    } else if (strcmp(f->vendor, "GenuineIntel") == 0) {
        name = "intel";
    }
    return by_name(name);
}

static const tsr_tuning *chosen;
static int chosen_forced;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const char *forced = getenv("TESSERA_TUNING");
    const tsr_tuning *row = forced && *forced ? by_name(forced) : NULL;
    chosen_forced = row != NULL;
    chosen = row ? row : tsr_tuning_for(tsr_cpu_features_get());
}

const tsr_tuning *tsr_tuning_chosen(int *forced)
{
    pthread_once(&chosen_once, choose);
    if (forced)
        *forced = chosen_forced;
    return chosen;
}

int tsr_tuning_check(char *err, size_t err_len)
{
    const char *forced = getenv("TESSERA_TUNING");
    if (!forced || !*forced || by_name(forced))
        return 0;
    char known[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < tsr_tuning_count && used < sizeof known; i++)
        used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                                 tsr_tunings[i].name);
    if (err_len)
        snprintf(err, err_len, "TESSERA_TUNING=%s: no such tuning (known: %s)", forced, known);
    return -1;
}
