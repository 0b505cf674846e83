/* Naming a JSON value's type in error messages ("expected an integer, got a
 * string"), shared by the config.json and safetensors header readers. */
#ifndef TSR_CORE_JSON_KIND_H
#define TSR_CORE_JSON_KIND_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a real number",
 * "a boolean" or "null". */
const char *tsr_json_kind(const json_t *v);

#endif
