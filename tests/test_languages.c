/* A multilingual model's language keys (docs/model-format.md, "Languages"),
 * each against the model that spells the same function out without them:
 * a source language is its token placed before or after the sentence, a
 * target language forced first is a one-token target prefix whose
 * log-probability is left out, one that starts the decoder is bos_id; and
 * every way a call or a config.json gets languages wrong is refused in one
 * line naming it. The families' own semantics (NLLB, M2M100, mBART) are
 * checked against their references by test_golden (tests/golden/families). */
#define _GNU_SOURCE /* asprintf */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/model_writer.h"
#include "tests/testutil.h"

static char err[512];

/* The tiny model's languages: tokens of both vocabularies (11, 13). */
#define LANGUAGES "{\"xx_Latn\": 7, \"yy_Latn\": 8, \"zz_Cyrl\": 9}"
#define YY 8
#define SENTENCES 6

typedef struct sentences {
    tessera_tokens src[SENTENCES], tgt[SENTENCES];
    int32_t ids[SENTENCES][8], tgt_ids[SENTENCES][8];
} sentences;

static void make_sentences(sentences *s, unsigned seed)
{
    srand(seed);
    for (size_t i = 0; i < SENTENCES; i++) {
        s->src[i] = (tessera_tokens){s->ids[i], 1 + i % 5};
        s->tgt[i] = (tessera_tokens){s->tgt_ids[i], i % 4};
        for (size_t t = 0; t < 8; t++) {
            s->ids[i][t] = rand() % 11;
            s->tgt_ids[i][t] = 4 + rand() % 9; /* not bos 2 or eos 3 */
        }
    }
}

/* Writes m into a fresh directory under dir and loads it. */
static tessera_model *write_and_load(mw_model *m, const char *dir, const char *name)
{
    char *path = mw_path(dir, name);
    cr_assert_eq(mkdir(path, 0700), 0, "cannot make %s", path);
    mw_write(m, path);
    tessera_model *model = NULL;
    cr_assert_eq(tessera_model_load(path, &model, err, sizeof err), 0, "%s: %s", path, err);
    free(path);
    return model;
}

static mw_model *with_languages(unsigned seed, tessera_source_language source,
                                tessera_target_language target)
{
    mw_model *m = mw_model_tiny(seed);
    m->config.source_language = source;
    m->config.target_language = target;
    m->languages = strdup(LANGUAGES);
    return m;
}

/* Greedy (beam 1) or beam 4 with its 2 best, at most 10 tokens after the
 * prefix. */
static tessera_hypothesis *translate(const tessera_model *m, const tessera_tokens *src, int beam,
                                     const char *source_lang, const char *target_lang,
                                     const tessera_tokens *prefix)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.beam = beam;
    o.n_best = beam > 1 ? 2 : 1;
    o.max_len = prefix ? 11 : 10; /* the prefix is part of the output: 1 token */
    o.batch = SENTENCES;
    o.source_lang = source_lang;
    o.target_lang = target_lang;
    o.target_prefix = prefix;
    tessera_hypothesis *h = NULL;
    cr_assert_eq(tessera_translate(m, src, SENTENCES, &o, &h, err, sizeof err), 0, "%s", err);
    return h;
}

static float **score(const tessera_model *m, const tessera_tokens *src, const tessera_tokens *tgt,
                     const char *source_lang, const char *target_lang)
{
    tessera_runtime *rt = NULL;
    cr_assert_eq(tessera_runtime_create(NULL, &rt, err, sizeof err), 0, "%s", err);
    tessera_score_options o;
    tessera_score_options_init(&o);
    o.batch = 4;
    o.source_lang = source_lang;
    o.target_lang = target_lang;
    float **lp = NULL;
    cr_assert_eq(tessera_score_with(rt, m, src, tgt, SENTENCES, &o, &lp, err, sizeof err), 0,
                 "%s", err);
    tessera_runtime_free(rt);
    return lp;
}

static void same_hypotheses(const tessera_hypothesis *want, const tessera_hypothesis *got,
                            size_t count, const char *what)
{
    for (size_t i = 0; i < count; i++) {
        cr_assert_eq(got[i].len, want[i].len, "%s, hypothesis %zu: %zu tokens, expected %zu", what,
                     i, got[i].len, want[i].len);
        cr_assert_eq(memcmp(got[i].ids, want[i].ids, got[i].len * sizeof(int32_t)), 0,
                     "%s, hypothesis %zu: other ids", what, i);
        cr_assert_eq(got[i].score, want[i].score, "%s, hypothesis %zu: score %.17g, expected %.17g",
                     what, i, got[i].score, want[i].score);
    }
}

/* A model spelled out and the one with the keys, written and loaded. */
typedef struct pair {
    char *dir;
    mw_model *plain, *keyed;
    tessera_model *mp, *mk;
} pair;

