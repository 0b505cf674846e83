/* The model files of a built-in bench configuration: config.json and an F32
 * model.safetensors with every tensor the configuration needs, filled with
 * reproducible small random values, written once into a directory so that
 * `tessera bench --case load` times a real load of a known size. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"

typedef struct tensor_spec {
    char name[160];
    size_t rows, cols; /* cols 0: a vector of `rows` */
} tensor_spec;

typedef struct tensor_list {
    tensor_spec *t;
    size_t n, cap;
} tensor_list;

/* The tensors of tessera_model_tensors a model needs, and the generator's
 * bias; the list was sized by list_tensors's first walk. */
static int add_listed(const tessera_tensor_spec *s, void *arg)
{
    tensor_list *l = arg;
    if (s->optional && strcmp(s->name, "generator.bias") != 0)
        return 0;
    if (l->t && l->n < l->cap) {
        tensor_spec *t = &l->t[l->n];
        snprintf(t->name, sizeof t->name, "%s", s->name);
        t->rows = s->shape[0];
        t->cols = s->ndim == 2 ? s->shape[1] : 0;
    }
    l->n++;
    return 0;
}

/* Every tensor the configuration needs, in tessera_model_tensors's order:
 * counted, then listed. */
static int list_tensors(const tessera_config *c, tensor_list *l, char *err, size_t err_len)
{
    if (tessera_model_tensors(c, add_listed, l, err, err_len) != 0)
        return -1;
    l->cap = l->n;
    l->n = 0;
    l->t = calloc(l->cap, sizeof *l->t);
    if (!l->t)
        return snprintf(err, err_len, "out of memory"), -1;
    return tessera_model_tensors(c, add_listed, l, err, err_len);
}

static size_t count_of(const tensor_spec *t) { return t->rows * (t->cols ? t->cols : 1); }

static int write_config(const tessera_config *c, const char *dir, char *err, size_t err_len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return snprintf(err, err_len, "%s: %s", path, strerror(errno)), -1;
    fprintf(f,
            "{\"d_model\": %d, \"n_heads\": %d, \"d_ff\": %d, \"n_encoder_layers\": %d,\n"
            " \"n_decoder_layers\": %d, \"src_vocab_size\": %d, \"tgt_vocab_size\": %d,\n"
            " \"max_positions\": %d, \"share_embeddings\": %s, \"tie_output_projection\": %s}\n",
            c->d_model, c->n_heads, c->d_ff, c->n_encoder_layers, c->n_decoder_layers,
            c->src_vocab_size, c->tgt_vocab_size, c->max_positions,
            c->share_embeddings ? "true" : "false", c->tie_output_projection ? "true" : "false");
    if (fclose(f) != 0)
        return snprintf(err, err_len, "%s: %s", path, strerror(errno)), -1;
    return 0;
}

/* The safetensors header: 8 bytes of length, then JSON padded with spaces
 * to a multiple of 8 so that the data (and every F32 tensor) is aligned. */
static char *header_of(const tensor_list *l, size_t *len)
{
    size_t cap = 256 + l->n * 192, used = 0;
    char *h = malloc(cap);
    if (!h)
        return NULL;
    uint64_t offset = 0;
    used += (size_t)snprintf(h + used, cap - used, "{");
    for (size_t i = 0; i < l->n; i++) {
        const tensor_spec *t = &l->t[i];
        uint64_t bytes = (uint64_t)count_of(t) * 4;
        char shape[64];
        if (t->cols)
            snprintf(shape, sizeof shape, "%zu, %zu", t->rows, t->cols);
        else
            snprintf(shape, sizeof shape, "%zu", t->rows);
        used += (size_t)snprintf(h + used, cap - used,
                                 "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [%s], "
                                 "\"data_offsets\": [%" PRIu64 ", %" PRIu64 "]}",
                                 i ? ", " : "", t->name, shape, offset, offset + bytes);
        offset += bytes;
    }
    used += (size_t)snprintf(h + used, cap - used, "}");
    while (used % 8)
        h[used++] = ' ';
    *len = used;
    return h;
}

static int write_weights(const tensor_list *l, const char *dir, char *err, size_t err_len)
{
    char path[4096];
    size_t header_len = 0;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    char *header = header_of(l, &header_len);
    size_t most = 0;
    for (size_t i = 0; i < l->n; i++)
        if (count_of(&l->t[i]) > most)
            most = count_of(&l->t[i]);
    float *values = malloc(most * sizeof *values);
    FILE *f = header && values ? fopen(path, "wb") : NULL;
    int rc = 0;
    if (!f) {
        snprintf(err, err_len, "%s: %s", path,
                 header && values ? strerror(errno) : "out of memory");
        free(header);
        free(values);
        return -1;
    }
    unsigned char len_le[8];
    for (int i = 0; i < 8; i++)
        len_le[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    rc |= fwrite(len_le, 1, 8, f) != 8 || fwrite(header, 1, header_len, f) != header_len;
    uint64_t state = 1;
    for (size_t i = 0; !rc && i < l->n; i++) {
        size_t n = count_of(&l->t[i]);
        /* Small values in [-1/16, 1/16): norms and all, nothing overflows. */
        for (size_t j = 0; j < n; j++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            values[j] = (float)((int32_t)(state >> 40) - (1 << 23)) * 0x1p-27f;
        }
        /* Native floats: little-endian, as safetensors and the loader
         * (which reads them in place) take them, on every host tessera
         * builds for today. */
        rc |= fwrite(values, sizeof *values, n, f) != n;
    }
    if (fclose(f) != 0)
        rc = 1;
    if (rc)
        snprintf(err, err_len, "%s: %s", path, strerror(errno));
    free(header);
    free(values);
    return rc ? -1 : 0;
}

int cli_bench_write_model(const tessera_config *c, const char *dir, char *err, size_t err_len)
{
    tensor_list l = {0};
    int rc = list_tensors(c, &l, err, err_len);
    if (rc == 0)
        rc = write_config(c, dir, err, err_len);
    if (rc == 0)
        rc = write_weights(&l, dir, err, err_len);
    free(l.t);
    return rc;
}
