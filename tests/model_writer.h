/* Writing model directories for tests: a valid tiny model by default, with
 * hooks to break it in one precise way. A typical malformed-model test:
 *
 *     mw_model *m = mw_model_tiny(1);
 *     mw_set_dtype(m, "generator.bias", "I32");
 *     mw_write(m, dir);
 *     ... run and check the error names 'generator.bias' ...
 *     mw_model_free(m);
 *
 * Functions abort the running Criterion test on misuse (unknown tensor name)
 * or I/O failure. */
#ifndef TSR_TESTS_MODEL_WRITER_H
#define TSR_TESTS_MODEL_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"

#define MW_MAX_DIMS 9 /* one more than the reader accepts, to test that limit */

typedef struct mw_tensor {
    char *name;
    char dtype[16];       /* written as is; unknown names get 4 zero bytes per element */
    size_t ndim;
    size_t shape[MW_MAX_DIMS];
    size_t count;         /* product of shape */
    float *values;        /* count values, encoded in dtype when written */
    int fixed_offsets;    /* 1: begin and end are written as given (see mw_set_offsets) */
    uint64_t begin, end;  /* within the data section; filled by mw_layout otherwise */
    int overlaps_previous; /* laid out one byte before the previous tensor's end */
} mw_tensor;

typedef struct mw_model {
    tessera_config config;  /* written to config.json */
    char *config_text;      /* when set, written to config.json instead */
    char *languages;        /* when set (malloc'd), config.json's "languages" object */
    mw_tensor *tensors;     /* in file order */
    size_t n_tensors, cap;
    size_t truncate_bytes;  /* removed from the end of model.safetensors */
    unsigned seed;
} mw_model;

/* d_model 8, 2 heads, d_ff 12, 1 encoder + 1 decoder layer, vocab 11 / 13,
 * max_positions 16, other keys at their defaults. */
void mw_tiny_config(tessera_config *cfg);

/* Every tensor docs/model-format.md requires for cfg (no optional ones), F32, with
 * reproducible random values that are multiples of 1/128, in [0.5, 1.5] for
 * norm weights and [-1, 1] otherwise: exact in F16 and BF16, so converting
 * dtypes changes no value. */
mw_model *mw_model_new(const tessera_config *cfg, unsigned seed);
/* mw_model_new(mw_tiny_config) */
mw_model *mw_model_tiny(unsigned seed);
void mw_model_free(mw_model *m);

/* Adds positional_encoding.pos_embedding [max_positions, 1, d_model] and the
 * final encoder and decoder norms. */
void mw_add_optional_tensors(mw_model *m);

/* Adds a tensor with random values (F32). */
mw_tensor *mw_add(mw_model *m, const char *name, size_t ndim, const size_t *shape);
/* The tensor called name; aborts the test when absent. */
mw_tensor *mw_find(mw_model *m, const char *name);
void mw_drop(mw_model *m, const char *name);
/* New shape, new random values: mw_set_shape(m, "generator.bias", 1, (size_t[]){12}). */
void mw_set_shape(mw_model *m, const char *name, size_t ndim, const size_t *shape);
/* "F32", "F16", "BF16", "I32", ... or any string at all. */
void mw_set_dtype(mw_model *m, const char *name, const char *dtype);
/* 1 for the tensors docs/model-format.md lets be I8: a 2-D "<layer>.weight" other
 * than an embedding, or an attention's in_proj_weight. */
int mw_is_linear_weight(const mw_tensor *t);
/* Stores linear weight `name` as I8 (each value v written as lround(100 v),
 * so |q| <= 100 for the default values) and adds its F32 scale tensor
 * "<name>_scale", scale r = 0.01 (1 + r % 3); returns the scale tensor. The
 * weight's float values are left as they were. */
mw_tensor *mw_quantize_i8(mw_model *m, const char *name);
/* data_offsets written as given, whatever the tensor's size. */
void mw_set_offsets(mw_model *m, const char *name, uint64_t begin, uint64_t end);
/* Moves `second` right after `first` in the file and makes it start one byte
 * before `first` ends, keeping its size (both must be non-empty). */
void mw_overlap(mw_model *m, const char *first, const char *second);
/* config.json gets exactly this text. */
void mw_set_config_text(mw_model *m, const char *text);

/* Assigns data offsets to the tensors without fixed ones, in file order;
 * returns the size of the data section. */
uint64_t mw_layout(mw_model *m);
/* Size in bytes of one element of a dtype (4 for unknown names). */
size_t mw_dtype_size(const char *dtype);

/* config.json and model.safetensors in dir (which must exist). */
void mw_write(mw_model *m, const char *dir);
void mw_write_safetensors(mw_model *m, const char *path);
/* The config.json text for cfg (every key written); malloc'd. */
char *mw_config_json(const tessera_config *cfg);

/* A safetensors file made by hand: declared_len as the header length, the
 * header text, then data_bytes bytes of zeros. */
void mw_write_raw_safetensors(const char *path, uint64_t declared_len, const char *header,
                              size_t data_bytes);
/* mw_write_raw_safetensors with the true header length. */
void mw_write_header_text(const char *path, const char *header, size_t data_bytes);

/* vocab.src.txt "s0".."s{N-1}" and vocab.tgt.txt "t0".."t{N-1}", one per line. */
void mw_write_vocab(const char *dir, const tessera_config *cfg);

/* dir + "/" + file, malloc'd. */
char *mw_path(const char *dir, const char *file);

#endif
