/* Vocabulary shortlists read from files (core/shortlist/): CTranslate2's
 * vocabulary map and Marian's lexical shortlists, text and binary, each
 * sentence's candidates checked against sets worked out by hand from the
 * files' rules (CTranslate2's vocabulary_map.cc, Marian's shortlist.cpp). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/memory.h"
#include "core/shortlist/shortlist.h"
#include "tests/testutil.h"

/* A count not given: the binary file's own. */
#define OWN TESSERA_SHORTLIST_DEFAULT_COUNT

/* ids: <unk> 0, <s> 1, </s> 2, then the words. */
static const char src_words[] = "<unk>\n<s>\n</s>\na\nb\nc\nd\n";
static const char tgt_words[] = "<unk>\n<s>\n</s>\nx\ny\nz\nw\nv\n";
enum { A = 3, B, C, D };
enum { X = 3, Y, Z, W, V };

typedef struct fixture {
    char *dir;
    tessera_vocabulary *src, *tgt;
} fixture;

static fixture setup_vocabularies(void)
{
    fixture f = {.dir = test_make_temp_dir()};
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/src.txt", f.dir);
    test_write_file(path, src_words, strlen(src_words));
    cr_assert_eq(tessera_vocabulary_load(path, 7, &f.src, err, sizeof err), 0, "%s", err);
    snprintf(path, sizeof path, "%s/tgt.txt", f.dir);
    test_write_file(path, tgt_words, strlen(tgt_words));
    cr_assert_eq(tessera_vocabulary_load(path, 8, &f.tgt, err, sizeof err), 0, "%s", err);
    return f;
}

static void teardown(fixture *f)
{
    tessera_vocabulary_free(f->src);
    tessera_vocabulary_free(f->tgt);
    test_remove_dir(f->dir);
    free(f->dir);
}

static char *write_in(const fixture *f, const char *name, const void *data, size_t len)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    test_write_file(path, data, len);
    return path;
}

static void expect_candidates(const tsr_shortlist *s, const int32_t *src, size_t len,
                              const int32_t *want, size_t n_want, const char *what)
{
    int32_t *ids = NULL;
    size_t cap = 0, n = 0;
    cr_assert_eq(tsr_shortlist_candidates(s, src, len, NULL, 0, &ids, &cap, &n), 0, "%s", what);
    char got[256] = "", expected[256] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(got + strlen(got), sizeof got - strlen(got), " %d", ids[i]);
    for (size_t i = 0; i < n_want; i++)
        snprintf(expected + strlen(expected), sizeof expected - strlen(expected), " %d", want[i]);
    cr_assert_str_eq(got, expected, "%s: candidates [%s ] where [%s ] are due", what, got,
                     expected);
    tsr_free(ids);
}

