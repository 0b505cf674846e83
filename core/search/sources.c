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
    size_t k = tsr_source_extra(c);
    for (size_t i = 0; k > 0 && i < n; i++)
        if (src[i].len + k > (size_t)c->max_positions)
            return tsr_fail(err, err_len,
                            "%s %zu: %zu tokens and the %zu the model %s, more than "
                            "max_positions (%d)",
                            what, i + 1, src[i].len, k,
                            c->source_language ? "adds (source_suffix, the source language)"
                                               : "appends (source_suffix)",
                            c->max_positions);
    return 0;
}


int tsr_sources_arranged(const tessera_model *m, const tessera_tokens *src, size_t n,
                         int32_t language, const tessera_tokens **view, tessera_tokens **owned,
                         char *err, size_t err_len)
{
    const tessera_config *c = &m->cfg;
    size_t k = tsr_source_extra(c), ids = 0;
    size_t first = c->source_language == TESSERA_SOURCE_LANGUAGE_PREFIX; /* ids before the tokens */
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
        return tsr_fail_oom(err, err_len, "out of memory adding the model's source tokens to %zu "
                                          "sentences", n);
    tessera_tokens *copy = (tessera_tokens *)(void *)block;
    int32_t *next = block + head;
    for (size_t i = 0; i < n; i++) {
        int32_t *at = next;
        if (first)
            *at++ = language;
        if (src[i].len)
            memcpy(at, src[i].ids, src[i].len * sizeof *next);
        at += src[i].len;
        for (size_t j = 0; j < (size_t)c->n_source_suffix; j++)
            *at++ = c->source_suffix[j];
        if (c->source_language == TESSERA_SOURCE_LANGUAGE_SUFFIX)
            *at++ = language;
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

size_t tsr_start_tokens(const tessera_config *c, int32_t language, int32_t start[2])
{
    switch (c->target_language) {
    case TESSERA_TARGET_LANGUAGE_FORCED:
        start[0] = c->bos_id;
        start[1] = language;
        return 2;
    case TESSERA_TARGET_LANGUAGE_START:
        start[0] = language;
        return 1;
    default:
        start[0] = c->bos_id;
        return 1;
    }
}

size_t tsr_target_limit(const tessera_model *m, const tessera_translate_options *o)
{
    size_t limit = (size_t)m->cfg.max_positions - tsr_start_length(&m->cfg);
    return o->max_len >= 0 && (size_t)o->max_len < limit ? (size_t)o->max_len : limit;
}
