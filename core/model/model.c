/* Building the in-memory model from a weight source: every tensor docs/model-format.md
 * names is fetched by name, checked for shape, widened to float32 and, for
 * linear layers, packed for the kernel set in use; with compute type int8, a
 * linear weight the source holds as int8 (an I8 file) is packed from its
 * values and scales as they are, never widened.
 *
 * Three passes: the checking pass validates every tensor and sizes the two
 * blocks (plain tensors, packed panels) before anything is allocated; the
 * layout pass gives every tensor its place in them, queueing one job per
 * tensor; the jobs then fetch (and, linear weights, pack) their tensors on
 * the load's threads, largest first, each writing only its own place, so the
 * bytes do not depend on the thread count. */
#include "core/model/model.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/model/languages.h"
#include "core/model/sinusoid.h"
#include "simd/int8.h"
#include "text/tokenizer.h"
#include "threads/machine.h"
#include "threads/threads.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* One tensor to fetch: a plain one into its place (dst), or a linear
 * weight [n][k] to stage and pack as one layer or, for cross-attention's
 * in_proj, as two (rows split). */
typedef struct load_job {
    char name[256];
    size_t shape[3], ndim;
    int rows_at_least;           /* the positions: a file may hold more rows */
    float *dst;                  /* a plain tensor's place, else NULL */
    tsr_packed_linear *parts[2]; /* laid out: n, k, bias, type, panels set */
    size_t part_row0[2];
    int n_parts;
    float *copy_to; /* a tied table kept as floats too: the fetched values, copied */
    int computed;   /* no fetch: columns [col0, col1) of dst's sinusoid (shape: its size) */
    size_t col0, col1;
    int rc;
    char err[512];
} load_job;

typedef struct builder {
    tessera_model *m;
    const tsr_weight_source *src;
    int checking;         /* the pass before any allocation: fetches check, nothing is kept */
    size_t plain_floats;  /* checking: the plain block's size, counted */
    size_t largest;       /* checking: the values of the largest tensor */
    size_t n_jobs;        /* checking: counted; layout: queued */
    load_job *jobs;       /* layout: [n_jobs of the checking pass] */
    float *tied_table;    /* layout: the float target embedding the tied generator's job fills */
    char *err;
    size_t err_len;
} builder;

/* Values of a large linear weight staged at a time (4 MiB of floats, and
 * as many int8 values): a whole one would be staged at once, the load's
 * peak memory above the model by its largest weight (a 32,000 x 512 output
 * layer: 62.5 MiB). */
#define STAGE_VALUES ((size_t)1 << 20)

/* a + b and a * b, saturating at SIZE_MAX (which no allocation then gets). */
static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return b && a > SIZE_MAX / b ? SIZE_MAX : a * b; }

/* Floats rounded up to whole 64-byte lines, so every tensor stays aligned. */
static size_t whole_line_floats(size_t floats)
{
    return (floats + 15) / 16 * 16;
}

static void *model_alloc(tessera_model *m, size_t floats)
{
    size_t rounded = whole_line_floats(floats);
    if (rounded > m->plain_floats - m->plain_used)
        return NULL;
    float *p = m->plain + m->plain_used;
    m->plain_used += rounded;
    m->weight_bytes += floats * sizeof(float);
    return p;
}

static int out_of_memory(builder *b, const char *what)
{
    return tsr_fail_oom(b->err, b->err_len, "out of memory while loading '%s'", what);
}

/* Queues tensor `name` for fetching (into dst, when plain). */
static load_job *queue_job(builder *b, const char *name, const size_t *shape, size_t ndim,
                           int rows_at_least, float *dst)
{
    load_job *job = &b->jobs[b->n_jobs++];
    snprintf(job->name, sizeof job->name, "%s", name);
    memcpy(job->shape, shape, ndim * sizeof *shape);
    job->ndim = ndim;
    job->rows_at_least = rows_at_least;
    job->dst = dst;
    return job;
}

/* A plain float tensor kept as is (embeddings, positions, norms, biases),
 * `rows_at_least` as for the source's fetch; returns 1 with *out NULL for an
 * absent optional one. */
