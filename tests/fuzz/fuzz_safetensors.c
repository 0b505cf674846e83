/* Fuzz target: a safetensors file (header length, JSON header, tensor table,
 * data offsets). Every tensor handed out is read in full, so a table that
 * points outside the bytes read is found by the read, not just by the
 * parser's own checks; the file opened for its table alone (as the model
 * load opens it) must accept and refuse exactly the same files, and read
 * every tensor as the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/safetensors.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "safetensors";

/* Where the bytes read go, so that the reads are not optimised away. */
static volatile unsigned char sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_write_file("model.safetensors", data, size);
    tsr_safetensors st, table;
    char err[512], table_err[512];
    int rc = tsr_safetensors_open(path, &st, err, sizeof err);
    int table_rc = tsr_safetensors_open_table(path, &table, table_err, sizeof table_err);
    if ((rc == 0) != (table_rc == 0))
        __builtin_trap(); /* the two opens disagree on the file */
    if (rc != 0) {
        fuzz_check_message(err, 0);
        fuzz_check_message(table_err, 0);
        return 0;
    }
    if (table.n_tensors != st.n_tensors)
        __builtin_trap();
    for (size_t i = 0; i < st.n_tensors; i++) {
        const tsr_tensor_info *t = &st.tensors[i];
        for (size_t b = 0; b < t->bytes; b++)
            sink ^= ((const unsigned char *)t->data)[b];
        if (tsr_safetensors_find(&st, t->name) != t)
            __builtin_trap(); /* names are unique: find must return this one */
        const tsr_tensor_info *u = tsr_safetensors_find(&table, t->name);
        unsigned char *copy = malloc(t->bytes ? t->bytes : 1);
        if (!u || u->bytes != t->bytes || !copy)
            __builtin_trap();
        if (tsr_safetensors_read(&table, u, 0, u->bytes, copy, err, sizeof err) != 0 ||
            (t->bytes && memcmp(copy, t->data, t->bytes) != 0))
            __builtin_trap(); /* the table's read gives other bytes */
        free(copy);
    }
    tsr_safetensors_close(&table);
    tsr_safetensors_close(&st);
    return 0;
}
