/* Vocabulary files (text/vocabulary.h): read whole, split at '\n' (one '\r'
 * before it dropped), indexed by an open-addressing hash table. */
#include "text/vocabulary.h"

#include <string.h>

#include "base/errors.h"
#include "base/files.h"
#include "base/memory.h"

struct tessera_vocabulary {
    char *bytes;     /* the file, each line NUL-terminated in place */
    char **pieces;   /* [size], into bytes */
    size_t size;
    int32_t *slots;  /* id + 1, 0 for empty */
    size_t n_slots;  /* a power of two, at least 2 * size */
};

static uint64_t hash(const char *s, size_t len) /* FNV-1a */
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

int32_t tsr_vocabulary_find(const tessera_vocabulary *v, const char *piece, size_t len)
{
    for (size_t i = hash(piece, len) & (v->n_slots - 1);; i = (i + 1) & (v->n_slots - 1)) {
        int32_t id = v->slots[i] - 1;
        if (id < 0)
            return -1;
        if (strlen(v->pieces[id]) == len && memcmp(v->pieces[id], piece, len) == 0)
            return id;
    }
}

const char *tsr_vocabulary_piece(const tessera_vocabulary *v, int32_t id) { return v->pieces[id]; }

static void index_pieces(tessera_vocabulary *v)
{
    for (size_t id = 0; id < v->size; id++) {
        size_t len = strlen(v->pieces[id]);
        if (tsr_vocabulary_find(v, v->pieces[id], len) >= 0)
            continue; /* a duplicate: the first line keeps the piece */
        size_t i = hash(v->pieces[id], len) & (v->n_slots - 1);
        while (v->slots[i])
            i = (i + 1) & (v->n_slots - 1);
        v->slots[i] = (int32_t)id + 1;
    }
}

int tessera_vocabulary_load(const char *path, size_t size, tessera_vocabulary **out, char *err,
                            size_t err_len)
{
    if (!path || !out)
        return tsr_fail(err, err_len, "tessera_vocabulary_load: NULL %s", path ? "out" : "path");
    *out = NULL;
    if (size == 0 || size > (1u << 24))
        return tsr_fail(err, err_len, "%s: a vocabulary of %zu pieces (1 to 2^24)", path, size);
    char *bytes;
    size_t len;
    /* 64 bytes a piece and more is no vocabulary of `size` pieces. */
    TSR_TRY(tsr_read_regular(path, (off_t)size * 64 + 4096, &bytes, &len, err, err_len));
    if (memchr(bytes, '\0', len)) {
        tsr_free(bytes);
        return tsr_fail(err, err_len, "%s: holds a NUL byte (not a vocabulary file)", path);
    }
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += bytes[i] == '\n';
    lines += len > 0 && bytes[len - 1] != '\n';
    if (lines != size) {
        tsr_free(bytes);
        return tsr_fail(err, err_len, "%s: %zu lines, but the model's vocabulary has %zu", path,
                        lines, size);
    }
    char **pieces = tsr_calloc(size, sizeof *pieces);
    if (!pieces) {
        tsr_free(bytes);
        return tsr_fail_oom(err, err_len, "%s: out of memory", path);
    }
    char *p = bytes;
    for (size_t id = 0; id < size; id++) {
        char *end = strchr(p, '\n');
        if (!end)
            end = bytes + len;
        char *next = *end ? end + 1 : end;
        if (end > p && end[-1] == '\r')
            end--;
        *end = '\0';
        pieces[id] = p;
        p = next;
    }
    int rc = tsr_vocabulary_adopt(bytes, pieces, size, out);
    return rc != 0 ? tsr_fail_oom(err, err_len, "%s: out of memory", path) : 0;
}

int tsr_vocabulary_adopt(char *bytes, char **pieces, size_t size, tessera_vocabulary **out)
{
    *out = NULL;
    tessera_vocabulary *v = tsr_calloc(1, sizeof *v);
    if (v) {
        v->bytes = bytes;
        v->pieces = pieces;
        v->size = size;
        for (v->n_slots = 16; v->n_slots < 2 * size; v->n_slots *= 2)
            ;
        v->slots = tsr_calloc(v->n_slots, sizeof *v->slots);
    }
    if (!v || !v->slots) {
        if (v)
            tessera_vocabulary_free(v);
        else {
            tsr_free(bytes);
            tsr_free(pieces);
        }
        return TESSERA_ERR_NOMEM;
    }
    index_pieces(v);
    *out = v;
    return 0;
}

void tessera_vocabulary_free(tessera_vocabulary *v)
{
    if (!v)
        return;
    tsr_free(v->bytes);
    tsr_free(v->pieces);
    tsr_free(v->slots);
    tsr_free(v);
}

size_t tessera_vocabulary_size(const tessera_vocabulary *v) { return v ? v->size : 0; }

int32_t tessera_vocabulary_find(const tessera_vocabulary *v, const char *piece, size_t len)
{
    return v && piece ? tsr_vocabulary_find(v, piece, len) : -1;
}

const char *tessera_vocabulary_piece(const tessera_vocabulary *v, int32_t id)
{
    return v && id >= 0 && (size_t)id < v->size ? v->pieces[id] : NULL;
}