static void pair_open(pair *p, mw_model *plain, mw_model *keyed)
{
    p->dir = test_make_temp_dir();
    p->plain = plain;
    p->keyed = keyed;
    p->mp = write_and_load(plain, p->dir, "plain");
    p->mk = write_and_load(keyed, p->dir, "keyed");
}

static void pair_close(pair *p)
{
    tessera_model_free(p->mp);
    tessera_model_free(p->mk);
    mw_model_free(p->plain);
    mw_model_free(p->keyed);
    test_remove_dir(p->dir);
    free(p->dir);
}

/* Greedy and beam 4: the keyed model given the languages answers the bits
 * the plain one answers for the spelled-out sources. */
static void same_translations(const pair *p, const tessera_tokens *spelled,
                              const tessera_tokens *src, const char *source_lang,
                              const char *target_lang)
{
    for (int beam = 1; beam <= 4; beam += 3) {
        size_t count = SENTENCES * (beam > 1 ? 2 : 1);
        tessera_hypothesis *want = translate(p->mp, spelled, beam, NULL, NULL, NULL);
        tessera_hypothesis *got = translate(p->mk, src, beam, source_lang, target_lang, NULL);
        same_hypotheses(want, got, count, beam > 1 ? "beam 4" : "greedy");
        tessera_hypotheses_free(want, count);
        tessera_hypotheses_free(got, count);
    }
}

/* The same bits for every target of s; frees both. */
static void same_scores(float **want, float **got, const sentences *s)
{
    for (size_t i = 0; i < SENTENCES; i++)
        cr_assert_eq(memcmp(got[i], want[i], (s->tgt[i].len + 1) * sizeof(float)), 0,
                     "score %zu differs", i);
    tessera_scores_free(want, SENTENCES);
    tessera_scores_free(got, SENTENCES);
}

/* The source language's token where the model places it: the same bits as
 * the sentences with the token written in, in translate, score and encode. */
static void check_source_language(tessera_source_language where)
{
    sentences s, spelled;
    make_sentences(&s, 11);
    spelled = s;
    for (size_t i = 0; i < SENTENCES; i++) {
        int32_t *ids = spelled.ids[i];
        size_t len = s.src[i].len;
        if (where == TESSERA_SOURCE_LANGUAGE_PREFIX) {
            memmove(ids + 1, ids, len * sizeof *ids);
            ids[0] = YY;
        } else { /* after the model's source_suffix [3] */
            ids[len] = 3;
            ids[len + 1] = YY;
            len++;
        }
        spelled.src[i] = (tessera_tokens){ids, len + 1};
        spelled.tgt[i].ids = spelled.tgt_ids[i];
    }
    mw_model *keyed = with_languages(13, where, 0);
    if (where == TESSERA_SOURCE_LANGUAGE_SUFFIX) {
        keyed->config.source_suffix[0] = 3;
        keyed->config.n_source_suffix = 1;
    }
    pair p;
    pair_open(&p, mw_model_tiny(13), keyed);
    same_translations(&p, spelled.src, s.src, "yy_Latn", NULL);
    same_scores(score(p.mp, spelled.src, spelled.tgt, NULL, NULL),
                score(p.mk, s.src, s.tgt, "yy_Latn", NULL), &s);

    tessera_runtime *rt = NULL;
    cr_assert_eq(tessera_runtime_create(NULL, &rt, err, sizeof err), 0, "%s", err);
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    float **va, **vb;
    cr_assert_eq(tessera_encode_with(rt, p.mp, spelled.src, SENTENCES, &eo, &va, err, sizeof err),
                 0, "%s", err);
    eo.source_lang = "yy_Latn";
    cr_assert_eq(tessera_encode_with(rt, p.mk, s.src, SENTENCES, &eo, &vb, err, sizeof err), 0,
                 "%s", err);
    for (size_t i = 0; i < SENTENCES; i++) /* the token's own vector included */
        cr_assert_eq(memcmp(va[i], vb[i], spelled.src[i].len * 8 * sizeof(float)), 0,
                     "encoding %zu differs", i);
    tessera_encodings_free(va, SENTENCES);
    tessera_encodings_free(vb, SENTENCES);
    tessera_runtime_free(rt);
    pair_close(&p);
}

Test(languages, source_language_prefix_is_its_token_first)
{
    check_source_language(TESSERA_SOURCE_LANGUAGE_PREFIX);
}

Test(languages, source_language_suffix_is_its_token_after_the_suffix)
{
    check_source_language(TESSERA_SOURCE_LANGUAGE_SUFFIX);
}

/* A target language forced first: the plain model's one-token prefix [yy],
 * which that model outputs and scores, less that token and its
 * log-probability (the two feed the same tokens at the same positions, the
 * forced model two at once: the scores agree to rounding). */
