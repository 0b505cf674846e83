/* Reading a safetensors file: 8-byte little-endian header length, a JSON
 * header, then the raw little-endian tensor data. The file is read whole (not
 * mapped: see safetensors.c); the header is validated strictly before any
 * tensor is handed out. */
#ifndef TSR_CORE_SAFETENSORS_H
#define TSR_CORE_SAFETENSORS_H

#include <stddef.h>

typedef enum tsr_dtype {
    TSR_DTYPE_F32,
    TSR_DTYPE_F16,
    TSR_DTYPE_BF16,
    TSR_DTYPE_I8,    /* quantized linear weights, with a F32 `_scale` tensor (INTERFACE.md) */
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
    const void *data;  /* into bytes; may be unaligned */
    size_t bytes;
} tsr_tensor_info;

typedef struct tsr_safetensors {
    unsigned char *bytes; /* the whole file, as read */
    size_t len;
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

/* The tensor called `name`, or NULL. */
const tsr_tensor_info *tsr_safetensors_find(const tsr_safetensors *st, const char *name);

/* Frees the file's bytes and the table; safe on a zeroed or already-closed struct. */
void tsr_safetensors_close(tsr_safetensors *st);

#endif
