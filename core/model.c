/* Building the in-memory model from a weight source: every tensor INTERFACE.md
 * names is fetched by name, checked for shape, widened to float32 and, for
 * linear layers, packed for the kernel set in use; with compute type int8, a
 * linear weight the source holds as int8 (an I8 file) is packed from its
 * values and scales as they are, never widened. */
#include "core/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "core/memory.h"
#include "core/runtime.h"

typedef struct builder {
    tessera_model *m;
    const tsr_weight_source *src;
    float *staging; /* room for the largest weight before packing */
    float *scales;  /* room for its rows' scales, when staged as int8 */
    int staged_i8;  /* the staged weight is int8 values + scales, not floats */
    int checking;   /* the pass before any allocation: fetches check, nothing is kept */
    char *err;
    size_t err_len;
} builder;

static void *model_alloc(tessera_model *m, size_t floats)
{
    if (m->n_blocks == m->cap_blocks) {
        size_t cap = m->cap_blocks ? 2 * m->cap_blocks : 64;
        void **blocks = tsr_realloc(m->blocks, cap * sizeof *blocks);
        if (!blocks)
            return NULL;
        m->blocks = blocks;
        m->cap_blocks = cap;
    }
    float *p = tsr_alloc_floats(floats);
    if (p) {
        m->blocks[m->n_blocks++] = p;
        m->weight_bytes += floats * sizeof(float);
    }
    return p;
}

static int out_of_memory(builder *b, const char *what)
{
    return tsr_fail_oom(b->err, b->err_len, "out of memory while loading '%s'", what);
}

/* A plain float tensor kept as is (embeddings, norms, biases). */
static int fetch_plain(builder *b, const char *name, const size_t *shape, size_t ndim,
                       int optional, float **out)
{
    if (b->checking) {
        *out = NULL;
        return b->src->fetch(b->src->ctx, name, shape, ndim, optional, 0, NULL, b->err, b->err_len);
    }
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++)
        count *= shape[i];
    float *dst = model_alloc(b->m, count);
    if (!dst)
        return out_of_memory(b, name);
    int rc = b->src->fetch(b->src->ctx, name, shape, ndim, optional, 0, dst, b->err, b->err_len);
    if (rc != 0) {
        *out = NULL;
        return rc;
    }
    *out = dst;
    return 0;
}

