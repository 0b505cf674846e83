/* The built-in shapes: the layers of Transformer-base and -big. */
#include "perf/perf.h"

const perf_model perf_models[] = {
    {"base", 512, 2048, 8000},
    {"big", 1024, 4096, 8000},
};
const size_t perf_model_count = sizeof perf_models / sizeof perf_models[0];

const size_t perf_rows[] = {1, 4, 16, 128, 512};
const size_t perf_rows_count = sizeof perf_rows / sizeof perf_rows[0];
const size_t perf_quick_rows[] = {1, 16};
const size_t perf_quick_rows_count = sizeof perf_quick_rows / sizeof perf_quick_rows[0];
