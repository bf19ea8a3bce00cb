
/*
 * fairgate: ggml's quantized types in portable C, block by block, as
 * fg_kernels_types.c dispatches them: the dequantization of every type
 * (fg_kernels_dequant.c), and the reference quantization with ggml's own
 * rounding rules (fg_kernels_quant_ref.c for the 32-value blocks and the
 * activations, fg_kernels_quant_k.c for the k-quants).  Not part of the
 * interface.  Each takes nb whole blocks.
 */

#ifndef _FG_KERNELS_QUANT_REF_H_INCLUDED_
#define _FG_KERNELS_QUANT_REF_H_INCLUDED_


#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg_kernels.h"


/*
 * ggml's rounding of a float to the nearest int, ties to even, without a
 * call into libm (lrintf() is one without -ffast-math): adding 1.5 * 2^23
 * leaves the rounded integer in the low bits of the mantissa, as the FPU
 * rounds (to nearest even).  Exact for |f| < 2^22; larger values, which a
 * quantizer clamps anyway, take lrintf().
 */
static inline int
fg_k_nearest_int(float f)
{
    float    v;
    int32_t  i;

    if (!(fabsf(f) < 4194304.0f)) {
        return f != f ? 0 : (int) lrintf(f);
    }

    v = f + 12582912.0f;
    memcpy(&i, &v, sizeof(int32_t));

    return (i & 0x007fffff) - 0x00400000;
}


/* the value of largest magnitude, with its sign; the first on ties */
static inline float
fg_k_signed_max(const float *x, size_t n)
{
    size_t  i;
    float   amax, max;

    amax = 0.0f;
    max = 0.0f;

    for (i = 0; i < n; i++) {
        if (amax < fabsf(x[i])) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    }

    return max;
}


/* the 6-bit scale and min of sub-block j of Q4_K and Q5_K */
static inline void
fg_k_scale_min_k4(const uint8_t *q, size_t j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;

    } else {
        *sc = (uint8_t) ((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t) ((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}


void fg_k_dequant_q4_0(const void *src, float *y, size_t nb);
void fg_k_dequant_q4_1(const void *src, float *y, size_t nb);
void fg_k_dequant_q5_0(const void *src, float *y, size_t nb);
void fg_k_dequant_q5_1(const void *src, float *y, size_t nb);
void fg_k_dequant_q8_0(const void *src, float *y, size_t nb);
void fg_k_dequant_q8_1(const void *src, float *y, size_t nb);
void fg_k_dequant_q2_k(const void *src, float *y, size_t nb);
void fg_k_dequant_q3_k(const void *src, float *y, size_t nb);
void fg_k_dequant_q4_k(const void *src, float *y, size_t nb);
void fg_k_dequant_q5_k(const void *src, float *y, size_t nb);
void fg_k_dequant_q6_k(const void *src, float *y, size_t nb);
void fg_k_dequant_q8_k(const void *src, float *y, size_t nb);

void fg_k_quant_q4_0(const float *x, void *dst, size_t nb);
void fg_k_quant_q4_1(const float *x, void *dst, size_t nb);
void fg_k_quant_q5_0(const float *x, void *dst, size_t nb);
void fg_k_quant_q5_1(const float *x, void *dst, size_t nb);
void fg_k_quant_q8_0(const float *x, void *dst, size_t nb);
void fg_k_quant_q8_1(const float *x, void *dst, size_t nb);
void fg_k_quant_q8_k(const float *x, void *dst, size_t nb);
void fg_k_quant_q2_k(const float *x, void *dst, size_t nb);
void fg_k_quant_q3_k(const float *x, void *dst, size_t nb);
void fg_k_quant_q4_k(const float *x, void *dst, size_t nb);
void fg_k_quant_q5_k(const float *x, void *dst, size_t nb);
void fg_k_quant_q6_k(const float *x, void *dst, size_t nb);


#endif /* _FG_KERNELS_QUANT_REF_H_INCLUDED_ */
