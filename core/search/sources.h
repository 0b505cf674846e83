/* Sources as the encoder reads them: checked against the model, and with the
 * model's source suffix (config key source_suffix, e.g. a family's `</s>`)
 * appended, so that callers pass them as the family's tokenizer gives them. */
#ifndef TSR_CORE_SEARCH_SOURCES_H
#define TSR_CORE_SEARCH_SOURCES_H

#include <stddef.h>

#include "core/model/model.h"

/* Every id in the source vocabulary, no sentence empty (unless allow_empty),
 * and each at most max_positions long with the suffix; `what` names a
 * sentence in messages ("sentence 3: ..."), counted from 1. */
int tsr_check_sources(const tessera_model *m, const tessera_tokens *src, size_t n, int allow_empty,
                      const char *what, char *err, size_t err_len);

/* *view: src itself when the model appends nothing (*owned NULL), else a
 * copy of each sentence with the suffix appended, in one block the caller
 * frees with tsr_free(*owned). */
int tsr_sources_with_suffix(const tessera_model *m, const tessera_tokens *src, size_t n,
                            const tessera_tokens **view, tessera_tokens **owned, char *err,
                            size_t err_len);

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

#endif
