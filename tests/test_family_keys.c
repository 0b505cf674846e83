/* The config keys model families add (docs/model-format.md, "Model families"),
 * each against the model that spells the same function out with today's
 * keys: a tied or shared table against a file holding two copies of it, a
 * source suffix against the sources with the ids appended, a zero start
 * against a bos row of zeros, banned ids against the unbanned model's
 * log-probabilities. Same bits, in every compute type; and a table held
 * once is one table smaller. The families' own semantics are checked
 * against their references by test_golden (tests/golden/families). */
#define _GNU_SOURCE /* asprintf */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/api_util.h"
#include "tests/model_writer.h"
#include "tests/testutil.h"

static char err[512];
static const tessera_compute_type types[] = {TESSERA_COMPUTE_F32, TESSERA_COMPUTE_BF16,
                                             TESSERA_COMPUTE_INT8};

/* Sentences for the tiny model: ids below both vocabularies (11, 13). */
static void tiny_inputs(api_inputs *in, size_t n, unsigned seed)
{
    memset(in, 0, sizeof *in);
    srand(seed);
    for (size_t i = 0; i < n; i++) {
        in->src[i] = (tessera_tokens){in->ids[i], 1 + i % 6};
        in->tgt[i] = (tessera_tokens){in->tgt_ids[i], i % 4};
        for (size_t t = 0; t < 8; t++) {
            in->ids[i][t] = rand() % 11;
            in->tgt_ids[i][t] = 4 + rand() % 9; /* not bos 2 or eos 3 */
        }
    }
    in->n = n;
}

static tessera_model *load(const char *dir, tessera_compute_type type)
{
    tessera_load_options o;
    tessera_load_options_init(&o);
    o.compute_type = type;
    tessera_model *m = NULL;
    cr_assert_eq(tessera_model_load_with(dir, &o, &m, err, sizeof err), 0, "%s: %s", dir, err);
    return m;
}

static char *answers(const tessera_model *m, const api_inputs *in)
{
    tessera_runtime *rt;
    cr_assert_eq(api_runtime(1, 0, 1, &rt, err, sizeof err), 0, "%s", err);
    char *text = api_answers(rt, m, in, err, sizeof err);
    cr_assert(text, "%s", err);
    tessera_runtime_free(rt);
    return text;
}

/* DIR/NAME, made. */
static char *subdir(const char *dir, const char *name)
{
    char *path = mw_path(dir, name);
    cr_assert_eq(mkdir(path, 0700), 0, "cannot make %s", path);
    return path;
}

static void copy_values(mw_model *m, const char *to, const char *from)
{
    mw_tensor *a = mw_find(m, to), *b = mw_find(m, from);
    cr_assert_eq(a->count, b->count);
    memcpy(a->values, b->values, a->count * sizeof *a->values);
}

/* One table's weight bytes, as tessera_model_weight_bytes counts them. */
static size_t table_bytes(const tessera_config *c)
{
    return (size_t)c->tgt_vocab_size * (size_t)c->d_model * sizeof(float);
}

/* The rows of table `name` as int8 holds them: q x scale, q = round(w /
 * scale) held in [-127, 127], scale = max |row| / 127 (1 for a zero row):
 * simd/int8.h's arithmetic, written out. In int8 a tied table is held once,
 * as the output layer's int8 rows, and embeds those (docs/model-format.md):
 * the model that spells it out embeds these values. */
static void as_int8_rows(mw_model *m, const char *name)
{
    mw_tensor *t = mw_find(m, name);
    size_t cols = (size_t)m->config.d_model;
    for (size_t r = 0; r < t->count / cols; r++) {
        float *w = t->values + r * cols, amax = 0.0f;
        for (size_t p = 0; p < cols; p++)
            amax = fmaxf(amax, fabsf(w[p]));
        float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
        for (size_t p = 0; p < cols; p++)
            w[p] = nearbyintf(fminf(fmaxf(w[p] / scale, -127.0f), 127.0f)) * scale;
    }
}

/* Resident weight bytes of the spelled and the keyed model, by compute type. */
typedef struct resident {
    size_t spelled[3], keyed[3];
} resident;

/* Writes `spelled` (two copies of a table) and `keyed` (the key, one copy),
 * and checks they answer the same bits in every compute type (in int8 the
 * spelled model is `spelled_int8` when not NULL); *bytes: their resident
 * sizes. */
