
/*
 * fairgate: packed weight matrices.  A Q4_0, Q8_0 or Q4_K matrix whose
 * rows come in whole groups of 8 is rewritten once, at load, into lanes
 * (fg_kernels_qdot.h): block b of a group holds its 8 rows' block b, the
 * rows' quants side by side in pieces of 4 bytes, so that one vpdpbusd
 * multiplies the same 4 positions of 8 rows by 4 of x's bytes and a
 * block's (or sub-block's) 8 integer sums come out as one vector; one
 * conversion and one multiply-add then scale them for the 8 rows, where
 * the per-row kernels take those for each row.  The bytes are ggml's,
 * moved (Q8_0's offset by 128, Q4_K's 6-bit scales regrouped): a matrix
 * keeps its size.
 *
 * Every path and every batch sums a row the same way, block after block
 * into one float from 0 (fg_k_qd_lanes_generic() below is that order in
 * plain C, the portable path), so a row's result has the same bits
 * whatever its batch, the threads and the SIMD path; not the plain
 * matrix's bits, whose kernels sum in another order.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels_qdot.h"


size_t
fg_k_pack_size(fg_k_type_e type, size_t in, size_t out)
{
    size_t  rs;

    if (!fg_k_simd || !fg_k_lanes_type(type)) {
        return 0;
    }

    rs = fg_k_row_size(type, in);

    if (in == 0 || in % fg_k_qd_block(type) != 0 || out == 0
        || out % FG_K_PACK_ROWS != 0 || rs > FG_K_PACK_ROW_MAX)
    {
        return 0;
    }

    return rs * out;
}


/* one byte to or from its place in lanes */
static void
fg_k_lanes_byte(uint8_t *l, uint8_t *q, int flip, int back)
{
    if (back) {
        *q = (uint8_t) (*l ^ (flip ? 0x80 : 0));

    } else {
        *l = (uint8_t) (*q ^ (flip ? 0x80 : 0));
    }
}


/*
 * Row j's 32-value block (18 or 34 bytes, sb) into block lb of its group
 * in lanes, or, with back, out of it into sb.
 */
static void
fg_k_lanes_block(fg_k_type_e type, char *lb, char *sb, size_t j, int back)
{
    size_t    k, i;
    uint8_t  *q, *l;

    q = (uint8_t *) sb + 2;

    if (back) {
        memcpy(sb, lb + 2 * j, 2);

    } else {
        memcpy(lb + 2 * j, sb, 2);
    }

    for (k = 0; k < (size_t) FG_K_LANES_PIECES(type); k++) {
        l = (uint8_t *) lb + 2 * FG_K_PACK_ROWS + 32 * k + 4 * j;

        for (i = 0; i < 4; i++) {
            fg_k_lanes_byte(l + i, q + 4 * k + i, type == FG_K_Q8_0, back);
        }
    }
}


/* a Q4_K block's 12 bytes of scales from its 8 scales and 8 mins */
static void
fg_k_lanes_k4_scales(uint8_t *s, const uint8_t *sc, const uint8_t *mn)
{
    size_t  j;

    for (j = 0; j < 4; j++) {
        s[j] = (uint8_t) (sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t) (mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t) ((sc[j + 4] & 0xf) | (mn[j + 4] & 0xf) << 4);
    }
}


/* row j's scales and mins into a Q4_K group's block lb, or back */
static void
fg_k_lanes_k4_meta(uint8_t *lb, uint8_t *sc, uint8_t *mn, size_t j,
    int back)
{
    size_t    i;
    uint8_t  *l;

    for (i = 0; i < 4; i++) {
        l = lb + FG_K_LANES_K_SC + 8 * i + j;

        if (back) {
            sc[i] = (l[0] & 0xf) | (l[64] & 3) << 4;
            sc[i + 4] = (l[0] >> 4) | (l[64] >> 2 & 3) << 4;
            mn[i] = (l[32] & 0xf) | (l[64] >> 4 & 3) << 4;
            mn[i + 4] = (l[32] >> 4) | (l[64] >> 6) << 4;
            continue;
        }

        l[0] = (uint8_t) ((sc[i] & 0xf) | (sc[i + 4] & 0xf) << 4);
        l[32] = (uint8_t) ((mn[i] & 0xf) | (mn[i + 4] & 0xf) << 4);
        l[64] = (uint8_t) (sc[i] >> 4 | (sc[i + 4] >> 4) << 2
                           | (mn[i] >> 4) << 4 | (mn[i + 4] >> 4) << 6);
    }
}


