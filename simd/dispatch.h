/* Choosing the kernel set: once, at start-up, the best set that both this
 * build and this CPU have, unless TESSERA_ISA names one. */
#ifndef TSR_SIMD_DISPATCH_H
#define TSR_SIMD_DISPATCH_H

#include <stddef.h>

#include "simd/kernels.h"
#include "simd/sets.h" /* the sets: tsr_kernel_sets, their initialisers */

/* The table of the named set. Returns NULL and writes why into `why` (for
 * example "not built into this tessera" or "this CPU lacks avx512bw") when the
 * set cannot run here. Tables are built once and are never freed. */
const tsr_kernels *tsr_kernels_lookup(const char *name, char *why, size_t why_len);

/* The set tessera uses: TESSERA_ISA if set (an unknown or unavailable set is
 * an error, never a silent fallback), otherwise the best available one.
 * Returns NULL with a one-line message in err on error. The choice is made on
 * the first call and remembered. */
const tsr_kernels *tsr_kernels_select(char *err, size_t err_len);

#endif
