/*
 * Searches over a vocabulary shortlist (core/tessera.h, "Vocabulary
 * shortlists"), through the public calls, on random models in f32 and int8:
 *   - a shortlist holding every target id gives the full vocabulary's
 *     output, ids and score bits, in greedy, beam and sampling;
 *   - a restricted one gives the same bits whatever the batch and the
 *     threads, and every output token is one of its sentence's candidates,
 *     worked out here from the file's rules (not from the library);
 *   - it does restrict: some sentence's output changes;
 *   - a shortlist read for another model is refused by name.
 * The restricted search's values are held to the PyTorch reference by the
 * golden fixtures (tests/golden/postnorm-silu-bf16/shortlist, test_golden).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/api_util.h"
#include "tests/testutil.h"

#define SRC_VOCAB 97
#define TGT_VOCAB 131
#define N_SENTENCES 9
#define MAX_SRC 14

typedef struct fixture {
    char *dir;
    tessera_model *model;
    tessera_vocabulary *src, *tgt;
    tessera_runtime *rt[2]; /* 1 and 2 threads */
    int32_t ids[N_SENTENCES][MAX_SRC];
    tessera_tokens sentences[N_SENTENCES];
} fixture;

static char *path_in(const fixture *fx, const char *name)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", fx->dir, name);
    return path;
}

/* Pieces "s0".. and "t0".., one per line. */
static tessera_vocabulary *made_up_vocabulary(const fixture *fx, const char *name, char letter,
                                              size_t size)
{
    char *text = malloc(size * 8 + 1), err[256];
    size_t at = 0;
    for (size_t i = 0; i < size; i++)
        at += (size_t)sprintf(text + at, "%c%zu\n", letter, i);
    test_write_file(path_in(fx, name), text, at);
    free(text);
    tessera_vocabulary *v;
    cr_assert_eq(tessera_vocabulary_load(path_in(fx, name), size, &v, err, sizeof err), 0, "%s",
                 err);
    return v;
}

/* Static: the sentences point into it. */
static fixture f;

static void setup(tessera_compute_type type)
{
    memset(&f, 0, sizeof f);
    f.dir = test_make_temp_dir();
    char err[512];
    tessera_config cfg;
    tessera_config_defaults(&cfg);
    cfg.d_model = 32;
    cfg.n_heads = 4;
    cfg.d_ff = 48;
    cfg.n_encoder_layers = cfg.n_decoder_layers = 2;
    cfg.src_vocab_size = SRC_VOCAB;
    cfg.tgt_vocab_size = TGT_VOCAB;
    cfg.max_positions = 64;
    /* Ids the model bans: each search must keep them out over a
     * shortlist's candidates as over the vocabulary. */
    for (int i = 0; i < 8; i++)
        cfg.banned_target_ids[cfg.n_banned_target_ids++] = 10 + 3 * i;
    tessera_load_options load;
    tessera_load_options_init(&load);
    load.compute_type = type;
    cr_assert_eq(tessera_model_random_with(&cfg, 29, &load, &f.model, err, sizeof err), 0, "%s",
                 err);
    f.src = made_up_vocabulary(&f, "src.txt", 's', SRC_VOCAB);
    f.tgt = made_up_vocabulary(&f, "tgt.txt", 't', TGT_VOCAB);
    for (int t = 0; t < 2; t++)
        cr_assert_eq(api_runtime(1, 0, t + 1, &f.rt[t], err, sizeof err), 0, "%s", err);
    unsigned x = 12345;
    for (size_t s = 0; s < N_SENTENCES; s++) {
        size_t len = 1 + s % MAX_SRC + (s > 4 ? 4 : 0);
        len = len > MAX_SRC ? MAX_SRC : len;
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            f.ids[s][i] = (int32_t)(4 + (x >> 16) % (SRC_VOCAB - 4));
        }
        f.sentences[s] = (tessera_tokens){f.ids[s], len};
    }
}

static void teardown(fixture *fx)
{
    for (int t = 0; t < 2; t++)
        tessera_runtime_free(fx->rt[t]);
    tessera_model_free(fx->model);
    tessera_vocabulary_free(fx->src);
    tessera_vocabulary_free(fx->tgt);
    test_remove_dir(fx->dir);
    free(fx->dir);
}

