/*
 * The avx2 set's GEMM: the portable frame (simd/gemm/) run with the 6 x 16
 * AVX2 microkernel, the AVX2 epilogue and the AVX2 packer of 6-row panels. The table's entries take no config,
 * so each is a one-line wrapper passing this set's config, which
 * tsr_avx2_gemm_fill computes once (under the dispatch lock) and which is only
 * read afterwards.
 */
#include "simd/avx2/gemm-avx2.h"

static tsr_gemm_config config;

static size_t pack_floats(size_t n, size_t k)
{
    return tsr_gemm_pack_floats(&config, n, k);
}

static void pack_linear(const float *w, size_t n, size_t k, float *panels)
{
    tsr_gemm_pack_linear(&config, w, n, k, panels);
}

static void linear(const tsr_linear_args *a)
{
    tsr_gemm_linear(&config, a);
}

static void ffn(const tsr_ffn_args *a)
{
    tsr_gemm_ffn(&config, a);
}

void tsr_avx2_gemm_fill(tsr_kernels *t)
{
    tsr_gemm_config_init(&config, 6, 16, tsr_f32_gemm_ukernel_6x16__avx2,
                         tsr_f32_gemm_epilogue__avx2);
    config.pack_rows = tsr_f32_gemm_pack_rows_6__avx2;
    t->linear_n_align = config.nr;
    t->pack_floats = pack_floats;
    t->pack_linear = pack_linear;
    t->linear = linear;
    t->ffn_block_rows = config.ffn_block_rows;
    t->ffn = ffn;
}
