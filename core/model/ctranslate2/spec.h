/* What a CTranslate2 model directory says, in tessera's terms: the spec of
 * its model.bin and its config.json become a tessera config (the keys of
 * docs/model-format.md, validated by the same code as a config.json), its
 * vocabularies become the model's, and every tensor tessera's model reads
 * is named as the CTranslate2 variables it comes from (docs/model-format.md
 * section 4). What tessera does not run is refused by name here, before any
 * weight is read. */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_SPEC_H
#define TSR_CORE_MODEL_CTRANSLATE2_SPEC_H

#include <stddef.h>

#include "core/model/ctranslate2/file.h"
#include "core/tessera.h"

typedef struct tsr_ct2_model {
    tsr_ct2_file file;
    tessera_config cfg;
    tessera_vocabulary *vocab[2]; /* [TESSERA_SOURCE], [TESSERA_TARGET]; shared: the same */
    /* The compute type of the weights as stored: int8 for int8 weights,
     * bf16 for bfloat16 ones, f32 otherwise (float16 and int16 widen
     * exactly to float32): a load's default. */
    tessera_compute_type stored_type;
    char encoder_embeddings[64]; /* "encoder/embeddings" or "encoder/embeddings_0" */
} tsr_ct2_model;

/* Whether dir holds a CTranslate2 model (a model.bin) rather than tessera's
 * own (model.safetensors). */
int tsr_ct2_is_model_dir(const char *dir);

/* Reads dir/model.bin's table, config.json (optional before binary version
 * 6) and the vocabularies into m. Errors name the file and the variable or
 * key; m holds nothing on error. */
int tsr_ct2_model_open(const char *dir, tsr_ct2_model *m, char *err, size_t err_len);

/* The CTranslate2 variables behind tessera tensor `name`: one, or two whose
 * rows are stacked (cross-attention's q and kv projections make tessera's
 * in_proj). Returns the count (0: tessera's model has no such tensor in a
 * CTranslate2 file, such as the first position table row). */
size_t tsr_ct2_tensor_parts(const tsr_ct2_model *m, const char *name, char parts[2][320]);

/* After the load: the first variable of the file that no tensor or
 * attribute used, refused by name (a feature tessera does not run), or 0. */
int tsr_ct2_check_all_used(const tsr_ct2_model *m, char *err, size_t err_len);

/* Releases the file and whatever vocabulary was not handed over (set the
 * pointers to NULL once the model owns them). */
void tsr_ct2_model_close(tsr_ct2_model *m);

#endif