/* Bytes rounded up to whole 64-byte lines. */
static size_t whole_lines(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* Panels are carved from the arena, each 64-byte aligned. */
static void *arena_take(tessera_model *m, size_t bytes)
{
    size_t rounded = whole_lines(bytes);
    if (rounded > m->arena_bytes - m->arena_used)
        return NULL;
    void *p = m->arena + m->arena_used;
    m->arena_used += rounded;
    return p;
}

/* Packs rows [row0, row0 + n) of a staged [*][k] weight into a linear layer. */
static int pack_rows(builder *b, const char *name, size_t row0, size_t n, size_t k,
                     const float *bias, tsr_packed_linear *lin)
{
    if (b->checking)
        return 0;
    const tsr_kernels *kern = b->m->kernels;
    lin->n = n;
    lin->k = k;
    lin->bias = bias;
    lin->type = b->m->weight_type;
    lin->panels = arena_take(b->m, kern->pack_bytes(kern, lin->type, n, k));
    if (!lin->panels)
        return out_of_memory(b, name);
    if (b->staged_i8)
        kern->pack_linear_i8(kern, (const int8_t *)b->staging + row0 * k, b->scales + row0, n, k,
                             lin->panels);
    else
        kern->pack_linear(kern, lin->type, b->staging + row0 * k, n, k, lin->panels);
    return 0;
}

/* Stages the linear weight `name` [n][k] for pack_rows: as the source's int8
 * values and scales when the model computes in int8 and the source holds it
 * so (never widened to float32), as floats otherwise. */
static int fetch_weight(builder *b, const char *name, size_t n, size_t k)
{
    size_t shape[2] = {n, k};
    b->staged_i8 = 0;
    if (b->checking)
        return b->src->fetch(b->src->ctx, name, shape, 2, 0, 0, NULL, b->err, b->err_len);
    if (b->m->weight_type == TSR_WEIGHTS_INT8 && b->src->fetch_i8) {
        int rc = b->src->fetch_i8(b->src->ctx, name, n, k, (int8_t *)b->staging, b->scales,
                                  b->err, b->err_len);
        if (rc <= 0) {
            b->staged_i8 = rc == 0;
            return rc;
        }
    }
    return b->src->fetch(b->src->ctx, name, shape, 2, 0, 0, b->staging, b->err, b->err_len);
}

/* Fetches PREFIX.weight [n][k] and PREFIX.bias [n] into a packed layer. */
static int fetch_linear(builder *b, const char *prefix, size_t n, size_t k, tsr_packed_linear *lin)
{
    char name[256];
    size_t bshape[1] = {n};
    float *bias;
    snprintf(name, sizeof name, "%s.bias", prefix);
    TSR_TRY(fetch_plain(b, name, bshape, 1, 0, &bias));
    snprintf(name, sizeof name, "%s.weight", prefix);
    TSR_TRY(fetch_weight(b, name, n, k));
    return pack_rows(b, name, 0, n, k, bias, lin);
}

/* in_proj of nn.MultiheadAttention: [3d][d] weight, [3d] bias. */
static int fetch_in_proj(builder *b, const char *prefix, float **bias)
{
    char name[256];
    size_t d = b->m->d;
    size_t bshape[1] = {3 * d};
    snprintf(name, sizeof name, "%s.in_proj_bias", prefix);
    TSR_TRY(fetch_plain(b, name, bshape, 1, 0, bias));
    snprintf(name, sizeof name, "%s.in_proj_weight", prefix);
    return fetch_weight(b, name, 3 * d, d);
}

static int fetch_self_attention(builder *b, const char *prefix, tsr_self_attention *a)
{
    char name[256];
    float *bias;
    size_t d = b->m->d;
    TSR_TRY(fetch_in_proj(b, prefix, &bias));
    snprintf(name, sizeof name, "%s.in_proj_weight", prefix);
    TSR_TRY(pack_rows(b, name, 0, 3 * d, d, bias, &a->qkv));
    snprintf(name, sizeof name, "%s.out_proj", prefix);
    return fetch_linear(b, name, d, d, &a->out);
}

static int fetch_cross_attention(builder *b, const char *prefix, tsr_cross_attention *a)
{
    char name[256];
    float *bias;
    size_t d = b->m->d;
    TSR_TRY(fetch_in_proj(b, prefix, &bias));
    snprintf(name, sizeof name, "%s.in_proj_weight", prefix);
    TSR_TRY(pack_rows(b, name, 0, d, d, bias, &a->q));
    TSR_TRY(pack_rows(b, name, d, 2 * d, d, bias ? bias + d : NULL, &a->kv));
    snprintf(name, sizeof name, "%s.out_proj", prefix);
    return fetch_linear(b, name, d, d, &a->out);
}

/* A LayerNorm; optional ones (the final norms) may be absent, but then both
 * weight and bias must be. */
static int fetch_norm(builder *b, const char *prefix, int optional, tsr_norm *norm)
{
    char name[256];
    size_t shape[1] = {b->m->d};
    snprintf(name, sizeof name, "%s.weight", prefix);
    int rc = fetch_plain(b, name, shape, 1, optional, &norm->gamma);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "%s.bias", prefix);
    if (rc == 1) {
        norm->gamma = norm->beta = NULL;
        return 0;
    }
    return fetch_plain(b, name, shape, 1, 0, &norm->beta);
}

