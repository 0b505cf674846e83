/*
 * Helpers every width-generic kernel of simd/frame/ shares, written over the
 * including set's vector vocabulary (VEC_*, simd/<set>/vec.h): a vector that
 * is either whole or the masked tail of a row. `tail` is a constant where
 * these are inlined, so each copy is one kind of access, never a branch.
 */
#ifndef TSR_SIMD_FRAME_VEC_PARTS_H
#define TSR_SIMD_FRAME_VEC_PARTS_H

#include <stddef.h>

static inline __attribute__((always_inline)) vec_t load_part(const float *p, int tail,
                                                             vec_mask_t mask)
{
    return tail ? VEC_LOAD_TAIL(p, mask) : VEC_LOADU(p);
}

static inline __attribute__((always_inline)) void store_part(float *p, int tail, vec_mask_t mask,
                                                             vec_t v)
{
    if (tail)
        VEC_STORE_TAIL(p, mask, v);
    else
        VEC_STOREU(p, v);
}

#endif
