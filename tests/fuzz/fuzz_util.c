/* The harness's temporary files and text model (fuzz.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/tessera.h"
#include "tests/fuzz/fuzz.h"

static char dir[4096];

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (d) {
        char path[4096 + 256];
        for (struct dirent *e; (e = readdir(d));) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

const char *fuzz_temp_dir(void)
{
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/tessera-fuzz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(remove_dir);
    }
    return dir;
}

void fuzz_check_message(const char *err, size_t skip)
{
    if (strlen(err) < skip)
        return;
    for (const unsigned char *p = (const unsigned char *)err + skip; *p; p++)
        if (*p < 0x20 || *p >= 0x7f)
            __builtin_trap(); /* a byte the input chose, unescaped */
}

const char *fuzz_write_file(const char *name, const void *data, size_t size)
{
    static char path[4096 + 256];
    snprintf(path, sizeof path, "%s/%s", fuzz_temp_dir(), name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror("fuzz: open");
        abort();
    }
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, (const char *)data + done, size - done);
        if (w <= 0) {
            perror("fuzz: write");
            abort();
        }
        done += (size_t)w;
    }
    close(fd);
    return path;
}

const tessera_model *fuzz_text_model(const char *model_dir)
{
    static tessera_model *model;
    if (!model) {
        char err[512];
        if (tessera_model_load(model_dir, &model, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            abort();
        }
    }
    return tessera_model_has_tokenizer(model, TESSERA_SOURCE) ? model : NULL;
}

/* One thread: a fuzzer runs many processes side by side. */
static tessera_runtime *runtime(void)
{
    static tessera_runtime *rt;
    if (!rt) {
        tessera_runtime_options o;
        tessera_runtime_options_init(&o);
        o.threads = 1;
        char err[512];
        if (tessera_runtime_create(&o, &rt, err, sizeof err) != 0)
            abort();
    }
    return rt;
}

void fuzz_use_model(const tessera_model *m)
{
    const tessera_config *cfg = tessera_model_config(m);
    tessera_runtime *rt = runtime();
    char err[512];
    int32_t ids[2] = {0, cfg->src_vocab_size > 1 ? 1 : 0}, tgt_ids[1] = {0};
    tessera_tokens src = {ids, 2}, tgt = {tgt_ids, 1};
    if (cfg->n_decoder_layers > 0) {
        for (int beam = 1; beam <= 2; beam++) {
            tessera_translate_options o;
            tessera_translate_options_init(&o);
            o.beam = beam;
            o.max_len = 3;
            o.return_alignments = 1;
            o.n_best = beam;
            tessera_hypothesis *h;
            if (tessera_translate_with(rt, m, &src, 1, &o, &h, err, sizeof err) == 0)
                tessera_hypotheses_free(h, (size_t)beam);
        }
        tessera_score_options so;
        tessera_score_options_init(&so);
        float **scores;
        if (tessera_score_with(rt, m, &src, &tgt, 1, &so, &scores, err, sizeof err) == 0)
            tessera_scores_free(scores, 1);
    }
    tessera_encode_options eo;
    tessera_encode_options_init(&eo);
    float **vectors;
    if (tessera_encode_with(rt, m, &src, 1, &eo, &vectors, err, sizeof err) == 0)
        tessera_encodings_free(vectors, 1);
}

int fuzz_split_input(const uint8_t *data, size_t size, const uint8_t **head, size_t *head_len,
                     const uint8_t **tail, size_t *tail_len)
{
    if (size < 4)
        return 0;
    uint32_t len = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                   (uint32_t)data[3] << 24;
    if (len > size - 4)
        return 0;
    *head = data + 4;
    *head_len = len;
    *tail = data + 4 + len;
    *tail_len = size - 4 - len;
    return 1;
}

void fuzz_load_and_use(void)
{
    tessera_model *m;
    char err[512];
    if (tessera_model_load(fuzz_temp_dir(), &m, err, sizeof err) != 0) {
        /* The message starts with the directory's path, the harness's choice. */
        fuzz_check_message(err, strlen(fuzz_temp_dir()));
        return;
    }
    fuzz_use_model(m);
    tessera_model_free(m);
}
