
/*
 * fairgate: the element-wise kernels that architectures beyond llama's
 * need: GeGLU (gemma's feed-forward), soft-capping (gemma2's attention
 * scores and final logits) and a scale (gemma's embedding).  Each is a
 * few operations per value next to the matrix products around it, in
 * plain C; expf() and tanhf() are most of their cost.
 */


#include <math.h>

#include "fg_kernels.h"


/* sqrt(2 / pi) */
#define FG_K_GELU_C    0.7978845608028654f
#define FG_K_GELU_A    0.044715f


/*
 * 0.5 (1 + tanh(z)) is 1 / (1 + e^-2z): no cancellation where tanh nears
 * -1 (gelu(-12) keeps its relative precision), and e^-2z overflowing to
 * infinity gives the -0 that gelu tends to.
 */
void
fg_k_geglu(float *y, const float *gate, const float *up, size_t n)
{
    size_t  i;
    float   g;

    for (i = 0; i < n; i++) {
        g = gate[i];
        y[i] = g / (1.0f + expf(-2.0f * FG_K_GELU_C
                                * (g + FG_K_GELU_A * g * g * g)))
               * up[i];
    }
}


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