Test(languages, target_language_forced_is_a_prefix_left_out)
{
    sentences s;
    make_sentences(&s, 17);
    tessera_tokens prefix[SENTENCES], with_yy[SENTENCES];
    int32_t yy = YY, with_ids[SENTENCES][9];
    for (size_t i = 0; i < SENTENCES; i++) {
        prefix[i] = (tessera_tokens){&yy, 1};
        with_ids[i][0] = YY;
        memcpy(with_ids[i] + 1, s.tgt_ids[i], s.tgt[i].len * sizeof(int32_t));
        with_yy[i] = (tessera_tokens){with_ids[i], s.tgt[i].len + 1};
    }
    pair p;
    pair_open(&p, mw_model_tiny(19), with_languages(19, 0, TESSERA_TARGET_LANGUAGE_FORCED));
    const tessera_model *mp = p.mp, *mk = p.mk;
    float **lp_yy = score(mp, s.src, prefix, NULL, NULL); /* log p(yy | bos) first */
    for (int beam = 1; beam <= 4; beam += 3) {
        size_t per = beam > 1 ? 2 : 1;
        tessera_hypothesis *want = translate(mp, s.src, beam, NULL, NULL, prefix);
        tessera_hypothesis *got = translate(mk, s.src, beam, NULL, "yy_Latn", NULL);
        for (size_t h = 0; h < SENTENCES * per; h++) {
            const char *what = beam > 1 ? "beam 4" : "greedy";
            cr_assert_geq(want[h].len, 1);
            cr_assert_eq(want[h].ids[0], YY);
            cr_assert_eq(got[h].len, want[h].len - 1, "%s, hypothesis %zu: %zu tokens, not %zu",
                         what, h, got[h].len, want[h].len - 1);
            cr_assert_eq(memcmp(got[h].ids, want[h].ids + 1, got[h].len * sizeof(int32_t)), 0,
                         "%s, hypothesis %zu: other ids than after the prefix", what, h);
            double expected = want[h].score - (double)lp_yy[h / per][0];
            cr_assert(fabs(got[h].score - expected) < 1e-5,
                      "%s, hypothesis %zu: score %.9g, the prefixed one less log p(yy) %.9g",
                      what, h, got[h].score, expected);
        }
        tessera_hypotheses_free(want, SENTENCES * per);
        tessera_hypotheses_free(got, SENTENCES * per);
    }
    float **want = score(mp, s.src, with_yy, NULL, NULL);
    float **got = score(mk, s.src, s.tgt, NULL, "yy_Latn");
    for (size_t i = 0; i < SENTENCES; i++)
        for (size_t t = 0; t <= s.tgt[i].len; t++)
            cr_assert(fabsf(got[i][t] - want[i][t + 1]) < 1e-5f,
                      "score %zu, token %zu: %.9g, the prefixed target's next %.9g", i, t,
                      got[i][t], want[i][t + 1]);
    tessera_scores_free(lp_yy, SENTENCES);
    tessera_scores_free(want, SENTENCES);
    tessera_scores_free(got, SENTENCES);
    pair_close(&p);
}

/* A target language that starts the decoder (mBART-cc25) is bos_id: the
 * same bits. */
Test(languages, target_language_start_is_the_start_token)
{
    sentences s;
    make_sentences(&s, 23);
    mw_model *plain = mw_model_tiny(29);
    plain->config.bos_id = YY;
    pair p;
    pair_open(&p, plain, with_languages(29, 0, TESSERA_TARGET_LANGUAGE_START));
    same_translations(&p, s.src, s.src, NULL, "yy_Latn");
    same_scores(score(p.mp, s.src, s.tgt, NULL, NULL), score(p.mk, s.src, s.tgt, NULL, "yy_Latn"),
                &s);
    pair_close(&p);
}

