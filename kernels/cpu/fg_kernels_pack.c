
/*
 * fairgate: packed weight matrices, rewritten once, at load, in groups
 * of 8 rows whose same blocks lie together.  The bytes are ggml's, moved
 * (Q8_0's offset by 128): a matrix keeps its size.
 *
 * Q4_0 and Q8_0 go into lanes (fg_kernels_qdot.h): the 8 rows' quants
 * side by side in pieces of 4 bytes, so that one vpdpbusd multiplies the
 * same 4 positions of 8 rows by 4 of x's bytes, the block's 8 integer
 * sums come out as one vector, and one conversion and one multiply-add
 * scale them.  Every path and every batch sums a row the same way, block
 * after block into one float (fg_k_qd_lanes_generic() below is that
 * order in plain C), so a row's result does not depend on its batch.
 *
 * Q4_K keeps each row's pieces apart: block b of a group holds its 8
 * rows' halves side by side (d, dmin), their scales, then each row's
 * quants, and is multiplied by the plain kernels' sums, bit for bit
 * (fg_kernels_qdot_pack.h).  The portable path unpacks such a row at a
 * time on its stack and runs its plain product on it.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels_qdot.h"


size_t
fg_k_pack_size(fg_k_type_e type, size_t in, size_t out)
{
    size_t  rs;

    if (!fg_k_simd || (!fg_k_lanes_type(type) && type != FG_K_Q4_K)) {
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


/*
 * Row j's block (18 or 34 bytes, sb) into block lb of its group in lanes,
 * or, with back, out of it into sb.
 */
static void
fg_k_lanes_block(fg_k_type_e type, char *lb, char *sb, size_t j, int back)
{
    size_t   k, i;
    uint8_t *q, *l;

    q = (uint8_t *) sb + 2;

    if (back) {
        memcpy(sb, lb + 2 * j, 2);

    } else {
        memcpy(lb + 2 * j, sb, 2);
    }

    for (k = 0; k < (size_t) FG_K_LANES_PIECES(type); k++) {
        l = (uint8_t *) lb + 2 * FG_K_PACK_ROWS + 32 * k + 4 * j;

        for (i = 0; i < 4; i++) {
            if (back) {
                q[4 * k + i] = type == FG_K_Q8_0 ? l[i] ^ 0x80 : l[i];

            } else {
                l[i] = type == FG_K_Q8_0 ? q[4 * k + i] ^ 0x80 : q[4 * k + i];
            }
        }
    }
}


/* row r of a lanes matrix w, in .. its row of rs bytes (row), or back */
static void
fg_k_lanes_row(fg_k_type_e type, char *w, size_t in, size_t r, char *row,
    int back)
{
    size_t  b, nb, bb, rs;

    rs = fg_k_row_size(type, in);
    bb = rs / (in / 32);
    nb = in / 32;
    w += (r - r % FG_K_PACK_ROWS) * rs;

    for (b = 0; b < nb; b++) {
        fg_k_lanes_block(type, w + b * FG_K_LANES_BLOCK(type), row + b * bb,
                         r % FG_K_PACK_ROWS, back);
    }
}


/* row r's block b from a plain matrix into its place in a packed one */
static void
fg_k_pack_block(fg_k_type_e type, char *dst, const char *src, size_t in,
    size_t r, size_t b)
{
    size_t          bb;
    const char     *sb;
    fg_k_qd_wrow_t  wr;

    bb = fg_k_qd_block_bytes(type);
    sb = src + r * fg_k_qd_row_size(type, in) + b * bb;

    fg_k_qd_wrow(&wr, type, dst, in, r, 1);
    dst = (char *) wr.w + b * wr.bs;

    memcpy(dst + wr.od, sb, 2);

    if (type == FG_K_Q4_0) {
        memcpy(dst + wr.oq, sb + 2, bb - 2);
        return;
    }

    memcpy(dst + wr.om, sb + 2, 2);
    memcpy(dst + wr.os, sb + 4, FG_K_K_SCALE_SIZE);
    memcpy(dst + wr.oq, sb + 4 + FG_K_K_SCALE_SIZE,
           bb - 4 - FG_K_K_SCALE_SIZE);
}