static void same_answers(mw_model *spelled, mw_model *spelled_int8, mw_model *keyed,
                         const api_inputs *in, resident *bytes)
{
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "spelled"), *a8 = subdir(dir, "spelled-int8"), *b = subdir(dir, "keyed");
    mw_write(spelled, a);
    mw_write(spelled_int8 ? spelled_int8 : spelled, a8);
    mw_write(keyed, b);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        tessera_model *ma = load(types[t] == TESSERA_COMPUTE_INT8 ? a8 : a, types[t]);
        tessera_model *mb = load(b, types[t]);
        char *want = answers(ma, in), *got = answers(mb, in);
        cr_assert_str_eq(got, want, "%s: the keyed model answers otherwise",
                         tessera_compute_type_name(types[t]));
        bytes->spelled[t] = tessera_model_weight_bytes(ma);
        bytes->keyed[t] = tessera_model_weight_bytes(mb);
        free(want);
        free(got);
        tessera_model_free(ma);
        tessera_model_free(mb);
    }
    test_remove_dir(dir);
    free(a);
    free(a8);
    free(b);
    free(dir);
}

Test(family_keys, tied_output_projection_is_the_table_held_once)
{
    api_inputs in;
    tiny_inputs(&in, 8, 1);
    mw_model *spelled = mw_model_tiny(3), *keyed = mw_model_tiny(3);
    mw_model *spelled8 = mw_model_tiny(3);
    copy_values(spelled, "generator.weight", "tgt_tok_emb.embedding.weight");
    copy_values(spelled8, "generator.weight", "tgt_tok_emb.embedding.weight");
    as_int8_rows(spelled8, "tgt_tok_emb.embedding.weight");
    mw_drop(keyed, "generator.weight");
    keyed->config.tie_output_projection = 1;
    resident r;
    same_answers(spelled, spelled8, keyed, &in, &r);
    /* f32 and int8 hold the table once; bf16 keeps the floats beside its
     * rounded rows. */
    for (size_t t = 0; t < 3; t += 2)
        cr_expect_eq(r.spelled[t] - r.keyed[t], table_bytes(&keyed->config),
                     "%s resident %zu untied, %zu tied: expected one float table (%zu bytes) less",
                     tessera_compute_type_name(types[t]), r.spelled[t], r.keyed[t],
                     table_bytes(&keyed->config));
    mw_model_free(spelled);
    mw_model_free(spelled8);
    mw_model_free(keyed);
}

Test(family_keys, shared_embeddings_and_tied_output_are_one_table)
{
    api_inputs in;
    tiny_inputs(&in, 8, 2);
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cfg.src_vocab_size = cfg.tgt_vocab_size;
    mw_model *spelled = mw_model_new(&cfg, 5), *keyed = mw_model_new(&cfg, 5);
    mw_model *spelled8 = mw_model_new(&cfg, 5);
    mw_model *both[2] = {spelled, spelled8};
    for (int i = 0; i < 2; i++) {
        copy_values(both[i], "src_tok_emb.embedding.weight", "tgt_tok_emb.embedding.weight");
        copy_values(both[i], "generator.weight", "tgt_tok_emb.embedding.weight");
        memset(mw_find(both[i], "generator.bias")->values, 0, 13 * sizeof(float));
    }
    as_int8_rows(spelled8, "src_tok_emb.embedding.weight");
    as_int8_rows(spelled8, "tgt_tok_emb.embedding.weight");
    mw_drop(keyed, "src_tok_emb.embedding.weight");
    mw_drop(keyed, "generator.weight");
    mw_drop(keyed, "generator.bias"); /* optional: no bias */
    keyed->config.share_embeddings = 1;
    keyed->config.tie_output_projection = 1;
    resident r;
    same_answers(spelled, spelled8, keyed, &in, &r);
    for (size_t t = 0; t < 3; t += 2)
        cr_expect_eq(r.spelled[t] - r.keyed[t], 2 * table_bytes(&cfg) + 13 * sizeof(float),
                     "%s resident %zu spelled out, %zu keyed: two float tables and the bias less",
                     tessera_compute_type_name(types[t]), r.spelled[t], r.keyed[t]);
    mw_model_free(spelled);
    mw_model_free(spelled8);
    mw_model_free(keyed);
}