#define EXPECT(s, src, ...)                                                                      \
    do {                                                                                         \
        static const int32_t src_[] = src, want_[] = __VA_ARGS__;                                \
        expect_candidates(s, src_, sizeof src_ / sizeof *src_, want_,                            \
                          sizeof want_ / sizeof *want_, #src);                                   \
    } while (0)
#define IDS(...) {__VA_ARGS__}

/* The empty n-gram's targets always; a unigram's and a bigram's targets
 * wherever they occur; a later line of the same n-gram replaces the
 * earlier; keys with a piece the source lacks never match; target pieces
 * the target lacks are dropped. */
Test(shortlist, vmap_rules)
{
    fixture f = setup_vocabularies();
    static const char vmap[] = "\tv\n"
                               "a\tx y\n"
                               "a b\tz\n"
                               "c\tnowhere w\r\n"
                               "q\tx\n"
                               "\n"
                               "a\ty\n";
    char err[256];
    tsr_shortlist *s;
    cr_assert_eq(tsr_shortlist_load_vmap(write_in(&f, "vmap.txt", vmap, strlen(vmap)), f.src,
                                         f.tgt, &s, err, sizeof err), 0, "%s", err);
    EXPECT(s, IDS(A, B), IDS(Y, Z, V));
    EXPECT(s, IDS(B, A), IDS(Y, V));
    EXPECT(s, IDS(C), IDS(W, V));
    EXPECT(s, IDS(D, D), IDS(V));
    EXPECT(s, IDS(A, B, A, B), IDS(Y, Z, V));
    /* Appended after what the array holds, with the ids a search keeps
     * (two lists, one repeating a candidate) sorted in; the held ids stay. */
    int32_t *ids = tsr_malloc(sizeof *ids);
    size_t cap = 1, n = 1;
    ids[0] = 99;
    static const int32_t keep[] = {X, 1}, more[] = {V};
    const tessera_tokens also[] = {{keep, 2}, {more, 1}};
    static const int32_t src[] = {C};
    cr_assert_eq(tsr_shortlist_candidates(s, src, 1, also, 2, &ids, &cap, &n), 0);
    cr_assert_eq(n, 5, "%zu ids", n);
    cr_assert(ids[0] == 99 && ids[1] == 1 && ids[2] == X && ids[3] == W && ids[4] == V,
              "[%d %d %d %d %d]", ids[0], ids[1], ids[2], ids[3], ids[4]);
    tsr_free(ids);
    tsr_shortlist_free(s);
    teardown(&f);
}

Test(shortlist, vmap_refusals)
{
    fixture f = setup_vocabularies();
    char err[256];
    tsr_shortlist *s = (tsr_shortlist *)1;
    static const char no_tab[] = "a\tx\na x y\n";
    char *path = write_in(&f, "bad.txt", no_tab, strlen(no_tab));
    cr_assert_neq(tsr_shortlist_load_vmap(path, f.src, f.tgt, &s, err, sizeof err), 0);
    cr_assert_null(s);
    cr_assert(strstr(err, "bad.txt: line 2 has no tab"), "message: %s", err);
    cr_assert_neq(tsr_shortlist_load_vmap("/nonexistent/vmap.txt", f.src, f.tgt, &s, err,
                                          sizeof err), 0);
    cr_assert(strstr(err, "/nonexistent/vmap.txt: cannot open"), "message: %s", err);
    /* A FIFO is refused, not waited on. */
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s/fifo", f.dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    cr_assert_neq(tsr_shortlist_load_vmap(fifo, f.src, f.tgt, &s, err, sizeof err), 0);
    cr_assert(strstr(err, "not a regular file"), "message: %s", err);
    teardown(&f);
}

/* Marian's text form with first 3, best 2, threshold 0.05: a's targets by
 * probability (the later "x a" line replacing the earlier; z and y tie, the
 * higher id first; w under the threshold) keep z and y; b keeps x; an
 * unknown source word counts as <unk>; NULL lines are passed over. */
static const char lex_text[] = "x a 0.5\n"
                               "y a 0.3\n"
                               "z a 0.3\n"
                               "w a 0.01\n"
                               "x b 0.9\n"
                               "x NULL 0.9\n"
                               "NULL a 0.9\n"
                               "v zz 0.4\n"
                               "x a 0.1\n";

Test(shortlist, lexical_text)
{
    fixture f = setup_vocabularies();
    char err[256];
    tsr_shortlist *s;
    char *path = write_in(&f, "lex.s2t", lex_text, strlen(lex_text));
    cr_assert_eq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, 3, 2, 0.05f, 0, &s, err,
                                            sizeof err), 0, "%s", err);
    EXPECT(s, IDS(A), IDS(0, 1, 2, Y, Z));
    EXPECT(s, IDS(A, B), IDS(0, 1, 2, X, Y, Z));
    EXPECT(s, IDS(0), IDS(0, 1, 2, V));
    EXPECT(s, IDS(D), IDS(0, 1, 2));
    tsr_shortlist_free(s);
    /* best 1: of the tie, the higher id (z). */
    cr_assert_eq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, 3, 1, 0.05f, 0, &s, err,
                                            sizeof err), 0, "%s", err);
    EXPECT(s, IDS(A), IDS(0, 1, 2, Z));
    tsr_shortlist_free(s);
    /* One vocabulary for both sides (shared): the source ids are candidates. */
    cr_assert_eq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, 3, 2, 0.05f, 1, &s, err,
                                            sizeof err), 0, "%s", err);
    EXPECT(s, IDS(A), IDS(0, 1, 2, A, Y, Z));
    EXPECT(s, IDS(D), IDS(0, 1, 2, D));
    tsr_shortlist_free(s);
    static const char bad[] = "x a 0.5\nx a\n";
    path = write_in(&f, "bad.s2t", bad, strlen(bad));
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, 3, 2, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "bad.s2t: line 2 is not"), "message: %s", err);
    teardown(&f);
}