/* What a call gets wrong: each refusal names the option and the language. */
Test(languages, calls_name_the_language_at_fault)
{
    pair p;
    pair_open(&p, mw_model_tiny(31),
              with_languages(31, TESSERA_SOURCE_LANGUAGE_PREFIX, TESSERA_TARGET_LANGUAGE_FORCED));
    const tessera_model *mk = p.mk, *mp = p.mp;
    static const struct {
        int keyed;
        const char *source, *target, *message;
    } cases[] = {
        {1, NULL, "yy_Latn",
         "source_lang: the model needs a source language: one of its 3 (xx_Latn, yy_Latn, "
         "zz_Cyrl)"},
        {1, "xx_Latn", NULL, "target_lang: the model needs a target language: one of its 3"},
        {1, "xx_Latn", "yy",
         "target_lang 'yy' is not one of the model's 3 languages; the nearest: yy_Latn, "},
        {1, "zz_cyrl", "yy_Latn", "source_lang 'zz_cyrl' is not one of the model's 3 languages; "
                                  "the nearest: zz_Cyrl, "},
        {1, "xx_Latn\n\x1b[2J", "yy_Latn", "source_lang 'xx_Latn\\x0a\\x1b[2J' is not one of"},
        {0, "xx_Latn", NULL, "source_lang: the model takes no source language (given 'xx_Latn')"},
        {0, NULL, "yy_Latn", "target_lang: the model takes no target language (given 'yy_Latn')"},
    };
    int32_t ids[2] = {4, 5};
    tessera_tokens src = {ids, 2};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tessera_model *m = cases[c].keyed ? mk : mp;
        tessera_translate_options o;
        tessera_translate_options_init(&o);
        o.source_lang = cases[c].source;
        o.target_lang = cases[c].target;
        tessera_hypothesis *h = NULL;
        cr_assert_eq(tessera_translate(m, &src, 1, &o, &h, err, sizeof err), -1, "case %zu", c);
        cr_expect(strstr(err, cases[c].message) == err, "case %zu: %s", c, err);
        cr_assert_eq(tessera_model_check_languages(m, cases[c].source, cases[c].target, 1, err,
                                                   sizeof err),
                     TESSERA_ERR_INPUT, "case %zu", c);
        cr_expect(strstr(err, cases[c].message) == err, "check, case %zu: %s", c, err);
    }
    /* encode has no target side: the source alone is checked. */
    cr_expect_eq(tessera_model_check_languages(mk, "xx_Latn", NULL, 0, err, sizeof err), 0, "%s",
                 err);
    /* The model lists its languages in its file's order. */
    cr_assert_eq(tessera_model_language_count(mk), 3);
    int32_t id = -1;
    cr_expect_str_eq(tessera_model_language(mk, 2, &id), "zz_Cyrl");
    cr_expect_eq(id, 9);
    cr_expect_null(tessera_model_language(mk, 3, &id));
    cr_expect_eq(tessera_model_language_count(mp), 0);
    cr_assert_eq(tessera_model_language_id(mk, "yy_Latn", &id, err, sizeof err), 0, "%s", err);
    cr_expect_eq(id, YY);
    pair_close(&p);
}

/* What a config.json gets wrong: one line naming the key. */
Test(languages, config_errors_name_the_key)
{
    static const struct {
        const char *keys, *message;
    } cases[] = {
        {"\"languages\": {\"xx\": 7}", "key 'languages': given, but neither source_language"},
        {"\"target_language\": \"forced\"", "key 'languages': missing, and key 'target_language'"},
        {"\"target_language\": \"forced\", \"languages\": []",
         "key 'languages': expected an object of name: id, got an array"},
        {"\"target_language\": \"forced\", \"languages\": {}", "key 'languages': no language"},
        {"\"target_language\": \"forced\", \"languages\": {\"xx\": 13}",
         "key 'languages': 'xx': id 13 is out of range [0, 13) (tgt_vocab_size)"},
        {"\"source_language\": \"prefix\", \"languages\": {\"xx\": 11}",
         "key 'languages': 'xx': id 11 is out of range [0, 11) (src_vocab_size)"},
        {"\"target_language\": \"forced\", \"languages\": {\"x y\": 7}",
         "key 'languages': 'x y' is not a language name"},
        {"\"target_language\": \"forced\", \"languages\": {\"xx\": \"7\"}",
         "key 'languages': 'xx': expected an integer id, got a string"},
        {"\"target_language\": \"sideways\"", "key 'target_language': unknown form 'sideways'"},
        {"\"source_language\": \"middle\"", "key 'source_language': unknown placement 'middle'"},
        {"\"target_language\": \"start\", \"decoder_start\": \"zeros\", \"languages\": {\"x\": 7}",
         "key 'target_language': \"start\" replaces the decoder's first token"},
    };
    char *dir = test_make_temp_dir();
    tessera_config cfg;
    mw_tiny_config(&cfg);
    char *base = mw_config_json(&cfg);
    *strrchr(base, '}') = '\0';
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        mw_model *m = mw_model_tiny(37);
        char *text = NULL;
        cr_assert_geq(asprintf(&text, "%s, %s}\n", base, cases[c].keys), 0);
        mw_set_config_text(m, text);
        mw_write(m, dir);
        tessera_model *model = NULL;
        cr_assert_neq(tessera_model_load(dir, &model, err, sizeof err), 0, "case %zu loads", c);
        cr_expect(strstr(err, cases[c].message) != NULL, "case %zu: %s", c, err);
        cr_expect(strstr(err, "config.json: ") != NULL, "case %zu names no file: %s", c, err);
        free(text);
        mw_model_free(m);
    }
    free(base);
    test_remove_dir(dir);
    free(dir);
}