/* row j's Q4_K block (sb) into block lb of its group in lanes, or back */
static void
fg_k_lanes_block_k(char *lb, char *sb, size_t j, int back)
{
    size_t              c, k, i;
    uint8_t             sc[8], mn[8];
    fg_k_block_q4_k_t  *b;

    b = (fg_k_block_q4_k_t *) sb;

    if (back) {
        memcpy(&b->d, lb + 2 * j, 2);
        memcpy(&b->dmin, lb + 2 * FG_K_PACK_ROWS + 2 * j, 2);
        fg_k_lanes_k4_meta((uint8_t *) lb, sc, mn, j, 1);
        fg_k_lanes_k4_scales(b->scales, sc, mn);

    } else {
        memcpy(lb + 2 * j, &b->d, 2);
        memcpy(lb + 2 * FG_K_PACK_ROWS + 2 * j, &b->dmin, 2);
        fg_k_qd_scales_k4(b->scales, sc, mn);
        fg_k_lanes_k4_meta((uint8_t *) lb, sc, mn, j, 0);
    }

    for (c = 0; c < 4; c++) {
        for (k = 0; k < 8; k++) {
            for (i = 0; i < 4; i++) {
                fg_k_lanes_byte((uint8_t *) lb + FG_K_LANES_K_QS + 256 * c
                                + 32 * k + 4 * j + i,
                                b->qs + 32 * c + 4 * k + i, 0, back);
            }
        }
    }
}


/* row r of a lanes matrix w, in from its plain row (row), or back */
static void
fg_k_lanes_row(fg_k_type_e type, char *w, size_t in, size_t r, char *row,
    int back)
{
    size_t  b, nb, bb, rs;
    char   *lb;

    rs = fg_k_row_size(type, in);
    nb = in / fg_k_qd_block(type);
    bb = rs / nb;
    w += (r - r % FG_K_PACK_ROWS) * rs;

    for (b = 0; b < nb; b++) {
        lb = w + b * FG_K_LANES_BLOCK(type);

        if (type == FG_K_Q4_K) {
            fg_k_lanes_block_k(lb, row + b * bb, r % FG_K_PACK_ROWS, back);

        } else {
            fg_k_lanes_block(type, lb, row + b * bb, r % FG_K_PACK_ROWS,
                             back);
        }
    }
}


void
fg_k_pack(fg_k_type_e type, void *dst, const void *src, size_t in,
    size_t out)
{
    size_t  r, rs;

    rs = fg_k_row_size(type, in);

    for (r = 0; r < out; r++) {
        fg_k_lanes_row(type, dst, in, r, (char *) src + r * rs, 0);
    }
}


void
fg_k_pack_dequant_row(fg_k_type_e type, const void *w, size_t in, size_t r,
    float *dst)
{
    char  row[FG_K_PACK_ROW_MAX] __attribute__((aligned(64)));

    fg_k_lanes_row(type, (char *) w, in, r, row, 1);
    fg_k_dequant_row(type, row, dst, in);
}


/* block lb (32 values) by x's block: lane j's integer sum */
static int32_t
fg_k_lanes_ints(fg_k_type_e type, const uint8_t *lb, size_t j,
    const fg_k_block_q8_1x_t *x)
{
    size_t          k, i;
    int32_t         sum;
    const uint8_t  *l;

    sum = 0;

    for (k = 0; k < (size_t) FG_K_LANES_PIECES(type); k++) {
        l = lb + 2 * FG_K_PACK_ROWS + 32 * k + 4 * j;

        for (i = 0; i < 4; i++) {
            if (type == FG_K_Q8_0) {
                sum += (int8_t) (l[i] ^ 0x80) * x->qs[4 * k + i];
                continue;
            }

            sum += (l[i] & 0xf) * x->qs[4 * k + i]
                   + (l[i] >> 4) * x->qs[16 + 4 * k + i];
        }
    }

    return type == FG_K_Q8_0 ? sum : sum - 8 * x->sum;
}


