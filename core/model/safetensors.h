/* Reading a safetensors file: 8-byte little-endian header length, a JSON
 * header, then the raw little-endian tensor data. The file is read (never
 * mapped: see safetensors.c), whole or, for the model load, its header first
 * and each tensor when it is wanted; the header is validated strictly before
 * any tensor is handed out. */
#ifndef TSR_CORE_MODEL_SAFETENSORS_H
#define TSR_CORE_MODEL_SAFETENSORS_H

#include <stddef.h>

typedef enum tsr_dtype {
    TSR_DTYPE_F32,
    TSR_DTYPE_F16,
    TSR_DTYPE_BF16,
    TSR_DTYPE_I8,    /* quantized linear weights, with a F32 `_scale` tensor (docs/model-format.md) */
    TSR_DTYPE_OTHER, /* a valid safetensors dtype that tessera does not read (I64, F64, ...) */
} tsr_dtype;

#define TSR_MAX_DIMS 8

typedef struct tsr_tensor_info {
    char *name;
    tsr_dtype dtype;
    const char *dtype_name; /* as written in the file, e.g. "F16" */
    size_t ndim;
    size_t shape[TSR_MAX_DIMS];
    size_t count;      /* product of shape (1 for ndim 0) */
    const void *data;  /* into bytes, when the file was read whole, else NULL; may be unaligned */
    size_t offset;     /* of its first byte in the data section */
    size_t bytes;
} tsr_tensor_info;

typedef struct tsr_safetensors {
    unsigned char *bytes; /* the whole file, as read; NULL when opened for its table */
    size_t len;           /* bytes of the file when opened */
    int fd;               /* opened for its table (fd_open): the file, read by tsr_safetensors_read */
    int fd_open;
    size_t data_start;    /* the data section's offset in the file */
    tsr_tensor_info *tensors;
    size_t n_tensors;
} tsr_safetensors;

/* Reads and validates `path`: header length within the file, a JSON object
 * whose entries (other than "__metadata__", an object of strings) each have a
 * known dtype, a shape of non-negative integers and data_offsets [begin, end]
 * inside the data section with end - begin equal to the shape's byte size;
 * no two tensors overlap. On error returns -1 with a message naming the
 * tensor or field (without the file name: the caller prefixes it). */
int tsr_safetensors_open(const char *path, tsr_safetensors *st, char *err, size_t err_len);

/* The same checks, reading only the header: the file stays open and each
 * tensor is read when wanted, with tsr_safetensors_read (the model load,
 * which so never holds a copy of the whole file). */
int tsr_safetensors_open_table(const char *path, tsr_safetensors *st, char *err, size_t err_len);

/* Copies `bytes` bytes of tensor t from its byte `first` on into dst, from
 * the file (opened for its table; several threads may read at once) or the
 * bytes read. The range must lie inside the tensor. A file that has shrunk
 * since it was opened gives -1 and a message naming the tensor. */
int tsr_safetensors_read(const tsr_safetensors *st, const tsr_tensor_info *t, size_t first,
                         size_t bytes, void *dst, char *err, size_t err_len);

/* The tensor called `name`, or NULL. */
const tsr_tensor_info *tsr_safetensors_find(const tsr_safetensors *st, const char *name);

/* Frees the file's bytes and the table and closes the file; safe on a
 * zeroed or already-closed struct. */
void tsr_safetensors_close(tsr_safetensors *st);

#endif
