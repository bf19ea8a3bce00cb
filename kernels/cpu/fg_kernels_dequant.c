
/*
 * fairgate: ggml's quantized blocks to float, in portable C, value by
 * value as fg_kernels_quant.h's formulas say.  The matrix products read
 * the blocks themselves; this is the reference they are tested against,
 * and what embedding lookups and loaders use.
 *
 * Where a type splits a block's values over nibbles, shifts or bit
 * planes, value i of a block is found as:
 *
 *   Q4_0, Q4_1, Q5_0, Q5_1   i < 16 in the low nibble of qs[i], i >= 16
 *                            in the high nibble of qs[i - 16]; the fifth
 *                            bit is bit i of qh (little-endian)
 *   Q2_K, Q3_K               two bits at shift 2 * (i % 128 / 32) of
 *                            qs[32 * (i / 128) + i % 32]; Q3_K's high bit
 *                            is bit 4 * (i / 128) + i % 128 / 32 of
 *                            hmask[i % 32]
 *   Q4_K, Q5_K               low or high nibble (i % 64 < 32 or not) of
 *                            qs[32 * (i / 64) + i % 32]; Q5_K's fifth bit
 *                            is bit i / 32 of qh[i % 32]
 *   Q6_K                     g = i % 128 / 32: low (g < 2) or high nibble
 *                            of ql[64 * (i / 128) + 32 * (g & 1) + i % 32],
 *                            two bits at shift 2 * g of
 *                            qh[32 * (i / 128) + i % 32]
 *
 * and the scale of a value of a 16-value sub-block is scales[i / 16].
 */


#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_quant_ref.h"


static uint32_t
fg_k_qh32(const uint8_t *qh)
{
    return (uint32_t) qh[0] | (uint32_t) qh[1] << 8
           | (uint32_t) qh[2] << 16 | (uint32_t) qh[3] << 24;
}


/* the 4-bit value i of a 32-value block */
static inline int
fg_k_nibble32(const uint8_t *qs, size_t i)
{
    return i < 16 ? qs[i] & 0xf : qs[i - 16] >> 4;
}


void
fg_k_dequant_q4_0(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    float                     d;
    const fg_k_block_q4_0_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK4_0) {
        d = fg_fp16_to_f32(b->d);

        for (j = 0; j < FG_K_QK4_0; j++) {
            y[j] = d * (fg_k_nibble32(b->qs, j) - 8);
        }
    }
}


void
fg_k_dequant_q4_1(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    float                     d, m;
    const fg_k_block_q4_1_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK4_1) {
        d = fg_fp16_to_f32(b->d);
        m = fg_fp16_to_f32(b->m);

        for (j = 0; j < FG_K_QK4_1; j++) {
            y[j] = d * fg_k_nibble32(b->qs, j) + m;
        }
    }
}


void
fg_k_dequant_q5_0(const void *src, float *y, size_t nb)
{
    int                       q;
    size_t                    i, j;
    float                     d;
    uint32_t                  qh;
    const fg_k_block_q5_0_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK5_0) {
        d = fg_fp16_to_f32(b->d);
        qh = fg_k_qh32(b->qh);

        for (j = 0; j < FG_K_QK5_0; j++) {
            q = fg_k_nibble32(b->qs, j) | (int) ((qh >> j) & 1) << 4;
            y[j] = d * (q - 16);
        }
    }
}


void
fg_k_dequant_q5_1(const void *src, float *y, size_t nb)
{
    int                       q;
    size_t                    i, j;
    float                     d, m;
    uint32_t                  qh;
    const fg_k_block_q5_1_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK5_1) {
        d = fg_fp16_to_f32(b->d);
        m = fg_fp16_to_f32(b->m);
        qh = fg_k_qh32(b->qh);

        for (j = 0; j < FG_K_QK5_1; j++) {
            q = fg_k_nibble32(b->qs, j) | (int) ((qh >> j) & 1) << 4;
            y[j] = d * q + m;
        }
    }
}


void
fg_k_dequant_q8_0(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    float                     d;
    const fg_k_block_q8_0_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK8_0) {
        d = fg_fp16_to_f32(b->d);

        for (j = 0; j < FG_K_QK8_0; j++) {
            y[j] = d * b->qs[j];
        }
    }
}


void
fg_k_dequant_q8_1(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    float                     d;
    const fg_k_block_q8_1_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK8_1) {
        d = fg_fp16_to_f32(b->d);

        for (j = 0; j < FG_K_QK8_1; j++) {
            y[j] = d * b->qs[j];
        }
    }
}


