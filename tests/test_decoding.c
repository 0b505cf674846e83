/* The pieces of the decoding options on their own (README "Decoding
 * options"): the random stream against SplitMix64's published outputs, the
 * sampler against distributions worked out by hand, each rule on rows
 * whose answer is written down here, and the greedy choice among a
 * shortlist's candidates against the choice on the vocabulary's row. End to end against PyTorch is
 * test_golden's options_against_pytorch. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/model/model.h"
#include "core/network/output_head.h"
#include "core/search/decode_rules.h"
#include "core/search/sampling.h"
#include "tests/model_writer.h"

/* Every uniform of a stream is an output of SplitMix64 from state `key`:
 * (x >> 11) * 2^-53. These are the generator's published first outputs for
 * state 1234567 (Vigna's splitmix64.c test vector). */
Test(decoding, stream_is_splitmix64)
{
    static const uint64_t published[] = {6457827717110365317ull, 3203168211198807973ull,
                                         9817491932198370423ull};
    for (uint64_t t = 0; t < 3; t++) {
        double want = (double)(published[t] >> 11) * 0x1.0p-53;
        cr_expect_eq(tsr_sample_uniform(1234567, t), want, "draw %d", (int)t);
    }
}

Test(decoding, streams_differ_by_sentence_and_seed)
{
    uint64_t a = tsr_sample_key(7, 0), b = tsr_sample_key(7, 1), c = tsr_sample_key(8, 0);
    cr_expect_neq(a, b);
    cr_expect_neq(a, c);
    cr_expect_eq(a, tsr_sample_key(7, 0), "a key depends on nothing but seed and index");
    double lo = 1, hi = 0, sum = 0;
    for (uint64_t t = 0; t < 100000; t++) {
        double u = tsr_sample_uniform(a, t);
        cr_assert(u >= 0.0 && u < 1.0, "draw %d: %.17g", (int)t, u);
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        sum += u;
    }
    cr_expect(lo < 1e-3 && hi > 1 - 1e-3, "draws span [0, 1): %g .. %g", lo, hi);
    cr_expect(fabs(sum / 100000 - 0.5) < 0.005, "mean of the draws %g", sum / 100000);
}

#define V 6
static tsr_sample_entry scratch[128]; /* room for the widest vocabulary below (100) */

/* log-probabilities of p = {0.1, 0.4, 0.05, 0.3, 0.15, 0} (token 5 forbidden). */
static void distribution(float lp[V])
{
    static const double p[V] = {0.1, 0.4, 0.05, 0.3, 0.15, 0.0};
    for (int i = 0; i < V; i++)
        lp[i] = p[i] > 0 ? (float)log(p[i]) : -INFINITY;
}

/* The token chosen at u walks the kept tokens in id order: with everything
 * kept, cumulative 0.1 | 0.5 | 0.55 | 0.85 | 1.0 over ids 0..4. */
