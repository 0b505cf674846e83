/* The shortlist's table and a sentence's candidates (core/shortlist/shortlist.h). */
#include <stdlib.h>
#include <string.h>

#include "base/memory.h"
#include "core/shortlist/table.h"

tsr_shortlist *tsr_shortlist_new(const tessera_vocabulary *src, const tessera_vocabulary *tgt)
{
    tsr_shortlist *s = tsr_calloc(1, sizeof(tsr_shortlist));
    if (s) {
        s->source_size = tessera_vocabulary_size(src);
        s->target_size = tessera_vocabulary_size(tgt);
    }
    return s;
}

size_t tsr_shortlist_source_size(const tsr_shortlist *s) { return s->source_size; }
size_t tsr_shortlist_target_size(const tsr_shortlist *s) { return s->target_size; }

void tsr_shortlist_free(tsr_shortlist *s)
{
    if (!s)
        return;
    tsr_free(s->fixed);
    tsr_free(s->rules);
    tsr_free(s->keys);
    tsr_free(s->targets);
    tsr_free(s->slots);
    tsr_free(s);
}

/* Room for `more` elements past n (tsr_grow). */
static int grow(void *p, size_t *cap, size_t n, size_t more, size_t size)
{
    return tsr_grow(p, cap, n + more, size);
}

int tsr_shortlist_next_line(char **at, char *end, char **line, size_t *len)
{
    if (*at >= end)
        return 0;
    char *b = *at, *nl = memchr(b, '\n', (size_t)(end - b)), *e = nl ? nl : end;
    *at = nl ? nl + 1 : end;
    if (memchr(b, '\0', (size_t)(e - b)))
        return -1;
    if (e > b && e[-1] == '\r')
        e--;
    *e = '\0';
    *line = b;
    *len = (size_t)(e - b);
    return 1;
}

int tsr_shortlist_add_fixed(tsr_shortlist *s, int32_t id)
{
    if (grow(&s->fixed, &s->cap_fixed, s->n_fixed, 1, sizeof *s->fixed) != 0)
        return TESSERA_ERR_NOMEM;
    s->fixed[s->n_fixed++] = id;
    return 0;
}

/* FNV-1a over the key's ids. */
static size_t hash_key(const int32_t *key, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint32_t)key[i];
        h *= 1099511628211ull;
    }
    h ^= n;
    return (size_t)(h ^ (h >> 29));
}

/* The slot holding key's rule, or the empty slot where it would go. */
static size_t *slot_of(const tsr_shortlist *s, const int32_t *key, size_t n)
{
    size_t mask = s->n_slots - 1;
    for (size_t i = hash_key(key, n) & mask;; i = (i + 1) & mask) {
        size_t r = s->slots[i];
        if (r == 0)
            return &s->slots[i];
        const tsr_shortlist_rule *rule = &s->rules[r - 1];
        if (rule->n == n && memcmp(s->keys + rule->key_at, key, n * sizeof *key) == 0)
            return &s->slots[i];
    }
}

/* Room in the table for `rules` rules, at most half of its slots used. */
static int rehash(tsr_shortlist *s, size_t rules)
{
    if (s->n_slots && 2 * rules <= s->n_slots)
        return 0;
    size_t n_slots = s->n_slots ? 2 * s->n_slots : 64;
    while (2 * rules > n_slots)
        n_slots *= 2;
    size_t *slots = tsr_calloc(n_slots, sizeof *slots);
    if (!slots)
        return TESSERA_ERR_NOMEM;
    tsr_free(s->slots);
    s->slots = slots;
    s->n_slots = n_slots;
    for (size_t r = 0; r < s->n_rules; r++)
        *slot_of(s, s->keys + s->rules[r].key_at, s->rules[r].n) = r + 1;
    return 0;
}

int tsr_shortlist_add_rule(tsr_shortlist *s, const int32_t *key, size_t n,
                           const int32_t *targets, size_t count)
{
    if (rehash(s, s->n_rules + 1) != 0 ||
        grow(&s->targets, &s->cap_targets, s->n_targets, count, sizeof *s->targets) != 0)
        return TESSERA_ERR_NOMEM;
    size_t *slot = slot_of(s, key, n);
    tsr_shortlist_rule *rule;
    if (*slot) {
        rule = &s->rules[*slot - 1];
    } else {
        if (grow(&s->rules, &s->cap_rules, s->n_rules, 1, sizeof *s->rules) != 0 ||
            grow(&s->keys, &s->cap_keys, s->n_keys, n, sizeof *s->keys) != 0)
            return TESSERA_ERR_NOMEM;
        rule = &s->rules[s->n_rules++];
        rule->key_at = s->n_keys;
        rule->n = n;
        memcpy(s->keys + s->n_keys, key, n * sizeof *key);
        s->n_keys += n;
        *slot = s->n_rules;
    }
    if (count)
        memcpy(s->targets + s->n_targets, targets, count * sizeof *targets);
    rule->targets_at = s->n_targets;
    rule->count = count;
    s->n_targets += count;
    if (n > s->longest)
        s->longest = n;
    return 0;
}

static int ascending(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int tsr_shortlist_candidates(const tsr_shortlist *s, const int32_t *src, size_t len,
                             const tessera_tokens *also, size_t n_also, int32_t **ids,
                             size_t *cap, size_t *n)
{
    const size_t start = *n;
    size_t have = start;
#define PUT(id_)                                                                                 \
    do {                                                                                         \
        if (grow(ids, cap, have, 1, sizeof **ids) != 0)                                          \
            return TESSERA_ERR_NOMEM;                                                            \
        (*ids)[have++] = (id_);                                                                  \
    } while (0)
    for (size_t i = 0; i < s->first; i++)
        PUT((int32_t)i);
    for (size_t i = 0; i < s->n_fixed; i++)
        PUT(s->fixed[i]);
    for (size_t a = 0; a < n_also; a++)
        for (size_t i = 0; i < also[a].len; i++)
            PUT(also[a].ids[i]);
    for (size_t i = 0; i < len; i++) {
        if (s->shared)
            PUT(src[i]);
        for (size_t g = 1; s->n_slots && g <= s->longest && i + g <= len; g++) {
            size_t r = *slot_of(s, src + i, g);
            if (r == 0)
                continue;
            const tsr_shortlist_rule *rule = &s->rules[r - 1];
            for (size_t t = 0; t < rule->count; t++)
                PUT(s->targets[rule->targets_at + t]);
        }
    }
#undef PUT
    int32_t *mine = *ids + start;
    size_t count = have - start, kept = 0;
    if (count > 0)
        qsort(mine, count, sizeof *mine, ascending);
    for (size_t i = 0; i < count; i++)
        if (kept == 0 || mine[i] != mine[kept - 1])
            mine[kept++] = mine[i];
    *n = start + kept;
    return 0;
}
