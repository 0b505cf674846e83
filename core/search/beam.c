/* Beam search over a batch of sentences, N hypotheses each.
 *
 * Each step scores every (live hypothesis, token) pair by total
 * log-probability. Of a sentence's best N candidates, those ending in eos are
 * set aside as finished (ranked by score / len^A, len counting the eos); the
 * best N candidates not ending in eos become the new live hypotheses. A
 * sentence is done when no live hypothesis can still beat the n_best-th
 * finished one (a bound, so stopping early never changes the result), or at
 * the length limit, where live hypotheses finish without eos.
 *
 * Not when N hypotheses have finished, as some searches stop: with a sharp
 * model the best live hypothesis is near log-prob 0 and every other one far
 * below, so the eos candidates of those others sort among the best N and
 * finish, N of them before the right answer reaches its end (the shipped
 * demo model's held-out set: 91.8 % right with that rule, 100 % without;
 * models/numbers-en-de/README.md).
 *
 * Sentence s owns KV-cache slots [s*N, s*N + N). When hypotheses are
 * reselected, the first child of a parent inherits the parent's slot as is;
 * only further children of the same parent get a copy, in a slot left free by
 * a hypothesis that had no child. */
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

typedef struct hyp {
    size_t slot;
    double score; /* total log-probability */
    size_t len;
    int32_t *tokens;
    int32_t *align; /* the tokens' alignments, or NULL when not asked for */
    float *lps;     /* the tokens' log-probabilities, when streaming (else NULL) */
} hyp;

typedef struct finished_hyp {
    double rank; /* score / len^A */
    double score;
    size_t len;
    int32_t *ids;
    int32_t *align;
    float *lps; /* streaming: each token's log-probability */
} finished_hyp;

typedef struct sentence {
    hyp *live;
    size_t n_live;
    int32_t *tokens[2]; /* [N][limit] each: this step's and the next step's histories */
    int32_t *align[2];  /* the same for alignments, when asked for */
    float *lps[2];      /* the same for the tokens' log-probabilities, when streaming */
    int flip;
    finished_hyp *fin;
    size_t n_fin, cap_fin;
    int done;
} sentence;

typedef struct candidate {
    double score;
    size_t hyp;
    int32_t token;
} candidate;

typedef struct search {
    const tsr_exec *ex;
    const tessera_model *m;
    const tessera_translate_options *o;
    size_t N, limit, V, n;
    const tessera_tokens *prefix; /* [n] or NULL */
    const size_t *order;          /* [n]: each sentence's index in the call (streaming) */
    int32_t target_lang;          /* the call's target language token (tsr_start_tokens) */
    tsr_rules rules;
    sentence *sent;
    hyp *live_pool;
    candidate *tops;  /* [rows][2N]: each hypothesis row's best pairs, sorted */
    size_t *n_top;    /* [rows]: how many */
    size_t *row_hyp;  /* [rows]: the row's hypothesis within its sentence */
    double *row_score; /* [rows]: that hypothesis's score */
    candidate *cands; /* [N * 2N]: a sentence's rows' pairs, merged */
    hyp *next_hyps;   /* [N]: a sentence's hypotheses being selected */
    size_t *parent_slot;
    size_t *copies;   /* [rows][2]: the step's cache copies, destination and source slot */
    size_t n_copies;
    tsr_decode_seq *seqs;
    int32_t *next;
    tsr_decoder dec;
    tsr_buffer logits;
    tsr_candidates candidates; /* the shortlist's, when the options give one */
} search;

static double length_normalised(const search *b, double score, size_t len)
{
    if (b->o->length_penalty == 0.0f || len == 0)
        return score;
    return score / pow((double)len, (double)b->o->length_penalty);
}

/* Best score a live hypothesis could still reach after normalisation: its
 * log-probability can only fall, and its length is at most `limit`. */
static double live_bound(const search *b, const hyp *h)
{
    return length_normalised(b, h->score, b->limit);
}

