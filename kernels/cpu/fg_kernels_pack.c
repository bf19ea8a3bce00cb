
/*
 * fairgate: packed weight matrices.  A Q4_0 or Q4_K matrix whose rows
 * come in whole groups of 8 is rewritten once, at load, so that block b of
 * each group holds its 8 rows' block b: their halves side by side (d, and
 * Q4_K's dmin), then Q4_K's scales, then each row's quants
 * (fg_kernels_qdot.h).  The bytes are ggml's, moved, none changed: the
 * matrix keeps its size.
 *
 * Why: a decode step multiplies each weight row by one row of x.  Plain,
 * every weight block converts its own half, multiplies it by x's scale
 * and broadcasts the product, and each row loads x's block again; packed,
 * the 8 rows' halves are one load, one conversion and one product, x's
 * block is loaded once for 8 rows, and a group is one stream through
 * memory.  The sums stay those of the plain kernels, so the results keep
 * their bits (fg_kernels_qdot_pack.h).
 *
 * The portable path, which has no such kernels, unpacks a row at a time on
 * its stack and runs its plain product on it.
 */


#include <string.h>

#include "fg_kernels_qdot.h"


size_t
fg_k_pack_size(fg_k_type_e type, size_t in, size_t out)
{
    size_t  rs;

    if (!fg_k_simd || (type != FG_K_Q4_0 && type != FG_K_Q4_K)) {
        return 0;
    }

    rs = fg_k_qd_row_size(type, in);

    if (in == 0 || in % fg_k_qd_block(type) != 0 || out == 0
        || out % FG_K_PACK_ROWS != 0 || rs > FG_K_PACK_ROW_MAX)
    {
        return 0;
    }

    return rs * out;
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
    size_t  r, b, nb;

    nb = in / fg_k_qd_block(type);

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

    fg_k_pack_unpack_row(type, w, in, r, row);
    fg_k_dequant_row(type, row, dst, in);
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
