/* tessera_translate: validation, batching, and the shared pieces of the
 * decoding strategies. */
#include <stdlib.h>
#include <string.h>

#include "core/decode.h"
#include "core/encoder.h"
#include "core/errors.h"
#include "core/memory.h"

void tessera_translate_options_init(tessera_translate_options *o)
{
    memset(o, 0, sizeof *o);
    o->beam = 1;
    o->max_len = 256;
    o->length_penalty = 0.0f;
    o->n_best = 1;
    o->batch = 1;
}

int tsr_check_tokens(const tessera_tokens *seqs, size_t n, int vocab, int max_positions,
                     const char *what, size_t first, int allow_empty, char *err, size_t err_len)
{
    for (size_t i = 0; i < n; i++) {
        if (seqs[i].len == 0 && !allow_empty)
            return tsr_fail(err, err_len, "%s %zu: empty sentence", what, first + i);
        if (seqs[i].len > (size_t)max_positions)
            return tsr_fail(err, err_len, "%s %zu: %zu tokens, more than max_positions (%d)",
                            what, first + i, seqs[i].len, max_positions);
        for (size_t t = 0; t < seqs[i].len; t++)
            if (seqs[i].ids[t] < 0 || seqs[i].ids[t] >= vocab)
                return tsr_fail(err, err_len, "%s %zu: token id %d out of range [0, %d)", what,
                                first + i, (int)seqs[i].ids[t], vocab);
    }
    return 0;
}

size_t tsr_target_limit(const tessera_model *m, const tessera_translate_options *o)
{
    size_t limit = (size_t)m->cfg.max_positions - 1;
    return o->max_len >= 0 && (size_t)o->max_len < limit ? (size_t)o->max_len : limit;
}

int tsr_source_batch_encode(const tessera_model *m, const tessera_tokens *src, size_t n,
                            tsr_source_batch *b, char *err, size_t err_len)
{
    memset(b, 0, sizeof *b);
    b->packing.n = n;
    b->packing.row0 = calloc(n, sizeof(size_t));
    b->packing.len = calloc(n, sizeof(size_t));
    if (!b->packing.row0 || !b->packing.len)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        b->packing.row0[i] = b->packing.rows;
        b->packing.len[i] = src[i].len;
        b->packing.rows += src[i].len;
    }
    b->memory = tsr_alloc_floats(b->packing.rows * m->d);
    if (!b->memory)
        goto oom;
    if (tsr_encode(m, src, &b->packing, b->memory, err, err_len) != 0 ||
        tsr_cross_memory_build(m, b->memory, &b->packing, &b->cross, err, err_len) != 0) {
        tsr_source_batch_free(m, b);
        return -1;
    }
    return 0;
oom:
    tsr_source_batch_free(m, b);
    return tsr_fail(err, err_len, "out of memory encoding %zu sentences", n);
}

void tsr_source_batch_free(const tessera_model *m, tsr_source_batch *b)
{
    tsr_cross_memory_free(m, &b->cross);
    tsr_free(b->memory);
    free(b->packing.row0);
    free(b->packing.len);
    memset(b, 0, sizeof *b);
}

static int check_options(const tessera_translate_options *o, char *err, size_t err_len)
{
    if (o->beam < 1)
        return tsr_fail(err, err_len, "beam size %d: must be at least 1", o->beam);
    if (o->n_best < 1 || o->n_best > o->beam)
        return tsr_fail(err, err_len, "n-best %d: must be between 1 and the beam size (%d)",
                        o->n_best, o->beam);
    if (o->batch < 1)
        return tsr_fail(err, err_len, "batch size %d: must be at least 1", o->batch);
    if (o->max_len < 0)
        return tsr_fail(err, err_len, "max-len %d: must not be negative", o->max_len);
    if (!(o->length_penalty >= 0.0f && o->length_penalty <= 100.0f))
        return tsr_fail(err, err_len, "length penalty %g: must be between 0 and 100",
                        (double)o->length_penalty);
    return 0;
}

void tessera_hypotheses_free(tessera_hypothesis *h, size_t count)
{
    if (!h)
        return;
    for (size_t i = 0; i < count; i++)
        free(h[i].ids);
    free(h);
}

int tessera_translate(const tessera_model *m, const tessera_tokens *src, size_t n,
                      const tessera_translate_options *o, tessera_hypothesis **out, char *err,
                      size_t err_len)
{
    *out = NULL;
    if (check_options(o, err, err_len) != 0 ||
        tsr_check_tokens(src, n, m->cfg.src_vocab_size, m->cfg.max_positions, "sentence", 1, 0,
                         err, err_len) != 0)
        return -1;
    size_t per = (size_t)o->n_best;
    tessera_hypothesis *h = calloc(n * per + 1, sizeof *h);
    if (!h)
        return tsr_fail(err, err_len, "out of memory for %zu hypotheses", n * per);
    for (size_t first = 0; first < n; first += (size_t)o->batch) {
        size_t count = n - first < (size_t)o->batch ? n - first : (size_t)o->batch;
        int rc = o->beam == 1
                     ? tsr_greedy(m, src + first, count, o, h + first * per, err, err_len)
                     : tsr_beam_search(m, src + first, count, o, h + first * per, err, err_len);
        if (rc != 0) {
            tessera_hypotheses_free(h, n * per);
            return -1;
        }
    }
    *out = h;
    return 0;
}