void
fg_k_pack(fg_k_type_e type, void *dst, const void *src, size_t in,
    size_t out)
{
    size_t  r, b, nb, rs;

    nb = in / fg_k_qd_block(type);

    if (fg_k_lanes_type(type)) {
        rs = fg_k_row_size(type, in);

        for (r = 0; r < out; r++) {
            fg_k_lanes_row(type, dst, in, r, (char *) src + r * rs, 0);
        }

        return;
    }

    for (r = 0; r < out; r++) {
        for (b = 0; b < nb; b++) {
            fg_k_pack_block(type, dst, src, in, r, b);
        }
    }
}


/* weight row r of a packed matrix w back into ggml's blocks (row) */
static void
fg_k_pack_unpack_row(fg_k_type_e type, const void *w, size_t in, size_t r,
    char *row)
{
    size_t          b, nb, bb;
    char           *db;
    const char     *sb;
    fg_k_qd_wrow_t  wr;

    bb = fg_k_qd_block_bytes(type);
    nb = in / fg_k_qd_block(type);
    fg_k_qd_wrow(&wr, type, w, in, r, 1);

    for (b = 0; b < nb; b++) {
        sb = wr.w + b * wr.bs;
        db = row + b * bb;

        memcpy(db, sb + wr.od, 2);

        if (type == FG_K_Q4_0) {
            memcpy(db + 2, sb + wr.oq, bb - 2);
            continue;
        }

        memcpy(db + 2, sb + wr.om, 2);
        memcpy(db + 4, sb + wr.os, FG_K_K_SCALE_SIZE);
        memcpy(db + 4 + FG_K_K_SCALE_SIZE, sb + wr.oq,
               bb - 4 - FG_K_K_SCALE_SIZE);
    }
}


void
fg_k_pack_dequant_row(fg_k_type_e type, const void *w, size_t in, size_t r,
    float *dst)
{
    char  row[FG_K_PACK_ROW_MAX] __attribute__((aligned(64)));

    if (fg_k_lanes_type(type)) {
        fg_k_lanes_row(type, (char *) w, in, r, row, 1);

    } else {
        fg_k_pack_unpack_row(type, w, in, r, row);
    }

    fg_k_dequant_row(type, row, dst, in);
}


/* block lb (one of a group in lanes) by x's block: lane j's integers */
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
 * The order every path sums a lanes row in: block after block, the
 * block's exact integer sum times d_w * d_x added by one fused
 * multiply-add, so that the SIMD kernels, which do it 8 rows at once,
 * give these bits.
 */
void
fg_k_qd_lanes_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    float                      acc;
    size_t                     r, t, b, nb, rs;
    const uint8_t             *lb;
    const fg_k_block_q8_1x_t  *x;

    rs = fg_k_row_size(mm->type, mm->in);
    nb = mm->in / 32;

    for (r = r0; r < r1; r++) {
        for (t = 0; t < mm->n; t++) {
            x = (const fg_k_block_q8_1x_t *) (mm->xa + t * mm->xa_row);
            acc = 0.0f;

            for (b = 0; b < nb; b++) {
                lb = (const uint8_t *) mm->w
                     + (r - r % FG_K_PACK_ROWS) * rs
                     + b * FG_K_LANES_BLOCK(mm->type);

                acc = fmaf((float) fg_k_lanes_ints(mm->type, lb,
                                                   r % FG_K_PACK_ROWS,
                                                   x + b),
                           fg_fp16_to_f32(((const uint16_t *) lb)
                                          [r % FG_K_PACK_ROWS]) * x[b].d,
                           acc);
            }

            mm->y[t * mm->out + r] = acc;
        }
    }
}


void
fg_k_qd_mm_packed_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    char    row[FG_K_PACK_ROW_MAX] __attribute__((aligned(64)));
    size_t  r, t;

    for (r = r0; r < r1; r++) {
        fg_k_pack_unpack_row(mm->type, mm->w, mm->in, r, row);

        for (t = 0; t < mm->n; t++) {
            mm->y[t * mm->out + r] =
                fg_k_qd_dot_generic(mm->type, row, mm->xa + t * mm->xa_row,
                                    mm->in);
        }
    }
}
