/* The built-in configurations of tessera bench (cli/bench.h): the shapes
 * measured without a model's files. base and big are the Transformer of
 * Vaswani et al. with a small vocabulary, where the layers dominate; the
 * others are the shapes people deploy, where a large vocabulary's output
 * layer and softmax weigh as much as the layers (NLLB-600M: 262 M
 * multiply-adds a token for the projection, about 150 M for all 12
 * decoder layers). */
#include <string.h>

#include "cli/bench.h"

const cli_bench_config cli_bench_configs[] = {
    {"base", "d_model 512, 8 heads, d_ff 2048, 6+6 layers, vocab 8000", 512, 8, 2048, 6, 8000, 0},
    {"big", "d_model 1024, 16 heads, d_ff 4096, 6+6 layers, vocab 8000", 1024, 16, 4096, 6, 8000,
     0},
    {"argos", "base's layers, one tied vocab of 50000 (Argos Translate)", 512, 8, 2048, 6, 50000,
     1},
    {"opus-mt", "base's layers, one tied vocab of 58101 (OPUS-MT)", 512, 8, 2048, 6, 58101, 1},
    {"nllb600m", "NLLB-600M: d_model 1024, 16 heads, d_ff 4096, 12+12, tied 256206", 1024, 16,
     4096, 12, 256206, 1},
};

const size_t cli_bench_config_count = sizeof cli_bench_configs / sizeof cli_bench_configs[0];

const cli_bench_config *cli_bench_config_find(const char *name)
{
    for (size_t i = 0; i < cli_bench_config_count; i++)
        if (strcmp(cli_bench_configs[i].name, name) == 0)
            return &cli_bench_configs[i];
    return NULL;
}

void cli_bench_config_of(const cli_bench_config *b, tessera_config *c)
{
    tessera_config_defaults(c);
    c->d_model = b->d_model;
    c->n_heads = b->n_heads;
    c->d_ff = b->d_ff;
    c->n_encoder_layers = c->n_decoder_layers = b->layers;
    c->src_vocab_size = c->tgt_vocab_size = b->vocab;
    c->share_embeddings = c->tie_output_projection = b->tied;
}