/* the two bits of value i of a Q2_K or Q3_K block */
static inline int
fg_k_crumb(const uint8_t *qs, size_t i)
{
    return (qs[32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3;
}


void
fg_k_dequant_q2_k(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    float                     d, dmin;
    uint8_t                   sc;
    const fg_k_block_q2_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK_K) {
        d = fg_fp16_to_f32(b->d);
        dmin = fg_fp16_to_f32(b->dmin);

        for (j = 0; j < FG_K_QK_K; j++) {
            sc = b->scales[j / 16];
            y[j] = d * (sc & 0xf) * fg_k_crumb(b->qs, j)
                   - dmin * (sc >> 4);
        }
    }
}


void
fg_k_dequant_q3_k(const void *src, float *y, size_t nb)
{
    int                       sc[FG_K_QK_K / 16], q;
    size_t                    i, j;
    float                     d;
    unsigned                  hbit;
    const fg_k_block_q3_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK_K) {
        d = fg_fp16_to_f32(b->d);

        /* 16 scales of 6 bits: the low 4 in scales[0..7]'s nibbles, the
         * high 2 in scales[8..11], four to a byte */
        for (j = 0; j < FG_K_QK_K / 16; j++) {
            sc[j] = (j < 8 ? b->scales[j] & 0xf : b->scales[j - 8] >> 4)
                    | ((b->scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4;
            sc[j] -= 32;
        }

        for (j = 0; j < FG_K_QK_K; j++) {
            hbit = (b->hmask[j % 32] >> (4 * (j / 128) + j % 128 / 32)) & 1;
            q = fg_k_crumb(b->qs, j) - (hbit ? 0 : 4);
            y[j] = d * sc[j / 16] * q;
        }
    }
}


void
fg_k_dequant_q4_k(const void *src, float *y, size_t nb)
{
    int                       q;
    size_t                    i, j, s;
    float                     d, dmin, dl, ml;
    uint8_t                   sc, m;
    const fg_k_block_q4_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++) {
        d = fg_fp16_to_f32(b->d);
        dmin = fg_fp16_to_f32(b->dmin);

        for (s = 0; s < FG_K_QK_K / 32; s++) {
            fg_k_scale_min_k4(b->scales, s, &sc, &m);
            dl = d * sc;
            ml = dmin * m;

            for (j = 0; j < 32; j++) {
                q = b->qs[32 * (s / 2) + j];
                q = s % 2 ? q >> 4 : q & 0xf;
                *y++ = dl * q - ml;
            }
        }
    }
}


void
fg_k_dequant_q5_k(const void *src, float *y, size_t nb)
{
    int                       q;
    size_t                    i, j, s;
    float                     d, dmin, dl, ml;
    uint8_t                   sc, m;
    const fg_k_block_q5_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++) {
        d = fg_fp16_to_f32(b->d);
        dmin = fg_fp16_to_f32(b->dmin);

        for (s = 0; s < FG_K_QK_K / 32; s++) {
            fg_k_scale_min_k4(b->scales, s, &sc, &m);
            dl = d * sc;
            ml = dmin * m;

            for (j = 0; j < 32; j++) {
                q = b->qs[32 * (s / 2) + j];
                q = s % 2 ? q >> 4 : q & 0xf;
                q |= ((b->qh[j] >> s) & 1) << 4;
                *y++ = dl * q - ml;
            }
        }
    }
}


void
fg_k_dequant_q6_k(const void *src, float *y, size_t nb)
{
    int                       q;
    size_t                    i, j, g, l, h;
    float                     d;
    const fg_k_block_q6_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK_K) {
        d = fg_fp16_to_f32(b->d);

        for (j = 0; j < FG_K_QK_K; j++) {
            h = j / 128;
            g = j % 128 / 32;
            l = j % 32;

            q = b->ql[64 * h + 32 * (g & 1) + l];
            q = g < 2 ? q & 0xf : q >> 4;
            q |= ((b->qh[32 * h + l] >> (2 * g)) & 3) << 4;

            y[j] = d * b->scales[j / 16] * (q - 32);
        }
    }
}


void
fg_k_dequant_q8_k(const void *src, float *y, size_t nb)
{
    size_t                    i, j;
    const fg_k_block_q8_k_t  *b;

    for (b = src, i = 0; i < nb; i++, b++, y += FG_K_QK_K) {
        for (j = 0; j < FG_K_QK_K; j++) {
            y[j] = b->d * b->qs[j];
        }
    }
}
