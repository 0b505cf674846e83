/* The rules of tessera_translate_options that shape each free choice of a
 * hypothesis (README "Decoding options"): repetition penalty, no repeated
 * n-gram, no unk, a minimum length; and which tokens end a hypothesis.
 * Forced (target prefix) steps are not shaped. */
#ifndef TSR_CORE_SEARCH_DECODE_RULES_H
#define TSR_CORE_SEARCH_DECODE_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "core/model/model.h"

typedef struct tsr_rules {
    int active; /* some rule changes logits; 0 keeps the plain fast path */
    float repetition_penalty;
    size_t no_repeat_ngram;
    int32_t banned_unk; /* unk_id with disable_unk, else -1 */
    size_t min_len;
    int32_t eos, end_token; /* end_token -1: none */
} tsr_rules;

void tsr_rules_init(tsr_rules *r, const tessera_model *m, const tessera_translate_options *o);

/* Applies the rules in place to one row of logits of a hypothesis whose
 * target tokens so far are history[0..len) (ids the row holds: each was
 * checked against the vocabulary when it entered). */
void tsr_rules_apply(const tsr_rules *r, float *z, const int32_t *history, size_t len);

/* Whether token ends a hypothesis (eos, or the end token). */
static inline int tsr_rules_ends(const tsr_rules *r, int32_t token)
{
    return token == r->eos || token == r->end_token;
}

#endif
