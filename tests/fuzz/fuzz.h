/* Fuzz targets (tests/fuzz/README.md): each file defines the libFuzzer entry
 * point and its name; a target is built either against libFuzzer
 * (./configure --enable-fuzzing, clang) or against replay.c, a plain main
 * that feeds it every file of its corpus, which is how make check runs it. */
#ifndef TSR_TESTS_FUZZ_FUZZ_H
#define TSR_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The target's name: its corpus is tests/fuzz/corpus/NAME. */
extern const char fuzz_target_name[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private temporary directory for the process (created on first use,
 * removed at exit), and `name` in it written with exactly these bytes; the
 * path stays valid until the next call with the same name. Aborts on a
 * system error: that is the harness failing, not the target. */
const char *fuzz_temp_dir(void);
const char *fuzz_write_file(const char *name, const void *data, size_t size);

/* Traps unless the failure message `err` is one line of printable ASCII
 * after its first skip bytes (a path of the harness's, as it is): whatever
 * a file says is quoted escaped (base/quote.h), so no input can put a
 * control byte, a newline or a byte of UTF-8 into a log line. */
void fuzz_check_message(const char *err, size_t skip);

/* The model in dir (loaded once, f32), when this build can read its text:
 * NULL in a build without SentencePiece. Aborts when it cannot load. */
struct tessera_model;
const struct tessera_model *fuzz_text_model(const char *dir);

/* The model targets' input: a 4-byte little-endian length L, then L bytes
 * (*head), then the rest (*tail). 0 when the input is too short for that. */
int fuzz_split_input(const uint8_t *data, size_t size, const uint8_t **head, size_t *head_len,
                     const uint8_t **tail, size_t *tail_len);

/* Loads the model directory fuzz_temp_dir() and uses it (fuzz_use_model);
 * a refusal must be one printable line after the directory's path. */
void fuzz_load_and_use(void);

/* Translates (greedy, and beam 2 with alignments), scores and encodes a
 * 2-token sentence on m, on a runtime of one thread made once, ignoring
 * refusals: what a model that loads must survive. */
void fuzz_use_model(const struct tessera_model *m);

#endif
