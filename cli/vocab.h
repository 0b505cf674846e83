/* Token vocabularies for --tokens: one token per line, line number = id. */
#ifndef TSR_CLI_VOCAB_H
#define TSR_CLI_VOCAB_H

#include <stddef.h>
#include <stdint.h>

typedef struct cli_vocab cli_vocab;

/* Loads `path`; it must hold exactly `size` lines (ids 0..size-1). Errors
 * name the file. */
cli_vocab *cli_vocab_load(const char *path, size_t size, char *err, size_t err_len);
void cli_vocab_free(cli_vocab *v);

/* The id of a token (len bytes, not NUL-terminated), or -1 when unknown.
 * The first of duplicate lines wins. */
int32_t cli_vocab_find(const cli_vocab *v, const char *token, size_t len);

/* The token of an id < size. */
const char *cli_vocab_token(const cli_vocab *v, int32_t id);

#endif
