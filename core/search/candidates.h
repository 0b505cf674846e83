/* A batch's vocabulary shortlist (core/tessera.h, "Vocabulary shortlists"):
 * each sentence's candidates - the shortlist's for its source ids, the
 * model's bos, eos, unk and pad, the call's target language and end token,
 * the sentence's prefix - and the generator's rows of their union packed
 * alone, so that each decoding step multiplies only those rows. A row of
 * logits is then its sentence's candidates' logits (the same bits the full
 * generator gives them) and -inf everywhere else: every search reads it as
 * it reads a full row (rules, bans, softmax, argmax, sampling, top-k), so
 * the softmax is over the candidates and nothing else changes. Greedy
 * decoding without rules, prefixes or sampling, and beam search without
 * rules or prefixes, read each sentence's candidates alone instead
 * (tsr_candidates_row, tsr_candidates_best): the vocabulary's row of -inf
 * around them, written and read at every step, was a tenth of an
 * argos-shaped int8 greedy batch under a 2000-candidate shortlist. */
#ifndef TSR_CORE_SEARCH_CANDIDATES_H
#define TSR_CORE_SEARCH_CANDIDATES_H

#include "core/network/decoder.h"
#include "core/network/gathered_linear.h"
#include "core/runtime/plan.h"
#include "core/search/decode.h"

typedef struct tsr_candidates {
    int on;                        /* 0: no shortlist, every id a candidate */
    tsr_gathered_linear generator; /* the generator's rows ids[0..width) */
    int32_t *ids;                  /* the batch's candidates, ascending */
    size_t width;
    size_t *cols_at; /* [n + 1]: sentence s's columns are cols[cols_at[s] .. cols_at[s + 1]) */
    int32_t *cols;   /* columns of ids[], ascending within a sentence */
    int32_t *col_ids; /* ids[cols[i]]: each sentence's candidates, ascending */
    float *compact;  /* [rows][width]: the logits over ids[] */
} tsr_candidates;

/* The candidates of batch `in` under o->shortlist (none: c->on 0, nothing
 * held), for decoder calls of at most `rows` rows. TESSERA_ERR_NOMEM with a
 * message when out of memory; c is then empty. */
int tsr_candidates_init(tsr_candidates *c, const tsr_exec *ex, const tsr_decode_batch *in,
                        const tessera_translate_options *o, size_t rows, char *err,
                        size_t err_len);
void tsr_candidates_free(tsr_candidates *c);

/* An upper bound of what tsr_candidates_init holds for a batch of shape b
 * (core/runtime/plan.h): 0 without a shortlist. */
size_t tsr_candidates_plan(const tsr_exec *ex, const tessera_translate_options *o,
                           const tsr_batch_shape *b, size_t rows);

/* The generator's logits for `rows` rows of decoder output into
 * logits[rows][tgt_vocab], row r over the candidates of its sentence
 * (seqs[r].sentence) and -inf elsewhere; without a shortlist,
 * tsr_head_logits. An operation of core/network/ops.h: every thread of the
 * team calls it, and it ends with a barrier. */
void tsr_candidates_logits(const tsr_exec *ex, const tsr_candidates *c, const float *hidden,
                           const tsr_decode_seq *seqs, size_t rows, float *logits);

/* Under a shortlist (c->on), the generator's logits over the batch's
 * candidates alone, into c->compact: what tsr_candidates_best reads. An
 * operation of core/network/ops.h, as tsr_candidates_logits. */
void tsr_candidates_compact_logits(const tsr_exec *ex, const tsr_candidates *c,
                                   const float *hidden, size_t rows);

/* tsr_head_best of row r (of sentence s, a hypothesis of len tokens) of
 * tsr_candidates_compact_logits, over the sentence's candidates gathered
 * into scratch (as many floats as it has), without writing and reading the
 * vocabulary's -inf around them: the token tsr_head_best gives on
 * tsr_candidates_logits' row, and the log-probability of the same softmax
 * over the same candidates, its double sum taken in another order (a last
 * bit may differ, once in about 10^8 values); with every id a candidate,
 * the same bits. */
int32_t tsr_candidates_best(const tsr_exec *ex, const tsr_candidates *c, size_t r, size_t s,
                            size_t len, float *scratch, float *logprob);

/* Row r of tsr_candidates_compact_logits over sentence s's candidates, into
 * row (as many floats as it has, which it returns), their ids at *ids
 * (ascending): what tsr_head_log_softmax_among and a search over them read. */
size_t tsr_candidates_row(const tsr_candidates *c, size_t r, size_t s, float *row,
                          const int32_t **ids);

#endif
