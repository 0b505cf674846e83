/*
 * The same GEMM through the libraries a reader would compare tessera with,
 * when configure found them: OpenBLAS (cblas_sgemm) and oneDNN (dnnl_sgemm).
 * Perf only: libtessera never links them.
 *
 * Both compute y = x W^T with W [n][k] row-major, as PyTorch stores a linear
 * layer, so W is the transposed operand (transB). They do no bias, no
 * activation and no residual; tessera's lines include those (a few adds per
 * output, nothing next to the k multiply-adds behind each).
 */
#include <stdio.h>
#include <stdlib.h>

#include "tessera-config.h"
#include "perf/perf.h"

#ifdef HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef HAVE_DNNL
#include <dnnl.h>
#endif

typedef void (*peer_gemm_fn)(size_t m, size_t n, size_t k, const float *x, const float *w,
                             float *y);

#ifdef HAVE_OPENBLAS
static void openblas_gemm(size_t m, size_t n, size_t k, const float *x, const float *w, float *y)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0f, x, (int)k,
                w, (int)k, 0.0f, y, (int)n);
}
#endif

#ifdef HAVE_DNNL
static void onednn_gemm(size_t m, size_t n, size_t k, const float *x, const float *w, float *y)
{
    /* dnnl_sgemm takes row-major operands. */
    dnnl_status_t s = dnnl_sgemm('N', 'T', (dnnl_dim_t)m, (dnnl_dim_t)n, (dnnl_dim_t)k, 1.0f, x,
                                 (dnnl_dim_t)k, w, (dnnl_dim_t)k, 0.0f, y, (dnnl_dim_t)n);
    if (s != dnnl_success) {
        fprintf(stderr, "tessera-perf: dnnl_sgemm failed with status %d\n", (int)s);
        exit(1);
    }
}
#endif

static const struct {
    const char *name;
    peer_gemm_fn gemm;
} peers[] = {
#ifdef HAVE_OPENBLAS
    {"openblas", openblas_gemm},
#endif
#ifdef HAVE_DNNL
    {"onednn", onednn_gemm},
#endif
    {NULL, NULL},
};

size_t perf_peer_names(const char *names[PERF_MAX_PEERS])
{
    size_t n = 0;
    while (peers[n].name && n < PERF_MAX_PEERS) {
        names[n] = peers[n].name;
        n++;
    }
    return n;
}

void perf_peer_gemm(size_t p, size_t m, size_t n, size_t k, const float *x, const float *w,
                    float *y)
{
    peers[p].gemm(m, n, k, x, w, y);
}