/* A finished hypothesis with h's tokens; len counts the eos if it has one. */
static int add_finished(search *b, sentence *s, const hyp *h, double score, size_t len)
{
    if (s->n_fin == s->cap_fin) {
        size_t cap = s->cap_fin ? 2 * s->cap_fin : 2 * b->N;
        finished_hyp *fin = tsr_realloc(s->fin, cap * sizeof *fin);
        if (!fin)
            return TESSERA_ERR_NOMEM;
        s->fin = fin;
        s->cap_fin = cap;
    }
    finished_hyp *f = &s->fin[s->n_fin];
    f->ids = tsr_malloc((h->len + 1) * sizeof(int32_t));
    f->align = h->align ? tsr_malloc((h->len + 1) * sizeof(int32_t)) : NULL;
    f->lps = h->lps ? tsr_malloc((h->len + 1) * sizeof(float)) : NULL;
    if (!f->ids || (h->align && !f->align) || (h->lps && !f->lps)) {
        tsr_free(f->ids);
        tsr_free(f->align);
        tsr_free(f->lps);
        return TESSERA_ERR_NOMEM;
    }
    memcpy(f->ids, h->tokens, h->len * sizeof(int32_t));
    if (h->align)
        memcpy(f->align, h->align, h->len * sizeof(int32_t));
    if (h->lps)
        memcpy(f->lps, h->lps, h->len * sizeof(float));
    f->len = h->len;
    f->score = score;
    f->rank = length_normalised(b, score, len);
    s->n_fin++;
    return 0;
}

/* Finished hypotheses, best first; an insertion sort, stable, so ties keep
 * the order they finished in (the list is short and nearly sorted). */
static void sort_finished(sentence *s)
{
    for (size_t i = 1; i < s->n_fin; i++) {
        finished_hyp f = s->fin[i];
        size_t j = i;
        while (j > 0 && s->fin[j - 1].rank < f.rank) {
            s->fin[j] = s->fin[j - 1];
            j--;
        }
        s->fin[j] = f;
    }
}

static int candidate_before(const candidate *a, const candidate *b)
{
    if (a->score != b->score)
        return a->score > b->score;
    if (a->hyp != b->hyp)
        return a->hyp < b->hyp;
    return a->token < b->token;
}

/* Values of a row passed over at once when none is above the last kept one. */
#define SKIP_BLOCK 16

/* Whether any of lp[0, SKIP_BLOCK) is above `last`: comparisons OR'ed
 * together, which the compiler turns into vector compares (a NaN compares
 * false, as in the one-value test). */
static int any_above(const float *lp, float last)
{
    int any = 0;
    for (size_t i = 0; i < SKIP_BLOCK; i++)
        any |= lp[i] > last;
    return any;
}

/* Keeps the `keep` best (hyp, token) pairs of one log-probability row in
 * `best` (sorted), by insertion: keep is small. Returns how many. The row
 * holds the log-probabilities of ids[0, V) (ascending), or of the whole
 * vocabulary when ids is NULL.
 *
 * Once `keep` are kept, a token enters only with a score strictly above the
 * last kept one's (equal scores go to the lower token, and tokens come in
 * order), and base + lp is monotonic in lp, so a log-probability not above
 * the last kept one's cannot enter: one float comparison passes over almost
 * all of a row (int8 beam4 on base: 1.02x), and a block of SKIP_BLOCK with
 * none above it is passed over whole: one value at a time, a branch a value,
 * the scan was 9 % of an argos-shaped int8 beam4 (50k columns, AMD Zen 4). */
static size_t top_of_row(const float *lp, size_t V, const int32_t *ids, size_t h, double base,
                         size_t keep, candidate *best)
{
    size_t have = 0;
    float last_lp = -INFINITY; /* lp of best[keep - 1] once have == keep */
    for (size_t v = 0; v < V; v++) {
        if (have == keep && v % SKIP_BLOCK == 0 && v + SKIP_BLOCK <= V &&
            !any_above(lp + v, last_lp)) {
            v += SKIP_BLOCK - 1;
            continue;
        }
        if (have == keep && !(lp[v] > last_lp))
            continue;
        candidate c = {base + (double)lp[v], h, ids ? ids[v] : (int32_t)v};
        if ((have == keep && !candidate_before(&c, &best[have - 1])) || lp[v] == -INFINITY)
            continue; /* -inf: a token the rules forbid */
        size_t j = have < keep ? have++ : keep - 1;
        while (j > 0 && candidate_before(&c, &best[j - 1])) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = c;
        if (have == keep)
            last_lp = lp[ids ? tsr_head_position(ids, V, best[keep - 1].token)
                             : (size_t)best[keep - 1].token];
    }
    return have;
}

