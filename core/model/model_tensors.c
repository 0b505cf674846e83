/* The tensors of a model (tessera_model_tensors): docs/model-format.md's
 * "Tensor names" for one config, in the order the writers lay files out. */
#include <stdio.h>

#include "base/errors.h"
#include "core/model/config.h"

typedef struct walk {
    tessera_tensor_visit visit;
    void *arg;
    int rc;
} walk;

/* Visits NAME (PREFIX.LEAF, or PREFIX alone when leaf is NULL) of the given
 * shape, unless an earlier visit stopped the walk. */
static void tensor(walk *w, int optional, int linear, const char *prefix, const char *leaf,
                   size_t ndim, size_t a, size_t b, size_t c)
{
    if (w->rc != 0)
        return;
    char name[256];
    if (leaf)
        snprintf(name, sizeof name, "%s.%s", prefix, leaf);
    else
        snprintf(name, sizeof name, "%s", prefix);
    tessera_tensor_spec t = {.name = name, .ndim = ndim, .shape = {a, b, c},
                             .optional = optional, .linear_weight = linear};
    w->rc = w->visit(&t, w->arg);
}

/* PREFIX.weight [n][k] and PREFIX.bias [n]. */
static void linear(walk *w, const char *prefix, size_t n, size_t k)
{
    tensor(w, 0, 1, prefix, "weight", 2, n, k, 0);
    tensor(w, 0, 0, prefix, "bias", 1, n, 0, 0);
}

static void norm(walk *w, int optional, const char *prefix, size_t d)
{
    tensor(w, optional, 0, prefix, "weight", 1, d, 0, 0);
    tensor(w, optional, 0, prefix, "bias", 1, d, 0, 0);
}

static void attention(walk *w, const char *prefix, size_t d)
{
    char out[192];
    tensor(w, 0, 1, prefix, "in_proj_weight", 2, 3 * d, d, 0);
    tensor(w, 0, 0, prefix, "in_proj_bias", 1, 3 * d, 0, 0);
    snprintf(out, sizeof out, "%s.out_proj", prefix);
    linear(w, out, d, d);
}

static void layer(walk *w, const tessera_config *c, int decoder, int i)
{
    size_t d = (size_t)c->d_model, f = (size_t)c->d_ff;
    char p[96], q[160];
    snprintf(p, sizeof p, "transformer.%s.layers.%d", decoder ? "decoder" : "encoder", i);
    snprintf(q, sizeof q, "%s.self_attn", p);
    attention(w, q, d);
    if (decoder) {
        snprintf(q, sizeof q, "%s.multihead_attn", p);
        attention(w, q, d);
    }
    snprintf(q, sizeof q, "%s.linear1", p);
    linear(w, q, f, d);
    snprintf(q, sizeof q, "%s.linear2", p);
    linear(w, q, d, f);
    for (int n = 1; n <= (decoder ? 3 : 2); n++) {
        snprintf(q, sizeof q, "%s.norm%d", p, n);
        norm(w, 0, q, d);
    }
}

int tessera_model_tensors(const tessera_config *c, tessera_tensor_visit visit, void *arg,
                          char *err, size_t err_len)
{
    if (!c || !visit)
        return tsr_fail(err, err_len, "model tensors: %s is NULL", !c ? "the config" : "visit");
    TSR_TRY(tsr_config_validate(c, err, err_len));
    walk w = {visit, arg, 0};
    size_t d = (size_t)c->d_model, sv = (size_t)c->src_vocab_size, tv = (size_t)c->tgt_vocab_size;
    size_t rows = (size_t)c->max_positions + (size_t)c->position_offset;
    int decoder = c->n_decoder_layers > 0;
    if (!(decoder && c->share_embeddings))
        tensor(&w, 0, 0, "src_tok_emb.embedding.weight", NULL, 2, sv, d, 0);
    if (decoder)
        tensor(&w, 0, 0, "tgt_tok_emb.embedding.weight", NULL, 2, tv, d, 0);
    for (int i = 0; i < c->n_encoder_layers; i++)
        layer(&w, c, 0, i);
    for (int i = 0; i < c->n_decoder_layers; i++)
        layer(&w, c, 1, i);
    if (decoder && !c->tie_output_projection)
        tensor(&w, 0, 1, "generator.weight", NULL, 2, tv, d, 0);
    /* What the model runs without. */
    if (decoder)
        tensor(&w, 1, 0, "generator.bias", NULL, 1, tv, 0, 0);
    tensor(&w, 1, 0, "positional_encoding.pos_embedding", NULL, 3, rows, 1, d);
    if (decoder)
        tensor(&w, 1, 0, "positional_encoding.decoder_pos_embedding", NULL, 3, rows, 1, d);
    norm(&w, 1, "transformer.encoder.embedding_norm", d);
    norm(&w, 1, "transformer.encoder.norm", d);
    if (decoder) {
        norm(&w, 1, "transformer.decoder.embedding_norm", d);
        norm(&w, 1, "transformer.decoder.norm", d);
    }
    return w.rc;
}
