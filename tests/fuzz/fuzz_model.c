/* Fuzz target: a whole model directory, loaded and used. The input is a
 * 4-byte little-endian length L, then L bytes of config.json, then the
 * model.safetensors file. A model that loads is used (fuzz_use_model), so
 * that whatever the loader accepts is also safe to run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tessera.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "model";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t config_len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                          (uint32_t)data[3] << 24;
    if (config_len > size - 4)
        return 0;
    fuzz_write_file("config.json", data + 4, config_len);
    fuzz_write_file("model.safetensors", data + 4 + config_len, size - 4 - config_len);
    tessera_model *m;
    char err[512];
    if (tessera_model_load(fuzz_temp_dir(), &m, err, sizeof err) != 0) {
        /* The message starts with the file's path, the harness's choice. */
        fuzz_check_message(err, strlen(fuzz_temp_dir()));
        return 0;
    }
    fuzz_use_model(m);
    tessera_model_free(m);
    return 0;
}
