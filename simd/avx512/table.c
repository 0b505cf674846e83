/* The avx512 kernel table: the scalar table; linear layers and the FFN by the
 * portable GEMM frame (simd/gemm/) with this set's 12 x 32 microkernel,
 * packer and epilogue; then the set's own kernel for every other entry.
 * No entry is left to the scalar set. Built twice (simd/avx512/intrinsics.h):
 * natively, and emulated for the tests, as tsr_kernels_init_avx512_emulated. */
#include "tessera-config.h"
#include "simd/avx2/gemm-avx2.h"
#include "simd/avx512/avx512.h"
#include "simd/avx512/gemm-avx512.h"
#include "simd/cpu.h"
#include "simd/dispatch.h"
#include "simd/tuning.h"

/* Filled once by the table's init (dispatch.c serialises it), only read
 * after. */
static tsr_gemm_config gemm;
int tsr_avx512_prefetch_to_l2;

void tsr_kernels_init_avx512(tsr_kernels *t)
{
    tsr_kernels_init_scalar(t);
    tsr_avx512_prefetch_to_l2 = tsr_tuning_chosen(NULL)->prefetch_to_l2;
#ifdef TSR_AVX512_EMULATED
    t->name = "avx512-emulated";
#else
    t->name = "avx512";
#endif

    tsr_gemm_config_init(&gemm, TSR_AVX512_GEMM_MR, TSR_AVX512_GEMM_NR,
                         tsr_f32_gemm_ukernel_12x32__avx512, tsr_f32_gemm_epilogue__avx512);
    gemm.ukernel_bf16 = tsr_f32_gemm_ukernel_bf16_12x32__avx512;
    gemm.ukernel_final = tsr_f32_gemm_ukernel_final_12x32__avx512;
    gemm.pack_rows = tsr_f32_gemm_pack_rows_12__avx512;
    /* Weight pieces of twice L1, so that k = 512 (d_model) is one piece on
     * 32 and 48 KB L1s: every tile is then the fused final one and no
     * partial sums go through the block; the tiles after the first read
     * the piece from L2, 128 bytes in 12 cycles, a fraction of what L2
     * gives. Zen 5, median of 24 alternated pairs: 512 rows x (512, 1536,
     * 2048) x 512 +1.3, +2.3, +1.8 %, 128 rows +1.7 and +2.2 % at n = 1536
     * and 2048 but -1.1 % at 512, k = 2048 (two pieces) +0.3 to +1.0 %. The
     * avx2 set, measured alike with twice L1, was unchanged (within
     * 0.4 %), so its pieces stay at L1. int8 pieces are sized from L1
     * itself (l1_bytes), not from this. */
    gemm.kc *= 2;
    /* int8: the VNNI kernel (emulated: always); on AVX-512 CPUs without VNNI
     * (Skylake-SP) the avx2 set's kernel, deliberately: AVX-512BW has no
     * vpsignb, and its 16-column panels divide this set's 32-column split. */
#if defined(TSR_AVX512_EMULATED)
    tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_12x32__avx512vnni);
#elif defined(HAVE_KERNELS_AVX512_VNNI)
    if (tsr_cpu_features_get()->avx512vnni)
        tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_12x32__avx512vnni);
#endif
#ifdef HAVE_KERNELS_AVX2
    tsr_gemm_add_i8_kernel(&gemm, &tsr_i8_gemm_4x16__avx2);
    /* (Without the avx2 set, --disable-avx2, the portable row loops stay.) */
    gemm.i8_abs_max = tsr_i8_abs_max__avx2;
    gemm.i8_quantize = tsr_i8_quantize__avx2;
    gemm.i8_dequantize = tsr_i8_dequantize__avx2;
#endif
    gemm.i8_epilogue = tsr_i8_gemm_epilogue__avx512;
    tsr_gemm_bind(t, &gemm);

    t->attention = tsr_f32_attention__avx512;
    t->add_layernorm = tsr_f32_add_layernorm__avx512;
    t->activate = tsr_f32_activate__avx512;
    t->log_softmax = tsr_f32_log_softmax__avx512;
    t->logsumexp = tsr_f32_logsumexp__avx512;
    t->argmax = tsr_f32_argmax__avx512;
    t->embed = tsr_f32_embed__avx512;
    t->f16_to_f32 = tsr_f16_to_f32__avx512;
    t->bf16_to_f32 = tsr_bf16_to_f32__avx512;
}
