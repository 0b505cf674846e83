/*
 * Packing for the GEMM frame (layouts in simd/gemm/gemm.h): the weights once,
 * at load, into NR-wide k-major panels; rows of x, on every large call, into
 * MR-row k-major panels. Plain copies; no arithmetic touches the values, so
 * packing never changes a result.
 */
#include <string.h>

#include "simd/gemm/gemm.h"

static size_t panels_of(size_t n, size_t nr)
{
    return (n + nr - 1) / nr;
}

size_t tsr_gemm_pack_floats(const tsr_gemm_config *cfg, size_t n, size_t k)
{
    return panels_of(n, cfg->nr) * cfg->nr * k;
}

void tsr_gemm_pack_linear(const tsr_gemm_config *cfg, const float *w, size_t n, size_t k,
                          float *panels)
{
    const size_t nr = cfg->nr;

    for (size_t j = 0; j < panels_of(n, nr); j++) {
        float *panel = panels + j * nr * k;
        size_t cols = n - j * nr < nr ? n - j * nr : nr;
        /* Read W row by row (contiguous), write each into its column of the
         * panel; the padding columns stay zero. */
        if (cols < nr)
            memset(panel, 0, nr * k * sizeof *panel);
        for (size_t c = 0; c < cols; c++) {
            const float *w_row = w + (j * nr + c) * k;
            for (size_t p = 0; p < k; p++)
                panel[p * nr + c] = w_row[p];
        }
    }
}

/* One panel of exactly `rows` rows (rows <= mr); the rest of the panel's
 * rows are zero. Reading a row at a time keeps each read stream sequential;
 * the writes land in the same few lines of the panel, which sit in L1. */
static void pack_panel(const float *x, size_t ldx, size_t rows, size_t k, size_t mr,
                       float *panel)
{
    if (rows < mr)
        memset(panel, 0, mr * k * sizeof *panel);
    for (size_t i = 0; i < rows; i++) {
        const float *x_row = x + i * ldx;
        float *dst = panel + i;
        for (size_t p = 0; p < k; p++)
            dst[p * mr] = x_row[p];
    }
}

void tsr_gemm_pack_rows(const float *x, size_t ldx, size_t m, size_t k, size_t mr, float *packed)
{
    for (size_t i0 = 0; i0 < m; i0 += mr) {
        size_t rows = m - i0 < mr ? m - i0 : mr;
        pack_panel(x + i0 * ldx, ldx, rows, k, mr, packed + i0 * k);
    }
}
