#include "base/json_kind.h"

const char *tsr_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown JSON value";
}

int tsr_json_out_of_memory(const json_error_t *e)
{
    return json_error_code(e) == json_error_out_of_memory || e->text[0] == '\0';
}
