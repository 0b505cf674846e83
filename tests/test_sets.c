/*
 * The kernel-set table (simd/sets.c) against what must agree with it: the
 * features cpu.c knows, the lookups and messages dispatch derives from it,
 * and the one list of sets outside C, the files tests/sets/NAME.set that
 * make check runs (automake needs them named in Makefile.am's SET_TESTS,
 * which make check passes here as TESSERA_TEST_SET_FILES). A row without its
 * file, or a file without its row, fails here by name.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "simd/tuning.h"
#include "tests/testutil.h"

/* Whether the space-separated `list` has the word `name`. */
static int has_word(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        p += strspn(p, " ");
        size_t word = strcspn(p, " ");
        if (word == len && strncmp(p, name, len) == 0)
            return 1;
        p += word;
    }
    return 0;
}

/* NAME of a path ".../NAME.set", in out; 0 when the path is no .set file. */
static int set_of_file(const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n <= 4 || strcmp(base + n - 4, ".set") != 0 || n - 4 >= len)
        return 0;
    snprintf(out, len, "%.*s", (int)(n - 4), base);
    return 1;
}

Test(sets, rows_have_unique_names_and_scalar_first)
{
    cr_assert(tsr_kernel_set_count > 0);
    cr_expect_str_eq(tsr_kernel_sets[0].name, "scalar", "scalar is the fallback: the first row");
    cr_expect_str_eq(tsr_kernel_sets[0].needs, "", "scalar runs everywhere");
    cr_expect(tsr_kernel_sets[0].init != NULL, "scalar is always built");
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        for (size_t j = i + 1; j < tsr_kernel_set_count; j++)
            cr_expect_str_neq(tsr_kernel_sets[i].name, tsr_kernel_sets[j].name,
                              "rows %zu and %zu have one name", i, j);
}

Test(sets, emulated_rows_are_never_chosen_automatically)
{
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        if (tsr_kernel_sets[i].emulated)
            cr_expect(!tsr_kernel_sets[i].automatic, "%s: emulated and automatic",
                      tsr_kernel_sets[i].name);
}

/* On a CPU with every feature cpu.c knows, a row lacks only what cpu.c
 * does not know. */
Test(sets, needs_name_features_cpu_c_knows)
{
    tsr_cpu_features all = {.arch = "every feature"};
    for (size_t i = 0; i < tsr_cpu_feature_count; i++)
        *(int *)((char *)&all + tsr_cpu_feature_list[i].offset) = 1;
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        char lack[96];
        cr_expect_null(tsr_kernel_set_missing(&tsr_kernel_sets[i], &all, lack, sizeof lack),
                       "%s needs %s: not in simd/cpu.c's tsr_cpu_feature_list",
                       tsr_kernel_sets[i].name, lack);
    }
}

/* Each row looks up to a table of its own name, or says why not: not built
 * (no initialiser), or a feature its row needs that this CPU lacks. */
Test(sets, lookup_follows_each_row)
{
    const tsr_cpu_features *f = tsr_cpu_features_get();
    for (size_t i = 0; i < tsr_kernel_set_count; i++) {
        const tsr_kernel_set *s = &tsr_kernel_sets[i];
        char why[256] = "", lack[96];
        const tsr_kernels *t = tsr_kernels_lookup(s->name, why, sizeof why);
        if (!s->init) {
            cr_expect(!t && strstr(why, "not built"), "%s: %s", s->name, why);
        } else if (tsr_kernel_set_missing(s, f, lack, sizeof lack)) {
            cr_expect(!t && strstr(why, lack), "%s lacks %s: '%s'", s->name, lack, why);
        } else {
            cr_assert(t != NULL, "%s: %s", s->name, why);
            cr_expect_str_eq(t->name, s->name, "the %s row's table names itself", s->name);
        }
    }
}