static int fetch_ffn(builder *b, const char *prefix, tsr_packed_linear *ff1, tsr_packed_linear *ff2)
{
    char name[256];
    size_t d = b->m->d, d_ff = (size_t)b->m->cfg.d_ff;
    snprintf(name, sizeof name, "%s.linear1", prefix);
    TSR_TRY(fetch_linear(b, name, d_ff, d, ff1));
    snprintf(name, sizeof name, "%s.linear2", prefix);
    return fetch_linear(b, name, d, d_ff, ff2);
}

static int fetch_encoder_layer(builder *b, size_t i, tsr_encoder_layer *l)
{
    char p[128], name[192];
    snprintf(p, sizeof p, "transformer.encoder.layers.%zu", i);
    snprintf(name, sizeof name, "%s.self_attn", p);
    TSR_TRY(fetch_self_attention(b, name, &l->attn));
    TSR_TRY(fetch_ffn(b, p, &l->ff1, &l->ff2));
    snprintf(name, sizeof name, "%s.norm1", p);
    TSR_TRY(fetch_norm(b, name, 0, &l->norm1));
    snprintf(name, sizeof name, "%s.norm2", p);
    return fetch_norm(b, name, 0, &l->norm2);
}

static int fetch_decoder_layer(builder *b, size_t i, tsr_decoder_layer *l)
{
    char p[128], name[192];
    snprintf(p, sizeof p, "transformer.decoder.layers.%zu", i);
    snprintf(name, sizeof name, "%s.self_attn", p);
    TSR_TRY(fetch_self_attention(b, name, &l->self_attn));
    snprintf(name, sizeof name, "%s.multihead_attn", p);
    TSR_TRY(fetch_cross_attention(b, name, &l->cross));
    TSR_TRY(fetch_ffn(b, p, &l->ff1, &l->ff2));
    snprintf(name, sizeof name, "%s.norm1", p);
    TSR_TRY(fetch_norm(b, name, 0, &l->norm1));
    snprintf(name, sizeof name, "%s.norm2", p);
    TSR_TRY(fetch_norm(b, name, 0, &l->norm2));
    snprintf(name, sizeof name, "%s.norm3", p);
    return fetch_norm(b, name, 0, &l->norm3);
}

/* PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same angle), computed in
 * double and rounded once. */
static void sinusoid(float *pe, size_t max_positions, size_t d)
{
    for (size_t p = 0; p < max_positions; p++)
        for (size_t j = 0; j < d; j++) {
            size_t two_i = j & ~(size_t)1;
            double angle = (double)p / pow(10000.0, (double)two_i / (double)d);
            pe[p * d + j] = (float)((j & 1) ? cos(angle) : sin(angle));
        }
}

static int fetch_embeddings(builder *b)
{
    tessera_model *m = b->m;
    size_t d = m->d, P = (size_t)m->cfg.max_positions;
    size_t src_shape[2] = {(size_t)m->cfg.src_vocab_size, d};
    size_t tgt_shape[2] = {(size_t)m->cfg.tgt_vocab_size, d};
    size_t pos_shape[3] = {P, 1, d};
    TSR_TRY(fetch_plain(b, "src_tok_emb.embedding.weight", src_shape, 2, 0, &m->src_emb));
    if (m->cfg.n_decoder_layers > 0)
        TSR_TRY(fetch_plain(b, "tgt_tok_emb.embedding.weight", tgt_shape, 2, 0, &m->tgt_emb));
    if (b->checking) {
        int rc = b->src->fetch(b->src->ctx, "positional_encoding.pos_embedding", pos_shape, 3, 1, 1,
                               NULL, b->err, b->err_len);
        return rc < 0 ? rc : 0;
    }
    m->positions = model_alloc(m, P * d);
    if (!m->positions)
        return out_of_memory(b, "positional_encoding.pos_embedding");
    int rc = b->src->fetch(b->src->ctx, "positional_encoding.pos_embedding", pos_shape, 3, 1, 1,
                           m->positions, b->err, b->err_len);
    if (rc < 0)
        return rc;
    if (rc == 1)
        sinusoid(m->positions, P, d);
    return 0;
}