static int fetch_plain(builder *b, const char *name, const size_t *shape, size_t ndim,
                       int optional, int rows_at_least, float **out)
{
    size_t count = 1;
    for (size_t i = 0; i < ndim; i++)
        count *= shape[i];
    *out = NULL;
    /* Checking: present, of a shape and dtype the load reads? Laying out:
     * present, for an optional one (the checking pass vouched for the rest). */
    int rc = b->checking || optional
                 ? b->src->fetch(b->src->ctx, name, shape, ndim, optional, rows_at_least, NULL,
                                 NULL, b->err, b->err_len)
                 : 0;
    if (b->checking) {
        if (rc == 0) { /* an absent optional tensor takes no room */
            b->plain_floats = sat_add(b->plain_floats, whole_line_floats(count));
            b->largest = count > b->largest ? count : b->largest;
            b->n_jobs++;
        }
        return rc;
    }
    if (rc != 0)
        return rc;
    float *dst = model_alloc(b->m, count);
    if (!dst)
        return out_of_memory(b, name);
    queue_job(b, name, shape, ndim, rows_at_least, dst);
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

/* Lays rows [row0, row0 + n) of the weight fetch_weight queued last out as
 * a linear layer in the arena; its job packs it. */
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
    load_job *job = &b->jobs[b->n_jobs - 1];
    job->parts[job->n_parts] = lin;
    job->part_row0[job->n_parts++] = row0;
    return 0;
}

/* Queues the linear weight `name` [n][k] for fetching and packing (the
 * checking pass checks it and counts it). */
static int fetch_weight(builder *b, const char *name, size_t n, size_t k)
{
    size_t shape[2] = {n, k};
    if (b->checking) {
        b->n_jobs++;
        b->largest = n * k > b->largest ? n * k : b->largest;
        return b->src->fetch(b->src->ctx, name, shape, 2, 0, 0, NULL, NULL, b->err, b->err_len);
    }
    queue_job(b, name, shape, 2, 0, NULL);
    return 0;
}

/* Packs `weight` [n][k] with the bias `bias_name` [n] into a layer; an
 * optional bias may be absent (no bias). */
static int fetch_weight_bias(builder *b, const char *weight, const char *bias_name,
                             int bias_optional, size_t n, size_t k, tsr_packed_linear *lin)
{
    size_t bshape[1] = {n};
    float *bias;
    int rc = fetch_plain(b, bias_name, bshape, 1, bias_optional, 0, &bias);
    if (rc < 0)
        return rc;
    TSR_TRY(fetch_weight(b, weight, n, k));
    TSR_TRY(pack_rows(b, weight, 0, n, k, bias, lin));
    if (!b->checking && b->tied_table && lin == &b->m->generator)
        b->jobs[b->n_jobs - 1].copy_to = b->tied_table;
    return 0;
}

/* Fetches PREFIX.weight [n][k] and PREFIX.bias [n] into a packed layer. */
static int fetch_linear(builder *b, const char *prefix, size_t n, size_t k, tsr_packed_linear *lin)
{
    char weight[272], bias[272]; /* a prefix of up to 255 and its suffix */
    snprintf(weight, sizeof weight, "%s.weight", prefix);
    snprintf(bias, sizeof bias, "%s.bias", prefix);
    return fetch_weight_bias(b, weight, bias, 0, n, k, lin);
}

/* in_proj of nn.MultiheadAttention: [3d][d] weight, [3d] bias. */
static int fetch_in_proj(builder *b, const char *prefix, float **bias)
{
    char name[256];
    size_t d = b->m->d;
    size_t bshape[1] = {3 * d};
    snprintf(name, sizeof name, "%s.in_proj_bias", prefix);
    TSR_TRY(fetch_plain(b, name, bshape, 1, 0, 0, bias));
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
    int rc = fetch_plain(b, name, shape, 1, optional, 0, &norm->gamma);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "%s.bias", prefix);
    if (rc == 1) {
        norm->gamma = norm->beta = NULL;
        return 0;
    }
    return fetch_plain(b, name, shape, 1, 0, 0, &norm->beta);
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

