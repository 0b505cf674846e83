/* Streaming (tessera_translate_options.on_token): the tokens a callback
 * receives are exactly the hypotheses the call returns, whatever the batch,
 * for greedy decoding, sampling and beam search (its best hypothesis), a
 * target prefix's tokens included; a nonzero return ends that sentence
 * only. The reference is the same call without a callback: streaming must
 * change nothing of what the call computes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/tessera.h"
#include "tests/model_writer.h"

enum { SENTENCES = 8, MAX_LEN = 12, MOST = 64 };

/* What the callback saw, per sentence. */
typedef struct seen {
    int32_t ids[SENTENCES][MOST];
    double logprob[SENTENCES]; /* the sum, in step order, as the score sums */
    size_t len[SENTENCES];
    int out_of_order;            /* a step that was not the sentence's next */
    size_t stop_sentence, stop_after; /* return 1 there (stop_after 0: never) */
} seen;

static int on_token(void *arg, size_t sentence, int32_t id, float logprob, size_t step)
{
    seen *w = arg;
    cr_assert_lt(sentence, SENTENCES);
    if (step != w->len[sentence] || step >= MOST) {
        w->out_of_order = 1;
        return 1;
    }
    w->ids[sentence][step] = id;
    w->logprob[sentence] += (double)logprob;
    w->len[sentence]++;
    return w->stop_after && sentence == w->stop_sentence && w->len[sentence] == w->stop_after;
}

static tessera_model *model;
static tessera_tokens src[SENTENCES];
static int32_t src_ids[SENTENCES][6];

static void setup(void)
{
    tessera_config cfg;
    mw_tiny_config(&cfg);
    char err[256];
    cr_assert_eq(tessera_model_random(&cfg, 11, &model, err, sizeof err), 0, "%s", err);
    for (size_t i = 0; i < SENTENCES; i++) {
        size_t len = 2 + i % 4;
        for (size_t t = 0; t < len; t++)
            src_ids[i][t] = (int32_t)(4 + (i * 7 + t * 3) % (size_t)(cfg.src_vocab_size - 4));
        src[i] = (tessera_tokens){src_ids[i], len};
    }
}

static void teardown(void) { tessera_model_free(model); }

static tessera_hypothesis *translate(const tessera_translate_options *o)
{
    tessera_hypothesis *h;
    char err[256];
    cr_assert_eq(tessera_translate(model, src, SENTENCES, o, &h, err, sizeof err), 0, "%s", err);
    return h;
}

/* The callback's tokens and the returned hypotheses agree, and both agree
 * with the call that streamed nothing (`plain`); the sum of the streamed
 * log-probabilities is the score where no ending token was scored. */
static void expect_streamed(const tessera_translate_options *base, int batch)
{
    tessera_translate_options o = *base;
    o.batch = batch;
    const size_t K = (size_t)o.n_best; /* the best of each sentence's K streams */
    tessera_hypothesis *plain = translate(&o);
    seen w = {0};
    o.on_token = on_token;
    o.on_token_arg = &w;
    tessera_hypothesis *h = translate(&o);
    cr_expect(!w.out_of_order, "a token came out of order");
    for (size_t i = 0; i < SENTENCES * K; i++)
        cr_expect(h[i].len == plain[i].len &&
                      memcmp(h[i].ids, plain[i].ids, h[i].len * sizeof *h[i].ids) == 0 &&
                      h[i].score == plain[i].score,
                  "batch %d, hypothesis %zu: streaming changed it", batch, i);
    for (size_t s = 0; s < SENTENCES; s++) {
        const tessera_hypothesis *best = &h[s * K];
        cr_expect(w.len[s] == best->len &&
                      memcmp(w.ids[s], best->ids, best->len * sizeof *best->ids) == 0,
                  "batch %d, sentence %zu: %zu tokens streamed, %zu returned", batch, s,
                  w.len[s], best->len);
        /* Cut at max_len, no EOS in the score: the streamed log-probabilities
         * are its terms (greedy sums them in this order; beam's differences
         * of its running sums, to rounding). */
        if (best->len == MAX_LEN && o.length_penalty == 0.0f)
            cr_expect(fabs(w.logprob[s] - best->score) <= 1e-9 * (1 + fabs(best->score)) &&
                          (o.beam > 1 || w.logprob[s] == best->score),
                      "sentence %zu: %.17g streamed, score %.17g", s, w.logprob[s],
                      best->score);
    }
    tessera_hypotheses_free(plain, SENTENCES * K);
    tessera_hypotheses_free(h, SENTENCES * K);
}