Test(sets, unknown_set_names_every_row)
{
    char why[512];
    cr_assert_null(tsr_kernels_lookup("no-such-set", why, sizeof why));
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        cr_expect(strstr(why, tsr_kernel_sets[i].name), "'%s' does not name %s", why,
                  tsr_kernel_sets[i].name);
}

Test(sets, set_files_are_the_rows)
{
    char dir[4096], name[128];
    snprintf(dir, sizeof dir, "%s/tests/sets", test_srcdir());
    DIR *d = opendir(dir);
    cr_assert(d, "cannot open %s", dir);
    char files[1024] = "";
    for (struct dirent *e; (e = readdir(d));) {
        if (!set_of_file(e->d_name, name, sizeof name))
            continue;
        cr_expect(tsr_kernel_set_find(name) != NULL,
                  "tests/sets/%s.set has no row in simd/sets.c", name);
        strncat(files, " ", sizeof files - strlen(files) - 1);
        strncat(files, name, sizeof files - strlen(files) - 1);
    }
    closedir(d);
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        cr_expect(has_word(files, tsr_kernel_sets[i].name),
                  "the row %s has no tests/sets/%s.set (make check would not test it)",
                  tsr_kernel_sets[i].name, tsr_kernel_sets[i].name);
}

Test(sets, makefile_runs_every_row)
{
    const char *listed = getenv("TESSERA_TEST_SET_FILES");
    if (!listed)
        cr_skip_test("TESSERA_TEST_SET_FILES unset: not run by make check");
    char names[1024] = "", name[128];
    for (const char *p = listed; *p;) {
        p += strspn(p, " ");
        size_t word = strcspn(p, " ");
        char path[256];
        snprintf(path, sizeof path, "%.*s", (int)word, p);
        p += word;
        if (!set_of_file(path, name, sizeof name))
            continue;
        cr_expect(tsr_kernel_set_find(name) != NULL,
                  "Makefile.am's SET_TESTS runs %s, which has no row in simd/sets.c", path);
        strncat(names, " ", sizeof names - strlen(names) - 1);
        strncat(names, name, sizeof names - strlen(names) - 1);
    }
    for (size_t i = 0; i < tsr_kernel_set_count; i++)
        cr_expect(has_word(names, tsr_kernel_sets[i].name),
                  "Makefile.am's SET_TESTS lacks tests/sets/%s.set", tsr_kernel_sets[i].name);
}

/* The tuning row follows CPUID's vendor, family and model (simd/tuning.c's
 * table), with generic for what no row knows; every row has its own name. */
static const char *tuning_of(const char *vendor, unsigned family, unsigned model)
{
    tsr_cpu_features f = {0};
    snprintf(f.vendor, sizeof f.vendor, "%s", vendor);
    f.family = family;
    f.model = model;
    return tsr_tuning_for(&f)->name;
}

Test(sets, tuning_rows_follow_the_microarchitecture)
{
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x19, 0x01), "zen3"); /* EPYC Milan */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x19, 0x21), "zen3"); /* Ryzen 5000 */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x19, 0x11), "zen4"); /* EPYC Genoa */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x19, 0x61), "zen4"); /* Ryzen 7000 */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x19, 0xa0), "zen4"); /* Bergamo */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x1a, 0x02), "zen5"); /* EPYC Turin */
    cr_expect_str_eq(tuning_of("AuthenticAMD", 0x17, 0x31), "amd");  /* Zen 2 */
    cr_expect_str_eq(tuning_of("GenuineIntel", 0x6, 0x8f), "intel"); /* Sapphire Rapids */
    cr_expect_str_eq(tuning_of("", 0, 0), "generic");
    for (size_t i = 0; i < tsr_tuning_count; i++)
        for (size_t j = i + 1; j < tsr_tuning_count; j++)
            cr_expect_str_neq(tsr_tunings[i].name, tsr_tunings[j].name);
    cr_expect_str_eq(tsr_tunings[tsr_tuning_count - 1].name, "generic");
}
