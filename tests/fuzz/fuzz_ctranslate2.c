/* Fuzz target: a CTranslate2 model directory. The input is a 4-byte
 * little-endian length L, then L bytes of config.json, then model.bin; the
 * vocabularies are fixed (6 source tokens, 5 target tokens: 7 and 6 with
 * the <unk> CTranslate2 appends), so that a model.bin of those sizes gets
 * past them. model.bin's table is opened on its own and every variable
 * read whole; then the directory is loaded, and a model that loads is used
 * (fuzz_use_model). Every refusal must be one printable line. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/ctranslate2/file.h"
#include "core/tessera.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "ctranslate2";

static void read_table(const char *path)
{
    tsr_ct2_file f;
    char err[512];
    if (tsr_ct2_open(path, &f, err, sizeof err) != 0) {
        fuzz_check_message(err, 0);
        return;
    }
    for (size_t i = 0; i < f.n_vars; i++) {
        const tsr_ct2_variable *v = &f.vars[i];
        if (tsr_ct2_find(&f, v->name) != v)
            __builtin_trap(); /* names are unique */
        if (v->bytes != v->count * tsr_ct2_item_size(v->dtype) || v->offset > f.size ||
            v->bytes > f.size - v->offset)
            __builtin_trap(); /* a payload the table vouched for lies inside the file */
        unsigned char *copy = malloc(v->bytes ? v->bytes : 1);
        if (!copy || tsr_ct2_read(&f, v, 0, v->bytes, copy, err, sizeof err) != 0)
            __builtin_trap();
        free(copy);
    }
    tsr_ct2_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    uint32_t config_len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                          (uint32_t)data[3] << 24;
    if (config_len > size - 4)
        return 0;
    static const char source[] = "<blank>\n<s>\n</s>\na\nb\nc\n";
    static const char target[] = "<blank>\n<s>\n</s>\nx\ny\n";
    fuzz_write_file("source_vocabulary.txt", source, sizeof source - 1);
    fuzz_write_file("target_vocabulary.txt", target, sizeof target - 1);
    fuzz_write_file("config.json", data + 4, config_len);
    read_table(fuzz_write_file("model.bin", data + 4 + config_len, size - 4 - config_len));
    tessera_model *m;
    char err[512];
    if (tessera_model_load(fuzz_temp_dir(), &m, err, sizeof err) != 0) {
        /* The message starts with the directory's path, the harness's choice. */
        fuzz_check_message(err, strlen(fuzz_temp_dir()));
        return 0;
    }
    fuzz_use_model(m);
    tessera_model_free(m);
    return 0;
}