static int compare_candidates(const void *a, const void *b)
{
    return candidate_before(a, b) ? -1 : candidate_before(b, a) ? 1 : 0;
}

/* candidate_before is a total order (a sentence's (hyp, token) pairs are
 * distinct), so any sort gives the same order; an insertion sort of the
 * N x 2N pairs was quadratic: 2.6 G steps per step at beam 1024. */
static void sort_candidates(candidate *c, size_t n)
{
    qsort(c, n, sizeof *c, compare_candidates);
}

/* Gives each new live hypothesis a KV slot: the first child of a parent keeps
 * the parent's slot, later children get a free one, into which the parent's
 * cache is copied (noted in b->copies). */
static int assign_slots(search *b, size_t sent_index, hyp *next, const size_t *parent_slot,
                        size_t n_next)
{
    size_t N = b->N, base = sent_index * N;
    unsigned char claimed[256], *used = N <= sizeof claimed ? claimed : tsr_calloc(N, 1);
    if (!used)
        return TESSERA_ERR_NOMEM;
    memset(used, 0, N);
    for (size_t j = 0; j < n_next; j++) {
        next[j].slot = SIZE_MAX;
        size_t p = parent_slot[j] - base;
        if (!used[p]) {
            used[p] = 1;
            next[j].slot = parent_slot[j];
        }
    }
    int rc = 0;
    size_t free_slot = 0;
    for (size_t j = 0; j < n_next && rc == 0; j++) {
        if (next[j].slot != SIZE_MAX)
            continue;
        while (used[free_slot])
            free_slot++;
        used[free_slot] = 1;
        next[j].slot = base + free_slot;
        /* Room now; the bytes after every sentence is selected, by the team
         * (copy_caches). No destination is a source: a parent's slot is
         * claimed by its first child. */
        rc = tsr_kv_cache_reserve(&b->dec.cache, next[j].slot, b->dec.cache.len[parent_slot[j]]);
        b->copies[2 * b->n_copies] = next[j].slot;
        b->copies[2 * b->n_copies + 1] = parent_slot[j];
        b->n_copies++;
    }
    if (used != claimed)
        tsr_free(used);
    return rc;
}

/* Streaming: the sentence's search is done, its best hypothesis final:
 * its tokens go to the callback, in order; a nonzero return cuts the
 * hypothesis after that token (scored as far as it goes, without the
 * ending token, as at max_len). */
static void stream_best(search *b, size_t si)
{
    sentence *s = &b->sent[si];
    if (!b->o->on_token || s->n_fin == 0)
        return;
    finished_hyp *f = &s->fin[0];
    double score = 0.0;
    for (size_t t = 0; t < f->len; t++) {
        score += (double)f->lps[t];
        if (b->o->on_token(b->o->on_token_arg, b->order[si], f->ids[t], f->lps[t], t)) {
            f->len = t + 1;
            f->score = score;
            f->rank = length_normalised(b, score, f->len);
            return;
        }
    }
}

/* One sentence's selection after a step; its live hypotheses' best pairs are
 * in the rows from row0 on (step()). */
