
/*
 * fairgate: activations rounded as a Q8_0 product sees them
 * (fg_kernels_q8x.h says why).
 *
 * The scale and the rounding are those of the integer path of
 * fg_kernels_mm.c: a float scale amax / 127, products by 127 / amax
 * rounded to nearest, ties to even (lrintf in the default mode).
 */


#include <math.h>

#include "fg_kernels.h"
#include "fg_kernels_q8x.h"


void
fg_k_q8_round(float *y, const float *x, size_t n)
{
    size_t  i, j;
    float   amax, d, id;

    for (i = 0; i + FG_K_QK8_0 <= n; i += FG_K_QK8_0) {
        amax = 0.0f;

        for (j = 0; j < FG_K_QK8_0; j++) {
            amax = fmaxf(amax, fabsf(x[i + j]));
        }

        d = amax / 127.0f;
        id = amax != 0.0f ? 127.0f / amax : 0.0f;

        for (j = 0; j < FG_K_QK8_0; j++) {
            y[i + j] = d * (float) lrintf(x[i + j] * id);
        }
    }
}
