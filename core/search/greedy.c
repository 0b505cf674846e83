/* Greedy decoding (and sampling) of a batch: every sentence starts from
 * the start tokens ([bos], or with a target language) and its target prefix, appends the argmax of the generator at its
 * last position (or a token drawn from it), and leaves the batch when it
 * emits an ending token or reaches the length limit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/network/output_head.h"
#include "core/runtime/plan.h"
#include "core/runtime/work.h"
#include "core/search/candidates.h"
#include "core/search/decode.h"
#include "core/search/decode_rules.h"
#include "core/search/sampling.h"

typedef struct greedy_state {
    int32_t *ids;     /* [n][limit] outputs */
    size_t *len;      /* [n] */
    double *logprob;  /* [n] */
    tsr_decode_seq *seqs;
    int32_t *next;    /* the token each active sentence feeds next */
    int32_t *first;   /* [n][start length]: what each feeds first (tsr_start_tokens) */
    int32_t target_lang;
    float *step_logprob; /* [n]: log-probability of each active row's choice */
    int32_t *align;      /* [n][limit] alignments, or NULL when not asked for */
    int plain;           /* the argmax of the raw logits: no option below is on */
    /* Only when some option asks for more than the argmax: */
    const tessera_tokens *prefix; /* [n] or NULL */
    const size_t *order;          /* [n]: each sentence's index in the call (streaming) */
    tsr_rules rules;
    int sampling;
    tsr_sampler sampler;
    uint64_t *key, *draws;       /* [n]: each sentence's random stream and its use */
    tsr_sample_entry *scratch;   /* [n][V] */
    tsr_candidates candidates;   /* the shortlist's, when the options give one */
} greedy_state;

static void finish(const tessera_translate_options *o, const greedy_state *g, size_t s,
                   int ended_with_eos, tessera_hypothesis *out)
{
    size_t n_tokens = g->len[s] + (ended_with_eos ? 1 : 0);
    out[s].ids = tsr_malloc((g->len[s] + 1) * sizeof(int32_t));
    if (g->align)
        out[s].alignment = tsr_malloc((g->len[s] + 1) * sizeof(int32_t));
    out[s].len = g->len[s];
    out[s].score = g->logprob[s];
    if (o->length_penalty != 0.0f && n_tokens > 0)
        out[s].score /= pow((double)n_tokens, (double)o->length_penalty);
}

/* Sentence s's next token from its row of logits (changed in place), its
 * log-probability in *logprob; -1 when the rules leave no token. */
static int32_t choose(const tsr_exec *ex, greedy_state *g, size_t limit, size_t V, size_t s,
                      float *row, float *logprob, tsr_sample_entry *scratch)
{
    size_t len = g->len[s];
    if (g->prefix && len < g->prefix[s].len) { /* forced: scored by the model as it is */
        int32_t tok = g->prefix[s].ids[len];
        *logprob = tsr_head_logprob(ex, row, tok);
        return tok;
    }
    if (g->rules.active)
        tsr_rules_apply(&g->rules, row, g->ids + s * limit, len);
    if (g->sampling) {
        tsr_head_log_softmax(ex, row, (long)len);
        double u = tsr_sample_uniform(g->key[s], g->draws[s]++);
        int32_t tok = tsr_sample(&g->sampler, row, V, u, scratch);
        if (tok >= 0)
            *logprob = row[tok];
        return tok;
    }
    return tsr_head_best(ex, row, len, logprob);
}

