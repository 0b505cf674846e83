/* Sources as the encoder reads them (core/search/sources.h). */
#include "core/search/sources.h"

#include <stdint.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"

int tsr_check_sources(const tessera_model *m, const tessera_tokens *src, size_t n, int allow_empty,
                      const char *what, char *err, size_t err_len)
{
    const tessera_config *c = &m->cfg;
    TSR_TRY(tsr_check_tokens(src, n, c->src_vocab_size, c->max_positions, what, 1, allow_empty,
                             err, err_len));
    size_t k = (size_t)c->n_source_suffix;
    for (size_t i = 0; k > 0 && i < n; i++)
        if (src[i].len + k > (size_t)c->max_positions)
            return tsr_fail(err, err_len,
                            "%s %zu: %zu tokens and the %zu the model appends (source_suffix), "
                            "more than max_positions (%d)",
                            what, i + 1, src[i].len, k, c->max_positions);
    return 0;
}

int tsr_sources_with_suffix(const tessera_model *m, const tessera_tokens *src, size_t n,
                            const tessera_tokens **view, tessera_tokens **owned, char *err,
                            size_t err_len)
{
    size_t k = (size_t)m->cfg.n_source_suffix, ids = 0;
    *view = src;
    *owned = NULL;
    if (k == 0 || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        ids += src[i].len + k; /* checked: each at most max_positions */
    /* The sentences' headers, then their ids, in one block. */
    size_t head = (n * sizeof(tessera_tokens) + sizeof(int32_t) - 1) / sizeof(int32_t);
    int32_t *block = tsr_malloc((head + ids) * sizeof(int32_t));
    if (!block)
        return tsr_fail_oom(err, err_len, "out of memory appending the source suffix to %zu "
                                          "sentences", n);
    tessera_tokens *copy = (tessera_tokens *)(void *)block;
    int32_t *next = block + head;
    for (size_t i = 0; i < n; i++) {
        if (src[i].len)
            memcpy(next, src[i].ids, src[i].len * sizeof *next);
        for (size_t j = 0; j < k; j++)
            next[src[i].len + j] = m->cfg.source_suffix[j];
        copy[i].ids = next;
        copy[i].len = src[i].len + k;
        next += copy[i].len;
    }
    *view = copy;
    *owned = copy;
    return 0;
}

int tsr_check_tokens(const tessera_tokens *seqs, size_t n, int vocab, int max_positions,
                     const char *what, size_t first, int allow_empty, char *err, size_t err_len)
{
    for (size_t i = 0; i < n; i++) {
        if (seqs[i].len > 0 && !seqs[i].ids)
            return tsr_fail(err, err_len, "%s %zu: ids is NULL with %zu tokens", what, first + i,
                            seqs[i].len);
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

int tsr_check_has_decoder(const tessera_model *m, const char *what, char *err, size_t err_len)
{
    if (m->cfg.n_decoder_layers > 0)
        return 0;
    return tsr_fail(err, err_len,
                    "%s: the model is an encoder alone (n_decoder_layers 0): only encode runs it",
                    what);
}

size_t tsr_target_limit(const tessera_model *m, const tessera_translate_options *o)
{
    size_t limit = (size_t)m->cfg.max_positions - 1;
    return o->max_len >= 0 && (size_t)o->max_len < limit ? (size_t)o->max_len : limit;
}
