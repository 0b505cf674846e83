/* Argos Translate packages (the models of LibreTranslate): a folder holding
 * metadata.json, model/ (a CTranslate2 model directory) and
 * sentencepiece.model, or the same folder zipped as a .argosmodel file. The
 * package's SentencePiece model tokenizes both sides through the CTranslate2
 * shared vocabulary, so a package reads and writes text. Its sentence
 * splitter (stanza) is not run: one line in, one line out. */
#ifndef TSR_CORE_MODEL_ARGOS_PACKAGE_H
#define TSR_CORE_MODEL_ARGOS_PACKAGE_H

#include <stddef.h>

#include "core/tessera.h"

/* Whether path is a package: a directory with metadata.json and a model/
 * directory, or a regular file that is a zip (its first bytes "PK\3\4"). */
int tsr_argos_is_package(const char *path);

/* As tessera_model_load_with, for a path tsr_argos_is_package accepts. A
 * zip is unpacked into a private temporary directory (its metadata.json,
 * tokenizer and model/ files only), loaded and removed. What tessera does
 * not run is refused by name: a BPE tokenizer (bpe.model), a target_prefix
 * in metadata.json. */
int tsr_argos_package_load(const char *path, const tessera_load_options *options,
                           tessera_model **model, char *err, size_t err_len);

#endif
