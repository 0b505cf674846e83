/* CTranslate2's vocabulary map, vmap.txt (core/shortlist/shortlist.h). */
#include <string.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/memory.h"
#include "core/shortlist/table.h"

/* A file this size is no vocabulary map: refused before it is read. */
#define VMAP_FILE_MAX ((off_t)4 << 30)

typedef struct ids {
    int32_t *p;
    size_t n, cap;
} ids;

static int push(ids *v, int32_t id)
{
    if (tsr_grow(&v->p, &v->cap, v->n + 1, sizeof *v->p) != 0)
        return TESSERA_ERR_NOMEM;
    v->p[v->n++] = id;
    return 0;
}

/* The pieces of text[0..len) separated by single spaces, as ids of vocab
 * into out; *unknown set when a piece is not in it (empty pieces, from two
 * spaces in a row, are pieces too, as CTranslate2 splits). */
static int pieces(const tessera_vocabulary *vocab, const char *text, size_t len, ids *out,
                  int *unknown)
{
    out->n = 0;
    *unknown = 0;
    if (len == 0)
        return 0;
    for (size_t b = 0;;) {
        const char *space = memchr(text + b, ' ', len - b);
        size_t e = space ? (size_t)(space - text) : len;
        int32_t id = tessera_vocabulary_find(vocab, text + b, e - b);
        if (id < 0)
            *unknown = 1;
        else if (push(out, id) != 0)
            return TESSERA_ERR_NOMEM;
        if (!space)
            return 0;
        b = e + 1;
    }
}

static int read_lines(char *text, size_t size, const char *path, const tessera_vocabulary *src,
                      const tessera_vocabulary *tgt, tsr_shortlist *s, char *err, size_t err_len)
{
    ids key = {0}, targets = {0};
    int rc = 0, got;
    char *at = text, *line;
    size_t len, number = 0;
    while (rc == 0 && (got = tsr_shortlist_next_line(&at, text + size, &line, &len)) != 0) {
        number++;
        if (got < 0) {
            rc = tsr_fail(err, err_len, "%s: line %zu holds a NUL byte", path, number);
            break;
        }
        if (len == 0)
            continue;
        const char *tab = memchr(line, '\t', len);
        if (!tab) {
            rc = tsr_fail(err, err_len,
                          "%s: line %zu has no tab between its source n-gram and its targets "
                          "(a vocabulary map's lines are \"<n-gram>\\t<targets>\")",
                          path, number);
            break;
        }
        size_t key_len = (size_t)(tab - line), rest = len - key_len - 1;
        int unknown_key, unknown_target;
        if (pieces(src, line, key_len, &key, &unknown_key) != 0 ||
            pieces(tgt, tab + 1, rest, &targets, &unknown_target) != 0) {
            rc = tsr_fail_oom(err, err_len, "%s: out of memory at line %zu", path, number);
            break;
        }
        if (key_len == 0) { /* the empty n-gram: always candidates */
            for (size_t i = 0; rc == 0 && i < targets.n; i++)
                rc = tsr_shortlist_add_fixed(s, targets.p[i]);
        } else if (!unknown_key) {
            rc = tsr_shortlist_add_rule(s, key.p, key.n, targets.p, targets.n);
        }
        if (rc != 0)
            rc = tsr_fail_oom(err, err_len, "%s: out of memory at line %zu", path, number);
    }
    tsr_free(key.p);
    tsr_free(targets.p);
    return rc;
}

int tsr_shortlist_load_vmap(const char *path, const tessera_vocabulary *src,
                            const tessera_vocabulary *tgt, tsr_shortlist **out, char *err,
                            size_t err_len)
{
    *out = NULL;
    char *text;
    size_t size;
    TSR_TRY(tsr_read_regular(path, VMAP_FILE_MAX, &text, &size, err, err_len));
    tsr_shortlist *s = tsr_shortlist_new(src, tgt);
    int rc = s ? read_lines(text, size, path, src, tgt, s, err, err_len)
               : tsr_fail_oom(err, err_len, "%s: out of memory", path);
    tsr_free(text);
    if (rc != 0) {
        tsr_shortlist_free(s);
        return rc;
    }
    *out = s;
    return 0;
}
