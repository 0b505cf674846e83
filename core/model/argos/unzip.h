/* Unpacking an .argosmodel (a zip) into a directory, through libzip (unzip.c,
 * or unzip_none.c in a build without it). */
#ifndef TSR_CORE_MODEL_ARGOS_UNZIP_H
#define TSR_CORE_MODEL_ARGOS_UNZIP_H

#include <stddef.h>

/* 1 when this build reads zips. */
int tsr_unzip_available(void);

/* Writes the package inside zip_path into dir (an empty directory): the
 * folder holding metadata.json (the zip's top level, or its one top folder),
 * its metadata.json, sentencepiece.model or bpe.model, and the files of its
 * model/ folder (no deeper). A name with "..", an absolute name, or a file
 * past max_bytes in all is refused. Errors name the zip's entry. */
int tsr_unzip_package(const char *zip_path, const char *dir, size_t max_bytes, char *err,
                      size_t err_len);

#endif
