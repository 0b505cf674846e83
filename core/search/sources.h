/* Sources as the encoder reads them and the decoder's first inputs: checked
 * against the model, with the model's source suffix (config key
 * source_suffix, e.g. a family's `</s>`) appended and a multilingual model's
 * language tokens where it takes them (config keys source_language,
 * target_language), so that callers pass sentences as the family's
 * tokenizer gives them and languages by name. */
#ifndef TSR_CORE_SEARCH_SOURCES_H
#define TSR_CORE_SEARCH_SOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "core/model/config.h"
#include "core/model/model.h"

/* Every id in the source vocabulary, no sentence empty (unless allow_empty),
 * and each at most max_positions long with what the model adds; `what`
 * names a sentence in messages ("sentence 3: ..."), counted from 1. */
int tsr_check_sources(const tessera_model *m, const tessera_tokens *src, size_t n, int allow_empty,
                      const char *what, char *err, size_t err_len);

/* *view: src itself when the model adds nothing (*owned NULL), else a copy
 * of each sentence as the encoder reads it ([language] tokens suffix, or
 * tokens suffix [language], `language` the source language's token), in one
 * block the caller frees with tsr_free(*owned). */
int tsr_sources_arranged(const tessera_model *m, const tessera_tokens *src, size_t n,
                         int32_t language, const tessera_tokens **view, tessera_tokens **owned,
                         char *err, size_t err_len);

/* The decoder's first inputs, before any output token: [bos]; [bos,
 * language] for a target language forced first (its log-probability 0, not
 * part of the output); [language] for one that starts the decoder: their
 * count (tsr_start_length, core/model/config.h) for the call's target
 * language token (unused without one). */
size_t tsr_start_tokens(const tessera_config *c, int32_t language, int32_t start[2]);

/* Checks each sentence: not empty, at most max_positions tokens, ids within
 * `vocab`. Errors name the sentence as `what` number first + i (counted from 1). */
int tsr_check_tokens(const tessera_tokens *seqs, size_t n, int vocab, int max_positions,
                     const char *what, size_t first, int allow_empty, char *err, size_t err_len);

/* 0 when the model has a decoder; else bad input: "WHAT: the model is an
 * encoder alone ...". */
int tsr_check_has_decoder(const tessera_model *m, const char *what, char *err, size_t err_len);

/* Most target tokens a hypothesis may have: options->max_len, capped so that
 * the start tokens + output fit max_positions. */
size_t tsr_target_limit(const tessera_model *m, const tessera_translate_options *o);

#endif