Test(family_keys, decoder_start_zeros_is_a_zero_start_row)
{
    api_inputs in;
    tiny_inputs(&in, 8, 3);
    mw_model *spelled = mw_model_tiny(7), *keyed = mw_model_tiny(7);
    /* bos (2) is never an output here: a zero row changes only the start. */
    mw_tensor *emb = mw_find(spelled, "tgt_tok_emb.embedding.weight");
    memset(emb->values + 2 * 8, 0, 8 * sizeof(float));
    keyed->config.decoder_start = TESSERA_START_ZEROS;
    keyed->config.position_encoding = spelled->config.position_encoding =
        TESSERA_POSITIONS_SINUSOID_HALVES;
    resident r;
    same_answers(spelled, NULL, keyed, &in, &r);
    mw_model_free(spelled);
    mw_model_free(keyed);
}

Test(family_keys, source_suffix_is_the_ids_appended)
{
    api_inputs in, appended;
    tiny_inputs(&in, 8, 4);
    appended = in;
    for (size_t i = 0; i < in.n; i++) {
        appended.src[i].ids = appended.ids[i];
        appended.ids[i][in.src[i].len] = 10;
        appended.ids[i][in.src[i].len + 1] = 0;
        appended.src[i].len += 2;
    }
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "plain"), *b = subdir(dir, "suffix");
    mw_model *plain = mw_model_tiny(9), *keyed = mw_model_tiny(9);
    keyed->config.source_suffix[0] = 10;
    keyed->config.source_suffix[1] = 0;
    keyed->config.n_source_suffix = 2;
    mw_write(plain, a);
    mw_write(keyed, b);
    tessera_model *ma = load(a, TESSERA_COMPUTE_F32), *mb = load(b, TESSERA_COMPUTE_F32);
    char *want = answers(ma, &appended), *got = answers(mb, &in);
    cr_assert_str_eq(got, want, "the suffixed model answers otherwise than the appended ids");

    /* encode: the suffix's vectors follow the sentence's. */
    tessera_runtime *rt;
    cr_assert_eq(api_runtime(1, 0, 1, &rt, err, sizeof err), 0, "%s", err);
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    float **va, **vb;
    cr_assert_eq(tessera_encode_with(rt, ma, appended.src, in.n, &eo, &va, err, sizeof err), 0);
    cr_assert_eq(tessera_encode_with(rt, mb, in.src, in.n, &eo, &vb, err, sizeof err), 0);
    for (size_t i = 0; i < in.n; i++)
        cr_assert_eq(memcmp(va[i], vb[i], appended.src[i].len * 8 * sizeof(float)), 0,
                     "sentence %zu: encodings differ", i + 1);
    tessera_encodings_free(va, in.n);
    tessera_encodings_free(vb, in.n);

    /* A source that fits max_positions (16) alone but not with the suffix. */
    int32_t long_ids[15] = {0};
    tessera_tokens too_long = {long_ids, 15};
    float **unused;
    cr_assert_neq(tessera_encode_with(rt, mb, &too_long, 1, &eo, &unused, err, sizeof err), 0);
    cr_expect(strstr(err, "sentence 1: 15 tokens and the 2 the model appends (source_suffix), "
                          "more than max_positions (16)") != NULL, "%s", err);
    tessera_runtime_free(rt);
    free(want);
    free(got);
    tessera_model_free(ma);
    tessera_model_free(mb);
    mw_model_free(plain);
    mw_model_free(keyed);
    test_remove_dir(dir);
    free(a);
    free(b);
    free(dir);
}

/* Greedy ids of sentence 0 and their summed score. */
static tessera_hypothesis greedy(const tessera_model *m, const tessera_tokens *src, int beam)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.beam = beam;
    o.max_len = 12;
    tessera_hypothesis *h;
    cr_assert_eq(tessera_translate(m, src, 1, &o, &h, err, sizeof err), 0, "%s", err);
    tessera_hypothesis one = h[0];
    free(h);
    return one;
}

static float *scores(const tessera_model *m, const tessera_tokens *src, const tessera_tokens *tgt)
{
    float **lp;
    cr_assert_eq(tessera_score(m, src, tgt, 1, 1, &lp, err, sizeof err), 0, "%s", err);
    float *row = lp[0];
    free(lp);
    return row;
}

