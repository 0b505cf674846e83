/* Marian's lexical shortlists, text (lex.s2t) and binary (lex.*.bin)
 * (core/shortlist/shortlist.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/memory.h"
#include "core/shortlist/table.h"

/* The binary form's first 8 bytes (little-endian), which no text starts with. */
#define BINARY_MAGIC 0xF11A48D5013417F5ull
/* magic, checksum, first, best, offsets' count, lists' count: uint64 each. */
#define HEADER_WORDS 6
/* A file this size is no shortlist: refused before it is read. */
#define LEXICAL_FILE_MAX ((off_t)4 << 30)
/* A count not given (tessera.h), and Marian's default for it. */
#define DEFAULT_COUNT TESSERA_SHORTLIST_DEFAULT_COUNT
#define MARIAN_COUNT 100

typedef struct pair {
    int32_t src, tgt;
    float prob;
    size_t line;
} pair;

/* By source, then target, then line: the last line of a pair wins. */
static int by_source(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->tgt != y->tgt)
        return x->tgt < y->tgt ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

/* Most probable first; equal probabilities: the higher target id first
 * (Marian sorts (prob, id) pairs descending). */
static int by_prob(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->prob != y->prob)
        return x->prob > y->prob ? -1 : 1;
    return (x->tgt < y->tgt) - (x->tgt > y->tgt);
}

static int lookup(const tessera_vocabulary *v, const char *piece)
{
    return tessera_vocabulary_find(v, piece, strlen(piece));
}

/* Every source word's `best` most probable targets above threshold, as rules. */
static int add_lists(tsr_shortlist *s, pair *pairs, size_t n, size_t best, float threshold)
{
    qsort(pairs, n, sizeof *pairs, by_source);
    size_t kept = 0; /* one per (source, target): its last line's */
    for (size_t i = 0; i < n; i++) {
        if (kept > 0 && pairs[kept - 1].src == pairs[i].src && pairs[kept - 1].tgt == pairs[i].tgt)
            kept--;
        pairs[kept++] = pairs[i];
    }
    int32_t *targets = tsr_malloc((best ? best : 1) * sizeof *targets);
    if (!targets)
        return TESSERA_ERR_NOMEM;
    int rc = 0;
    for (size_t b = 0; rc == 0 && b < kept;) {
        size_t e = b;
        while (e < kept && pairs[e].src == pairs[b].src)
            e++;
        qsort(pairs + b, e - b, sizeof *pairs, by_prob);
        size_t count = 0;
        while (count < best && b + count < e && pairs[b + count].prob > threshold) {
            targets[count] = pairs[b + count].tgt;
            count++;
        }
        rc = tsr_shortlist_add_rule(s, &pairs[b].src, 1, targets, count);
        b = e;
    }
    tsr_free(targets);
    return rc;
}