static tessera_shortlist *load_vmap(const fixture *fx, const char *name, const char *text)
{
    char err[512];
    tessera_shortlist *s;
    test_write_file(path_in(fx, name), text, strlen(text));
    cr_assert_eq(tessera_shortlist_load_vmap(fx->model, fx->src, fx->tgt, path_in(fx, name), &s, err,
                                             sizeof err), 0, "%s", err);
    return s;
}

/* The restricted map's rules: source id i's targets, and the empty n-gram's. */
static void rule_targets(int32_t i, int32_t out[2])
{
    out[0] = (i * 7) % TGT_VOCAB;
    out[1] = (i * 13 + 5) % TGT_VOCAB;
}
static const int32_t always[] = {40, 41, 77};

static char *restricted_vmap(void)
{
    size_t cap = 64 + (size_t)SRC_VOCAB * 32, at = 0;
    char *text = malloc(cap);
    at += (size_t)sprintf(text, "\tt%d t%d t%d\n", always[0], always[1], always[2]);
    for (int32_t i = 0; i < SRC_VOCAB; i += 2) { /* odd source ids have no rule */
        int32_t t[2];
        rule_targets(i, t);
        at += (size_t)sprintf(text + at, "s%d\tt%d t%d\n", i, t[0], t[1]);
    }
    return text;
}

/* Whether id is a candidate of src under restricted_vmap(), from its rules
 * and the specials every sentence keeps. */
static int is_candidate(const tessera_config *cfg, const tessera_tokens *src, int32_t id)
{
    if (id == cfg->bos_id || id == cfg->eos_id || id == cfg->unk_id || id == cfg->pad_id)
        return 1;
    for (size_t i = 0; i < sizeof always / sizeof *always; i++)
        if (id == always[i])
            return 1;
    for (size_t i = 0; i < src->len; i++) {
        int32_t t[2];
        rule_targets(src->ids[i], t);
        if (src->ids[i] % 2 == 0 && (id == t[0] || id == t[1]))
            return 1;
    }
    return 0;
}

/* Every hypothesis of a call as text with the bits of its score. */
static char *run(const fixture *fx, int threads, const tessera_translate_options *o,
                 const tessera_tokens *src, size_t n)
{
    char err[512];
    tessera_hypothesis *h;
    cr_assert_eq(tessera_translate_with(fx->rt[threads - 1], fx->model, src, n, o, &h, err,
                                        sizeof err), 0, "%s", err);
    size_t cap = 1 << 16, at = 0, count = n * (size_t)o->n_best;
    char *text = malloc(cap);
    text[0] = '\0';
    for (size_t k = 0; k < count; k++) {
        double score = h[k].score;
        uint64_t bits;
        memcpy(&bits, &score, sizeof bits);
        at += (size_t)snprintf(text + at, cap - at, "%016llx:", (unsigned long long)bits);
        for (size_t i = 0; i < h[k].len; i++)
            at += (size_t)snprintf(text + at, cap - at, " %d", h[k].ids[i]);
        at += (size_t)snprintf(text + at, cap - at, "\n");
        cr_assert_lt(at, cap);
    }
    tessera_hypotheses_free(h, count);
    return text;
}

/* The searches each test runs: greedy, beam 4 with 2 best, sampling from all. */
static tessera_translate_options search(int kind, int batch)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = 12;
    o.batch = batch;
    if (kind == 1) {
        o.beam = 4;
        o.n_best = 2;
        o.length_penalty = 0.6f;
    } else if (kind == 2) {
        o.sampling_topk = 0;
        o.seed = 17;
    }
    return o;
}

static void every_id_is_the_full_vocabulary(tessera_compute_type type)
{
    setup(type);
    size_t cap = (size_t)TGT_VOCAB * 8 + 4, at = 0;
    char *text = malloc(cap);
    text[at++] = '\t';
    for (int i = 0; i < TGT_VOCAB; i++)
        at += (size_t)sprintf(text + at, i ? " t%d" : "t%d", i);
    text[at++] = '\n';
    text[at] = '\0';
    tessera_shortlist *all = load_vmap(&f, "all.txt", text);
    free(text);
    for (int kind = 0; kind < 3; kind++) {
        tessera_translate_options o = search(kind, 4);
        char *full = run(&f, 2, &o, f.sentences, N_SENTENCES);
        o.shortlist = all;
        char *listed = run(&f, 2, &o, f.sentences, N_SENTENCES);
        cr_assert_str_eq(listed, full, "search %d: a shortlist of every id changed the output",
                         kind);
        free(full);
        free(listed);
    }
    tessera_shortlist_free(all);
    teardown(&f);
}