static size_t largest_weight(const tessera_config *c)
{
    size_t d = (size_t)c->d_model, big = 3 * d * d;
    if ((size_t)c->d_ff * d > big)
        big = (size_t)c->d_ff * d;
    if ((size_t)c->tgt_vocab_size * d > big)
        big = (size_t)c->tgt_vocab_size * d;
    return big;
}

/* Rows of the tallest linear weight (its scales when staged as int8). */
static size_t largest_rows(const tessera_config *c)
{
    size_t d = (size_t)c->d_model, rows = 3 * d;
    if ((size_t)c->d_ff > rows)
        rows = (size_t)c->d_ff;
    if ((size_t)c->tgt_vocab_size > rows)
        rows = (size_t)c->tgt_vocab_size;
    return rows;
}

/* Bytes arena_take hands out for one layer's panels. */
static size_t panel_bytes(const tsr_kernels *k, tsr_weight_type t, size_t n, size_t in)
{
    return whole_lines(k->pack_bytes(k, t, n, in));
}

/* a + b and a * b, saturating at SIZE_MAX (which no allocation then gets). */
static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* Bytes of every packed panel, as pack_rows will carve them; SIZE_MAX when
 * that does not fit a size_t (the allocation then fails, cleanly). */
static size_t arena_size(const tessera_config *c, const tsr_kernels *k, tsr_weight_type t)
{
    size_t d = (size_t)c->d_model, f = (size_t)c->d_ff, v = (size_t)c->tgt_vocab_size;
    size_t ffn = sat_add(panel_bytes(k, t, f, d), panel_bytes(k, t, d, f));
    size_t self = sat_add(panel_bytes(k, t, 3 * d, d), panel_bytes(k, t, d, d));
    size_t cross = sat_add(sat_add(panel_bytes(k, t, d, d), panel_bytes(k, t, 2 * d, d)),
                           panel_bytes(k, t, d, d));
    size_t enc = sat_mul((size_t)c->n_encoder_layers, sat_add(self, ffn));
    size_t dec = sat_mul((size_t)c->n_decoder_layers, sat_add(sat_add(self, cross), ffn));
    return sat_add(sat_add(enc, dec), c->n_decoder_layers > 0 ? panel_bytes(k, t, v, d) : 0);
}

static void relocate_linear(tsr_packed_linear *w, const unsigned char *from, unsigned char *to)
{
    w->panels = to + ((unsigned char *)w->panels - from);
}

/* Points every packed layer at `to` instead of `from` (same layout). */
static void relocate(tessera_model *m, const unsigned char *from, unsigned char *to)
{
    for (int i = 0; i < m->cfg.n_encoder_layers; i++) {
        tsr_encoder_layer *l = &m->enc[i];
        relocate_linear(&l->attn.qkv, from, to);
        relocate_linear(&l->attn.out, from, to);
        relocate_linear(&l->ff1, from, to);
        relocate_linear(&l->ff2, from, to);
    }
    for (int i = 0; i < m->cfg.n_decoder_layers; i++) {
        tsr_decoder_layer *l = &m->dec[i];
        relocate_linear(&l->self_attn.qkv, from, to);
        relocate_linear(&l->self_attn.out, from, to);
        relocate_linear(&l->cross.q, from, to);
        relocate_linear(&l->cross.kv, from, to);
        relocate_linear(&l->cross.out, from, to);
        relocate_linear(&l->ff1, from, to);
        relocate_linear(&l->ff2, from, to);
    }
    if (m->cfg.n_decoder_layers > 0)
        relocate_linear(&m->generator, from, to);
}

int tsr_model_copy_for_node(const tessera_model *m, int node)
{
    for (int c = 0; node >= 0 && c < m->n_replicas; c++)
        if (m->replica_node[c] == node)
            return c;
    return 0;
}