static int run(const tsr_exec *ex, size_t n, const tessera_translate_options *o,
               tsr_decoder *dec, greedy_state *g, tsr_buffer *logits, tessera_hypothesis *out,
               char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    size_t limit = tsr_target_limit(m, o), V = (size_t)m->cfg.tgt_vocab_size, active = 0;
    int32_t start[2];
    size_t k = tsr_start_tokens(&m->cfg, g->target_lang, start);
    for (size_t s = 0; s < n; s++) {
        if (limit == 0) {
            finish(o, g, s, 0, out);
            continue;
        }
        g->seqs[active] = (tsr_decode_seq){.slot = s, .sentence = s, .n_new = k};
        memcpy(g->first + active++ * k, start, k * sizeof *start);
    }
    if (tsr_buffer_reserve(logits, n * V) != 0)
        return tsr_fail_oom(err, err_len, "out of memory for the generator output");
    for (int first = 1; active > 0; first = 0) {
        const float *hidden;
        TSR_TRY(tsr_decoder_forward(dec, first ? g->first : g->next, g->seqs, active, &hidden,
                                    err, err_len));
        if (first && k > 1) /* the start rows before the last predict nothing */
            hidden = tsr_decoder_drop_leading_rows(dec, g->seqs, active, k - 1);
        /* The output head's logits, then each row's token, split over the
         * team by rows; the token goes into next[i] (already fed). */
#pragma omp parallel num_threads(ex->threads)
        {
            /* Plain greedy under a shortlist reads each sentence's
             * candidates alone; the rest, a row of the vocabulary. */
            const int among = g->plain && g->candidates.on;
            if (among)
                tsr_candidates_compact_logits(ex, &g->candidates, hidden, active);
            else
                tsr_candidates_logits(ex, &g->candidates, hidden, g->seqs, active, logits->p);
            double began = tsr_work_begin(ex);
#pragma omp for schedule(static) nowait
            for (long li = 0; li < (long)active; li++) {
                size_t s = g->seqs[li].sentence;
                float *row = logits->p + (size_t)li * V;
                g->next[li] =
                    among ? tsr_candidates_best(ex, &g->candidates, (size_t)li, s, g->len[s], row,
                                                &g->step_logprob[li])
                    : g->plain ? tsr_head_best(ex, row, g->len[s], &g->step_logprob[li])
                               : choose(ex, g, limit, V, s, row, &g->step_logprob[li],
                                        g->scratch ? g->scratch + (size_t)li * V : NULL);
            }
            tsr_work_end(ex, began);
        }
        size_t kept = 0;
        for (size_t i = 0; i < active; i++) {
            size_t s = g->seqs[i].sentence;
            int32_t tok = g->next[i];
            if (tok < 0) { /* the rules left no token: the hypothesis ends here */
                finish(o, g, s, 0, out);
                continue;
            }
            g->logprob[s] += (double)g->step_logprob[i];
            if (tsr_rules_ends(&g->rules, tok)) {
                finish(o, g, s, 1, out);
                continue;
            }
            if (g->align)
                g->align[s * limit + g->len[s]] = dec->alignment[i];
            g->ids[s * limit + g->len[s]++] = tok;
            if (o->on_token && o->on_token(o->on_token_arg, g->order[s], tok,
                                           g->step_logprob[i], g->len[s] - 1)) {
                finish(o, g, s, 0, out); /* the caller has what it wants of it */
                continue;
            }
            if (g->len[s] == limit) {
                finish(o, g, s, 0, out);
                continue;
            }
            g->seqs[kept] = g->seqs[i];
            g->seqs[kept].n_new = 1;
            g->next[kept++] = tok;
        }
        active = kept;
        if (active > 0)
            TSR_TRY(tsr_cancel_check(o->cancel, o->cancel_arg, err, err_len));
    }
    for (size_t s = 0; s < n; s++) {
        if (!out[s].ids || (g->align && !out[s].alignment))
            return tsr_fail_oom(err, err_len, "out of memory for the output");
        memcpy(out[s].ids, g->ids + s * limit, g->len[s] * sizeof(int32_t));
        if (g->align)
            memcpy(out[s].alignment, g->align + s * limit, g->len[s] * sizeof(int32_t));
    }
    return 0;
}

size_t tsr_greedy_plan(const tsr_exec *ex, const tessera_translate_options *o,
                       const tsr_batch_shape *b)
{
    const tessera_model *m = ex->m;
    size_t n = b->n, limit = tsr_target_limit(m, o), V = (size_t)m->cfg.tgt_vocab_size;
    /* The state, allocated before the source side (tsr_greedy below). */
    size_t history = tsr_plan_block(tsr_plan_mul(tsr_plan_mul(n, limit) + 1, sizeof(int32_t)));
    size_t k = tsr_start_length(&m->cfg);
    static const size_t per_sentence[] = {sizeof(size_t), sizeof(double), sizeof(tsr_decode_seq),
                                          sizeof(int32_t), sizeof(float)};
    size_t state = history;
    for (size_t i = 0; i < sizeof per_sentence / sizeof per_sentence[0]; i++)
        state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(n, per_sentence[i])));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(tsr_plan_mul(n, k), sizeof(int32_t))));
    if (o->return_alignments)
        state = tsr_plan_add(state, history);
    if (o->sampling_topk != 1) {
        state = tsr_plan_add(state, tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(n, sizeof(uint64_t)))));
        state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(tsr_plan_mul(n, V),
                                                               sizeof(tsr_sample_entry))));
    }
    /* Held with the cross memory: the decoder (one slot per sentence, its
     * start tokens at the first call, one row each after; the cache holds
     * them and every token but the last) and the generator's logits. */
    size_t decoder = tsr_decoder_plan(ex, n, n, tsr_plan_mul(n, k), limit + k, b->longest_src,
                                      o->return_alignments);
    size_t logits = tsr_plan_buffer(tsr_plan_mul(n, V));
    state = tsr_plan_add(state, tsr_candidates_plan(ex, o, b, n));
    return tsr_plan_add(state, tsr_source_batch_plan(ex, b, 1, tsr_plan_add(decoder, logits)));
}

