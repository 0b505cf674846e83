/* Decoder layer, as nn.TransformerDecoderLayer:
 *   post-norm: x = LN1(x + SA(x)); x = LN2(x + CA(x, mem)); x = LN3(x + FFN(x))
 *   pre-norm:  x = x + SA(LN1(x)); x = x + CA(LN2(x), mem); x = x + FFN(LN3(x))
 * SA is causal self-attention over the slot's cache, CA attends to the
 * sentence's cross memory. */
#include "core/network/decoder.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/network/alignment.h"
#include "core/network/embedding.h"
#include "core/network/ops.h"
#include "core/runtime/plan.h"
#include "core/runtime/work.h"

int tsr_cross_memory_build(const tsr_exec *ex, const float *memory, const tsr_packing *src,
                           int steps, tsr_cross_memory *cm, char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    size_t L = (size_t)m->cfg.n_decoder_layers, d = m->d;
    const size_t width = steps ? 3 : 2;
    cm->src = src;
    cm->width = width;
    cm->kv = tsr_calloc(L, sizeof *cm->kv);
    if (!cm->kv)
        return tsr_fail_oom(err, err_len, "out of memory for the cross-attention memory");
    for (size_t l = 0; l < L; l++) {
        cm->kv[l] = tsr_alloc_floats(src->rows * width * d);
        if (!cm->kv[l]) {
            tsr_cross_memory_free(m, cm);
            return tsr_fail_oom(err, err_len, "out of memory for the cross-attention memory");
        }
    }
    /* Each layer's K|V rows are made in `rows`, then laid out head by head. */
    float *rows = tsr_alloc_floats(src->rows * 2 * d);
    if (!rows) {
        tsr_cross_memory_free(m, cm);
        return tsr_fail_oom(err, err_len, "out of memory for the cross-attention memory");
    }
    const size_t H = (size_t)m->n_heads, dh = m->d_head, n_parts = src->n * 2 * H;
#pragma omp parallel num_threads(ex->threads)
    for (size_t l = 0; l < L; l++) {
        tsr_op_linear(ex, &m->dec[l].cross.kv, memory, d, src->rows, TSR_ACT_NONE, NULL, 0,
                      rows, 2 * d);
        /* One part: K or V of one head of one sentence (and K's transpose). */
        double began = tsr_work_begin(ex);
#pragma omp for schedule(dynamic, 4) nowait
        for (long p = 0; p < (long)n_parts; p++) {
            size_t s = (size_t)p / (2 * H), c = ((size_t)p % (2 * H)) * dh, n = src->len[s];
            const float *from = rows + src->row0[s] * 2 * d + c;
            float *to = cm->kv[l] + src->row0[s] * width * d + n * c;
            for (size_t j = 0; j < n; j++)
                memcpy(to + j * dh, from + j * 2 * d, dh * sizeof(float));
            if (width == 3 && c < d) {
                float *kt = cm->kv[l] + src->row0[s] * width * d + 2 * n * d + n * c;
                for (size_t j = 0; j < n; j++)
                    for (size_t t = 0; t < dh; t++)
                        kt[t * n + j] = from[j * 2 * d + t];
            }
        }
        tsr_work_end(ex, began);
    }
    tsr_free(rows);
    return 0;
}

size_t tsr_cross_memory_plan(const tessera_model *m, size_t src_rows, int steps)
{
    size_t L = (size_t)m->cfg.n_decoder_layers;
    size_t layer = tsr_plan_floats(tsr_plan_mul(src_rows, (steps ? 3 : 2) * m->d));
    return tsr_plan_add(tsr_plan_block(L * sizeof(float *)), tsr_plan_mul(L, layer));
}

size_t tsr_cross_memory_build_plan(const tessera_model *m, size_t src_rows)
{
    return tsr_plan_floats(tsr_plan_mul(src_rows, 2 * m->d));
}

void tsr_cross_memory_free(const tessera_model *m, tsr_cross_memory *cm)
{
    if (cm->kv)
        for (int l = 0; l < m->cfg.n_decoder_layers; l++)
            tsr_free(cm->kv[l]);
    tsr_free(cm->kv);
    cm->kv = NULL;
}

int tsr_decoder_init(tsr_decoder *dec, const tsr_exec *ex, const tsr_cross_memory *cross,
                     size_t n_slots, char *err, size_t err_len)
{
    const tessera_model *m = ex->m;
    memset(dec, 0, sizeof *dec);
    dec->ex = ex;
    dec->cross = cross;
    if (tsr_kv_cache_init(&dec->cache, n_slots, (size_t)m->cfg.n_decoder_layers, m->d) != 0)
        return tsr_fail_oom(err, err_len, "out of memory for %zu decoder caches", n_slots);
    return 0;
}