static int select_sentence(search *b, size_t si, size_t row0)
{
    sentence *s = &b->sent[si];
    size_t N = b->N, keep = 2 * N, n_c = 0;
    candidate *c = b->cands;
    for (size_t h = 0; h < s->n_live; h++) {
        memcpy(c + n_c, b->tops + (row0 + h) * keep, b->n_top[row0 + h] * sizeof *c);
        n_c += b->n_top[row0 + h];
    }
    sort_candidates(c, n_c);

    hyp *next = b->next_hyps;
    size_t *parent_slot = b->parent_slot, n_next = 0;
    int32_t *out_tokens = s->tokens[!s->flip], *out_align = s->align[!s->flip];
    float *out_lps = s->lps[!s->flip];
    for (size_t i = 0; i < n_c && n_next < N; i++) {
        const hyp *parent = &s->live[c[i].hyp];
        if (tsr_rules_ends(&b->rules, c[i].token)) {
            if (i < N)
                TSR_TRY(add_finished(b, s, parent, c[i].score, parent->len + 1));
            continue;
        }
        hyp *h = &next[n_next];
        h->score = c[i].score;
        h->len = parent->len + 1;
        h->tokens = out_tokens + n_next * b->limit;
        memcpy(h->tokens, parent->tokens, parent->len * sizeof(int32_t));
        h->tokens[parent->len] = c[i].token;
        h->align = NULL;
        if (out_align) { /* the row of c[i].hyp chose the token */
            h->align = out_align + n_next * b->limit;
            memcpy(h->align, parent->align, parent->len * sizeof(int32_t));
            h->align[parent->len] = b->dec.alignment[row0 + c[i].hyp];
        }
        h->lps = NULL;
        if (out_lps) { /* the token's own log-probability, as the score added it */
            h->lps = out_lps + n_next * b->limit;
            memcpy(h->lps, parent->lps, parent->len * sizeof(float));
            h->lps[parent->len] = (float)(c[i].score - parent->score);
        }
        parent_slot[n_next++] = parent->slot;
    }
    TSR_TRY(assign_slots(b, si, next, parent_slot, n_next));
    s->flip = !s->flip;
    memcpy(s->live, next, n_next * sizeof *next);
    s->n_live = n_next;

    /* Hypotheses at the length limit finish without eos. */
    if (n_next > 0 && s->live[0].len == b->limit) {
        for (size_t h = 0; h < s->n_live; h++)
            TSR_TRY(add_finished(b, s, &s->live[h], s->live[h].score, b->limit));
        s->n_live = 0;
    }
    sort_finished(s);
    /* Only the n_best best can be printed, and a finished hypothesis never
     * moves up: the others are dropped, so the list stays n_best long. */
    size_t K = (size_t)b->o->n_best;
    while (s->n_fin > K) {
        s->n_fin--;
        tsr_free(s->fin[s->n_fin].ids);
        tsr_free(s->fin[s->n_fin].align);
        tsr_free(s->fin[s->n_fin].lps);
    }
    if (s->n_live == 0 ||
        (s->n_fin >= K && live_bound(b, &s->live[0]) <= s->fin[K - 1].rank)) {
        s->done = 1;
        stream_best(b, si);
    }
    return 0;
}

/* The step's cache copies, a layer of one copy at a time spread over the
 * team: late in a long sentence they are megabytes a step, which one thread
 * alone would make the search's largest serial part. */
static void copy_caches(search *b)
{
    tsr_kv_cache *c = &b->dec.cache;
    long parts = (long)(b->n_copies * c->n_layers);
    if (parts == 0)
        return;
#pragma omp parallel num_threads(b->ex->threads)
    {
        double began = tsr_work_begin(b->ex);
#pragma omp for schedule(dynamic, 1) nowait
        for (long p = 0; p < parts; p++) {
            size_t j = (size_t)p / c->n_layers, l = (size_t)p % c->n_layers;
            tsr_kv_cache_copy_layer(c, b->copies[2 * j], b->copies[2 * j + 1], l);
        }
        tsr_work_end(b->ex, began);
    }
}

