/* Fuzz target: config.json as the loader reads it (parse, then validate). */
#include <stdint.h>

#include "core/model/config.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "config";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tessera_config cfg;
    char err[512];
    int rc = tsr_config_parse((const char *)data, size, &cfg, err, sizeof err);
    if (rc == 0)
        rc = tsr_config_validate(&cfg, err, sizeof err);
    if (rc != 0)
        fuzz_check_message(err, 0);
    return 0;
}