Test(shortlist_search, every_id_f32) { every_id_is_the_full_vocabulary(TESSERA_COMPUTE_F32); }
Test(shortlist_search, every_id_int8) { every_id_is_the_full_vocabulary(TESSERA_COMPUTE_INT8); }

static void restricted(tessera_compute_type type)
{
    setup(type);
    char *text = restricted_vmap();
    tessera_shortlist *s = load_vmap(&f, "vmap.txt", text);
    free(text);
    const tessera_config *cfg = tessera_model_config(f.model);
    int changed = 0;
    for (int kind = 0; kind < 3; kind++) {
        tessera_translate_options o = search(kind, N_SENTENCES);
        char *full = run(&f, 1, &o, f.sentences, N_SENTENCES);
        o.shortlist = s;
        char *together = run(&f, 2, &o, f.sentences, N_SENTENCES);
        changed += strcmp(full, together) != 0;
        /* One at a time, on one thread: the same bits as the whole batch. */
        size_t at = 0;
        o.batch = 1;
        for (size_t i = 0; i < N_SENTENCES; i++) {
            o.first_sentence_index = i;
            char *alone = run(&f, 1, &o, &f.sentences[i], 1);
            cr_assert(strncmp(together + at, alone, strlen(alone)) == 0,
                      "search %d, sentence %zu: alone\n%sin the batch\n%s", kind, i, alone,
                      together + at);
            /* Every token one of the sentence's candidates. */
            for (const char *line = alone; *line;) {
                char *p = strchr(line, ':') + 1, *nl = strchr(p, '\n');
                while (p < nl) {
                    long id = strtol(p, &p, 10);
                    cr_assert(is_candidate(cfg, &f.sentences[i], (int32_t)id),
                              "search %d, sentence %zu: %ld is no candidate", kind, i, id);
                }
                line = nl + 1;
            }
            at += strlen(alone);
            free(alone);
        }
        free(full);
        free(together);
    }
    cr_assert_eq(changed, 3, "the shortlist changed %d of the 3 searches' output", changed);
    tessera_shortlist_free(s);
    teardown(&f);
}

Test(shortlist_search, restricted_f32) { restricted(TESSERA_COMPUTE_F32); }
Test(shortlist_search, restricted_int8) { restricted(TESSERA_COMPUTE_INT8); }

/* Read over other vocabularies: refused by tessera_translate_options_check,
 * naming the field; vocabularies of the wrong size refused at the load. */
Test(shortlist_search, another_models)
{
    setup(TESSERA_COMPUTE_F32);
    char err[512];
    tessera_vocabulary *small = made_up_vocabulary(&f, "small.txt", 't', 50);
    test_write_file(path_in(&f, "v.txt"), "\tt1\n", 4);
    tessera_shortlist *s = (tessera_shortlist *)1;
    cr_assert_neq(tessera_shortlist_load_vmap(f.model, f.src, small, path_in(&f, "v.txt"), &s,
                                              err, sizeof err), 0);
    cr_assert_null(s);
    cr_assert(strstr(err, "target vocabulary given has 50 pieces"), "message: %s", err);
    cr_assert_neq(tessera_shortlist_load_vmap(f.model, NULL, NULL, path_in(&f, "v.txt"), &s, err,
                                              sizeof err), 0);
    cr_assert(strstr(err, "has no source vocabulary"), "message: %s", err);
    tessera_config cfg = *tessera_model_config(f.model);
    s = load_vmap(&f, "v.txt", "\tt1\n");
    tessera_translate_options o = search(0, 1);
    o.shortlist = s;
    cr_assert_eq(tessera_translate_options_check(&cfg, &o, err, sizeof err), 0, "%s", err);
    cfg.tgt_vocab_size = 50;
    cr_assert_neq(tessera_translate_options_check(&cfg, &o, err, sizeof err), 0);
    cr_assert(strncmp(err, "shortlist: ", 11) == 0, "message: %s", err);
    tessera_shortlist_free(s);
    tessera_vocabulary_free(small);
    teardown(&f);
}
