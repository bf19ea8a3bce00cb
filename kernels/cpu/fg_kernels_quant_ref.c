
/*
 * fairgate: float to ggml's 32-value blocks and to the activations' Q8_K,
 * rounded as ggml's reference quantizers round (ggml-quants.c's
 * quantize_row_*_ref, without an importance matrix), so that a file
 * written here holds the bytes llama.cpp's quantizer would write:
 *
 *   Q4_0, Q5_0   d = max / -8 (-16), max the value of largest magnitude
 *                with its sign (the first one on ties), so that it maps
 *                to code 0; q = trunc(x / d + 8.5) (16.5), at most 15
 *                (31)
 *   Q4_1, Q5_1   d = (max - min) / 15 (31), m = min; q = trunc((x - min)
 *                / d + 0.5)
 *   Q8_0, Q8_1   d = amax / 127, q = round(x / d) (halves away from zero);
 *                Q8_1 keeps s = d * sum(q)
 *   Q8_K         d = max / -127 (signed, a float), q = x / d rounded to
 *                even, at most 127; bsums the sums of each 16 q
 *
 * x / d is x * (1 / d) with the float d before it is rounded to a half,
 * as ggml computes it.
 */


#include <float.h>
#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_quant_ref.h"


static void
fg_k_min_max(const float *x, size_t n, float *min, float *max)
{
    size_t  i;

    *min = FLT_MAX;
    *max = -FLT_MAX;

    for (i = 0; i < n; i++) {
        *min = x[i] < *min ? x[i] : *min;
        *max = x[i] > *max ? x[i] : *max;
    }
}


/* packs 32 codes of 5 bits: low nibbles as Q4's, the fifth bits in qh */
static void
fg_k_pack5(const uint8_t *q, uint8_t *qs, uint8_t *qh)
{
    size_t    j;
    uint32_t  h;

    h = 0;

    for (j = 0; j < 16; j++) {
        qs[j] = (uint8_t) ((q[j] & 0xf) | (q[j + 16] & 0xf) << 4);
        h |= (uint32_t) (q[j] >> 4) << j;
        h |= (uint32_t) (q[j + 16] >> 4) << (j + 16);
    }

    qh[0] = (uint8_t) h;
    qh[1] = (uint8_t) (h >> 8);
    qh[2] = (uint8_t) (h >> 16);
    qh[3] = (uint8_t) (h >> 24);
}


void
fg_k_quant_q4_0(const float *x, void *dst, size_t nb)
{
    int                 q;
    size_t              i, j;
    float               d, id;
    fg_k_block_q4_0_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK4_0) {
        d = fg_k_signed_max(x, FG_K_QK4_0) / -8;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = fg_f32_to_fp16(d);

        for (j = 0; j < 16; j++) {
            q = (int8_t) (x[j] * id + 8.5f);
            b->qs[j] = (uint8_t) (q < 15 ? q : 15);
            q = (int8_t) (x[j + 16] * id + 8.5f);
            b->qs[j] |= (uint8_t) ((q < 15 ? q : 15) << 4);
        }
    }
}


void
fg_k_quant_q4_1(const float *x, void *dst, size_t nb)
{
    int                 q;
    size_t              i, j;
    float               d, id, min, max;
    fg_k_block_q4_1_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK4_1) {
        fg_k_min_max(x, FG_K_QK4_1, &min, &max);
        d = (max - min) / 15;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = fg_f32_to_fp16(d);
        b->m = fg_f32_to_fp16(min);

        for (j = 0; j < 16; j++) {
            q = (int8_t) ((x[j] - min) * id + 0.5f);
            b->qs[j] = (uint8_t) (q < 15 ? q : 15);
            q = (int8_t) ((x[j + 16] - min) * id + 0.5f);
            b->qs[j] |= (uint8_t) ((q < 15 ? q : 15) << 4);
        }
    }
}


void
fg_k_quant_q5_0(const float *x, void *dst, size_t nb)
{
    int                 q;
    size_t              i, j;
    float               d, id;
    uint8_t             codes[FG_K_QK5_0];
    fg_k_block_q5_0_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK5_0) {
        d = fg_k_signed_max(x, FG_K_QK5_0) / -16;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = fg_f32_to_fp16(d);

        for (j = 0; j < FG_K_QK5_0; j++) {
            q = (int8_t) (x[j] * id + 16.5f);
            codes[j] = (uint8_t) (q < 31 ? q : 31);
        }

        fg_k_pack5(codes, b->qs, b->qh);
    }
}


void
fg_k_quant_q5_1(const float *x, void *dst, size_t nb)
{
    int                 q;
    size_t              i, j;
    float               d, id, min, max;
    uint8_t             codes[FG_K_QK5_1];
    fg_k_block_q5_1_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK5_1) {
        fg_k_min_max(x, FG_K_QK5_1, &min, &max);
        d = (max - min) / 31;
        id = d != 0.0f ? 1.0f / d : 0.0f;
        b->d = fg_f32_to_fp16(d);
        b->m = fg_f32_to_fp16(min);

        /* (max - min) / d rounds to at most 31.5: the bound is a guard */
        for (j = 0; j < FG_K_QK5_1; j++) {
            q = (uint8_t) ((x[j] - min) * id + 0.5f);
            codes[j] = (uint8_t) (q < 31 ? q : 31);
        }

        fg_k_pack5(codes, b->qs, b->qh);
    }
}


/* d = amax / 127 and q = round(x / d): Q8_0's and Q8_1's; sum(q) */
static int
fg_k_quant8(const float *x, int8_t *qs, float *d)
{
    int     sum;
    size_t  j;
    float   amax, id;

    amax = 0.0f;

    for (j = 0; j < 32; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
    }

    *d = amax / 127;
    id = *d != 0.0f ? 1.0f / *d : 0.0f;
    sum = 0;

    for (j = 0; j < 32; j++) {
        qs[j] = (int8_t) roundf(x[j] * id);
        sum += qs[j];
    }

    return sum;
}


void
fg_k_quant_q8_0(const float *x, void *dst, size_t nb)
{
    size_t              i;
    float               d;
    fg_k_block_q8_0_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK8_0) {
        (void) fg_k_quant8(x, b->qs, &d);
        b->d = fg_f32_to_fp16(d);
    }
}


void
fg_k_quant_q8_1(const float *x, void *dst, size_t nb)
{
    int                 sum;
    size_t              i;
    float               d;
    fg_k_block_q8_1_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK8_1) {
        sum = fg_k_quant8(x, b->qs, &d);
        b->d = fg_f32_to_fp16(d);
        b->s = fg_f32_to_fp16(sum * d);
    }
}


void
fg_k_quant_q8_k(const float *x, void *dst, size_t nb)
{
    int                 q, sum;
    size_t              i, j;
    float               max, iscale;
    fg_k_block_q8_k_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        max = fg_k_signed_max(x, FG_K_QK_K);

        if (max == 0.0f) {
            memset(b, 0, sizeof(fg_k_block_q8_k_t));
            continue;
        }

        iscale = -127.0f / max;

        for (j = 0; j < FG_K_QK_K; j++) {
            q = fg_k_nearest_int(iscale * x[j]);
            b->qs[j] = (int8_t) (q < 127 ? q : 127);
        }

        for (j = 0; j < FG_K_QK_K / 16; j++) {
            for (sum = 0, q = 0; q < 16; q++) {
                sum += b->qs[16 * j + q];
            }

            b->bsums[j] = (int16_t) sum;
        }

        b->d = 1 / iscale;
    }
}
