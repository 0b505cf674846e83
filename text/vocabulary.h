/* A vocabulary file: one piece per line, line number = id (from 0). The
 * library's, behind tessera_vocabulary_* and the model's tokenizers. */
#ifndef TSR_TEXT_VOCABULARY_H
#define TSR_TEXT_VOCABULARY_H

#include "core/tessera.h"

/* The library's own use of it (no argument checks): the id of a piece, or
 * -1; the piece of an id < size. */
int32_t tsr_vocabulary_find(const tessera_vocabulary *v, const char *piece, size_t len);
const char *tsr_vocabulary_piece(const tessera_vocabulary *v, int32_t id);

/* A vocabulary of `size` pieces (NUL-terminated strings, each pointing into
 * `bytes`), both blocks from tsr_malloc and taken over: freed with the
 * vocabulary, or here when it fails (TESSERA_ERR_NOMEM). A piece that
 * repeats keeps its first id. */
int tsr_vocabulary_adopt(char *bytes, char **pieces, size_t size, tessera_vocabulary **out);

#endif
