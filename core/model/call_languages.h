/* A call's languages (its options' source_lang and target_lang) against its
 * model's table and config: the tokens each side gets, or the refusal; and
 * the public calls that read a model's languages. */
#ifndef TSR_CORE_MODEL_CALL_LANGUAGES_H
#define TSR_CORE_MODEL_CALL_LANGUAGES_H

#include <stdint.h>

#include "core/tessera.h"

/* A call's languages by name (the options' source_lang, target_lang; NULL:
 * none) to the tokens *source and *target (-1: none): each must be given
 * exactly when the model's config says it takes that side's language
 * (target only when with_target: encode has no target side), and be one of
 * its languages. Messages start with the option's name ("target_lang: the
 * model needs a target language: one of its 202 (ace_Arab, ...)"). */
int tsr_languages_for_call(const tessera_model *m, const char *source, const char *target,
                           int with_target, int32_t *source_id, int32_t *target_id, char *err,
                           size_t err_len);

#endif