/*
 * A Q4_K block lb by x's: lane j's sum of each sub-block's integers times
 * its scale (s), and of its mins times x's sums (m)
 */
static void
fg_k_lanes_ints_k(const uint8_t *lb, size_t j, const fg_k_block_q8_k_t *x,
    int32_t *s, int32_t *m)
{
    size_t          c, k, i, h;
    int32_t         sub[2];
    uint8_t         sc[8], mn[8];
    const uint8_t  *l;

    fg_k_lanes_k4_meta((uint8_t *) lb, sc, mn, j, 1);
    *s = 0;
    *m = 0;

    for (c = 0; c < 4; c++) {
        sub[0] = 0;
        sub[1] = 0;

        for (k = 0; k < 8; k++) {
            l = lb + FG_K_LANES_K_QS + 256 * c + 32 * k + 4 * j;

            for (i = 0; i < 4; i++) {
                sub[0] += (l[i] & 0xf) * x->qs[64 * c + 4 * k + i];
                sub[1] += (l[i] >> 4) * x->qs[64 * c + 32 + 4 * k + i];
            }
        }

        for (h = 0; h < 2; h++) {
            *s += sc[2 * c + h] * sub[h];
            *m += mn[2 * c + h] * (x->bsums[4 * c + 2 * h]
                                   + x->bsums[4 * c + 2 * h + 1]);
        }
    }
}


/* block lb of lane j by x's block xb, added to acc in the lanes' order */
static float
fg_k_lanes_step(fg_k_type_e type, const uint8_t *lb, size_t j,
    const char *xb, float acc)
{
    float                      d;
    int32_t                    s, m;
    const fg_k_block_q8_k_t   *xk;
    const fg_k_block_q8_1x_t  *x;

    d = fg_fp16_to_f32(((const uint16_t *) lb)[j]);

    if (type != FG_K_Q4_K) {
        x = (const fg_k_block_q8_1x_t *) xb;

        return fmaf((float) fg_k_lanes_ints(type, lb, j, x), d * x->d, acc);
    }

    xk = (const fg_k_block_q8_k_t *) xb;
    fg_k_lanes_ints_k(lb, j, xk, &s, &m);
    acc = fmaf((float) s, d * xk->d, acc);

    return fmaf(-(float) m, fg_fp16_to_f32(((const uint16_t *) lb)
                                           [FG_K_PACK_ROWS + j]) * xk->d,
                acc);
}


/*
 * The order every path sums a lanes row in: block after block, the
 * block's exact integer sum times d_w * d_x added by one fused
 * multiply-add (Q4_K: its scaled sum, then its mins' less), so that the
 * SIMD kernels, which do it 8 rows at once, give these bits.
 */
void
fg_k_qd_lanes_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    float        acc;
    size_t       r, t, b, nb, rs, xb;
    const char  *g;

    rs = fg_k_row_size(mm->type, mm->in);
    nb = mm->in / fg_k_qd_block(mm->type);
    xb = mm->xa_row / nb;

    for (r = r0; r < r1; r++) {
        g = (const char *) mm->w + (r - r % FG_K_PACK_ROWS) * rs;

        for (t = 0; t < mm->n; t++) {
            acc = 0.0f;

            for (b = 0; b < nb; b++) {
                acc = fg_k_lanes_step(mm->type, (const uint8_t *) g
                                      + b * FG_K_LANES_BLOCK(mm->type),
                                      r % FG_K_PACK_ROWS,
                                      mm->xa + t * mm->xa_row + b * xb,
                                      acc);
            }

            mm->y[t * mm->out + r] = acc;
        }
    }
}
