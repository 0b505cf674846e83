/* Shared by the decoding strategies (greedy, beam) and scoring. */
#ifndef TSR_CORE_SEARCH_DECODE_H
#define TSR_CORE_SEARCH_DECODE_H

#include "core/model/model.h"
#include "core/runtime/plan.h"
#include "core/runtime/runtime.h"
#include "core/search/source_batch.h"
#include "core/search/sources.h"

/* One batch of sentences to translate: their sources, their target
 * prefixes (NULL: none), and each one's index in the whole input, which
 * keys its random stream for sampling: first_index + order[s] (the call's
 * first_sentence_index, and where the batch took sentence s from), or the
 * options' stream_index[order[s]] when the caller gave one per sentence.
 * Every sentence's decoder starts from tsr_start_tokens (core/search/sources.h). */
typedef struct tsr_decode_batch {
    const tessera_tokens *src;
    const tessera_tokens *prefix;
    size_t n;
    uint64_t first_index;
    const size_t *order;
    int32_t target_lang; /* the call's target language token (tsr_start_tokens), -1: none */
} tsr_decode_batch;

/* Decoding entry points for one batch of sentences, run on the call's
 * threads; out receives n * n_best hypotheses. */
int tsr_greedy(const tsr_exec *ex, const tsr_decode_batch *in, const tessera_translate_options *o,
               tessera_hypothesis *out, char *err, size_t err_len);
int tsr_beam_search(const tsr_exec *ex, const tsr_decode_batch *in,
                    const tessera_translate_options *o, tessera_hypothesis *out, char *err,
                    size_t err_len);

/* The working memory of one batch of greedy or sampling decoding
 * (core/search/greedy.c), or of beam search (core/search/beam.c), as o says;
 * core/runtime/plan.h says what a plan counts. */
size_t tsr_greedy_plan(const tsr_exec *ex, const tessera_translate_options *o,
                       const tsr_batch_shape *b);
size_t tsr_beam_plan(const tsr_exec *ex, const tessera_translate_options *o,
                     const tsr_batch_shape *b);

#endif
