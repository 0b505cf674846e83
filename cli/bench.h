/* The parts of `tessera bench` with a file of their own. */
#ifndef TSR_CLI_BENCH_H
#define TSR_CLI_BENCH_H

#include <stddef.h>

#include "core/tessera.h"

/* Writes config.json and an F32 model.safetensors of reproducible random
 * weights for the encoder-decoder `c` into the existing directory `dir`.
 * 0, or -1 with a message naming the file. */
int cli_bench_write_model(const tessera_config *c, const char *dir, char *err, size_t err_len);

/* The load case: loads the model in `dir` with `load` (its threads field
 * set) `repeat` times and reads its model.safetensors as many times from
 * the page cache into fresh huge-page memory, interleaved, and prints one
 * line with the best of each: load_ms=, read_ms= and ratio= (load over
 * read). 0, or 1 after printing the error. */
int cli_bench_load(const char *dir, const char *label, const tessera_load_options *load,
                   int threads, int repeat);

#endif
