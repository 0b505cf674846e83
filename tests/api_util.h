/* Helpers for the programs that use the C API directly (test_api, and
 * api_threads, which ThreadSanitizer runs without Criterion): a golden
 * model's inputs and every answer a runtime gives for them, as text. */
#ifndef TSR_TESTS_API_UTIL_H
#define TSR_TESTS_API_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "core/tessera.h"

#define API_MODEL "prenorm-gelu-f16"
#define API_MAX_SENTENCES 64

typedef struct api_inputs {
    tessera_tokens src[API_MAX_SENTENCES], tgt[API_MAX_SENTENCES];
    int32_t ids[API_MAX_SENTENCES][256], tgt_ids[API_MAX_SENTENCES][256];
    size_t n;
} api_inputs;

/* The golden model's translate.in, and a target for each source (some
 * empty). 0, or -1 with a message in err. */
int api_read_inputs(const char *srcdir, api_inputs *in, char *err, size_t err_len);

/* Loads the golden model; 0, or a status with a message in err. */
int api_load_model(const char *srcdir, tessera_model **m, char *err, size_t err_len);

/* Makes runtime `worker` of `workers` with `threads` threads. */
int api_runtime(int workers, int worker, int threads, tessera_runtime **rt, char *err,
                size_t err_len);

/* Everything a runtime answers for the inputs, as text with the bits of every
 * float (greedy ids and scores, beam 4 with 2 best, score log-probs), so that
 * runs compare with strcmp; NULL with a message in err on failure. */
char *api_answers(tessera_runtime *rt, const tessera_model *m, const api_inputs *in, char *err,
                  size_t err_len);

#endif