Test(family_keys, banned_ids_are_never_chosen_and_scored_as_the_mode_says)
{
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "plain"), *b = subdir(dir, "after"), *c = subdir(dir, "before");
    mw_model *plain = mw_model_tiny(11);
    mw_write(plain, a);
    tessera_model *mp = load(a, TESSERA_COMPUTE_F32);
    int32_t src_ids[4] = {1, 5, 7, 2};
    tessera_tokens src = {src_ids, 4};
    tessera_hypothesis first = greedy(mp, &src, 1);
    cr_assert(first.len > 0, "the tiny model's greedy output is empty: pick another seed");
    int32_t banned = first.ids[0];

    plain->config.banned_target_ids[0] = banned;
    plain->config.n_banned_target_ids = 1;
    mw_write(plain, b);
    plain->config.ban_logits = 1;
    mw_write(plain, c);
    tessera_model *after = load(b, TESSERA_COMPUTE_F32), *before = load(c, TESSERA_COMPUTE_F32);
    for (int beam = 1; beam <= 4; beam += 3) {
        tessera_hypothesis h = greedy(after, &src, beam);
        for (size_t t = 0; t < h.len; t++)
            cr_expect_neq(h.ids[t], banned, "beam %d: banned id %d output at %zu", beam, banned, t);
        /* log_probs: normalised over every id, so the unbanned model scores
         * the same tokens the same. */
        tessera_tokens tgt = {h.ids, h.len};
        float *lp = scores(mp, &src, &tgt);
        double sum = 0;
        int ended_by_eos = h.len < 12; /* else it met max_len: no eos in its score */
        for (size_t t = 0; t < h.len + (size_t)ended_by_eos; t++)
            sum += lp[t];
        cr_expect(fabs(sum - h.score) < 1e-4, "beam %d: score %.9g, the unbanned model's %.9g",
                  beam, h.score, sum);
        free(lp);
        tessera_hypothesis g = greedy(before, &src, beam);
        for (size_t t = 0; t < g.len; t++)
            cr_expect_neq(g.ids[t], banned, "logits, beam %d: banned id output", beam);
        free(h.ids);
        free(h.alignment);
        free(g.ids);
        free(g.alignment);
    }
    /* score gives the model's own log-probabilities in both modes: bans
     * are the search's. */
    tessera_tokens tgt = {&banned, 1};
    float *p = scores(mp, &src, &tgt), *q = scores(after, &src, &tgt), *r = scores(before, &src, &tgt);
    cr_expect(isfinite(q[0]) && q[0] == p[0] && q[1] == p[1], "log_probs: score %.9g, unbanned %.9g",
              q[0], p[0]);
    cr_expect(r[0] == p[0] && r[1] == p[1], "logits: score %.9g, unbanned %.9g", r[0], p[0]);
    free(p);
    free(q);
    free(r);
    free(first.ids);
    free(first.alignment);
    tessera_model_free(mp);
    tessera_model_free(after);
    tessera_model_free(before);
    mw_model_free(plain);
    test_remove_dir(dir);
    free(a);
    free(b);
    free(c);
    free(dir);
}

/* A table of P + offset rows read from row offset, against the P rows it
 * reads; the computed sinusoid with an offset, against those rows written. */
Test(family_keys, position_offset_reads_the_table_from_its_row)
{
    api_inputs in;
    tiny_inputs(&in, 8, 5);
    const size_t P = 16, off = 2, d = 8;
    mw_model *spelled = mw_model_tiny(13), *keyed = mw_model_tiny(13);
    mw_tensor *t = mw_add(keyed, "positional_encoding.pos_embedding", 3,
                          (size_t[]){P + off, 1, d});
    mw_tensor *u = mw_add(spelled, "positional_encoding.pos_embedding", 3, (size_t[]){P, 1, d});
    memcpy(u->values, t->values + off * d, P * d * sizeof(float));
    keyed->config.position_offset = (int)off;
    resident r;
    same_answers(spelled, NULL, keyed, &in, &r);

    /* Computed: fairseq's sinusoid (halves, t2t frequencies) from row 2. */
    mw_drop(keyed, "positional_encoding.pos_embedding");
    keyed->config.position_encoding = TESSERA_POSITIONS_SINUSOID_HALVES_T2T;
    for (size_t p = 0; p < P; p++)
        for (size_t j = 0; j < d; j++) {
            double i = (double)(j % (d / 2)), angle = (double)(p + off) * exp(-i * log(10000.0) /
                                                                            (d / 2.0 - 1.0));
            u->values[p * d + j] = (float)(j < d / 2 ? sin(angle) : cos(angle));
        }
    same_answers(spelled, NULL, keyed, &in, &r);
    mw_model_free(spelled);
    mw_model_free(keyed);
}

