/* SentencePiece behind a C interface: the one place that knows its C++ API
 * (text/spm.cc, or text/spm_none.c in a build without it). Every exception
 * stays inside: a failed allocation is TESSERA_ERR_NOMEM, anything else a
 * message naming the model file. A loaded model is immutable: encoding and
 * decoding may run on any number of threads at once. */
#ifndef TSR_TEXT_SPM_H
#define TSR_TEXT_SPM_H

#include <stddef.h>

typedef struct tsr_spm tsr_spm;

/* 1 when this build has SentencePiece. */
int tsr_spm_available(void);

/* Loads a model from its serialized bytes (the .spm/.model file, read by the
 * caller); `name` names it in messages. */
int tsr_spm_load(const char *name, const void *bytes, size_t len, tsr_spm **spm, char *err,
                 size_t err_len);
void tsr_spm_free(tsr_spm *spm);

/* Receives each piece of an encoding in order; nonzero stops the encoding
 * and is returned. */
typedef int (*tsr_spm_piece_fn)(void *arg, const char *piece, size_t len);

/* Encodes valid UTF-8 text (len bytes, no NUL) into pieces, deterministically
 * (no sampling). */
int tsr_spm_encode(const tsr_spm *spm, const char *text, size_t len, tsr_spm_piece_fn piece,
                   void *arg, char *err, size_t err_len);

/* Decodes pieces to text: *text (NUL-terminated, *len bytes) is released
 * with tsr_free. */
int tsr_spm_decode(const tsr_spm *spm, const char *const *pieces, size_t n, char **text,
                   size_t *len, char *err, size_t err_len);

#endif
