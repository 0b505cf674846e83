/* config.json: parsing with jansson and validation (docs/model-format.md section 1). */
#ifndef TSR_CORE_MODEL_CONFIG_H
#define TSR_CORE_MODEL_CONFIG_H

#include <stddef.h>

#include "core/tessera.h"
#include "simd/kernels.h"

/* The kernels' form numbers are the public ones. */
_Static_assert((int)TSR_LAYERNORM_VARIANCE == (int)TESSERA_LAYER_NORM_VARIANCE &&
                   (int)TSR_LAYERNORM_STD == (int)TESSERA_LAYER_NORM_STD &&
                   (int)TSR_LAYERNORM_STD_UNBIASED == (int)TESSERA_LAYER_NORM_STD_UNBIASED,
               "layer norm form numbers");

/* Fills cfg from the JSON text (defaults for absent optional keys; unknown
 * keys ignored) and validates it. Errors name the key, e.g.
 * "key 'n_heads': 5 does not divide d_model (512)". */
int tsr_config_parse(const char *json, size_t len, tessera_config *cfg, char *err, size_t err_len);

/* Reads and parses a file; every error is prefixed "PATH: ". */
int tsr_config_load(const char *path, tessera_config *cfg, char *err, size_t err_len);

/* Consistency of a filled config (also used for built-in bench configs). */
int tsr_config_validate(const tessera_config *cfg, char *err, size_t err_len);

/* The kernels' view of the config's LayerNorm: form and eps. */
static inline tsr_layernorm_params tsr_layernorm_of(const tessera_config *cfg)
{
    tsr_layernorm_params p = {(tsr_layernorm_form)cfg->layer_norm_form, cfg->layer_norm_eps};
    return p;
}

/* The ids the encoder reads besides a sentence's own: source_suffix's, and
 * the source language's token when the model takes one. */
static inline size_t tsr_source_extra(const tessera_config *cfg)
{
    return (size_t)cfg->n_source_suffix + (cfg->source_language != TESSERA_SOURCE_LANGUAGE_NONE);
}

/* The decoder's inputs before the first output token: [bos], or [bos,
 * language] with a target language forced first, or [language] alone
 * (core/search/sources.h). */
static inline size_t tsr_start_length(const tessera_config *cfg)
{
    return cfg->target_language == TESSERA_TARGET_LANGUAGE_FORCED ? 2 : 1;
}

/* The defaults of the optional keys; required keys set to 0. */
void tsr_config_defaults(tessera_config *cfg);

#endif