size_t tsr_decoder_plan(const tsr_exec *ex, size_t slots, size_t seqs, size_t rows,
                        size_t positions, size_t longest_src, int alignments)
{
    const tessera_model *m = ex->m;
    size_t d = m->d;
    size_t total = tsr_kv_cache_plan(slots, (size_t)m->cfg.n_decoder_layers, d, positions);
    /* reserve(): x, h, attn, qkv and the FFN's scratch grow with the rows;
     * jobs and row0 by realloc, whose old block may be held with the new. */
    size_t row_floats = tsr_plan_mul(rows, d);
    total = tsr_plan_add(total, tsr_plan_mul(3, tsr_plan_buffer(row_floats)));
    total = tsr_plan_add(total, tsr_plan_buffer(tsr_plan_mul(row_floats, 3)));
    total = tsr_plan_add(total, tsr_plan_buffer(tsr_op_ffn_scratch_floats(ex)));
    size_t per_seq = sizeof(tsr_attention_job) + sizeof(size_t);
    total = tsr_plan_add(total, tsr_plan_mul(4, tsr_plan_block(tsr_plan_mul(seqs, per_seq))));
    if (alignments) {
        total = tsr_plan_add(total,
                             tsr_plan_mul(2, tsr_plan_block(tsr_plan_mul(rows, sizeof(int32_t)))));
        total = tsr_plan_add(total, tsr_plan_buffer(tsr_plan_mul(rows, 2 * longest_src)));
    }
    return total;
}

void tsr_decoder_free(tsr_decoder *dec)
{
    tsr_kv_cache_free(&dec->cache);
    tsr_buffer_free(&dec->x);
    tsr_buffer_free(&dec->h);
    tsr_buffer_free(&dec->qkv);
    tsr_buffer_free(&dec->attn);
    tsr_buffer_free(&dec->scratch);
    tsr_free(dec->jobs);
    tsr_free(dec->row0);
    tsr_free(dec->alignment);
    tsr_buffer_free(&dec->alignment_work);
    dec->jobs = NULL;
    dec->row0 = NULL;
    dec->alignment = NULL;
}

void tsr_decoder_want_alignments(tsr_decoder *dec)
{
    const tsr_packing *src = dec->cross->src;
    dec->longest_source = 1;
    for (size_t s = 0; s < src->n; s++)
        if (src->len[s] > dec->longest_source)
            dec->longest_source = src->len[s];
    dec->want_alignments = 1;
}

static int reserve(tsr_decoder *dec, const tsr_decode_seq *seqs, size_t n, size_t rows)
{
    size_t d = dec->ex->m->d;
    if (tsr_buffer_reserve(&dec->x, rows * d) || tsr_buffer_reserve(&dec->h, rows * d) ||
        tsr_buffer_reserve(&dec->qkv, rows * 3 * d) || tsr_buffer_reserve(&dec->attn, rows * d) ||
        tsr_buffer_reserve(&dec->scratch, tsr_op_ffn_scratch_floats(dec->ex)))
        return TESSERA_ERR_NOMEM;
    if (n > dec->jobs_cap) {
        tsr_attention_job *jobs = tsr_realloc(dec->jobs, n * sizeof *jobs);
        if (jobs)
            dec->jobs = jobs;
        size_t *row0 = tsr_realloc(dec->row0, n * sizeof *row0);
        if (row0)
            dec->row0 = row0;
        if (!jobs || !row0)
            return TESSERA_ERR_NOMEM;
        dec->jobs_cap = n;
    }
    if (dec->want_alignments && rows > dec->alignment_cap) {
        int32_t *a = tsr_realloc(dec->alignment, rows * sizeof *a);
        if (!a)
            return TESSERA_ERR_NOMEM;
        dec->alignment = a;
        dec->alignment_cap = rows;
    }
    if (dec->want_alignments &&
        tsr_buffer_reserve(&dec->alignment_work, rows * 2 * dec->longest_source) != 0)
        return TESSERA_ERR_NOMEM;
    for (size_t i = 0, row = 0; i < n; row += seqs[i++].n_new)
        dec->row0[i] = row;
    for (size_t i = 0; i < n; i++) {
        size_t slot = seqs[i].slot;
        TSR_TRY(tsr_kv_cache_reserve(&dec->cache, slot, dec->cache.len[slot] + seqs[i].n_new));
    }
    return 0;
}

