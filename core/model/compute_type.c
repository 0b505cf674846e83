/* Compute types: their names, and the one a load asked for once the
 * environment has had its say. */
#include "core/model/compute_type.h"

#include <stdlib.h>
#include <string.h>

#include "base/errors.h"

static const char *const names[] = {"f32", "bf16", "int8"};

const char *tessera_compute_type_name(tessera_compute_type type)
{
    if (type >= TESSERA_COMPUTE_F32 && type <= TESSERA_COMPUTE_INT8)
        return names[type];
    return "default";
}

int tessera_compute_type_parse(const char *name, tessera_compute_type *type, char *err,
                               size_t err_len)
{
    if (!name || !type)
        return tsr_fail(err, err_len, "compute type: %s is NULL",
                        !name ? "the name" : "the result pointer");
    for (int t = TESSERA_COMPUTE_F32; t <= TESSERA_COMPUTE_INT8; t++)
        if (strcmp(name, names[t]) == 0) {
            *type = (tessera_compute_type)t;
            return 0;
        }
    return tsr_fail(err, err_len, "unknown compute type '%s' (expected f32, bf16 or int8)", name);
}

void tessera_load_options_init(tessera_load_options *options)
{
    if (!options)
        return;
    memset(options, 0, sizeof *options);
    options->compute_type = TESSERA_COMPUTE_DEFAULT;
}

int tsr_compute_type_resolve(const tessera_load_options *options, tessera_compute_type *type,
                             char *err, size_t err_len)
{
    tessera_compute_type t = options ? options->compute_type : TESSERA_COMPUTE_DEFAULT;
    if (t == TESSERA_COMPUTE_DEFAULT) {
        const char *env = getenv("TESSERA_COMPUTE_TYPE");
        t = TESSERA_COMPUTE_F32;
        if (env && *env && tessera_compute_type_parse(env, &t, err, err_len) != 0)
            return tsr_fail_prefix(TESSERA_ERR_INPUT, err, err_len, "TESSERA_COMPUTE_TYPE");
    }
    if (t < TESSERA_COMPUTE_F32 || t > TESSERA_COMPUTE_INT8)
        return tsr_fail(err, err_len, "compute type %d is not one of tessera_compute_type",
                        (int)t);
    *type = t;
    return 0;
}
