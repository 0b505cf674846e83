/* The position tables a model computes when its file holds none (config key
 * position_encoding, docs/model-format.md). */
#ifndef TSR_CORE_MODEL_SINUSOID_H
#define TSR_CORE_MODEL_SINUSOID_H

#include <stddef.h>

#include "core/tessera.h"

/* Columns [j0, j1) of the `rows` x d sinusoid table pe of `form`, in double
 * and rounded once. The columns are independent: the load computes a table
 * in pieces of columns on its threads, with the same bits in any split. */
void tsr_sinusoid_columns(float *pe, size_t rows, size_t d, tessera_position_encoding form,
                          size_t j0, size_t j1);

#endif
