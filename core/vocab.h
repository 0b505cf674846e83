/* Token vocabularies for --tokens: one token per line, line number = id. */
#ifndef TSR_CORE_VOCAB_H
#define TSR_CORE_VOCAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct tsr_vocab tsr_vocab;

/* Loads `path`; it must hold exactly `size` lines (ids 0..size-1). Errors
 * name the file. */
tsr_vocab *tsr_vocab_load(const char *path, size_t size, char *err, size_t err_len);
void tsr_vocab_free(tsr_vocab *v);

/* The id of a token (len bytes, not NUL-terminated), or -1 when unknown.
 * The first of duplicate lines wins. */
int32_t tsr_vocab_find(const tsr_vocab *v, const char *token, size_t len);

/* The token of an id < size. */
const char *tsr_vocab_token(const tsr_vocab *v, int32_t id);

#endif