/* The float target embedding beside a tied generator packed as bf16:
 * checked as a plain tensor (so an I8 table is refused by name), but
 * filled by the generator's job from the one fetch of the tensor (a source
 * read in order, the random one, gives a tensor once). */
static int tied_table(builder *b, const size_t *shape)
{
    tessera_model *m = b->m;
    const char *name = "tgt_tok_emb.embedding.weight";
    if (b->checking) {
        float *unused;
        return fetch_plain(b, name, shape, 2, 0, 0, &unused);
    }
    m->tgt_emb = model_alloc(m, shape[0] * shape[1]);
    if (!m->tgt_emb)
        return out_of_memory(b, name);
    b->tied_table = m->tgt_emb;
    return 0;
}

/* Columns of a computed position table one job computes. */
#define SINUSOID_COLUMNS 64

/* A position table of `rows` rows: the file's, or when it holds none the
 * sinusoid of position_encoding, or with `or_none` NULL (the decoder then
 * reads the encoder's). *out is NULL in the checking pass. */
static int position_table(builder *b, const char *name, size_t rows, int or_none, float **out)
{
    tessera_model *m = b->m;
    size_t shape[3] = {rows, 1, m->d};
    int rc = fetch_plain(b, name, shape, 3, 1, 1, out);
    if (rc != 1 || or_none)
        return rc < 0 ? rc : 0;
    size_t pieces = (m->d + SINUSOID_COLUMNS - 1) / SINUSOID_COLUMNS;
    if (b->checking) { /* the computed table's room, and its jobs */
        b->plain_floats = sat_add(b->plain_floats, whole_line_floats(rows * m->d));
        b->n_jobs += pieces;
        return 0;
    }
    *out = model_alloc(m, rows * m->d);
    if (!*out)
        return out_of_memory(b, name);
    /* Computed on the load's threads with the fetches, a piece of columns
     * a job (a sine costs as much as packing a few thousand bytes). */
    size_t size[2] = {rows, m->d};
    for (size_t i = 0; i < pieces; i++) {
        load_job *job = queue_job(b, name, size, 2, 0, *out);
        job->computed = 1;
        job->col0 = i * SINUSOID_COLUMNS;
        job->col1 = job->col0 + SINUSOID_COLUMNS < m->d ? job->col0 + SINUSOID_COLUMNS : m->d;
    }
    return 0;
}

