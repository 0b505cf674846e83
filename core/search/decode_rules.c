/* Decoding rules on one row of logits. Each costs O(history) or
 * O(history * n) per row, against the O(V * d_model) of the generator that
 * made the row, so they run in plain C, identically for every kernel set. */
#include <math.h>

#include "core/search/decode_rules.h"

void tsr_rules_init(tsr_rules *r, const tessera_model *m, const tessera_translate_options *o)
{
    r->repetition_penalty = o->repetition_penalty;
    r->no_repeat_ngram = o->no_repeat_ngram > 0 ? (size_t)o->no_repeat_ngram : 0;
    r->banned_unk = o->disable_unk ? m->cfg.unk_id : -1;
    r->min_len = o->min_len > 0 ? (size_t)o->min_len : 0;
    r->eos = m->cfg.eos_id;
    r->end_token = o->end_token;
    r->active = r->repetition_penalty != 1.0f || r->no_repeat_ngram > 0 || r->banned_unk >= 0 ||
                r->min_len > 0;
}

/* CTRL (Keskar et al. 2019), as CTranslate2 applies it: each distinct token
 * already produced has its logit pushed towards less likely, whatever its
 * sign. Distinctness by looking back: the history is short. */
static void penalise_repetitions(float penalty, float *z, const int32_t *history, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int32_t t = history[i];
        size_t j = 0;
        while (j < i && history[j] != t)
            j++;
        if (j < i)
            continue;
        z[t] = z[t] < 0.0f ? z[t] * penalty : z[t] / penalty;
    }
}

/* Bans every token that would complete an n-gram the history already holds:
 * wherever the last n-1 tokens occurred before, the token that followed. */
static void ban_repeated_ngrams(size_t n, float *z, const int32_t *history, size_t len)
{
    if (len + 1 < n)
        return;
    const int32_t *suffix = history + len - (n - 1);
    for (size_t j = 0; j + n <= len; j++) {
        size_t k = 0;
        while (k < n - 1 && history[j + k] == suffix[k])
            k++;
        if (k == n - 1)
            z[history[j + n - 1]] = -INFINITY;
    }
}

void tsr_rules_apply(const tsr_rules *r, float *z, const int32_t *history, size_t len)
{
    if (r->repetition_penalty != 1.0f)
        penalise_repetitions(r->repetition_penalty, z, history, len);
    if (r->no_repeat_ngram > 0)
        ban_repeated_ngrams(r->no_repeat_ngram, z, history, len);
    if (r->banned_unk >= 0)
        z[r->banned_unk] = -INFINITY;
    if (len < r->min_len) {
        z[r->eos] = -INFINITY;
        if (r->end_token >= 0)
            z[r->end_token] = -INFINITY;
    }
}