static int step(search *b, char *err, size_t err_len)
{
    /* Each live hypothesis feeds its last token; at the first step, when
     * each sentence has one, the start tokens (fewer than the beam). */
    int32_t start[2];
    size_t rows = 0, fed = 0, k = tsr_start_tokens(&b->m->cfg, b->target_lang, start);
    int first = 0;
    for (size_t si = 0; si < b->n; si++) {
        sentence *s = &b->sent[si];
        if (s->done)
            continue;
        for (size_t h = 0; h < s->n_live; h++) {
            const hyp *live = &s->live[h];
            b->row_hyp[rows] = h;
            b->row_score[rows] = live->score;
            b->seqs[rows++] = (tsr_decode_seq){.slot = live->slot, .sentence = si,
                                               .n_new = live->len ? 1 : k};
            if (live->len) {
                b->next[fed++] = live->tokens[live->len - 1];
            } else {
                memcpy(b->next + fed, start, k * sizeof *start);
                fed += k;
                first = 1;
            }
        }
    }
    if (rows == 0)
        return 1;
    const float *hidden;
    TSR_TRY(tsr_decoder_forward(&b->dec, b->next, b->seqs, rows, &hidden, err, err_len));
    if (first && k > 1) /* the start rows before the last predict nothing */
        hidden = tsr_decoder_drop_leading_rows(&b->dec, b->seqs, rows, k - 1);
    /* The output head's logits, then each row's log-softmax and best pairs,
     * split over the team by rows; under a shortlist, without rules or a
     * prefix, over its sentence's candidates alone (the vocabulary's row of
     * -inf around them costs O(V) a row). */
    const int compact = b->candidates.on && !b->rules.active && !b->prefix;
#pragma omp parallel num_threads(b->ex->threads)
    {
        if (compact)
            tsr_candidates_compact_logits(b->ex, &b->candidates, hidden, rows);
        else
            tsr_candidates_logits(b->ex, &b->candidates, hidden, b->seqs, rows, b->logits.p);
        double began = tsr_work_begin(b->ex);
#pragma omp for schedule(static) nowait
        for (long lr = 0; lr < (long)rows; lr++) {
            size_t r = (size_t)lr, keep = 2 * b->N, si = b->seqs[r].sentence;
            float *lp = b->logits.p + r * b->V;
            const hyp *h = &b->sent[si].live[b->row_hyp[r]];
            if (compact) {
                const int32_t *ids;
                size_t n = tsr_candidates_row(&b->candidates, r, si, lp, &ids);
                tsr_head_log_softmax_among(b->ex, lp, ids, n, (long)h->len);
                b->n_top[r] = top_of_row(lp, n, ids, b->row_hyp[r], b->row_score[r], keep,
                                         b->tops + r * keep);
                continue;
            }
            if (b->prefix && h->len < b->prefix[si].len) {
                /* Forced: the prefix token is the only candidate, scored by
                 * the model as it is. */
                int32_t tok = b->prefix[si].ids[h->len];
                tsr_head_log_softmax(b->ex, lp, -1);
                b->tops[r * keep] = (candidate){b->row_score[r] + (double)lp[tok], b->row_hyp[r], tok};
                b->n_top[r] = 1;
                continue;
            }
            if (b->rules.active)
                tsr_rules_apply(&b->rules, lp, h->tokens, h->len);
            tsr_head_log_softmax(b->ex, lp, (long)h->len);
            b->n_top[r] = top_of_row(lp, b->V, NULL, b->row_hyp[r], b->row_score[r], keep,
                                     b->tops + r * keep);
        }
        tsr_work_end(b->ex, began);
    }
    size_t row = 0;
    b->n_copies = 0;
    for (size_t si = 0; si < b->n; si++) {
        sentence *s = &b->sent[si];
        if (s->done)
            continue;
        size_t n_live = s->n_live;
        if (select_sentence(b, si, row) != 0)
            return tsr_fail_oom(err, err_len, "out of memory in beam search");
        row += n_live;
    }
    copy_caches(b);
    return 0;
}

/* Hands each sentence's K best to out; TESSERA_ERR_NOMEM when an empty
 * hypothesis cannot be allocated (the caller frees what out holds). */
static int output(search *b, tessera_hypothesis *out)
{
    size_t K = (size_t)b->o->n_best;
    for (size_t si = 0; si < b->n; si++) {
        sentence *s = &b->sent[si];
        for (size_t k = 0; k < K; k++) {
            tessera_hypothesis *h = &out[si * K + k];
            if (k < s->n_fin) {
                h->ids = s->fin[k].ids;
                h->len = s->fin[k].len;
                h->score = s->fin[k].rank;
                h->alignment = s->fin[k].align;
                s->fin[k].ids = NULL;
                s->fin[k].align = NULL;
            } else { /* a vocabulary smaller than the beam: fewer distinct hypotheses */
                h->ids = tsr_malloc(sizeof(int32_t));
                h->len = 0;
                h->score = -INFINITY;
                if (!h->ids)
                    return TESSERA_ERR_NOMEM;
                if (b->o->return_alignments && !(h->alignment = tsr_malloc(sizeof(int32_t))))
                    return TESSERA_ERR_NOMEM;
            }
        }
    }
    return 0;
}

