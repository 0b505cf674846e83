/* Shared by the decoding strategies (greedy, beam) and scoring. */
#ifndef TSR_CORE_DECODE_H
#define TSR_CORE_DECODE_H

#include "core/batch.h"
#include "core/decoder.h"
#include "core/model.h"
#include "core/runtime.h"

/* A batch of source sentences, encoded, with its cross-attention memory. */
typedef struct tsr_source_batch {
    tsr_packing packing;
    float *memory;
    tsr_cross_memory cross;
} tsr_source_batch;

/* Encodes src[0..n) (already validated) and builds the cross memory. */
int tsr_source_batch_encode(const tsr_exec *ex, const tessera_tokens *src, size_t n,
                            tsr_source_batch *b, char *err, size_t err_len);
void tsr_source_batch_free(const tessera_model *m, tsr_source_batch *b);

/* Checks each sentence: not empty, at most max_positions tokens, ids within
 * `vocab`. Errors name the sentence as `what` number first + i (counted from 1). */
int tsr_check_tokens(const tessera_tokens *seqs, size_t n, int vocab, int max_positions,
                     const char *what, size_t first, int allow_empty, char *err, size_t err_len);

/* 0 when the model has a decoder; else bad input: "WHAT: the model is an
 * encoder alone ...". */
int tsr_check_has_decoder(const tessera_model *m, const char *what, char *err, size_t err_len);

/* Most target tokens a hypothesis may have: options->max_len, capped so that
 * [bos] + output fits max_positions. */
size_t tsr_target_limit(const tessera_model *m, const tessera_translate_options *o);

/* One batch of sentences to translate: their sources, their target
 * prefixes (NULL: none), and each one's index in the whole input, which
 * keys its random stream for sampling: first_index + order[s] (the call's
 * first_sentence_index, and where the batch took sentence s from). */
typedef struct tsr_decode_batch {
    const tessera_tokens *src;
    const tessera_tokens *prefix;
    size_t n;
    uint64_t first_index;
    const size_t *order;
} tsr_decode_batch;

/* Decoding entry points for one batch of sentences, run on the call's
 * threads; out receives n * n_best hypotheses. */
int tsr_greedy(const tsr_exec *ex, const tsr_decode_batch *in, const tessera_translate_options *o,
               tessera_hypothesis *out, char *err, size_t err_len);
int tsr_beam_search(const tsr_exec *ex, const tsr_decode_batch *in,
                    const tessera_translate_options *o, tessera_hypothesis *out, char *err,
                    size_t err_len);

#endif
