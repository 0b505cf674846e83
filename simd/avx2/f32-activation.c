/* x = act(x) in place: the shared loop (simd/frame/f32-activation.h) over
 * the avx2 vocabulary, 8 lanes a vector, tails through vmaskmovps. */
#include "simd/avx2/vec.h"
#include "simd/frame/f32-activation.h"

void tsr_f32_activate__avx2(float *x, size_t n, tsr_activation act)
{
    activation_frame(x, n, act);
}
