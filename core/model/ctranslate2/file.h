/* Reading a CTranslate2 model.bin (binary versions 1 to 6), as its layout is
 * documented by CTranslate2's writer (python/ctranslate2/specs/model_spec.py):
 * little-endian throughout,
 *
 *   u32 version
 *   version >= 2: string spec name, u32 spec revision (else revision 1)
 *   u32 n_variables, then per variable:
 *     string name, u8 rank, u32 dims[rank],
 *     version >= 4: u8 dtype id, u32 bytes; else u8 item size, u32 count
 *     the values, row-major
 *   version >= 3: u32 n_aliases, then per alias: string alias, string target
 *
 * where a string is a u16 length (its NUL included) and its bytes. Only the
 * table is read when the file is opened; values are read when wanted, so the
 * load never holds a copy of the whole file (as for safetensors). */
#ifndef TSR_CORE_MODEL_CTRANSLATE2_FILE_H
#define TSR_CORE_MODEL_CTRANSLATE2_FILE_H

#include <stddef.h>
#include <stdint.h>

/* The dtype ids of binary version 4 on (CTranslate2's DataType order). */
typedef enum tsr_ct2_dtype {
    TSR_CT2_F32 = 0,
    TSR_CT2_I8 = 1,
    TSR_CT2_I16 = 2,
    TSR_CT2_I32 = 3,
    TSR_CT2_F16 = 4,
    TSR_CT2_BF16 = 5,
} tsr_ct2_dtype;

#define TSR_CT2_MAX_RANK 4
#define TSR_CT2_VERSION_MAX 6

typedef struct tsr_ct2_variable {
    char *name; /* after the v1 renaming, see tsr_ct2_open */
    tsr_ct2_dtype dtype;
    size_t rank;
    size_t shape[TSR_CT2_MAX_RANK];
    size_t count;  /* product of shape, 1 for a scalar */
    size_t offset; /* of its first value in the file: an alias has its target's */
    size_t bytes;
    int used; /* set by the readers of the spec: a variable nobody used is refused */
} tsr_ct2_variable;

typedef struct tsr_ct2_file {
    int fd, fd_open;
    size_t size;
    uint32_t version, revision;
    char spec[128];
    tsr_ct2_variable *vars; /* variables, then aliases; sorted by name */
    size_t n_vars;
} tsr_ct2_file;

/* Opens and validates the table of `path`: the version (1..6), the spec
 * name, each variable's rank (0..4), dtype, payload size (count x item size)
 * and place inside the file, unique names, aliases naming a variable. Binary
 * version 1 files (spec revision 1 of a Transformer spec) carry OpenNMT-tf's
 * names, renamed here as CTranslate2 renames them
 * ("transformer/encoder/w_embs:0" becomes "encoder/embeddings/weight", ...). An alias of a variable also
 * aliases its "_scale". Errors name the variable or field, without the file
 * name (the caller prefixes it). */
int tsr_ct2_open(const char *path, tsr_ct2_file *f, char *err, size_t err_len);

/* The variable called `name` (an alias: a copy of its target's entry, the
 * same offset), or NULL. */
tsr_ct2_variable *tsr_ct2_find(const tsr_ct2_file *f, const char *name);

/* Copies `bytes` bytes of v's values from byte `first` into dst (several
 * threads may read at once). */
int tsr_ct2_read(const tsr_ct2_file *f, const tsr_ct2_variable *v, size_t first, size_t bytes,
                 void *dst, char *err, size_t err_len);

/* The bytes of one value of a dtype. */
size_t tsr_ct2_item_size(tsr_ct2_dtype dtype);
/* "float32", "int8", ... as CTranslate2 names them. */
const char *tsr_ct2_dtype_name(tsr_ct2_dtype dtype);

/* Frees the table and closes the file; safe on a zeroed or closed struct. */
void tsr_ct2_close(tsr_ct2_file *f);

#endif
