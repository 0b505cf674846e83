/* Fuzz target: a whole model directory, loaded and used. The input is a
 * 4-byte little-endian length L, then L bytes of config.json, then the
 * model.safetensors file. A model that loads is used (fuzz_use_model), so
 * that whatever the loader accepts is also safe to run. */
#include <stdint.h>

#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "model";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *config, *weights;
    size_t config_len, weights_len;
    if (!fuzz_split_input(data, size, &config, &config_len, &weights, &weights_len))
        return 0;
    fuzz_write_file("config.json", config, config_len);
    fuzz_write_file("model.safetensors", weights, weights_len);
    fuzz_load_and_use();
    return 0;
}
