/* Tensor names: tessera's (docs/model-format.md section 1) to the
 * CTranslate2 variables behind them (section 4), for spec.h's
 * tsr_ct2_tensor_parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/ctranslate2/spec.h"

typedef struct name_map {
    const char *tessera, *ct2, *ct2_second;
} name_map;

/* Within a layer: "transformer.{encoder,decoder}.layers.N." + tessera, and
 * "{encoder,decoder}/layer_N/" + ct2; first what both sides' layers have,
 * then each side's own. */
static const name_map any_layer[] = {
    {"self_attn.in_proj_weight", "self_attention/linear_0/weight", NULL},
    {"self_attn.in_proj_bias", "self_attention/linear_0/bias", NULL},
    {"self_attn.out_proj.weight", "self_attention/linear_1/weight", NULL},
    {"self_attn.out_proj.bias", "self_attention/linear_1/bias", NULL},
    {"linear1.weight", "ffn/linear_0/weight", NULL},
    {"linear1.bias", "ffn/linear_0/bias", NULL},
    {"linear2.weight", "ffn/linear_1/weight", NULL},
    {"linear2.bias", "ffn/linear_1/bias", NULL},
    {"norm1.weight", "self_attention/layer_norm/gamma", NULL},
    {"norm1.bias", "self_attention/layer_norm/beta", NULL},
};

static const name_map encoder_layer[] = {
    {"norm2.weight", "ffn/layer_norm/gamma", NULL},
    {"norm2.bias", "ffn/layer_norm/beta", NULL},
};

static const name_map decoder_layer[] = {
    {"multihead_attn.in_proj_weight", "attention/linear_0/weight", "attention/linear_1/weight"},
    {"multihead_attn.in_proj_bias", "attention/linear_0/bias", "attention/linear_1/bias"},
    {"multihead_attn.out_proj.weight", "attention/linear_2/weight", NULL},
    {"multihead_attn.out_proj.bias", "attention/linear_2/bias", NULL},
    {"norm2.weight", "attention/layer_norm/gamma", NULL},
    {"norm2.bias", "attention/layer_norm/beta", NULL},
    {"norm3.weight", "ffn/layer_norm/gamma", NULL},
    {"norm3.bias", "ffn/layer_norm/beta", NULL},
};

static const name_map whole_model[] = {
    {"tgt_tok_emb.embedding.weight", "decoder/embeddings/weight", NULL},
    {"positional_encoding.pos_embedding", "encoder/position_encodings/encodings", NULL},
    {"positional_encoding.decoder_pos_embedding", "decoder/position_encodings/encodings", NULL},
    {"transformer.encoder.embedding_norm.weight", "encoder/layernorm_embedding/gamma", NULL},
    {"transformer.encoder.embedding_norm.bias", "encoder/layernorm_embedding/beta", NULL},
    {"transformer.decoder.embedding_norm.weight", "decoder/layernorm_embedding/gamma", NULL},
    {"transformer.decoder.embedding_norm.bias", "decoder/layernorm_embedding/beta", NULL},
    {"transformer.encoder.norm.weight", "encoder/layer_norm/gamma", NULL},
    {"transformer.encoder.norm.bias", "encoder/layer_norm/beta", NULL},
    {"transformer.decoder.norm.weight", "decoder/layer_norm/gamma", NULL},
    {"transformer.decoder.norm.bias", "decoder/layer_norm/beta", NULL},
    {"generator.weight", "decoder/projection/weight", NULL},
    {"generator.bias", "decoder/projection/bias", NULL},
};

static size_t from_map(const name_map *map, size_t n, const char *prefix, const char *name,
                       char parts[2][320])
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(map[i].tessera, name) != 0)
            continue;
        snprintf(parts[0], 320, "%s%s", prefix, map[i].ct2);
        if (!map[i].ct2_second)
            return 1;
        snprintf(parts[1], 320, "%s%s", prefix, map[i].ct2_second);
        return 2;
    }
    return 0;
}

size_t tsr_ct2_tensor_parts(const tsr_ct2_model *m, const char *name, char parts[2][320])
{
    if (strcmp(name, "src_tok_emb.embedding.weight") == 0) {
        snprintf(parts[0], 320, "%s/weight", m->encoder_embeddings);
        return 1;
    }
    for (int dec = 0; dec < 2; dec++) {
        const char *side = dec ? "decoder" : "encoder";
        char head[64];
        int len = snprintf(head, sizeof head, "transformer.%s.layers.", side);
        if (strncmp(name, head, (size_t)len) != 0)
            continue;
        char *end;
        unsigned long layer = strtoul(name + len, &end, 10);
        if (end == name + len || *end != '.')
            return 0;
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s/layer_%lu/", side, layer);
        size_t n = from_map(any_layer, sizeof any_layer / sizeof *any_layer, prefix, end + 1,
                            parts);
        if (n == 0)
            n = dec ? from_map(decoder_layer, sizeof decoder_layer / sizeof *decoder_layer, prefix,
                               end + 1, parts)
                    : from_map(encoder_layer, sizeof encoder_layer / sizeof *encoder_layer, prefix,
                               end + 1, parts);
        return n;
    }
    return from_map(whole_model, sizeof whole_model / sizeof *whole_model, "", name, parts);
}
