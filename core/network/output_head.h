/* The output head: everything greedy decoding, sampling, beam search and
 * scoring read off the decoder's output goes through here - the generator's
 * logits, and a row's log-probabilities, best token or log-sum-exp. One
 * unit, so that what a model family adds at the output (an output bias,
 * banned ids, taken out before or after the softmax) is written once for
 * every way of decoding, and every kernel set runs it. */
#ifndef TSR_CORE_NETWORK_OUTPUT_HEAD_H
#define TSR_CORE_NETWORK_OUTPUT_HEAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/runtime/runtime.h"

/* The generator's logits for `rows` rows of decoder output (hidden, d_model
 * floats each) into logits[rows][tgt_vocab]: an operation of core/network/ops.h
 * (every thread of the team calls it; it ends with a barrier). The model's
 * banned ids are the search's business (tsr_head_best and
 * tsr_head_log_softmax): a scored or forced token keeps its probability. */
void tsr_head_logits(const tsr_exec *ex, const float *hidden, size_t rows, float *logits);

/* A row of logits made log-probabilities, in place. choosing_len >= 0: a
 * free choice of the search for a hypothesis of that many tokens (-1: a
 * forced or scored token): what the model bans (banned_target_ids, and eos
 * below min_target_length) made -inf, before the softmax
 * (banned_target_ids_mode "logits") or after it ("log_probs"). */
void tsr_head_log_softmax(const tsr_exec *ex, float *row, long choosing_len);

/* The log-probability of token `tok` under a row of logits. */
float tsr_head_logprob(const tsr_exec *ex, const float *row, int32_t tok);

/* The most likely token of a row of logits that the model does not ban for
 * a hypothesis of `len` tokens
 * (the first on ties) and its log-probability in *logprob (normalised over
 * the tokens left by bans before the softmax, over every token for bans
 * after it); -1 when no token is left (every logit -inf, as when rules
 * banned them all). The banned ids of the row become -inf. */
int32_t tsr_head_best(const tsr_exec *ex, float *row, size_t len, float *logprob);

/* The position of id in ids[0, n) (ascending: a shortlist's candidates), or
 * where it would go (n when it is past them all). */
size_t tsr_head_position(const int32_t *ids, size_t n, int32_t id);

/* tsr_head_log_softmax over a row that holds only the logits of ids[0, n)
 * (ascending), as over the vocabulary's row with every other logit -inf;
 * ids NULL: the vocabulary's row (n its size), tsr_head_log_softmax. */
void tsr_head_log_softmax_among(const tsr_exec *ex, float *row, const int32_t *ids, size_t n,
                                long choosing_len);

/* tsr_head_best over a row that holds only the logits of ids[0, n)
 * (ascending): as over the vocabulary's row with every other logit -inf (a
 * shortlist's), without that row; ids NULL: tsr_head_best. Returns the id,
 * or -1. */
int32_t tsr_head_best_among(const tsr_exec *ex, float *row, const int32_t *ids, size_t n,
                            size_t len, float *logprob);

#endif