static int init(search *b, char *err, size_t err_len)
{
    size_t N = b->N, n = b->n;
    b->sent = tsr_calloc(n, sizeof *b->sent);
    b->live_pool = tsr_calloc(n * N, sizeof *b->live_pool);
    b->cands = tsr_malloc(N * 2 * N * sizeof *b->cands);
    b->tops = tsr_malloc(n * N * 2 * N * sizeof *b->tops);
    b->n_top = tsr_malloc(n * N * sizeof *b->n_top);
    b->row_hyp = tsr_malloc(n * N * sizeof *b->row_hyp);
    b->row_score = tsr_malloc(n * N * sizeof *b->row_score);
    b->seqs = tsr_malloc(n * N * sizeof *b->seqs);
    b->next = tsr_malloc(n * N * sizeof *b->next);
    b->next_hyps = tsr_malloc(N * sizeof *b->next_hyps);
    b->parent_slot = tsr_malloc(N * sizeof *b->parent_slot);
    b->copies = tsr_malloc(n * N * 2 * sizeof *b->copies);
    if (!b->copies || !b->sent || !b->live_pool || !b->cands || !b->tops || !b->n_top || !b->row_hyp ||
        !b->row_score || !b->seqs || !b->next || !b->next_hyps ||
        !b->parent_slot ||
        tsr_buffer_reserve(&b->logits, n * N * b->V) != 0)
        return tsr_fail_oom(err, err_len, "out of memory for beam search");
    for (size_t si = 0; si < n; si++) {
        sentence *s = &b->sent[si];
        s->live = b->live_pool + si * N;
        for (int t = 0; t < 2; t++) {
            if (!(s->tokens[t] = tsr_malloc((N * b->limit + 1) * sizeof(int32_t))))
                return tsr_fail_oom(err, err_len, "out of memory for beam search");
            if (b->o->return_alignments &&
                !(s->align[t] = tsr_malloc((N * b->limit + 1) * sizeof(int32_t))))
                return tsr_fail_oom(err, err_len, "out of memory for beam search");
            if (b->o->on_token && !(s->lps[t] = tsr_malloc((N * b->limit + 1) * sizeof(float))))
                return tsr_fail_oom(err, err_len, "out of memory for beam search");
        }
        s->live[0] = (hyp){.slot = si * N, .score = 0.0, .len = 0, .tokens = s->tokens[0],
                           .align = s->align[0], .lps = s->lps[0]};
        s->n_live = 1;
        s->done = b->limit == 0;
        if (s->done && add_finished(b, s, &s->live[0], 0.0, 0) != 0)
            return tsr_fail_oom(err, err_len, "out of memory for beam search");
    }
    return 0;
}

static void release(search *b)
{
    if (b->sent)
        for (size_t si = 0; si < b->n; si++) {
            sentence *s = &b->sent[si];
            for (size_t f = 0; f < s->n_fin; f++) {
                tsr_free(s->fin[f].ids);
                tsr_free(s->fin[f].align);
                tsr_free(s->fin[f].lps);
            }
            tsr_free(s->fin);
            tsr_free(s->tokens[0]);
            tsr_free(s->tokens[1]);
            tsr_free(s->align[0]);
            tsr_free(s->align[1]);
            tsr_free(s->lps[0]);
            tsr_free(s->lps[1]);
        }
    tsr_free(b->sent);
    tsr_free(b->live_pool);
    tsr_free(b->cands);
    tsr_free(b->tops);
    tsr_free(b->n_top);
    tsr_free(b->row_hyp);
    tsr_free(b->row_score);
    tsr_free(b->seqs);
    tsr_free(b->next);
    tsr_free(b->next_hyps);
    tsr_free(b->parent_slot);
    tsr_free(b->copies);
    tsr_buffer_free(&b->logits);
    tsr_candidates_free(&b->candidates);
}

