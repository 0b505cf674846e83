/* x = act(x) in place: ReLU, GELU (erf form) or SiLU, in float as PyTorch. */
#include "simd/scalar/scalar.h"

void tsr_f32_activate__scalar(float *x, size_t n, tsr_activation act)
{
    if (act == TSR_ACT_NONE)
        return;
    for (size_t i = 0; i < n; i++)
        x[i] = tsr_f32_activate_one__scalar(x[i], act);
}