static int fetch_embeddings(builder *b)
{
    tessera_model *m = b->m;
    size_t d = m->d, P = (size_t)m->cfg.max_positions;
    size_t src_shape[2] = {(size_t)m->cfg.src_vocab_size, d};
    size_t tgt_shape[2] = {(size_t)m->cfg.tgt_vocab_size, d};
    /* share_embeddings: the source reads the target's table. A tied output
     * projection is the table itself, held once, its rows read from the
     * generator's panels: in f32 the file's values; in int8 each row
     * dequantized (q x scale), the file's own int8 rows (a CTranslate2 int8
     * file) or those quantized here, as CTranslate2 embeds in int8 (argos
     * shape: 97.7 MiB of float table gone beside 24.4 MiB of int8 panels).
     * bf16 panels hold rounded values, so its float table stays beside
     * them: a bf16 model embeds the file's floats. */
    int tied = m->cfg.n_decoder_layers > 0 && m->cfg.tie_output_projection;
    if (!m->cfg.share_embeddings)
        TSR_TRY(fetch_plain(b, "src_tok_emb.embedding.weight", src_shape, 2, 0, 0, &m->src_emb));
    if (m->cfg.n_decoder_layers > 0 && !m->cfg.tie_output_projection)
        TSR_TRY(fetch_plain(b, "tgt_tok_emb.embedding.weight", tgt_shape, 2, 0, 0, &m->tgt_emb));
    if (tied && m->weight_type == TSR_WEIGHTS_BF16)
        TSR_TRY(tied_table(b, tgt_shape));
    /* Position p reads row p + position_offset (fairseq counts from past
     * its padding index). The decoder has a table of its own when the file
     * holds one. */
    size_t off = (size_t)m->cfg.position_offset;
    float *table;
    TSR_TRY(position_table(b, "positional_encoding.pos_embedding", P + off, 0, &table));
    m->positions = table ? table + off * d : NULL;
    if (m->cfg.n_decoder_layers == 0)
        return 0;
    TSR_TRY(position_table(b, "positional_encoding.decoder_pos_embedding", P + off, 1, &table));
    m->dec_positions = table ? table + off * d : m->positions;
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
    tsr_free_pages(m->arena, m->arena_bytes);
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
    case TESSERA_GELU_TANH: return TSR_ACT_GELU_TANH;
    case TESSERA_GELU_SIGMOID: return TSR_ACT_GELU_SIGMOID;
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
    TSR_TRY(fetch_norm(b, "transformer.encoder.embedding_norm", 1, &m->enc_emb_norm));
    if (n_dec > 0)
        TSR_TRY(fetch_norm(b, "transformer.decoder.embedding_norm", 1, &m->dec_emb_norm));
    for (size_t i = 0; i < n_enc; i++)
        TSR_TRY(fetch_encoder_layer(b, i, b->checking ? &scratch_enc : &m->enc[i]));
    for (size_t i = 0; i < n_dec; i++)
        TSR_TRY(fetch_decoder_layer(b, i, b->checking ? &scratch_dec : &m->dec[i]));
    TSR_TRY(fetch_norm(b, "transformer.encoder.norm", 1, &m->enc_norm));
    if (n_dec == 0)
        return 0; /* an encoder alone: no decoder norm, no generator */
    TSR_TRY(fetch_norm(b, "transformer.decoder.norm", 1, &m->dec_norm));
    /* The output bias is optional: tied families often have none. */
    return fetch_weight_bias(b,
                             m->cfg.tie_output_projection ? "tgt_tok_emb.embedding.weight"
                                                          : "generator.weight",
                             "generator.bias", 1, (size_t)m->cfg.tgt_vocab_size, m->d,
                             &m->generator);
}

/* Where a job fetches a weight before packing it: room for the largest
 * weight as floats (or int8 values), its rows' scales, and the fetch's
 * scratch. One per thread, allocated before the threads start, reused from
 * job to job (its pages are faulted in once, not per weight). */
typedef struct staging {
    float *values;
    float *scales;
    void *scratch;
} staging;

/* Rows [r0, r0 + rows) of the float weight in `w` quantized as the int8
 * packing quantizes (simd/int8.h: a scale per row, round to nearest even),
 * into q and scales. */
static void quantize_rows(const float *w, size_t rows, size_t k, int8_t *q, float *scales)
{
    for (size_t r = 0; r < rows; r++) {
        scales[r] = tsr_i8_row_scale(w + r * k, k);
        tsr_i8_quantize_weights(w + r * k, k, scales[r], q + r * k);
    }
}

/* One block of rows of an int8 layer: the source's int8 rows as they are
 * when `as_i8` (1 when it does not hold them so), else its floats quantized
 * here. The quantized rows go after the floats in the staging. */
static int pack_i8_block(const tessera_model *m, const tsr_weight_source *src,
                         const staging *st, load_job *job, size_t r0, size_t rows, int as_i8)
{
    const tsr_kernels *kern = m->kernels;
    tsr_packed_linear *lin = job->parts[0];
    size_t n = job->shape[0], k = job->shape[1];
    int8_t *q = (int8_t *)(st->values + STAGE_VALUES);
    if (as_i8) {
        int rc = src->fetch_i8(src->ctx, job->name, n, k, r0, rows, q, st->scales, job->err,
                               sizeof job->err);
        if (rc != 0)
            return rc;
    } else {
        TSR_TRY(src->fetch_rows(src->ctx, job->name, n, k, r0, rows, st->values, st->scratch,
                                job->err, sizeof job->err));
        quantize_rows(st->values, rows, k, q, st->scales);
    }
    kern->pack_linear_i8(kern, q, st->scales, n, k, r0, rows, lin->panels);
    return 0;
}

/* Every block of an int8 layer (pack_i8_block); 1 when, as_i8, a block is
 * not held as int8 rows. */
