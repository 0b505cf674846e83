/* tessera_model_load for a CTranslate2 model directory: model.bin's
 * variables become tessera's tensors as they are read (no conversion step,
 * nothing written), its vocabularies the model's. */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_LOAD_H
#define TSR_CORE_MODEL_CTRANSLATE2_LOAD_H

#include <stddef.h>

#include "core/tessera.h"

/* As tessera_model_load_with, for a directory tsr_ct2_is_model_dir accepts.
 * The default compute type (TESSERA_COMPUTE_DEFAULT, TESSERA_COMPUTE_TYPE
 * unset) is the weights' own, as CTranslate2's: int8 for int8 weights, bf16
 * for bfloat16 ones, f32 for float32, float16 and int16 ones (which widen to
 * float32 exactly). */
int tsr_ct2_model_load(const char *dir, const tessera_load_options *options,
                       tessera_model **model, char *err, size_t err_len);

#endif
