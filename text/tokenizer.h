/* A model's text sides (docs/model-format.md section 3): for the source and
 * the target, the vocabulary (pieces <-> the model's ids) and the
 * SentencePiece model that splits text into pieces and joins them back.
 * Loaded with the model, immutable after: any number of threads may use it. */
#ifndef TSR_TEXT_TOKENIZER_H
#define TSR_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"
#include "text/spm.h"

typedef struct tsr_text_side {
    tessera_vocabulary *vocab; /* NULL: the side has no tokenizer */
    const tsr_spm *spm;        /* NULL in a build without SentencePiece */
    const char *file;          /* the tokenizer's file name, for messages */
    int32_t unk_id;
    int32_t dropped[3]; /* bos_id (when the decoder starts from it), eos_id, pad_id:
                           left out when detokenizing */
} tsr_text_side;

typedef struct tsr_model_text {
    tsr_text_side side[2];  /* [TESSERA_SOURCE], [TESSERA_TARGET] */
    tsr_spm *owned[2];      /* the loaded SentencePiece models (one when shared) */
} tsr_model_text;

/* Loads what config names from dir (vocab.src.txt, vocab.tgt.txt and the
 * tokenizer files); *text stays NULL when config names no tokenizer. Errors
 * name the file. */
int tsr_model_text_load(const char *dir, const tessera_config *config, tsr_model_text **text,
                        char *err, size_t err_len);
/* A model's text from vocabularies alone (a CTranslate2 directory's): taken
 * over, the same one for both sides when shared (vocab[1] may be NULL for an
 * encoder alone); no tokenizer, so pieces and ids only. On failure the
 * vocabularies are freed. */
int tsr_model_text_adopt(tessera_vocabulary *vocab[2], const tessera_config *config,
                         tsr_model_text **text, char *err, size_t err_len);
void tsr_model_text_free(tsr_model_text *text);

/* Tokenizes valid UTF-8 text (checked here: the error names the byte
 * offset) into out (ids, and pieces when with_pieces). */
int tsr_text_tokenize(const tsr_text_side *side, const char *text, size_t len, int with_pieces,
                      tessera_tokenized *out, char *err, size_t err_len);

/* Decodes pieces (the dropped ids' pieces left out by the caller); a NUL
 * they decode to (byte piece <0x00>) is written as a space. */
int tsr_text_decode(const tsr_text_side *side, const char *const *pieces, size_t n, char **text,
                    char *err, size_t err_len);

/* The byte offset of the first invalid UTF-8 sequence or NUL byte of text,
 * or len when it is all valid (no overlong forms, no surrogates, nothing past
 * U+10FFFF). */
size_t tsr_utf8_invalid_at(const char *text, size_t len);

#endif
