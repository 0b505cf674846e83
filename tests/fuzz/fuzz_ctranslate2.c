/* Fuzz target: a CTranslate2 model directory. The input is a 4-byte
 * little-endian length L, then L bytes of config.json, then model.bin; the
 * vocabularies are fixed (6 source tokens, 5 target tokens: 7 and 6 with
 * the <unk> CTranslate2 appends), so that a model.bin of those sizes gets
 * past them. model.bin's table is opened on its own and every variable
 * read whole; then the directory is loaded, and a model that loads is used
 * (fuzz_use_model). Every refusal must be one printable line. */
#include <stdint.h>
#include <stdlib.h>

#include "core/model/ctranslate2/file.h"
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
    const uint8_t *config, *model_bin;
    size_t config_len, model_bin_len;
    if (!fuzz_split_input(data, size, &config, &config_len, &model_bin, &model_bin_len))
        return 0;
    static const char source[] = "<blank>\n<s>\n</s>\na\nb\nc\n";
    static const char target[] = "<blank>\n<s>\n</s>\nx\ny\n";
    fuzz_write_file("source_vocabulary.txt", source, sizeof source - 1);
    fuzz_write_file("target_vocabulary.txt", target, sizeof target - 1);
    fuzz_write_file("config.json", config, config_len);
    read_table(fuzz_write_file("model.bin", model_bin, model_bin_len));
    fuzz_load_and_use();
    return 0;
}
