/* CTranslate2's vocabulary map, vmap.txt (core/shortlist/shortlist.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errors.h"
#include "base/memory.h"
#include "core/shortlist/table.h"

typedef struct ids {
    int32_t *p;
    size_t n, cap;
} ids;

static int push(ids *v, int32_t id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 16;
        int32_t *p = tsr_realloc(v->p, cap * sizeof *p);
        if (!p)
            return TESSERA_ERR_NOMEM;
        v->p = p;
        v->cap = cap;
    }
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

static int read_lines(FILE *f, const char *path, const tessera_vocabulary *src,
                      const tessera_vocabulary *tgt, tsr_shortlist *s, char *err, size_t err_len)
{
    char *line = NULL;
    size_t room = 0, number = 0;
    ids key = {0}, targets = {0};
    int rc = 0;
    for (ssize_t got; rc == 0 && (got = getline(&line, &room, f)) >= 0;) {
        number++;
        size_t len = (size_t)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        if (len == 0)
            continue;
        if (memchr(line, '\0', len)) {
            rc = tsr_fail(err, err_len, "%s: line %zu holds a NUL byte", path, number);
            break;
        }
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
    if (rc == 0 && ferror(f))
        rc = tsr_fail(err, err_len, "%s: read error: %s", path, strerror(errno));
    free(line);
    tsr_free(key.p);
    tsr_free(targets.p);
    return rc;
}

int tsr_shortlist_load_vmap(const char *path, const tessera_vocabulary *src,
                            const tessera_vocabulary *tgt, tsr_shortlist **out, char *err,
                            size_t err_len)
{
    *out = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return tsr_fail(err, err_len, "%s: cannot open the vocabulary map: %s", path,
                        strerror(errno));
    tsr_shortlist *s = tsr_shortlist_new();
    int rc = s ? read_lines(f, path, src, tgt, s, err, err_len)
               : tsr_fail_oom(err, err_len, "%s: out of memory", path);
    fclose(f);
    if (rc != 0) {
        tsr_shortlist_free(s);
        return rc;
    }
    *out = s;
    return 0;
}
