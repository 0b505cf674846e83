/* bench's text-batch case (cli/bench.h): what text costs around a batch's
 * translation, tokenizing its sources and detokenizing its outputs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/bench.h"
#include "cli/cli.h"

static double clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int cli_bench_texts(const tessera_model *m, const tessera_tokens *src, int n, char ***texts)
{
    char err[512];
    char **t = calloc((size_t)n, sizeof *t);
    if (!t)
        return cli_error("bench: out of memory");
    for (int i = 0; i < n; i++)
        if (tessera_detokenize(m, TESSERA_SOURCE, src[i].ids, src[i].len, &t[i], err,
                               sizeof err) != 0) {
            cli_bench_texts_free(t, n);
            return cli_error("bench: text-batch: %s", err);
        }
    *texts = t;
    return 0;
}

void cli_bench_texts_free(char **texts, int n)
{
    for (int i = 0; texts && i < n; i++)
        tessera_text_free(texts[i]);
    free(texts);
}

double cli_bench_text_once(tessera_runtime *rt, const tessera_model *m, char *const *texts, int n,
                           int tgt_len, double *text_ms, long *produced)
{
    char err[512];
    tessera_tokenized *tok = calloc((size_t)n, sizeof *tok);
    tessera_tokens *seqs = calloc((size_t)n, sizeof *seqs);
    tessera_hypothesis *h = NULL;
    int rc = tok && seqs ? 0 : -1;
    if (rc != 0)
        snprintf(err, sizeof err, "out of memory");
    double t0 = clock_ms(), t1 = t0, t2 = t0;
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = tessera_tokenize(m, TESSERA_SOURCE, texts[i], strlen(texts[i]), 0, &tok[i], err,
                              sizeof err);
        seqs[i] = (tessera_tokens){tok[i].ids, tok[i].len};
    }
    if (rc == 0) {
        t1 = clock_ms();
        tessera_translate_options t;
        tessera_translate_options_init(&t);
        t.max_len = tgt_len;
        t.batch = n;
        t.allow_empty = 1;
        rc = tessera_translate_with(rt, m, seqs, (size_t)n, &t, &h, err, sizeof err);
        t2 = clock_ms();
    }
    *produced = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        char *text;
        rc = tessera_detokenize(m, TESSERA_TARGET, h[i].ids, h[i].len, &text, err, sizeof err);
        tessera_text_free(text);
        *produced += (long)h[i].len;
    }
    double t3 = clock_ms();
    *text_ms = (t1 - t0) + (t3 - t2);
    if (h)
        tessera_hypotheses_free(h, (size_t)n);
    for (int i = 0; tok && i < n; i++)
        tessera_tokenized_free(&tok[i]);
    free(tok);
    free(seqs);
    if (rc != 0) {
        cli_error("bench: text-batch: %s", err);
        return -1.0;
    }
    return t3 - t0;
}
