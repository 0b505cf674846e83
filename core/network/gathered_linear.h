/* A linear layer made of some output rows of another: the output
 * projection restricted to a vocabulary shortlist's candidates, packed
 * alone so that the generator's GEMM streams only their weights. */
#ifndef TSR_CORE_NETWORK_GATHERED_LINEAR_H
#define TSR_CORE_NETWORK_GATHERED_LINEAR_H

#include <stddef.h>
#include <stdint.h>

#include "simd/kernels.h"

typedef struct tsr_gathered_linear {
    tsr_packed_linear w; /* count outputs; panels and bias owned here */
    float *bias;         /* [count], or NULL when the source has none */
} tsr_gathered_linear;

/* Rows ids[0..count) of src (each < src->n; count >= 1) packed by ks as
 * src's type: the bytes packing those rows alone would give (f32, bf16), and
 * for int8 the same values and scales, so each output column is computed
 * with exactly the bits src's column gives (simd/kernels.h: an element's
 * chain depends on k alone). On `threads` threads of a team of its own (a
 * block of rows each at a time; the bytes do not depend on how many).
 * TESSERA_ERR_NOMEM when out of memory; *out is then empty. */
int tsr_gathered_linear_pack(const tsr_kernels *ks, const tsr_packed_linear *src,
                             const int32_t *ids, size_t count, int threads,
                             tsr_gathered_linear *out);

/* What tsr_gathered_linear_pack holds at most for up to `count` rows of
 * src on `threads` threads (core/runtime/plan.h): the packed rows and their
 * bias, and each thread's block of scratch. */
size_t tsr_gathered_linear_plan(const tsr_kernels *ks, const tsr_packed_linear *src,
                                size_t count, int threads);
void tsr_gathered_linear_free(tsr_gathered_linear *g);

#endif
