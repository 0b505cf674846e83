/* What a CTranslate2 directory says of its tokens and sources: config.json
 * (binary version 6 keeps the tokens there), or what earlier versions kept
 * in variables, with CTranslate2's defaults (its
 * SequenceToSequenceModelConfig); what tessera does not run is refused by
 * name. */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_SETTINGS_H
#define TSR_CORE_MODEL_CTRANSLATE2_SETTINGS_H

#include <stddef.h>

#include "core/model/ctranslate2/file.h"

typedef struct tsr_ct2_settings {
    char unk[256], bos[256], eos[256], start[256];
    int add_source_bos, add_source_eos;
    double layer_norm_epsilon; /* < 0: unsaid */
} tsr_ct2_settings;

/* Reads dir/config.json (required from binary version 6) and, before
 * version 6, the string and root variables into c. Errors name the key or
 * variable. */
int tsr_ct2_settings_read(const char *dir, tsr_ct2_file *f, tsr_ct2_settings *c, char *err,
                          size_t err_len);

#endif