Test(decoding, sample_walks_in_id_order)
{
    float lp[V];
    distribution(lp);
    tsr_sampler all = {0, 1.0, 1.0};
    static const struct { double u; int32_t id; } want[] = {
        {0.0, 0}, {0.09, 0}, {0.11, 1}, {0.49, 1}, {0.51, 2}, {0.54, 2},
        {0.56, 3}, {0.84, 3}, {0.86, 4}, {0.999999, 4},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_eq(tsr_sample(&all, lp, V, want[i].u, scratch), want[i].id, "u %g",
                     want[i].u);
}

/* Top-k 2 keeps ids 1 (0.4) and 3 (0.3): in id order, 1 takes 4/7 of [0, 1). */
Test(decoding, sample_top_k)
{
    float lp[V];
    distribution(lp);
    tsr_sampler k2 = {2, 1.0, 1.0};
    cr_expect_eq(tsr_sample(&k2, lp, V, 0.56, scratch), 1);
    cr_expect_eq(tsr_sample(&k2, lp, V, 0.58, scratch), 3);
    /* The walk is in id order, not by likelihood: with 0.3 at id 1 and 0.4
     * at id 3, id 1 takes the first 3/7. */
    float swapped[V];
    memcpy(swapped, lp, sizeof swapped);
    swapped[1] = lp[3];
    swapped[3] = lp[1];
    cr_expect_eq(tsr_sample(&k2, swapped, V, 3.0 / 7 - 1e-6, scratch), 1);
    cr_expect_eq(tsr_sample(&k2, swapped, V, 3.0 / 7 + 1e-6, scratch), 3);
    tsr_sampler k1 = {1, 1.0, 1.0};
    for (double u = 0; u < 1; u += 0.125)
        cr_expect_eq(tsr_sample(&k1, lp, V, u, scratch), 1, "top-1 is the argmax");
    /* A K above the insertion bound sorts instead: the same rule. */
    float wide[100];
    for (int i = 0; i < 100; i++)
        wide[i] = (float)-i; /* id 0 most likely */
    tsr_sampler k70 = {70, 1.0, 1.0};
    cr_expect(tsr_sample(&k70, wide, 100, 0.999999999, scratch) <= 69, "only the top 70");
}

/* Top-p 0.75: by probability 0.4 (id 1), 0.3 (id 3) sum to 0.7 < 0.75, adding
 * 0.15 (id 4) reaches 0.85: ids 1, 3, 4 kept, 0.85 in all, walked 1, 3, 4. */
Test(decoding, sample_top_p)
{
    float lp[V];
    distribution(lp);
    tsr_sampler p75 = {0, 0.75, 1.0};
    cr_expect_eq(tsr_sample(&p75, lp, V, 0.4 / 0.85 - 1e-6, scratch), 1);
    cr_expect_eq(tsr_sample(&p75, lp, V, 0.4 / 0.85 + 1e-6, scratch), 3);
    cr_expect_eq(tsr_sample(&p75, lp, V, 0.7 / 0.85 + 1e-6, scratch), 4);
    tsr_sampler p69 = {0, 0.69, 1.0}; /* 0.4 + 0.3 passes 0.69: ids 1, 3 */
    cr_expect_eq(tsr_sample(&p69, lp, V, 0.999, scratch), 3);
    cr_expect_eq(tsr_sample(&p69, lp, V, 0.4 / 0.7 - 1e-6, scratch), 1);
}

/* Temperature 0.5 squares the probabilities: 0.4^2 and 0.3^2 against the
 * rest; the share of id 0 is 0.01 / sum. */
Test(decoding, sample_temperature)
{
    float lp[V];
    distribution(lp);
    double sq[5] = {0.01, 0.16, 0.0025, 0.09, 0.0225}, total = 0;
    for (int i = 0; i < 5; i++)
        total += sq[i];
    tsr_sampler cold = {0, 1.0, 0.5};
    cr_expect_eq(tsr_sample(&cold, lp, V, 0.01 / total - 1e-6, scratch), 0);
    cr_expect_eq(tsr_sample(&cold, lp, V, 0.01 / total + 1e-6, scratch), 1);
    cr_expect_eq(tsr_sample(&cold, lp, V, (0.17 + 0.0025) / total + 1e-6, scratch), 3);
}

Test(decoding, sample_nothing_left)
{
    float lp[3] = {-INFINITY, -INFINITY, -INFINITY};
    tsr_sampler all = {0, 1.0, 1.0};
    cr_expect_eq(tsr_sample(&all, lp, 3, 0.5, scratch), -1);
}

static tsr_rules rules(float penalty, size_t ngram, int32_t unk, size_t min_len, int32_t end)
{
    tsr_rules r = {1, penalty, ngram, unk, min_len, 2, end};
    return r;
}

Test(decoding, repetition_penalty_ctrl_form)
{
    float z[V] = {1, -1, 2, -2, 4, 0.5f};
    const int32_t history[] = {0, 1, 0, 4, 1};
    tsr_rules r = rules(2.0f, 0, -1, 0, -1);
    tsr_rules_apply(&r, z, history, 5);
    /* Once per distinct token: positive halved, negative doubled. */
    float want[V] = {0.5f, -2, 2, -2, 2, 0.5f};
    for (int i = 0; i < V; i++)
        cr_expect_eq(z[i], want[i], "logit %d: %g, want %g", i, z[i], want[i]);
}

Test(decoding, no_repeat_ngram_bans_completions)
{
    /* History 1 3 4 1 3: the bigram ending "3" -> next after an earlier "3"
     * is 4 (n 2); trigram "1 3" was followed by 4 (n 3); n 1 bans 1, 3, 4. */
    const int32_t history[] = {1, 3, 4, 1, 3};
    for (size_t n = 1; n <= 3; n++) {
        float z[V] = {0, 0, 0, 0, 0, 0};
        tsr_rules r = rules(1.0f, n, -1, 0, -1);
        tsr_rules_apply(&r, z, history, 5);
        for (int i = 0; i < V; i++) {
            int banned = n == 1 ? (i == 1 || i == 3 || i == 4) : i == 4;
            cr_expect_eq(z[i] == -INFINITY, banned, "n %zu token %d: %g", n, i, z[i]);
        }
    }
    /* Too short a history for the n-gram: nothing banned. */
    float z[V] = {0, 0, 0, 0, 0, 0};
    tsr_rules r = rules(1.0f, 4, -1, 0, -1);
    tsr_rules_apply(&r, z, history, 2);
    for (int i = 0; i < V; i++)
        cr_expect_eq(z[i], 0.0f, "token %d", i);
}

Test(decoding, unk_and_min_len_masks)
{
    const int32_t history[] = {0, 1};
    float z[V] = {0, 0, 0, 0, 0, 0};
    tsr_rules r = rules(1.0f, 0, 1, 3, 5); /* unk 1, min 3, eos 2, end token 5 */
    tsr_rules_apply(&r, z, history, 2);
    for (int i = 0; i < V; i++)
        cr_expect_eq(z[i] == -INFINITY, i == 1 || i == 2 || i == 5, "token %d: %g", i, z[i]);
    float z3[V] = {0, 0, 0, 0, 0, 0};
    const int32_t longer[] = {0, 1, 4};
    tsr_rules_apply(&r, z3, longer, 3); /* min_len reached: eos and end allowed */
    cr_expect(z3[2] == 0 && z3[5] == 0 && z3[1] == -INFINITY);
    cr_expect(tsr_rules_ends(&r, 2) && tsr_rules_ends(&r, 5) && !tsr_rules_ends(&r, 1));
}

/* tsr_head_best_among and tsr_head_log_softmax_among (a shortlist's
 * candidates alone, greedy's and beam search's paths under a shortlist)
 * against tsr_head_best and tsr_head_log_softmax on the vocabulary's row
 * with -inf outside the candidates: the same id, and log-probabilities of
 * the same softmax up to its sum's order (within a few ulps), with eos and
 * the banned ids among the candidates and the likeliest, before and past
 * min_target_length, the bans before and after the softmax, nothing left
 * but banned ids, every candidate NaN. */
enum { TGT = 40 };

/* The logits of ids[0, n) of row: over the vocabulary (-inf elsewhere) and
 * alone, in id order. */
static void spread(const float *row, const int32_t *ids, size_t n, float full[TGT],
                   float *compact)
{
    for (int v = 0; v < TGT; v++)
        full[v] = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        full[ids[i]] = row[ids[i]];
        compact[i] = row[ids[i]];
    }
}

