/* Sources as the encoder reads them (core/sources.h). */
#include "core/sources.h"

#include <stdint.h>
#include <string.h>

#include "core/decode.h"
#include "core/errors.h"
#include "core/memory.h"

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