TestSuite(streaming, .init = setup, .fini = teardown);

Test(streaming, greedy_streams_its_hypotheses_at_batch_1_and_8)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    expect_streamed(&o, 1);
    expect_streamed(&o, 8);
}

Test(streaming, sampling_streams_its_hypotheses_at_batch_1_and_8)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    o.sampling_topk = 0;
    o.sampling_temperature = 1.5f;
    o.seed = 3;
    expect_streamed(&o, 1);
    expect_streamed(&o, 8);
}

Test(streaming, a_prefix_streams_first)
{
    static const int32_t forced[] = {5, 6, 7};
    tessera_tokens prefix[SENTENCES];
    for (size_t s = 0; s < SENTENCES; s++)
        prefix[s] = (tessera_tokens){forced, s % 3 + 1};
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    o.target_prefix = prefix;
    expect_streamed(&o, 8);
}

/* Sentence 3 stopped after 4 tokens: its hypothesis is those 4, scored as
 * far as they go; every other sentence is what it is unstopped. */
Test(streaming, a_nonzero_return_ends_that_sentence_only)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    o.batch = 8;
    tessera_hypothesis *plain = translate(&o);
    seen w = {.stop_sentence = 3, .stop_after = 4};
    o.on_token = on_token;
    o.on_token_arg = &w;
    tessera_hypothesis *h = translate(&o);
    cr_assert_gt(plain[3].len, 4, "the sentence must be longer than where it is stopped");
    for (size_t s = 0; s < SENTENCES; s++) {
        size_t want = s == 3 ? 4 : plain[s].len;
        cr_expect(h[s].len == want && memcmp(h[s].ids, plain[s].ids, want * sizeof(int32_t)) == 0,
                  "sentence %zu: %zu tokens, expected %zu of the unstopped run", s, h[s].len,
                  want);
        cr_expect_eq(w.len[s], want, "sentence %zu: %zu tokens streamed", s, w.len[s]);
    }
    cr_expect_eq(h[3].score, w.logprob[3], "the stopped sentence's score: %.17g, streamed %.17g",
                 h[3].score, w.logprob[3]);
    tessera_hypotheses_free(plain, SENTENCES);
    tessera_hypotheses_free(h, SENTENCES);
}

/* Beam search streams each sentence's best hypothesis once its search is
 * done; with n_best 3 the other two are returned as they were. */
Test(streaming, beam_search_streams_its_best_hypotheses_at_batch_1_and_8)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    o.beam = 4;
    o.n_best = 3;
    expect_streamed(&o, 1);
    expect_streamed(&o, 8);
}

/* A stop cuts the best hypothesis of that sentence only, its score the
 * streamed terms' sum, the rest of the call as it was. */
Test(streaming, a_stop_cuts_beam_searchs_best_of_that_sentence_only)
{
    tessera_translate_options o;
    tessera_translate_options_init(&o);
    o.max_len = MAX_LEN;
    o.beam = 4;
    o.n_best = 2;
    o.batch = 8;
    tessera_hypothesis *plain = translate(&o);
    seen w = {.stop_sentence = 5, .stop_after = 3};
    o.on_token = on_token;
    o.on_token_arg = &w;
    tessera_hypothesis *h = translate(&o);
    cr_assert_gt(plain[5 * 2].len, 3);
    for (size_t i = 0; i < SENTENCES * 2; i++) {
        size_t want = i == 10 ? 3 : plain[i].len;
        cr_expect(h[i].len == want && memcmp(h[i].ids, plain[i].ids, want * sizeof(int32_t)) == 0,
                  "hypothesis %zu: %zu tokens, expected %zu of the unstopped run", i, h[i].len,
                  want);
        if (i != 10)
            cr_expect_eq(h[i].score, plain[i].score, "hypothesis %zu's score moved", i);
    }
    cr_expect(fabs(h[10].score - w.logprob[5]) <= 1e-12, "the cut hypothesis scores %.17g, its "
              "streamed terms %.17g", h[10].score, w.logprob[5]);
    tessera_hypotheses_free(plain, SENTENCES * 2);
    tessera_hypotheses_free(h, SENTENCES * 2);
}
