#include "tests/api_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Space-separated ids into out (at most 256). */
static size_t parse_ids(const char *s, const char *end, int32_t *out)
{
    size_t n = 0;
    while (s < end && n < 256) {
        char *next;
        long v = strtol(s, &next, 10);
        if (next == s)
            break;
        out[n++] = (int32_t)v;
        s = next;
    }
    return n;
}

int api_read_inputs(const char *srcdir, api_inputs *in, char *err, size_t err_len)
{
    char path[1024], line[4096];
    memset(in, 0, sizeof *in);
    snprintf(path, sizeof path, "%s/tests/golden/%s/translate.in", srcdir, API_MODEL);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_len, "cannot read %s", path);
        return -1;
    }
    while (in->n < API_MAX_SENTENCES && fgets(line, sizeof line, f)) {
        size_t len = parse_ids(line, line + strlen(line), in->ids[in->n]);
        in->src[in->n] = (tessera_tokens){in->ids[in->n], len};
        /* A target for scoring: every fifth one empty. */
        size_t tlen = in->n % 5 == 0 ? 0 : (in->n * 3) % 11 + 1;
        for (size_t t = 0; t < tlen; t++)
            in->tgt_ids[in->n][t] = (int32_t)((in->n + 7 * t) % 20 + 1);
        in->tgt[in->n] = (tessera_tokens){in->tgt_ids[in->n], tlen};
        in->n++;
    }
    fclose(f);
    return 0;
}

int api_load_model(const char *srcdir, tessera_model **m, char *err, size_t err_len)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/golden/%s", srcdir, API_MODEL);
    return tessera_model_load_with(dir, NULL, m, err, err_len);
}

int api_runtime(int workers, int worker, int threads, tessera_runtime **rt, char *err,
                size_t err_len)
{
    tessera_runtime_options o;
    tessera_runtime_options_init(&o);
    o.workers = workers;
    o.worker = worker;
    o.threads = threads;
    return tessera_runtime_create(&o, rt, err, err_len);
}

/* A growable text. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

/* Appends `piece`; -1 when memory runs out. */
static int add_text(text *t, const char *piece)
{
    size_t w = strlen(piece);
    if (t->len + w + 1 > t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        while (cap < t->len + w + 1)
            cap *= 2;
        char *s = realloc(t->s, cap);
        if (!s)
            return -1;
        t->s = s;
        t->cap = cap;
    }
    memcpy(t->s + t->len, piece, w + 1);
    t->len += w;
    return 0;
}

/* Appends an id and a space. */
static int add_id(text *t, int32_t id)
{
    char piece[16];
    snprintf(piece, sizeof piece, "%d ", (int)id);
    return add_text(t, piece);
}

/* Appends v's exact bits (%a) and `after`. */
static int add_bits(text *t, float v, const char *after)
{
    char piece[48];
    snprintf(piece, sizeof piece, "%a", (double)v);
    return add_text(t, piece) || add_text(t, after);
}

char *api_answers(tessera_runtime *rt, const tessera_model *m, const api_inputs *in, char *err,
                  size_t err_len)
{
    text t = {0};
    if (err_len > 0)
        err[0] = '\0';
    int bad = add_text(&t, "") != 0;
    for (int beam = 1; !bad && beam <= 4; beam += 3) {
        tessera_translate_options o;
        tessera_hypothesis *h;
        tessera_translate_options_init(&o);
        o.beam = beam;
        o.n_best = beam == 1 ? 1 : 2;
        o.max_len = 20;
        o.batch = 3;
        if (tessera_translate_with(rt, m, in->src, in->n, &o, &h, err, err_len) != 0) {
            bad = 1;
            break;
        }
        for (size_t i = 0; !bad && i < in->n * (size_t)o.n_best; i++) {
            for (size_t k = 0; !bad && k < h[i].len; k++)
                bad = add_id(&t, h[i].ids[k]) != 0;
            bad = bad || add_text(&t, "| ") || add_bits(&t, h[i].score, "\n");
        }
        tessera_hypotheses_free(h, in->n * (size_t)o.n_best);
    }
    tessera_score_options so;
    float **lp = NULL;
    tessera_score_options_init(&so);
    so.batch = 2;
    if (!bad && tessera_score_with(rt, m, in->src, in->tgt, in->n, &so, &lp, err, err_len) != 0)
        bad = 1;
    for (size_t i = 0; !bad && i < in->n; i++) {
        for (size_t k = 0; !bad && k <= in->tgt[i].len; k++)
            bad = add_bits(&t, lp[i][k], " ") != 0;
        bad = bad || add_text(&t, "\n") != 0;
    }
    if (lp)
        tessera_scores_free(lp, in->n);
    if (bad) {
        if (!err[0])
            snprintf(err, err_len, "out of memory writing answers");
        free(t.s);
        return NULL;
    }
    return t.s;
}
