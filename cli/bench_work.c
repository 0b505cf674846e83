/* The modeled work of a bench case (cli/bench.h): the arithmetic of the
 * linear layers and attention, and the bytes that must stream at the least
 * (each linear layer's weights once per application, every key and value
 * once per head and query block, the logits once), written from the model's
 * definition, not from tessera's code. tests/test_bench_work.c holds it to
 * what the library counts as it runs (tessera_runtime_stats). */
#include "cli/bench.h"

#include <string.h>

typedef struct dims {
    double d, dff, vt;
    double le, ld;
    double weight_bytes; /* per weight of a linear layer: 4 f32, 2 bf16, 1 int8 */
    int int8;
} dims;

/* A linear layer of n x k weights applied to `rows` rows at once. */
static void linear(const dims *m, double rows, double n, double k, cli_bench_work *w)
{
    double products = 2.0 * rows * n * k;
    if (m->int8)
        w->i8_ops += products;
    else
        w->f32_flops += products;
    w->bytes += n * k * m->weight_bytes;
}

/* Attention of `queries` queries to `keys` keys each (d wide over all heads):
 * a dot product and a weighted add per pair; the keys and values read once. */
static void attention(const dims *m, double pairs, double keys, cli_bench_work *w)
{
    w->f32_flops += 4.0 * m->d * pairs;
    w->bytes += 2.0 * 4.0 * m->d * keys;
}

/* The encoder over n sentences of s tokens, batched together. */
static void encoder(const dims *m, double n, double s, cli_bench_work *w)
{
    double rows = n * s;
    for (int l = 0; l < (int)m->le; l++) {
        linear(m, rows, 3 * m->d, m->d, w); /* Q, K, V */
        attention(m, n * s * s, n * s, w);
        linear(m, rows, m->d, m->d, w);     /* output projection */
        linear(m, rows, m->dff, m->d, w);   /* FFN */
        linear(m, rows, m->d, m->dff, w);
    }
}

/* The decoder's cross-attention keys and values of n sentences of s tokens. */
static void cross_memory(const dims *m, double n, double s, cli_bench_work *w)
{
    for (int l = 0; l < (int)m->ld; l++)
        linear(m, n * s, 2 * m->d, m->d, w);
}

/* One decoder pass over `rows` new rows of sequences whose sources have s
 * tokens, self-attention over `self_pairs` (query, key) pairs reading
 * `self_keys` cached keys; the generator's logits of `head_rows` rows. */
static void decoder(const dims *m, double rows, double s, double self_pairs, double self_keys,
                    double sequences, double head_rows, cli_bench_work *w)
{
    for (int l = 0; l < (int)m->ld; l++) {
        linear(m, rows, 3 * m->d, m->d, w);
        attention(m, self_pairs, self_keys, w);
        linear(m, rows, m->d, m->d, w);
        linear(m, rows, m->d, m->d, w);     /* cross-attention queries */
        attention(m, rows * s, sequences * s, w);
        linear(m, rows, m->d, m->d, w);
        linear(m, rows, m->dff, m->d, w);
        linear(m, rows, m->d, m->dff, w);
    }
    linear(m, head_rows, m->vt, m->d, w);  /* the generator */
    w->bytes += 4.0 * head_rows * m->vt;   /* its logits */
}

static dims dims_of(const tessera_config *c, tessera_compute_type type)
{
    return (dims){
        .d = c->d_model, .dff = c->d_ff, .vt = c->tgt_vocab_size,
        .le = c->n_encoder_layers, .ld = c->n_decoder_layers,
        .weight_bytes = type == TESSERA_COMPUTE_INT8 ? 1.0 : type == TESSERA_COMPUTE_BF16 ? 2.0 : 4.0,
        .int8 = type == TESSERA_COMPUTE_INT8,
    };
}

/* Every layer applied once to no rows: its weights' bytes, nothing else. */
double cli_bench_weight_bytes(const tessera_config *c, tessera_compute_type type)
{
    dims m = dims_of(c, type);
    cli_bench_work w = {0};
    encoder(&m, 0, 0, &w);
    cross_memory(&m, 0, 0, &w);
    decoder(&m, 0, 0, 0, 0, 0, 0, &w);
    return w.bytes;
}

double cli_bench_streamed_weight_bytes(const tessera_config *c, tessera_compute_type type,
                                       cli_bench_kind kind)
{
    dims m = dims_of(c, type);
    cli_bench_work w = {0};
    if (kind == CLI_BENCH_ENCODE)
        encoder(&m, 0, 0, &w);
    else
        decoder(&m, 0, 0, 0, 0, 0, 0, &w);
    return w.bytes;
}

void cli_bench_bound(const cli_bench_work *w, double stream_bytes, double stream_bytes_per_s,
                     const tessera_limits *l, cli_bench_bound_of *b)
{
    memset(b, 0, sizeof *b);
    if (l->f32_flops_per_s <= 0 || (w->i8_ops > 0 && l->i8_ops_per_s <= 0))
        return; /* an operation without its peak: no bound */
    double compute = w->f32_flops / l->f32_flops_per_s;
    if (w->i8_ops > 0)
        compute += w->i8_ops / l->i8_ops_per_s;
    /* The weights are most of what streams: the bandwidth measured at their
     * size is what no run can beat, even when the keys and values push part
     * of them out. (The rate of a level chosen by its reported size failed
     * twice: all the model's weights against half the cache counted int8
     * base's 26 MB a step as streaming from memory, 2-thread greedy at 114 %
     * of that; a VM reporting its host's 480 MiB L3 had argos int8's 45 MiB
     * a step at the rate of a 120 MiB buffer, greedy at 112 %.) */
    double bytes = stream_bytes_per_s > 0 ? w->bytes / stream_bytes_per_s : 0.0;
    int cached = l->cache_bytes > 0 && stream_bytes <= (double)l->cache_bytes;
    b->seconds = compute > bytes ? compute : bytes;
    b->limit = compute > bytes ? "compute" : cached ? "cache" : "memory";
}

void cli_bench_work_of(const tessera_config *c, tessera_compute_type type,
                       const cli_bench_shape *s, cli_bench_work *w)
{
    dims m = dims_of(c, type);
    double n = s->sentences, src = s->src_len, tgt = s->tgt_len;
    memset(w, 0, sizeof *w);
    encoder(&m, n, src, w);
    if (s->kind == CLI_BENCH_ENCODE)
        return;
    cross_memory(&m, n, src, w);
    if (s->kind == CLI_BENCH_SCORE) {
        /* Teacher forcing: BOS + the target, every row at once, causal. */
        double rows = tgt + 1;
        decoder(&m, n * rows, src, n * rows * (rows + 1) / 2, n * rows, n, n * rows, w);
        return;
    }
    /* Decoding, one token per hypothesis per step; step t (from 0) feeds
     * the token at position t, which attends to t + 1 keys. Beam search
     * starts from one hypothesis per sentence and has `beam` from the second
     * step on. */
    for (int t = 0; t < (int)tgt; t++) {
        double hyps = n * (t == 0 ? 1 : s->beam);
        decoder(&m, hyps, src, hyps * (t + 1), hyps * (t + 1), hyps, hyps, w);
    }
}
