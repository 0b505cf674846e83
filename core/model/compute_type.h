/* The compute type a load runs with (core/tessera.h: tessera_compute_type). */
#ifndef TSR_CORE_MODEL_COMPUTE_TYPE_H
#define TSR_CORE_MODEL_COMPUTE_TYPE_H

#include <stddef.h>

#include "core/tessera.h"

/* The explicit type of `options` (NULL: the defaults): TESSERA_COMPUTE_DEFAULT
 * becomes TESSERA_COMPUTE_TYPE's value when set and not empty, else f32. An
 * unknown value (named, with the variable) or a type this build cannot run is
 * an error. */
int tsr_compute_type_resolve(const tessera_load_options *options, tessera_compute_type *type,
                             char *err, size_t err_len);

#endif
