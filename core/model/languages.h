/* A multilingual model's languages (config key languages; docs/model-format.md
 * "Languages"): each name as the model's tokenizer spells it, with its token
 * id, and the lookup of a call's language by name. */
#ifndef TSR_CORE_MODEL_LANGUAGES_H
#define TSR_CORE_MODEL_LANGUAGES_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"

/* Longest language name, without its NUL ("zho_Hant", "__en__", "en_XX" are
 * far shorter). */
#define TSR_LANGUAGE_NAME_MAX 31

typedef struct tsr_languages {
    size_t n;
    char (*names)[TSR_LANGUAGE_NAME_MAX + 1];
    int32_t *ids;
} tsr_languages;

/* Reads config.json's languages at PATH for a model of `cfg`: every name 1 to
 * TSR_LANGUAGE_NAME_MAX printable ASCII bytes without spaces, every id a
 * token of each vocabulary the model reads languages from, no name twice;
 * present exactly when cfg takes a source or a target language. *out is
 * NULL for a model without languages. Errors name the key and the entry,
 * prefixed "PATH: ". */
int tsr_languages_load(const char *path, const tessera_config *cfg, tsr_languages **out,
                       char *err, size_t err_len);

/* The same from the JSON text itself (what tsr_languages_load reads). */
int tsr_languages_parse(const char *json, size_t len, const tessera_config *cfg,
                        tsr_languages **out, char *err, size_t err_len);

/* NULL is accepted. */
void tsr_languages_free(tsr_languages *l);

/* The id of `name` in l (NULL: no languages), or -1 with a message naming
 * it and the nearest names the table has (`what` says which: "target_lang"). */
int tsr_languages_find(const tsr_languages *l, const char *what, const char *name, int32_t *id,
                       char *err, size_t err_len);

#endif