Test(decoding, best_among_candidates_is_the_best_of_the_row)
{
    for (int ban_logits = 0; ban_logits < 2; ban_logits++) {
        tessera_config cfg;
        mw_tiny_config(&cfg);
        cfg.tgt_vocab_size = TGT;
        cfg.banned_target_ids[0] = 7;
        cfg.banned_target_ids[1] = 11;
        cfg.n_banned_target_ids = 2;
        cfg.ban_logits = ban_logits;
        cfg.min_target_length = 2;
        tessera_model *m;
        char err[256];
        cr_assert_eq(tessera_model_random(&cfg, 5, &m, err, sizeof err), 0, "%s", err);
        const tsr_exec ex = {.m = m, .ks = m->kernels, .threads = 1};
        unsigned x = 99;
        int chose_eos = 0, chose_other = 0;
        for (int trial = 0; trial < 60; trial++) {
            float row[TGT], full[TGT], compact[TGT];
            int32_t ids[TGT];
            size_t n = 0;
            for (int v = 0; v < TGT; v++) {
                x = x * 1103515245u + 12345u;
                row[v] = (float)((x >> 8) % 10000) / 1000.0f - 5.0f;
                /* eos on every other trial, 7 on every third, the rest at random */
                int take = v == cfg.eos_id ? trial % 2 == 0 : v == 7 ? trial % 3 == 0 : (x >> 4) & 1;
                if (take)
                    ids[n++] = v;
            }
            if (trial == 59) { /* nothing but what is banned below min_target_length */
                n = 0;
                ids[n++] = cfg.eos_id < 7 ? cfg.eos_id : 7;
                ids[n++] = cfg.eos_id < 7 ? 7 : cfg.eos_id;
            }
            if (trial == 58) /* a model gone wrong: every candidate's logit NaN */
                for (size_t i = 0; i < n; i++)
                    row[ids[i]] = NAN;
            /* The likeliest: eos, then a banned id, then whatever comes. */
            if (trial % 4 == 0)
                row[cfg.eos_id] = 9.0f;
            else if (trial % 4 == 1)
                row[7] = 9.0f;
            for (size_t len = 0; len < 4; len++) {
                spread(row, ids, n, full, compact);
                float want_lp = 0, got_lp = 0;
                int32_t want = tsr_head_best(&ex, full, len, &want_lp);
                int32_t got = tsr_head_best_among(&ex, compact, ids, n, len, &got_lp);
                cr_assert_eq(got, want, "ban_logits %d trial %d len %zu: %d chosen, not %d",
                             ban_logits, trial, len, got, want);
                if (want >= 0)
                    cr_assert(fabsf(got_lp - want_lp) <= 4e-7f * fmaxf(1.0f, fabsf(want_lp)),
                              "ban_logits %d trial %d len %zu: log-prob %.9g, not %.9g",
                              ban_logits, trial, len, (double)got_lp, (double)want_lp);
                /* The log-softmax over them (beam search's): each candidate's as on
                 * the vocabulary's row, banned ones -inf. */
                spread(row, ids, n, full, compact);
                tsr_head_log_softmax(&ex, full, (long)len);
                tsr_head_log_softmax_among(&ex, compact, ids, n, (long)len);
                for (size_t i = 0; i < n; i++) {
                    float w = full[ids[i]], g = compact[i];
                    cr_assert(w == g || (isnan(w) && isnan(g)) ||
                                  (isfinite(w) && isfinite(g) &&
                                   fabsf(g - w) <= 4e-7f * fmaxf(1.0f, fabsf(w))),
                              "ban_logits %d trial %d len %zu: id %d's log-prob %.9g, not %.9g",
                              ban_logits, trial, len, ids[i], (double)g, (double)w);
                }
                chose_eos += want == cfg.eos_id;
                chose_other += want >= 0 && want != cfg.eos_id;
            }
        }
        /* Both kinds of answer were asked about. */
        cr_assert(chose_eos > 0 && chose_other > 0, "eos chosen %d times, others %d", chose_eos,
                  chose_other);
        tessera_model_free(m);
    }
}
