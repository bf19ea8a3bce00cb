
/*
 * fairgate: the element-wise kernels that architectures beyond llama's
 * need besides GeGLU (in fg_kernels_cpu.c beside SwiGLU, whose vector
 * exponential it shares): soft-capping (gemma2's final logits) and a
 * scale (gemma's embedding), once per step each, in plain C.
 */


#include <math.h>

#include "fg_kernels.h"


void
fg_k_softcap(float *x, size_t n, float cap)
{
    size_t  i;
    float   inv;

    inv = 1.0f / cap;

    for (i = 0; i < n; i++) {
        x[i] = cap * tanhf(x[i] * inv);
    }
}


void
fg_k_scale(float *x, size_t n, float s)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        x[i] *= s;
    }
}