/* Causal self-attention of the new rows; their K and V join the cache first. */
static void self_attention(tsr_decoder *dec, size_t layer, const tsr_decode_seq *seqs, size_t n,
                           size_t rows, const float *in, float *residual_out)
{
    const tessera_model *m = dec->ex->m;
    const tsr_self_attention *w = &m->dec[layer].self_attn;
    size_t d = m->d;
    float *qkv = dec->qkv.p;
    tsr_op_linear(dec->ex, &w->qkv, in, d, rows, TSR_ACT_NONE, NULL, 0, qkv, 3 * d);
    double began = tsr_work_begin(dec->ex);
#pragma omp for schedule(static) nowait
    for (long li = 0; li < (long)n; li++) {
        size_t i = (size_t)li, row = dec->row0[i];
        size_t slot = seqs[i].slot, past = dec->cache.len[slot];
        float *cache = tsr_kv_cache_layer(&dec->cache, slot, layer);
        for (size_t t = 0; t < seqs[i].n_new; t++)
            memcpy(cache + (past + t) * 2 * d, qkv + (row + t) * 3 * d + d, 2 * d * sizeof(float));
        dec->jobs[i] = (tsr_attention_job){
            .q = qkv + row * 3 * d, .ldq = 3 * d, .k = cache, .ldk = 2 * d, .v = cache + d,
            .ldv = 2 * d, .out = dec->attn.p + row * d, .ldo = d,
            .n_q = seqs[i].n_new, .n_k = past + seqs[i].n_new, .causal = 1, .q_pos = past,
        };
    }
    tsr_work_end(dec->ex, began);
    tsr_op_attention(dec->ex, dec->jobs, n);
    tsr_op_linear(dec->ex, &w->out, dec->attn.p, d, rows, TSR_ACT_NONE, residual_out, d, residual_out, d);
}

/* The decoder layer whose cross-attention gives alignments (0-based). */
static size_t alignment_layer(const tessera_model *m)
{
    return (size_t)(m->cfg.alignment_layer ? m->cfg.alignment_layer : m->cfg.n_decoder_layers) - 1;
}

/* Each row's alignment from its cross-attention queries q (alignment_layer's),
 * over the model's alignment heads. */
static void align_rows(tsr_decoder *dec, const tsr_decode_seq *seqs, size_t n, const float *q)
{
    const tessera_model *m = dec->ex->m;
    size_t d = m->d, layer = alignment_layer(m), work = 2 * dec->longest_source;
    size_t heads = m->cfg.alignment_heads ? (size_t)m->cfg.alignment_heads : m->n_heads;
    float scale = 1.0f / sqrtf((float)m->d_head);
    double began = tsr_work_begin(dec->ex);
#pragma omp for schedule(static) nowait
    for (long li = 0; li < (long)n; li++) {
        size_t i = (size_t)li, s = seqs[i].sentence;
        size_t n_k = dec->cross->src->len[s];
        const float *k =
            dec->cross->kv[layer] + dec->cross->src->row0[s] * dec->cross->width * d;
        for (size_t row = dec->row0[i]; row < dec->row0[i] + seqs[i].n_new; row++)
            dec->alignment[row] = tsr_alignment_of_row(dec->ex->ks, q + row * d, k, m->d_head,
                                                       n_k * m->d_head, n_k, heads,
                                                       m->d_head, scale,
                                                       dec->alignment_work.p + row * work);
    }
    tsr_work_end(dec->ex, began);
}

static void cross_attention(tsr_decoder *dec, size_t layer, const tsr_decode_seq *seqs, size_t n,
                            size_t rows, const float *in, float *residual_out)
{
    const tessera_model *m = dec->ex->m;
    const tsr_cross_attention *w = &m->dec[layer].cross;
    const tsr_packing *src = dec->cross->src;
    size_t d = m->d;
    float *q = dec->qkv.p;
    tsr_op_linear(dec->ex, &w->q, in, d, rows, TSR_ACT_NONE, NULL, 0, q, d);
    double began = tsr_work_begin(dec->ex);
#pragma omp for schedule(static) nowait
    for (long li = 0; li < (long)n; li++) {
        size_t i = (size_t)li, row = dec->row0[i], s = seqs[i].sentence;
        size_t n_k = src->len[s], dh = m->d_head;
        const size_t width = dec->cross->width;
        const float *kv = dec->cross->kv[layer] + src->row0[s] * width * d;
        dec->jobs[i] = (tsr_attention_job){
            .q = q + row * d, .ldq = d, .k = kv, .ldk = dh, .k_head = n_k * dh,
            .kt = width == 3 ? kv + 2 * n_k * d : NULL, .ldkt = n_k, .kt_head = n_k * dh,
            .v = kv + n_k * d, .ldv = dh, .v_head = n_k * dh, .out = dec->attn.p + row * d,
            .ldo = d, .n_q = seqs[i].n_new, .n_k = n_k,
            .causal = 0, .q_pos = 0,
        };
    }
    tsr_work_end(dec->ex, began);
    tsr_op_attention(dec->ex, dec->jobs, n);
    if (dec->want_alignments && layer == alignment_layer(m))
        align_rows(dec, seqs, n, q);
    tsr_op_linear(dec->ex, &w->out, dec->attn.p, d, rows, TSR_ACT_NONE, residual_out, d, residual_out, d);
}

