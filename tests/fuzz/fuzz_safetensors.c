/* Fuzz target: a safetensors file (header length, JSON header, tensor table,
 * data offsets). Every tensor handed out is read in full, so a table that
 * points outside the mapping is found by the read, not just by the parser's
 * own checks. */
#include <stdint.h>

#include "core/safetensors.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "safetensors";

/* Where the bytes read go, so that the reads are not optimised away. */
static volatile unsigned char sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("model.safetensors", data, size);
    tsr_safetensors st;
    char err[512];
    if (tsr_safetensors_open(path, &st, err, sizeof err) != 0)
        return 0;
    for (size_t i = 0; i < st.n_tensors; i++) {
        const tsr_tensor_info *t = &st.tensors[i];
        for (size_t b = 0; b < t->bytes; b++)
            sink ^= ((const unsigned char *)t->data)[b];
        if (tsr_safetensors_find(&st, t->name) != t)
            __builtin_trap(); /* names are unique: find must return this one */
    }
    tsr_safetensors_close(&st);
    return 0;
}