static int pack_i8_blocks(const tessera_model *m, const tsr_weight_source *src,
                          const staging *st, load_job *job, size_t block, int as_i8)
{
    size_t n = job->shape[0];
    for (size_t r0 = 0; r0 < n; r0 += block)
        TSR_TRY(pack_i8_block(m, src, st, job, r0, n - r0 < block ? n - r0 : block, as_i8));
    return 0;
}

/* A linear weight of one part packed a block of rows at a time (simd/
 * kernels.h: f32 and bf16 packings hold the rows in order, the int8 one
 * packs blocks of rows), when the source reads rows; 1 when the job is not
 * one for it. In int8, a source that holds the weight as int8 rows gives
 * them as they are, block by block; should a block not be (a -128), the
 * whole weight is quantized here from its floats, as a whole fetch does. */
static int run_job_in_blocks(const tessera_model *m, const tsr_weight_source *src,
                             const staging *st, load_job *job)
{
    const tsr_kernels *kern = m->kernels;
    size_t n = job->shape[0], k = job->shape[1], align = kern->linear_n_align;
    if (!src->fetch_rows || job->copy_to || job->n_parts != 1 || job->part_row0[0] != 0 ||
        n * k <= STAGE_VALUES || align == 0 || k > STAGE_VALUES / align)
        return 1;
    tsr_packed_linear *lin = job->parts[0];
    size_t block = STAGE_VALUES / k / align * align;
    if (m->weight_type == TSR_WEIGHTS_INT8) {
        int rc = src->fetch_i8 ? pack_i8_blocks(m, src, st, job, block, 1) : 1;
        return rc == 1 ? pack_i8_blocks(m, src, st, job, block, 0) : rc;
    }
    size_t value = m->weight_type == TSR_WEIGHTS_BF16 ? 2 : sizeof(float);
    for (size_t r0 = 0; r0 < n; r0 += block) {
        size_t rows = n - r0 < block ? n - r0 : block;
        int rc = src->fetch_rows(src->ctx, job->name, n, k, r0, rows, st->values, st->scratch,
                                 job->err, sizeof job->err);
        if (rc != 0)
            return rc;
        kern->pack_linear(kern, lin->type, st->values, rows, k,
                          (unsigned char *)lin->panels + r0 * k * value);
    }
    return 0;
}

/* Fetches job's tensor: a plain one into its place; a linear weight into
 * the staging, then packed into its parts. */
static void run_job(const tessera_model *m, const tsr_weight_source *src, const staging *st,
                    load_job *job)
{
    if (job->computed) {
        tsr_sinusoid_columns(job->dst, job->shape[0], job->shape[1], m->cfg.position_encoding,
                             job->col0, job->col1);
        job->rc = 0;
        return;
    }
    if (job->dst) {
        job->rc = src->fetch(src->ctx, job->name, job->shape, job->ndim, 0, job->rows_at_least,
                             job->dst, st->scratch, job->err, sizeof job->err);
        return;
    }
    int in_blocks = run_job_in_blocks(m, src, st, job);
    if (in_blocks != 1) {
        job->rc = in_blocks;
        return;
    }
    const tsr_kernels *kern = m->kernels;
    size_t n = job->shape[0], k = job->shape[1];
    const float *w = st->values;
    int staged_i8 = 0;
    int rc = 1;
    if (job->copy_to) {
        /* A tied table kept as floats too: its floats straight into the
         * table, the panels from the source's int8 rows when it has them
         * (a CTranslate2 int8 file), else from those floats. */
        rc = src->fetch(src->ctx, job->name, job->shape, 2, 0, 0, job->copy_to, st->scratch,
                        job->err, sizeof job->err);
        w = job->copy_to;
        if (rc == 0 && m->weight_type == TSR_WEIGHTS_INT8 && src->fetch_i8) {
            int i8 = src->fetch_i8(src->ctx, job->name, n, k, 0, n, (int8_t *)st->values,
                                   st->scales, job->err, sizeof job->err);
            rc = i8 < 0 ? i8 : 0;
            staged_i8 = i8 == 0;
        }
    } else {
        if (m->weight_type == TSR_WEIGHTS_INT8 && src->fetch_i8) {
            rc = src->fetch_i8(src->ctx, job->name, n, k, 0, n, (int8_t *)st->values,
                               st->scales, job->err, sizeof job->err);
            staged_i8 = rc == 0;
        }
        if (rc == 1)
            rc = src->fetch(src->ctx, job->name, job->shape, 2, 0, 0, st->values, st->scratch,
                            job->err, sizeof job->err);
    }
    job->rc = rc;
    if (rc != 0)
        return;
    for (int i = 0; i < job->n_parts; i++) {
        tsr_packed_linear *lin = job->parts[i];
        size_t row0 = job->part_row0[i];
        if (staged_i8)
            kern->pack_linear_i8(kern, (const int8_t *)st->values + row0 * k, st->scales + row0,
                                 lin->n, lin->k, 0, lin->n, lin->panels);
        else
            kern->pack_linear(kern, lin->type, w + row0 * k, lin->n, lin->k, lin->panels);
    }
}

