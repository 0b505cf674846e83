/*
 * Scratch memory private to the calling thread, for kernels that need a
 * buffer the kernel table's calls do not pass (the GEMM frame's packed rows
 * of x, the int8 layer's quantized rows): one buffer per slot and thread,
 * grown (never shrunk) as calls need, 64-byte aligned, freed when the thread
 * exits. Allocation happens only while the sizes a thread sees still grow.
 */
#ifndef TSR_SIMD_THREAD_SCRATCH_H
#define TSR_SIMD_THREAD_SCRATCH_H

#include <stddef.h>

typedef enum tsr_scratch_slot {
    TSR_SCRATCH_GEMM_PACK = 0, /* simd/gemm/driver.c */
    TSR_SCRATCH_I8_ROWS,       /* simd/scalar/i8-linear.c */
    TSR_SCRATCH_SLOTS,
} tsr_scratch_slot;

/* At least `bytes` bytes of this thread's buffer `slot` (contents not kept
 * when it grows), or NULL when memory is short: the caller then takes a path
 * that needs no buffer. */
void *tsr_thread_scratch(tsr_scratch_slot slot, size_t bytes);

#endif
