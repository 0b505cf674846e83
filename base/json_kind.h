/* What the config.json and safetensors header readers share about jansson:
 * naming a JSON value's type in error messages ("expected an integer, got a
 * string"), and telling a parse error from an allocation failure. */
#ifndef TSR_BASE_JSON_KIND_H
#define TSR_BASE_JSON_KIND_H

#include <jansson.h>

/* "an object", "an array", "a string", "an integer", "a real number",
 * "a boolean" or "null". */
const char *tsr_json_kind(const json_t *v);

/* Whether json_loadb failed for want of memory rather than for the text:
 * jansson says so with json_error_out_of_memory, except when its lexer's
 * first buffer cannot be had, where it returns before writing any message
 * (and a parse error always has one). */
int tsr_json_out_of_memory(const json_error_t *e);

#endif
