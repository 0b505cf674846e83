/* x = act(x) in place: the shared loop (simd/frame/f32-activation.h) over
 * the avx512 vocabulary, 16 lanes a zmm vector, tails through opmasks. */
#include "simd/avx512/vec.h"
#include "simd/frame/f32-activation.h"

void tsr_f32_activate__avx512(float *x, size_t n, tsr_activation act)
{
    activation_frame(x, n, act);
}
