/* The one place a kernel set is chosen, from the rows of simd/sets.c. Each
 * set is usable when it was built (configure's link test passed) and the CPU
 * and OS have the features its row needs; the choice is made once, among the
 * rows marked automatic, and TESSERA_ISA may force any usable set (the
 * tests' build adds the emulated ones, which only TESSERA_ISA takes). */
#include "simd/dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd/cpu.h"
#include "simd/sets.h"
#include "simd/tuning.h"

/* Each row's table, built on first lookup under init_lock. */
typedef struct set_state {
    tsr_kernels table;
    int ready;
} set_state;

/* Rows of simd/sets.c at most (a row past it is an error, by name). */
#define MAX_SETS 16
static set_state states[MAX_SETS];

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

const tsr_kernels *tsr_kernels_lookup(const char *name, char *why, size_t why_len)
{
    char lack[96];
    const tsr_kernel_set *set = tsr_kernel_set_find(name);
    if (!set) {
        char known[256];
        tsr_kernel_set_list(known, sizeof known);
        if (why_len)
            snprintf(why, why_len, "unknown kernel set '%s' (known: %s)", name, known);
        return NULL;
    }
    if (!set->init) {
        if (why_len)
            snprintf(why, why_len, "the %s kernel set is not built into this tessera", name);
        return NULL;
    }
    if (tsr_kernel_set_missing(set, tsr_cpu_features_get(), lack, sizeof lack)) {
        if (why_len)
            snprintf(why, why_len, "this CPU (or OS) lacks %s, needed by the %s kernel set", lack,
                     name);
        return NULL;
    }
    size_t row = (size_t)(set - tsr_kernel_sets);
    if (row >= MAX_SETS) {
        if (why_len)
            snprintf(why, why_len, "the %s kernel set is row %zu of simd/sets.c, but "
                     "simd/dispatch.c holds %d: raise MAX_SETS", name, row + 1, MAX_SETS);
        return NULL;
    }
    set_state *state = &states[row];
    pthread_mutex_lock(&init_lock);
    if (!state->ready) {
        set->init(&state->table);
        state->ready = 1;
    }
    pthread_mutex_unlock(&init_lock);
    return &state->table;
}

static const tsr_kernels *chosen;
static char chosen_err[256];
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const char *forced = getenv("TESSERA_ISA");
    char why[200];
    if (tsr_tuning_check(chosen_err, sizeof chosen_err) != 0)
        return;
    if (forced && *forced) {
        chosen = tsr_kernels_lookup(forced, why, sizeof why);
        if (!chosen)
            snprintf(chosen_err, sizeof chosen_err, "TESSERA_ISA=%s: %s", forced, why);
        return;
    }
    /* Best first: the last usable automatic set in the table wins. */
    for (size_t i = tsr_kernel_set_count; i-- > 0 && !chosen;)
        if (tsr_kernel_sets[i].automatic)
            chosen = tsr_kernels_lookup(tsr_kernel_sets[i].name, why, sizeof why);
}

const tsr_kernels *tsr_kernels_select(char *err, size_t err_len)
{
    pthread_once(&chosen_once, choose);
    if (!chosen && err_len)
        snprintf(err, err_len, "%s", chosen_err);
    return chosen;
}
