/* config.json: parsing with jansson and validation (INTERFACE.md section 1). */
#ifndef TSR_CORE_CONFIG_H
#define TSR_CORE_CONFIG_H

#include <stddef.h>

#include "core/tessera.h"

/* Fills cfg from the JSON text (defaults for absent optional keys; unknown
 * keys ignored) and validates it. Errors name the key, e.g.
 * "key 'n_heads': 5 does not divide d_model (512)". */
int tsr_config_parse(const char *json, size_t len, tessera_config *cfg, char *err, size_t err_len);

/* Reads and parses a file; every error is prefixed "PATH: ". */
int tsr_config_load(const char *path, tessera_config *cfg, char *err, size_t err_len);

/* Consistency of a filled config (also used for built-in bench configs). */
int tsr_config_validate(const tessera_config *cfg, char *err, size_t err_len);

/* The defaults of the optional keys; required keys set to 0. */
void tsr_config_defaults(tessera_config *cfg);

#endif