/* The jobs and who runs them: `threads` threads, largest job first. */
typedef struct job_team {
    const tessera_model *m;
    const tsr_weight_source *src;
    const staging *st; /* one per thread */
    load_job **order;
    long count;
    int threads;
} job_team;

static void run_team(void *arg)
{
    const job_team *team = arg;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team->threads)
    for (long i = 0; i < team->count; i++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        run_job(team->m, team->src, &team->st[t], team->order[i]);
    }
}

/* A job's cost, in values fetched: a computed value (a sine) costs about
 * as much as fetching and packing a cache line of them. */
static size_t job_size(const load_job *job)
{
    if (job->computed)
        return sat_mul(job->shape[0] * (job->col1 - job->col0), 64);
    size_t count = 1;
    for (size_t i = 0; i < job->ndim; i++)
        count *= job->shape[i];
    return count;
}

/* Largest first, then in queue order: a stable order for the threads to
 * take jobs in, and the longest ones never last. */
static int larger_job_first(const void *a, const void *b)
{
    const load_job *x = *(load_job *const *)a, *y = *(load_job *const *)b;
    if (job_size(x) != job_size(y))
        return job_size(x) < job_size(y) ? 1 : -1;
    return x < y ? -1 : x > y;
}

/* Runs the queued jobs on up to `threads` threads, largest first, or, for a
 * source that is not concurrent, on one in queue order (the random source
 * draws its values in that order). The error reported is the first failing
 * job's in queue order, whatever order they ran in. `largest`: the values of
 * the largest tensor. */
static int run_jobs(builder *b, const tsr_weight_source *src, int threads, size_t largest)
{
    tessera_model *m = b->m;
    size_t n = b->n_jobs;
    if (n == 0)
        return 0;
    if (!src->concurrent || threads < 1)
        threads = 1;
    if ((size_t)threads > n)
        threads = (int)n;
    size_t values = largest_weight(&m->cfg), rows = largest_rows(&m->cfg);
    /* A block of an int8 layer: its floats and then its int8 values. */
    if (values < STAGE_VALUES + STAGE_VALUES / 4)
        values = STAGE_VALUES + STAGE_VALUES / 4;
    size_t scratch = tsr_fetch_scratch_bytes(largest > values ? largest : values, rows);
    staging *st = tsr_calloc((size_t)threads, sizeof *st);
    load_job **order = tsr_calloc(n, sizeof *order);
    int rc = st && order ? 0 : out_of_memory(b, "packed weights");
    /* A scratch is touched only by weights held as F16, BF16 or I8:
     * untouched, it costs address space, not memory. */
    for (int t = 0; rc == 0 && t < threads; t++) {
        st[t].values = tsr_alloc_floats(values);
        st[t].scales = tsr_alloc_floats(rows);
        st[t].scratch = tsr_alloc(scratch, 1);
        if (!st[t].values || !st[t].scales || !st[t].scratch)
            rc = out_of_memory(b, "packed weights");
    }
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            order[i] = &b->jobs[i];
        if (src->concurrent)
            qsort(order, n, sizeof *order, larger_job_first);
        job_team team = {m, src, st, order, (long)n, threads};
        tsr_threads_run_apart(run_team, &team);
        for (size_t i = 0; i < n && rc == 0; i++)
            if (b->jobs[i].rc != 0) {
                snprintf(b->err, b->err_len, "%s", b->jobs[i].err);
                rc = b->jobs[i].rc;
            }
    }
    for (int t = 0; st && t < threads; t++) {
        tsr_free(st[t].values);
        tsr_free(st[t].scales);
        tsr_free(st[t].scratch);
    }
    tsr_free(st);
    tsr_free(order);
    return rc;
}