size_t tsr_beam_plan(const tsr_exec *ex, const tessera_translate_options *o,
                     const tsr_batch_shape *b)
{
    const tessera_model *m = ex->m;
    size_t n = b->n, N = (size_t)o->beam, K = (size_t)o->n_best, limit = tsr_target_limit(m, o);
    size_t V = (size_t)m->cfg.tgt_vocab_size, rows = tsr_plan_mul(n, N);
    /* init(): the search's arrays, then per sentence two histories of N
     * hypotheses (and two of their alignments). */
    size_t state = tsr_plan_block(tsr_plan_mul(n, sizeof(sentence)));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(rows, sizeof(hyp))));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(N, 2 * N * sizeof(candidate))));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(rows, 2 * N * sizeof(candidate))));
    static const size_t per_row[] = {sizeof(size_t), sizeof(size_t), sizeof(double),
                                     sizeof(tsr_decode_seq), sizeof(int32_t)};
    for (size_t i = 0; i < sizeof per_row / sizeof per_row[0]; i++)
        state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(rows, per_row[i])));
    state = tsr_plan_add(state, tsr_plan_block(N * sizeof(hyp)));
    state = tsr_plan_add(state, tsr_plan_block(N * sizeof(size_t)));
    state = tsr_plan_add(state, tsr_plan_block(tsr_plan_mul(rows, 2 * sizeof(size_t))));
    state = tsr_plan_add(state, tsr_plan_buffer(tsr_plan_mul(rows, V)));
    size_t history = tsr_plan_block(tsr_plan_mul(tsr_plan_mul(N, limit) + 1, sizeof(int32_t)));
    size_t histories = 2 + (o->return_alignments ? 2 : 0) + (o->on_token ? 2 : 0);
    state = tsr_plan_add(state, tsr_plan_mul(tsr_plan_mul(n, histories), history));
    /* Finished hypotheses, per sentence: at most n_best kept plus N ending
     * in one step and N at the length limit before the list is cut back;
     * their list grows 2N, 4N, realloc'd (the old block held with the new). */
    size_t fin = tsr_plan_add(tsr_plan_block(tsr_plan_mul(4 * N, sizeof(finished_hyp))),
                              tsr_plan_block(tsr_plan_mul(2 * N, sizeof(finished_hyp))));
    size_t ids = tsr_plan_block(tsr_plan_mul(limit + 1, sizeof(int32_t)));
    size_t per_fin = 1 + (o->return_alignments ? 1 : 0) + (o->on_token ? 1 : 0);
    fin = tsr_plan_add(fin, tsr_plan_mul(tsr_plan_mul(K + 2 * N, per_fin), ids));
    state = tsr_plan_add(state, tsr_plan_mul(n, fin));
    /* assign_slots: a claim per slot of a sentence, on the heap past 256. */
    if (N > 256)
        state = tsr_plan_add(state, tsr_plan_block(N));
    /* The first call feeds each sentence's start tokens (at most 2 <= N
     * rows), the others one row per live hypothesis. */
    size_t k = tsr_start_length(&m->cfg);
    size_t decoder = tsr_decoder_plan(ex, rows, rows, rows, limit + k, b->longest_src,
                                      o->return_alignments);
    state = tsr_plan_add(state, tsr_candidates_plan(ex, o, b, rows));
    return tsr_plan_add(state, tsr_source_batch_plan(ex, b, 1, decoder));
}

int tsr_beam_search(const tsr_exec *ex, const tsr_decode_batch *in,
                    const tessera_translate_options *o, tessera_hypothesis *out, char *err,
                    size_t err_len)
{
    search b = {
        .ex = ex, .m = ex->m, .o = o, .N = (size_t)o->beam, .limit = tsr_target_limit(ex->m, o),
        .V = (size_t)ex->m->cfg.tgt_vocab_size, .n = in->n, .prefix = in->prefix,
        .order = in->order, .target_lang = in->target_lang,
    };
    tsr_rules_init(&b.rules, ex->m, o);
    tsr_source_batch sb;
    int rc = init(&b, err, err_len);
    if (rc == 0)
        rc = tsr_candidates_init(&b.candidates, ex, in, o, in->n * b.N, err, err_len);
    if (rc == 0)
        rc = tsr_source_batch_encode(ex, in->src, in->n, 1, &sb, err, err_len);
    if (rc == 0) {
        rc = tsr_decoder_init(&b.dec, ex, &sb.cross, in->n * b.N, err, err_len);
        if (rc == 0 && o->return_alignments)
            tsr_decoder_want_alignments(&b.dec);
        /* step() returns 1 when the search has ended, < 0 on failure. */
        while (rc == 0) {
            rc = step(&b, err, err_len);
            if (rc == 0)
                rc = tsr_cancel_check(o->cancel, o->cancel_arg, err, err_len);
        }
        rc = rc < 0 ? rc : 0;
        if (rc == 0 && output(&b, out) != 0)
            rc = tsr_fail_oom(err, err_len, "out of memory for the output");
        tsr_decoder_free(&b.dec);
        tsr_source_batch_free(ex->m, &sb);
    }
    release(&b);
    return rc;
}