/* The weight copies of the NUMA policy over the whole machine (every allowed
 * core may run a runtime's thread): none when there is no topology. */
static int copies_plan(uint64_t bytes, const char *numa, const tsr_topology **topo,
                       tsr_placement *plan, char *err, size_t err_len)
{
    tsr_placement_request req = {.threads = 0, .workers = 1, .weight_bytes = bytes};
    if (numa)
        TSR_TRY(tsr_numa_policy_parse(numa, &req.numa, err, err_len));
    else
        TSR_TRY(tsr_default_numa_policy(&req.numa, err, err_len));
    TSR_TRY(tsr_machine_topology(topo, err, err_len));
    return *topo ? tsr_placement_plan(*topo, &req, plan, err, err_len)
                 : tsr_placement_plan_unbound(&req, "no topology", plan, err, err_len);
}

/* Gives the packed weights the memory the placement plan asks for: as they
 * are for one plain copy, else one copy per plan copy (on its node, or
 * interleaved), the arena then released. */
static int place_weights(tessera_model *m, const char *numa, char *err, size_t err_len)
{
    const tsr_topology *topo;
    size_t bytes = m->arena_used;
    tsr_placement plan;
    TSR_TRY(copies_plan(bytes, numa, &topo, &plan, err, err_len));
    int rc = 0, n = plan.n_copies;
    m->replicas = tsr_calloc((size_t)n, sizeof *m->replicas);
    m->replica_node = tsr_calloc((size_t)n, sizeof *m->replica_node);
    if (!m->replicas || !m->replica_node) {
        rc = tsr_fail_oom(err, err_len, "out of memory placing the weights");
        goto done;
    }
    for (int c = 0; c < n; c++)
        m->replica_node[c] = plan.copies[c].kind == TSR_COPY_ON_NODE ? plan.copies[c].node : -1;
    if (n == 1 && plan.copies[0].kind == TSR_COPY_PLAIN) {
        m->replicas[0] = m->arena;
        m->n_replicas = 1;
        goto done;
    }
    m->replica_blocks = tsr_calloc((size_t)n, sizeof *m->replica_blocks);
    if (!m->replica_blocks) {
        rc = tsr_fail_oom(err, err_len, "out of memory placing the weights");
        goto done;
    }
    for (int c = 0; c < n && rc == 0; c++) {
        rc = tsr_numa_alloc_copy(topo, &plan, c, bytes, &m->replica_blocks[c], err, err_len);
        if (rc != 0)
            break;
        m->replicas[c] = m->replica_blocks[c].data;
        memcpy(m->replicas[c], m->arena, bytes);
        m->n_replicas = c + 1;
    }
    if (rc != 0)
        goto done;
    relocate(m, m->arena, m->replicas[0]);
    tsr_free(m->arena);
    m->arena = NULL;
    m->weight_bytes += (size_t)(n - 1) * bytes;
done:
    tsr_placement_free(&plan);
    return rc;
}

static tsr_activation activation_of(tessera_activation a)
{
    switch (a) {
    case TESSERA_GELU: return TSR_ACT_GELU;
    case TESSERA_SILU: return TSR_ACT_SILU;
    default: return TSR_ACT_RELU;
    }
}