static void decoder_layer(tsr_decoder *dec, size_t layer, const tsr_decode_seq *seqs, size_t n,
                          size_t rows)
{
    const tessera_model *m = dec->ex->m;
    const tsr_decoder_layer *l = &m->dec[layer];
    float *x = dec->x.p, *h = dec->h.p, *scratch = dec->scratch.p;
    if (m->cfg.norm_first) {
        tsr_op_layernorm(dec->ex, &l->norm1, x, NULL, rows, h);
        self_attention(dec, layer, seqs, n, rows, h, x);
        tsr_op_layernorm(dec->ex, &l->norm2, x, NULL, rows, h);
        cross_attention(dec, layer, seqs, n, rows, h, x);
        tsr_op_layernorm(dec->ex, &l->norm3, x, NULL, rows, h);
        tsr_op_ffn(dec->ex, &l->ff1, &l->ff2, h, rows, x, x, scratch);
    } else {
        self_attention(dec, layer, seqs, n, rows, x, x);
        tsr_op_layernorm(dec->ex, &l->norm1, x, NULL, rows, x);
        cross_attention(dec, layer, seqs, n, rows, x, x);
        tsr_op_layernorm(dec->ex, &l->norm2, x, NULL, rows, x);
        tsr_op_ffn(dec->ex, &l->ff1, &l->ff2, x, rows, x, h, scratch);
        tsr_op_layernorm(dec->ex, &l->norm3, h, NULL, rows, x);
    }
}

int tsr_decoder_forward(tsr_decoder *dec, const int32_t *tokens, const tsr_decode_seq *seqs,
                        size_t n, const float **hidden, char *err, size_t err_len)
{
    const tessera_model *m = dec->ex->m;
    size_t d = m->d, rows = 0;
    for (size_t i = 0; i < n; i++) {
        size_t end = dec->cache.len[seqs[i].slot] + seqs[i].n_new;
        if (end > (size_t)m->cfg.max_positions)
            return tsr_fail(err, err_len, "target position %zu is beyond max_positions (%d)",
                            end - 1, m->cfg.max_positions);
        rows += seqs[i].n_new;
    }
    if (reserve(dec, seqs, n, rows) != 0)
        return tsr_fail_oom(err, err_len, "out of memory decoding %zu rows", rows);

    /* One parallel region for the whole stack (see ops.h). */
#pragma omp parallel num_threads(dec->ex->threads)
    {
        double began = tsr_work_begin(dec->ex);
#pragma omp for schedule(static) nowait
        for (long li = 0; li < (long)n; li++) {
            size_t i = (size_t)li, row = dec->row0[i], pos = dec->cache.len[seqs[i].slot];
            tsr_embed_tokens(m, dec->ex->ks, TSR_TARGET, tokens + row, seqs[i].n_new, pos,
                             dec->x.p + row * d, d);
        }
        tsr_work_end(dec->ex, began);
        if (m->dec_emb_norm.gamma)
            tsr_op_layernorm(dec->ex, &m->dec_emb_norm, dec->x.p, NULL, rows, dec->x.p);
        for (int l = 0; l < m->cfg.n_decoder_layers; l++)
            decoder_layer(dec, (size_t)l, seqs, n, rows);
        if (m->dec_norm.gamma)
            tsr_op_layernorm(dec->ex, &m->dec_norm, dec->x.p, NULL, rows, dec->x.p);
    }
    for (size_t i = 0; i < n; i++)
        dec->cache.len[seqs[i].slot] += seqs[i].n_new;
    *hidden = dec->x.p;
    return 0;
}

const float *tsr_decoder_drop_leading_rows(tsr_decoder *dec, const tsr_decode_seq *seqs, size_t n,
                                           size_t drop)
{
    size_t d = dec->ex->m->d, to = 0;
    /* Row by row in order: a row moves only down, over rows already moved. */
    for (size_t i = 0; i < n; i++)
        for (size_t t = drop; t < seqs[i].n_new; t++, to++) {
            size_t from = dec->row0[i] + t;
            if (from == to)
                continue;
            memmove(dec->x.p + to * d, dec->x.p + from * d, d * sizeof(float));
            if (dec->want_alignments)
                dec->alignment[to] = dec->alignment[from];
        }
    return dec->x.p;
}