/* The binary form, written here from its description (Marian's
 * BinaryShortlistGenerator): six little-endian uint64 (magic, checksum,
 * first, best, offsets' count, ids' count), the offsets, the uint32 ids;
 * the checksum is boost's hash_combine over the words from `first` on. */
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static size_t make_binary(unsigned char *b, uint64_t first, const uint64_t *offsets,
                          size_t n_offsets, const uint32_t *lists, size_t n_lists)
{
    size_t size = 48 + 8 * n_offsets + 4 * n_lists;
    put64(b, 0xF11A48D5013417F5ull);
    put64(b + 16, first);
    put64(b + 24, 50);
    put64(b + 32, n_offsets);
    put64(b + 40, n_lists);
    for (size_t i = 0; i < n_offsets; i++)
        put64(b + 48 + 8 * i, offsets[i]);
    for (size_t i = 0; i < n_lists; i++)
        for (int k = 0; k < 4; k++)
            b[48 + 8 * n_offsets + 4 * i + k] = (unsigned char)(lists[i] >> (8 * k));
    uint64_t seed = 0;
    for (size_t w = 0; w < (size - 16) / 8; w++) {
        uint64_t v = 0;
        for (int k = 7; k >= 0; k--)
            v = v << 8 | b[16 + 8 * w + k];
        seed ^= v + 0x9e3779b9ull + (seed << 6) + (seed >> 2);
    }
    put64(b + 8, seed);
    return size;
}

Test(shortlist, lexical_binary)
{
    fixture f = setup_vocabularies();
    char err[256];
    tsr_shortlist *s;
    /* Source words 0..6: <unk> -> v; a -> y z; c -> x (an odd count of ids:
     * the file's size is no multiple of 8). */
    static const uint64_t offsets[] = {0, 1, 1, 1, 3, 3, 4, 4};
    static const uint32_t lists[] = {V, Y, Z, X};
    unsigned char b[256];
    size_t size = make_binary(b, 2, offsets, 8, lists, 4);
    char *path = write_in(&f, "lex.bin", b, size);
    cr_assert_eq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                            sizeof err), 0, "%s", err);
    EXPECT(s, IDS(A), IDS(0, 1, Y, Z));
    EXPECT(s, IDS(C, 0), IDS(0, 1, X, V));
    EXPECT(s, IDS(B), IDS(0, 1));
    tsr_shortlist_free(s);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, 10, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "holds its own first and best"), "message: %s", err);
    /* A damaged byte, a wrong count of offsets, a truncated file, an id
     * outside the target vocabulary, a list past the end. */
    b[60] ^= 1;
    path = write_in(&f, "damaged.bin", b, size);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "checksum does not match"), "message: %s", err);
    size = make_binary(b, 2, offsets, 7, lists, 4);
    path = write_in(&f, "short.bin", b, size);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "has 7 offsets"), "message: %s", err);
    size = make_binary(b, 2, offsets, 8, lists, 4);
    path = write_in(&f, "cut.bin", b, size - 1);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "do not give the file's"), "message: %s", err);
    static const uint32_t outside[] = {V, Y, 8, X};
    size = make_binary(b, 2, offsets, 8, outside, 4);
    path = write_in(&f, "outside.bin", b, size);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "target id 8 is outside"), "message: %s", err);
    static const uint64_t past[] = {0, 1, 1, 1, 3, 3, 5, 5};
    size = make_binary(b, 2, past, 8, lists, 4);
    path = write_in(&f, "past.bin", b, size);
    cr_assert_neq(tsr_shortlist_load_lexical(path, f.src, f.tgt, 0, OWN, OWN, 0, 0, &s, err,
                                             sizeof err), 0);
    cr_assert(strstr(err, "lies outside"), "message: %s", err);
    teardown(&f);
}