static int build_all(builder *b)
{
    tessera_model *m = b->m;
    size_t n_enc = (size_t)m->cfg.n_encoder_layers, n_dec = (size_t)m->cfg.n_decoder_layers;
    /* The checking pass fills one scratch layer over and over. */
    tsr_encoder_layer scratch_enc;
    tsr_decoder_layer scratch_dec;
    if (!b->checking) {
        m->enc = tsr_calloc(n_enc, sizeof *m->enc);
        m->dec = tsr_calloc(n_dec, sizeof *m->dec);
        if (!m->enc || (n_dec > 0 && !m->dec))
            return out_of_memory(b, "layers");
    }
    TSR_TRY(fetch_embeddings(b));
    for (size_t i = 0; i < n_enc; i++)
        TSR_TRY(fetch_encoder_layer(b, i, b->checking ? &scratch_enc : &m->enc[i]));
    for (size_t i = 0; i < n_dec; i++)
        TSR_TRY(fetch_decoder_layer(b, i, b->checking ? &scratch_dec : &m->dec[i]));
    TSR_TRY(fetch_norm(b, "transformer.encoder.norm", 1, &m->enc_norm));
    if (n_dec == 0)
        return 0; /* an encoder alone: no decoder norm, no generator */
    TSR_TRY(fetch_norm(b, "transformer.decoder.norm", 1, &m->dec_norm));
    return fetch_linear(b, "generator", (size_t)m->cfg.tgt_vocab_size, m->d, &m->generator);
}

int tsr_model_build(const tessera_config *cfg, const tsr_kernels *kernels,
                    tessera_compute_type type, const char *numa, const tsr_weight_source *src,
                    tessera_model **out, char *err, size_t err_len)
{
    *out = NULL;
    tessera_model *m = tsr_calloc(1, sizeof *m);
    if (!m)
        return tsr_fail_oom(err, err_len, "out of memory for the model");
    m->cfg = *cfg;
    m->kernels = kernels;
    m->compute_type = type;
    m->weight_type = type == TESSERA_COMPUTE_BF16   ? TSR_WEIGHTS_BF16
                     : type == TESSERA_COMPUTE_INT8 ? TSR_WEIGHTS_INT8
                                                    : TSR_WEIGHTS_F32;
    m->act = activation_of(cfg->activation);
    m->d = (size_t)cfg->d_model;
    m->n_heads = (size_t)cfg->n_heads;
    m->d_head = m->d / m->n_heads;
    m->emb_scale = cfg->scale_embedding ? sqrtf((float)cfg->d_model) : 1.0f;

    /* Every tensor the config needs, present with its shape and a dtype the
     * load reads, before anything is sized from the config: a config that
     * declares more layers than the file holds names the first missing
     * tensor instead of running out of memory trying. */
    builder check = {.m = m, .src = src, .err = err, .err_len = err_len, .checking = 1};
    int rc = build_all(&check);
    if (rc != 0) {
        tessera_model_free(m);
        return rc;
    }

    m->arena_bytes = arena_size(cfg, kernels, m->weight_type);
    m->arena = tsr_alloc(m->arena_bytes, 1);
    m->weight_bytes += m->arena_bytes;
    builder b = {.m = m, .src = src, .err = err, .err_len = err_len};
    b.staging = tsr_alloc_floats(largest_weight(cfg));
    b.scales = tsr_alloc_floats(largest_rows(cfg));
    rc = b.staging && b.scales && m->arena ? build_all(&b) : out_of_memory(&b, "packed weights");
    tsr_free(b.staging);
    tsr_free(b.scales);
    if (rc == 0)
        rc = place_weights(m, numa, err, err_len);
    if (rc != 0) {
        tessera_model_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

void tessera_model_free(tessera_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_blocks; i++)
        tsr_free(m->blocks[i]);
    if (m->replica_blocks)
        for (int c = 0; c < m->n_replicas; c++)
            tsr_numa_free(&m->replica_blocks[c]);
    tsr_free(m->replica_blocks);
    tsr_free(m->replicas);
    tsr_free(m->replica_node);
    tsr_free(m->arena);
    tsr_free(m->blocks);
    tsr_free(m->enc);
    tsr_free(m->dec);
    tsr_free(m);
}

const tessera_config *tessera_model_config(const tessera_model *m) { return &m->cfg; }

size_t tessera_model_weight_bytes(const tessera_model *m) { return m->weight_bytes; }

tessera_compute_type tessera_model_compute_type(const tessera_model *m) { return m->compute_type; }