/* The decoder's own table: the encoder's output is the shared-table
 * model's, the decoder's is the model whose one table is the decoder's. */
Test(family_keys, decoder_position_table_is_the_decoders)
{
    api_inputs in;
    tiny_inputs(&in, 8, 6);
    const size_t P = 16, d = 8;
    mw_model *both = mw_model_tiny(17), *enc_only = mw_model_tiny(17);
    mw_tensor *e = mw_add(both, "positional_encoding.pos_embedding", 3, (size_t[]){P, 1, d});
    mw_tensor *t = mw_add(both, "positional_encoding.decoder_pos_embedding", 3,
                          (size_t[]){P, 1, d});
    mw_tensor *e2 = mw_add(enc_only, "positional_encoding.pos_embedding", 3, (size_t[]){P, 1, d});
    memcpy(e2->values, e->values, P * d * sizeof(float));
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "both"), *b = subdir(dir, "one");
    mw_write(both, a);
    mw_write(enc_only, b);
    tessera_model *ma = load(a, TESSERA_COMPUTE_F32), *mb = load(b, TESSERA_COMPUTE_F32);
    tessera_runtime *rt;
    cr_assert_eq(api_runtime(1, 0, 1, &rt, err, sizeof err), 0, "%s", err);
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    float **va, **vb;
    cr_assert_eq(tessera_encode_with(rt, ma, in.src, in.n, &eo, &va, err, sizeof err), 0);
    cr_assert_eq(tessera_encode_with(rt, mb, in.src, in.n, &eo, &vb, err, sizeof err), 0);
    for (size_t i = 0; i < in.n; i++)
        cr_assert_eq(memcmp(va[i], vb[i], in.src[i].len * d * sizeof(float)), 0,
                     "sentence %zu: the encoder read the decoder's table", i + 1);
    tessera_encodings_free(va, in.n);
    tessera_encodings_free(vb, in.n);
    char *with_own = answers(ma, &in), *with_encoders = answers(mb, &in);
    cr_expect(strcmp(with_own, with_encoders) != 0, "the decoder read the encoder's table");
    free(with_own);
    free(with_encoders);
    tessera_model_free(ma);
    tessera_model_free(mb);

    /* Sources are at most 6 tokens: with the encoder's table equal to the
     * decoder's in rows 0-5, the two-table model answers as the model whose
     * one table is the decoder's. */
    memcpy(e->values, t->values, 6 * d * sizeof(float));
    memcpy(e2->values, t->values, P * d * sizeof(float));
    mw_write(both, a);
    mw_write(enc_only, b);
    ma = load(a, TESSERA_COMPUTE_F32);
    mb = load(b, TESSERA_COMPUTE_F32);
    with_own = answers(ma, &in);
    char *decoders = answers(mb, &in);
    cr_expect_str_eq(with_own, decoders, "the decoder did not read its own table");
    free(with_own);
    free(decoders);
    tessera_runtime_free(rt);
    tessera_model_free(ma);
    tessera_model_free(mb);
    mw_model_free(both);
    mw_model_free(enc_only);
    test_remove_dir(dir);
    free(a);
    free(b);
    free(dir);
}

/* Every sentence's greedy alignment, as text. */
static char *alignments_of(const tessera_model *m, const api_inputs *in)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.return_alignments = 1;
    o.max_len = 10;
    tessera_hypothesis *h;
    cr_assert_eq(tessera_translate(m, in->src, in->n, &o, &h, err, sizeof err), 0, "%s", err);
    size_t cap = 4096, used = 0;
    char *text = calloc(cap, 1);
    cr_assert(text);
    for (size_t i = 0; i < in->n; i++) {
        for (size_t j = 0; j < h[i].len && used + 16 < cap; j++)
            used += (size_t)snprintf(text + used, cap - used, "%d ", h[i].alignment[j]);
        used += (size_t)snprintf(text + used, cap - used, "|");
    }
    tessera_hypotheses_free(h, in->n);
    return text;
}

/* alignment_layer and alignment_heads pick the cross-attention alignments
 * come from: the defaults (the last layer, every head) spelled out give
 * the same alignments; the first layer, or one head, others. */