void tsr_shape_describe(const size_t *shape, size_t ndim, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (size_t i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? ", " : "", shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* A NaN or an infinity in the weights makes every translation garbage without
 * a word: it is an error at load, naming the tensor and the first bad value
 * (counted in the tensor's row-major order). */
int tsr_weights_check_finite(const char *name, const float *x, size_t n, size_t first,
                             char *err, size_t err_len)
{
    /* A block at a time, branch-free so that it vectorizes: adding one to
     * the exponent field carries into the sign bit exactly when the field is
     * all ones (an infinity or a NaN). Only a bad block is searched. */
    enum { BLOCK = 4096 };
    for (size_t start = 0; start < n; start += BLOCK) {
        size_t end = n - start < BLOCK ? n : start + BLOCK;
        uint32_t carried = 0;
#pragma omp simd reduction(| : carried)
        for (size_t i = start; i < end; i++) {
            uint32_t bits;
            memcpy(&bits, &x[i], sizeof bits);
            carried |= (bits & 0x7f800000u) + 0x00800000u;
        }
        if (!(carried & 0x80000000u))
            continue;
        for (size_t i = start; i < end; i++)
            if (!isfinite(x[i]))
                return tsr_fail(err, err_len,
                                "tensor '%s': value %zu is %s; weights must be finite", name,
                                first + i,
                                isnan(x[i]) ? "NaN" : x[i] > 0 ? "+inf" : "-inf");
    }
    return 0;
}

int tsr_model_build(const tessera_config *cfg, const tsr_kernels *kernels,
                    tessera_compute_type type, const char *numa, int threads,
                    const tsr_weight_source *src, tessera_model **out, char *err,
                    size_t err_len)
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

    /* Both blocks from whole (huge) pages: faulting a model's worth of
     * memory in 4 KiB pages cost more than filling it (issue 16). */
    m->arena_bytes = arena_size(cfg, kernels, m->weight_type);
    m->arena = tsr_alloc_pages(m->arena_bytes);
    m->weight_bytes += m->arena_bytes;
    m->plain_floats = check.plain_floats;
    m->plain = m->plain_floats < SIZE_MAX / sizeof(float)
                   ? tsr_alloc_pages(m->plain_floats * sizeof(float))
                   : NULL;
    builder b = {.m = m, .src = src, .err = err, .err_len = err_len};
    b.jobs = tsr_calloc(check.n_jobs ? check.n_jobs : 1, sizeof *b.jobs);
    /* The layout pass reads nothing: it fails only for want of memory. */
    rc = b.jobs && m->arena && m->plain ? build_all(&b) : out_of_memory(&b, "packed weights");
    if (rc == 0)
        rc = run_jobs(&b, src, threads, check.largest);
    tsr_free(b.jobs);
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
    if (m->replica_blocks)
        for (int c = 0; c < m->n_replicas; c++)
            tsr_numa_free(&m->replica_blocks[c]);
    tsr_free(m->replica_blocks);
    tsr_free(m->replicas);
    tsr_free(m->replica_node);
    tsr_free_pages(m->arena, m->arena_bytes);
    tsr_free_pages(m->plain, m->plain_floats * sizeof(float));
    tsr_free(m->enc);
    tsr_free(m->dec);
    tsr_model_text_free(m->text);
    tsr_languages_free(m->languages);
    tsr_free(m);
}

const tessera_config *tessera_model_config(const tessera_model *m) { return m ? &m->cfg : NULL; }

size_t tessera_model_weight_bytes(const tessera_model *m) { return m ? m->weight_bytes : 0; }

tessera_compute_type tessera_model_compute_type(const tessera_model *m)
{
    return m ? m->compute_type : TESSERA_COMPUTE_DEFAULT;
}
