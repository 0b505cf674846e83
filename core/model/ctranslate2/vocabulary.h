/* The vocabularies of a CTranslate2 model directory, read as CTranslate2
 * reads them: NAME.json (a JSON list of strings) or else NAME.txt (one token
 * per line; a final '\r' is dropped only when every line has one), and the
 * unknown token appended when the file lacks it. Ids are positions in that
 * list; a token that repeats keeps its first id. */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_VOCABULARY_H
#define TSR_CORE_MODEL_CTRANSLATE2_VOCABULARY_H

#include <stddef.h>

#include "core/tessera.h"

/* Loads dir/NAME.json or dir/NAME.txt into *out (NULL and 0 returned when
 * neither exists), appending `unk` when absent. *file is set to the file's
 * name for messages (a static string or NULL). Errors name the file. */
int tsr_ct2_vocabulary_load(const char *dir, const char *name, const char *unk,
                            tessera_vocabulary **out, char *file, size_t file_len, char *err,
                            size_t err_len);

#endif
