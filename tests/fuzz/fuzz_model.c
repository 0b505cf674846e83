/* Fuzz target: a whole model directory, loaded and used. The input is a
 * 4-byte little-endian length L, then L bytes of config.json, then the
 * model.safetensors file. A model that loads translates (greedy and beam 2)
 * and scores one short sentence, so that whatever the loader accepts is
 * also safe to run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tessera.h"
#include "tests/fuzz/fuzz.h"

const char fuzz_target_name[] = "model";

/* One thread: a fuzzer runs many processes side by side. */
static tessera_runtime *runtime(void)
{
    static tessera_runtime *rt;
    if (!rt) {
        tessera_runtime_options o;
        tessera_runtime_options_init(&o);
        o.threads = 1;
        char err[512];
        if (tessera_runtime_create(&o, &rt, err, sizeof err) != 0)
            abort();
    }
    return rt;
}

static void use(const tessera_model *m)
{
    const tessera_config *cfg = tessera_model_config(m);
    tessera_runtime *rt = runtime();
    char err[512];
    int32_t ids[2] = {0, cfg->src_vocab_size > 1 ? 1 : 0}, tgt_ids[1] = {0};
    tessera_tokens src = {ids, 2}, tgt = {tgt_ids, 1};
    if (cfg->n_decoder_layers > 0) {
        for (int beam = 1; beam <= 2; beam++) {
            tessera_translate_options o;
            tessera_translate_options_init(&o);
            o.beam = beam;
            o.max_len = 3;
            o.return_alignments = 1;
            o.n_best = beam;
            tessera_hypothesis *h;
            if (tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err) == 0)
                tessera_hypotheses_free(h, (size_t)beam);
        }
        tessera_score_options so;
        tessera_score_options_init(&so);
        float **scores;
        if (tessera_score_with(rt, m, &src, &tgt, 1, &so, &scores, err, sizeof err) == 0)
            tessera_scores_free(scores, 1);
    }
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    float **vectors;
    if (tessera_encode_with(rt, m, &src, 1, &eo, &vectors, err, sizeof err) == 0)
        tessera_encodings_free(vectors, 1);
}

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
    use(m);
    tessera_model_free(m);
    return 0;
}