int tsr_greedy(const tsr_exec *ex, const tsr_decode_batch *in, const tessera_translate_options *o,
               tessera_hypothesis *out, char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    size_t n = in->n, limit = tsr_target_limit(m, o), V = (size_t)m->cfg.tgt_vocab_size;
    tsr_source_batch sb;
    tsr_decoder dec;
    tsr_buffer logits = {0};
    greedy_state g = {
        .ids = tsr_malloc((n * limit + 1) * sizeof(int32_t)),
        .len = tsr_calloc(n, sizeof(size_t)),
        .logprob = tsr_calloc(n, sizeof(double)),
        .seqs = tsr_malloc(n * sizeof(tsr_decode_seq)),
        .next = tsr_malloc(n * sizeof(int32_t)),
        .first = tsr_malloc(n * tsr_start_length(&m->cfg) * sizeof(int32_t)),
        .target_lang = in->target_lang,
        .step_logprob = tsr_malloc(n * sizeof(float)),
        .prefix = in->prefix,
        .order = in->order,
        .sampling = o->sampling_topk != 1,
        .sampler = {(size_t)o->sampling_topk, o->sampling_topp, o->sampling_temperature},
    };
    tsr_rules_init(&g.rules, m, o);
    g.plain = !g.prefix && !g.rules.active && !g.sampling;
    int rc, sampling_oom = 0;
    if (o->return_alignments)
        g.align = tsr_malloc((n * limit + 1) * sizeof(int32_t));
    if (g.sampling) {
        g.key = tsr_malloc(n * sizeof *g.key);
        g.draws = tsr_calloc(n, sizeof *g.draws);
        g.scratch = tsr_malloc(n * V * sizeof *g.scratch);
        sampling_oom = !g.key || !g.draws || !g.scratch;
        for (size_t s = 0; !sampling_oom && s < n; s++)
            g.key[s] = tsr_sample_key(o->seed, o->stream_index ? o->stream_index[in->order[s]]
                                                           : in->first_index + in->order[s]);
    }
    if (!g.ids || !g.len || !g.logprob || !g.seqs || !g.next || !g.first || !g.step_logprob ||
        sampling_oom ||
        (o->return_alignments && !g.align)) {
        rc = tsr_fail_oom(err, err_len, "out of memory for %zu sentences", n);
        goto free_state;
    }
    rc = tsr_candidates_init(&g.candidates, ex, in, o, n, err, err_len);
    if (rc != 0)
        goto free_state;
    rc = tsr_source_batch_encode(ex, in->src, n, 1, &sb, err, err_len);
    if (rc != 0)
        goto free_state;
    rc = tsr_decoder_init(&dec, ex, &sb.cross, n, err, err_len);
    if (rc == 0) {
        if (g.align)
            tsr_decoder_want_alignments(&dec);
        rc = run(ex, n, o, &dec, &g, &logits, out, err, err_len);
        tsr_decoder_free(&dec);
    }
    tsr_source_batch_free(m, &sb);
free_state:
    tsr_candidates_free(&g.candidates);
    tsr_buffer_free(&logits);
    tsr_free(g.ids);
    tsr_free(g.len);
    tsr_free(g.logprob);
    tsr_free(g.seqs);
    tsr_free(g.next);
    tsr_free(g.first);
    tsr_free(g.step_logprob);
    tsr_free(g.align);
    tsr_free(g.key);
    tsr_free(g.draws);
    tsr_free(g.scratch);
    return rc;
}