static int read_text(char *text, size_t size, const char *path, const tessera_vocabulary *src,
                     const tessera_vocabulary *tgt, int32_t src_unk, size_t best,
                     float threshold, tsr_shortlist *s, char *err, size_t err_len)
{
    size_t len, number = 0, n = 0, cap = 0;
    pair *pairs = NULL;
    int rc = 0, got;
    char *at = text, *line;
    while (rc == 0 && (got = tsr_shortlist_next_line(&at, text + size, &line, &len)) != 0) {
        number++;
        char *fields[4], *save = NULL;
        size_t count = 0;
        for (char *t = got > 0 ? strtok_r(line, " \t", &save) : NULL; t && count < 4;
             t = strtok_r(NULL, " \t", &save))
            fields[count++] = t;
        if (got > 0 && count == 0)
            continue;
        char *end = NULL;
        float prob = count == 3 ? strtof(fields[2], &end) : 0.0f;
        if (count != 3 || *end != '\0' || !isfinite(prob)) {
            rc = tsr_fail(err, err_len,
                          "%s: line %zu is not \"<target> <source> <probability>\" (a lexical "
                          "shortlist's lines)", path, number);
            break;
        }
        if (strcmp(fields[0], "NULL") == 0 || strcmp(fields[1], "NULL") == 0)
            continue; /* alignment to nothing, as Marian passes over it */
        int32_t s_id = lookup(src, fields[1]), t_id = lookup(tgt, fields[0]);
        if (s_id < 0)
            s_id = src_unk;
        if (t_id < 0 || s_id < 0)
            continue;
        if (tsr_grow(&pairs, &cap, n + 1, sizeof *pairs) != 0) {
            rc = tsr_fail_oom(err, err_len, "%s: out of memory at line %zu", path, number);
            break;
        }
        pairs[n++] = (pair){s_id, t_id, prob, number};
    }
    if (rc == 0 && add_lists(s, pairs, n, best, threshold) != 0)
        rc = tsr_fail_oom(err, err_len, "%s: out of memory", path);
    tsr_free(pairs);
    return rc;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Marian's checksum: boost's hash_combine over the words from `first` on
 * (std::hash of an integer being the integer). */
static uint64_t checksum(const unsigned char *p, size_t words)
{
    uint64_t seed = 0;
    for (size_t i = 0; i < words; i++)
        seed ^= le64(p + 8 * i) + 0x9e3779b9ull + (seed << 6) + (seed >> 2);
    return seed;
}

static int read_binary(const unsigned char *b, size_t size, const char *path,
                       const tessera_vocabulary *src, const tessera_vocabulary *tgt,
                       tsr_shortlist *s, char *err, size_t err_len)
{
    if (size < HEADER_WORDS * 8)
        return tsr_fail(err, err_len, "%s: %zu bytes, too short for a binary shortlist's header",
                        path, size);
    uint64_t first = le64(b + 16), n_offsets = le64(b + 32), n_lists = le64(b + 40);
    size_t src_size = tessera_vocabulary_size(src), tgt_size = tessera_vocabulary_size(tgt);
    if (n_offsets != (uint64_t)src_size + 1)
        return tsr_fail(err, err_len,
                        "%s: the binary shortlist has %llu offsets; the source vocabulary's "
                        "%zu words need %zu", path, (unsigned long long)n_offsets, src_size,
                        src_size + 1);
    if (n_lists > size / 4 || HEADER_WORDS * 8 + n_offsets * 8 + n_lists * 4 != size)
        return tsr_fail(err, err_len, "%s: the header's counts do not give the file's %zu bytes",
                        path, size);
    if (checksum(b + 16, (size - 16) / 8) != le64(b + 8))
        return tsr_fail(err, err_len, "%s: the binary shortlist's checksum does not match: the "
                        "file is damaged", path);
    const unsigned char *offsets = b + HEADER_WORDS * 8, *lists = offsets + n_offsets * 8;
    int32_t *targets = tsr_malloc((n_lists ? n_lists : 1) * sizeof *targets);
    if (!targets)
        return tsr_fail_oom(err, err_len, "%s: out of memory", path);
    int rc = 0;
    for (uint64_t i = 0; rc == 0 && i < n_lists; i++) {
        const unsigned char *p = lists + 4 * i;
        uint32_t id = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                      (uint32_t)p[3] << 24;
        if (id >= tgt_size)
            rc = tsr_fail(err, err_len, "%s: target id %u is outside the target vocabulary of %zu",
                          path, id, tgt_size);
        targets[i] = (int32_t)id;
    }
    for (size_t w = 0; rc == 0 && w < src_size; w++) {
        uint64_t at = le64(offsets + 8 * w), end = le64(offsets + 8 * (w + 1));
        int32_t word = (int32_t)w;
        if (at > end || end > n_lists)
            rc = tsr_fail(err, err_len, "%s: source word %zu's list [%llu, %llu) lies outside "
                          "the %llu listed ids", path, w, (unsigned long long)at,
                          (unsigned long long)end, (unsigned long long)n_lists);
        else if (at < end && tsr_shortlist_add_rule(s, &word, 1, targets + at, end - at) != 0)
            rc = tsr_fail_oom(err, err_len, "%s: out of memory", path);
    }
    tsr_free(targets);
    s->first = first < tgt_size ? (size_t)first : tgt_size;
    return rc;
}

int tsr_shortlist_load_lexical(const char *path, const tessera_vocabulary *src,
                               const tessera_vocabulary *tgt, int32_t src_unk_id, size_t first,
                               size_t best, float threshold, int shared, tsr_shortlist **out,
                               char *err, size_t err_len)
{
    *out = NULL;
    char *bytes;
    size_t size;
    TSR_TRY(tsr_read_regular(path, LEXICAL_FILE_MAX, &bytes, &size, err, err_len));
    unsigned char *b = (unsigned char *)bytes;
    int binary = size >= 8 && le64(b) == BINARY_MAGIC;
    tsr_shortlist *s = tsr_shortlist_new(src, tgt);
    int rc = 0;
    if (!s) {
        rc = tsr_fail_oom(err, err_len, "%s: out of memory", path);
    } else if (binary && (first != DEFAULT_COUNT || best != DEFAULT_COUNT ||
                          threshold != 0.0f)) {
        rc = tsr_fail(err, err_len, "%s: a binary shortlist holds its own first and best "
                      "counts and threshold; give none", path);
    } else if (binary) {
        rc = read_binary(b, size, path, src, tgt, s, err, err_len);
    } else {
        size_t tgt_size = tessera_vocabulary_size(tgt);
        first = first == DEFAULT_COUNT ? MARIAN_COUNT : first;
        best = best == DEFAULT_COUNT ? MARIAN_COUNT : best;
        s->first = first < tgt_size ? first : tgt_size;
        rc = read_text(bytes, size, path, src, tgt, src_unk_id, best, threshold, s, err, err_len);
    }
    tsr_free(bytes);
    if (rc != 0) {
        tsr_shortlist_free(s);
        return rc;
    }
    s->shared = shared;
    *out = s;
    return 0;
}