Test(family_keys, alignment_layer_and_heads_choose_the_attention)
{
    api_inputs in;
    tiny_inputs(&in, 8, 7);
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cfg.n_decoder_layers = 2;
    mw_model *model = mw_model_new(&cfg, 19);
    mw_tensor *bias = mw_find(model, "generator.bias");
    bias->values[3] = -20; /* no early eos: long alignments */
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "model");
    const int layers[] = {0, 2, 1, 0}, heads[] = {0, 2, 0, 1};
    char *seen[4];
    for (int v = 0; v < 4; v++) {
        model->config.alignment_layer = layers[v];
        model->config.alignment_heads = heads[v];
        char *json = mw_config_json(&model->config);
        /* the writer leaves the alignment keys out: written here, 0-based */
        char *brace = strrchr(json, '}');
        *brace = '\0';
        char *text;
        cr_assert_geq(asprintf(&text, "%s, \"alignment_layer\": %d, \"alignment_heads\": %d}\n",
                               json, layers[v] - 1, heads[v]), 0);
        mw_set_config_text(model, text);
        free(json);
        free(text);
        mw_write(model, a);
        tessera_model *m = load(a, TESSERA_COMPUTE_F32);
        seen[v] = alignments_of(m, &in);
        tessera_model_free(m);
    }
    cr_expect_str_eq(seen[1], seen[0], "the last layer and every head, spelled out");
    cr_expect(strcmp(seen[2], seen[0]) != 0, "layer 0 aligns as the last layer does");
    cr_expect(strcmp(seen[3], seen[0]) != 0, "one head aligns as both do");
    for (int v = 0; v < 4; v++)
        free(seen[v]);
    mw_model_free(model);
    test_remove_dir(dir);
    free(a);
    free(dir);
}

/* fairseq starts the decoder from </s>: bos_id may be eos_id. Against the
 * model whose own bos row is a copy of the eos row. */
Test(family_keys, start_from_eos_is_the_eos_row)
{
    api_inputs in;
    tiny_inputs(&in, 8, 8);
    mw_model *spelled = mw_model_tiny(23), *keyed = mw_model_tiny(23);
    mw_tensor *emb = mw_find(spelled, "tgt_tok_emb.embedding.weight");
    memcpy(emb->values + 2 * 8, emb->values + 3 * 8, 8 * sizeof(float)); /* bos 2 := eos 3 */
    keyed->config.bos_id = keyed->config.eos_id;
    resident r;
    same_answers(spelled, NULL, keyed, &in, &r);
    mw_model_free(spelled);
    mw_model_free(keyed);
}

/* min_target_length: eos is banned for the search's free choices until a
 * hypothesis has that many tokens; score is the model's own. A model whose
 * eos bias makes every plain output empty. */
Test(family_keys, min_target_length_holds_eos_back)
{
    char *dir = test_make_temp_dir();
    char *a = subdir(dir, "plain"), *b = subdir(dir, "min3");
    mw_model *model = mw_model_tiny(29);
    mw_find(model, "generator.bias")->values[3] = 40; /* eos first, always */
    mw_write(model, a);
    model->config.min_target_length = 3;
    mw_write(model, b);
    tessera_model *plain = load(a, TESSERA_COMPUTE_F32), *keyed = load(b, TESSERA_COMPUTE_F32);
    int32_t src_ids[3] = {4, 2, 9};
    tessera_tokens src = {src_ids, 3};
    for (int beam = 1; beam <= 4; beam += 3) {
        tessera_hypothesis p = greedy(plain, &src, beam), k = greedy(keyed, &src, beam);
        cr_expect_eq(p.len, 0, "beam %d: the plain model outputs %zu tokens", beam, p.len);
        cr_expect_eq(k.len, 3, "beam %d: with min_target_length 3, %zu tokens (eos after 3)",
                     beam, k.len);
        free(p.ids), free(p.alignment), free(k.ids), free(k.alignment);
    }
    int32_t tgt_ids[1] = {5};
    tessera_tokens tgt = {tgt_ids, 1};
    float *sp = scores(plain, &src, &tgt), *sk = scores(keyed, &src, &tgt);
    cr_expect(sp[0] == sk[0] && sp[1] == sk[1], "score changed: %.9g %.9g, %.9g %.9g", sp[0],
              sp[1], sk[0], sk[1]);
    free(sp), free(sk);
    tessera_model_free(plain);
    tessera_model_free(keyed);
    mw_model_free(model);
    test_remove_dir(dir);
    free(a), free(b), free(dir);
}
