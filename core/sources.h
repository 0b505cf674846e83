/* Sources as the encoder reads them: checked against the model, and with the
 * model's source suffix (config key source_suffix, e.g. a family's `</s>`)
 * appended, so that callers pass them as the family's tokenizer gives them. */
#ifndef TSR_CORE_SOURCES_H
#define TSR_CORE_SOURCES_H

#include <stddef.h>

#include "core/model.h"

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

#endif
