/* x = act(x) in place: the shared loop (simd/frame/f32-activation.h) over
 * the neon vocabulary, 4 lanes a vector, tails through partial loads and
 * stores. */
#include "simd/neon/vec.h"
#include "simd/frame/f32-activation.h"

void tsr_f32_activate__neon(float *x, size_t n, tsr_activation act)
{
    activation_frame(x, n, act);
}
