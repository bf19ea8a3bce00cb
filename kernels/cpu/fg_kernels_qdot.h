
/*
 * fairgate: products of ggml's quantized weights (Q4_0 .. Q6_K) with
 * quantized activations, as ggml makes them: x is quantized per block to
 * Q8_0 against Q4_0 and Q5_0, to Q8_1 (d and d * sum(q)) against Q4_1
 * and Q5_1, to Q8_K (d and sums of 16) against the k-quants; a weight
 * block then meets its x block in integer dot products and one float
 * multiply-add per block or sub-block.  x's blocks hold the values that
 * ggml's x86 CPU backend computes for them (fg_k_qd_scales_8() below).
 *
 * Three builds of the same products: portable C (fg_kernels_qdot.c),
 * AVX2+FMA+F16C (fg_kernels_qdot_avx2.c) and AVX-512 with VNNI
 * (fg_kernels_qdot_avx512.c), the last two made from one source
 * (fg_kernels_qdot_x86.h) by target attributes, the run-time choice being
 * fg_kernels_simd.c's.  Not part of the interface.
 */

#ifndef _FG_KERNELS_QDOT_H_INCLUDED_
#define _FG_KERNELS_QDOT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_kernels_gemv.h"


/*
 * x against the 32-value blocks: Q8_0 (q, float d) with ggml's Q8_1 s =
 * d * sum(q), which Q4_1's and Q5_1's mins meet, and sum(q) itself, which
 * Q4_0's and Q5_0's offsets (8, 16) meet: their values stay unsigned, one
 * vpdpbusd from an accumulator holding -8 * sum, where signed values
 * would take two vpsignb more.
 */
typedef struct {
    float           d;
    float           s;
    int32_t         sum;
    int8_t          qs[FG_K_QK8_1];
} fg_k_block_q8_1x_t;


/*
 * x's scales as ggml's x86 CPU backend makes them for its products (the
 * AVX2 quantize_row_q8_0 and q8_1, quantize_row_q8_K_ref), so that x's
 * blocks hold ggml's values.  Q8_0 and Q8_1: q = round(x * id), ties to
 * even, id = 127 / amax; d = amax / 127 rounded to a half, s = d * sum(q)
 * with d before that rounding, rounded to a half too (kept as floats:
 * the kernels take no conversion per block).  Q8_K: max the value of
 * largest magnitude with its sign (the first on ties), id = -127 / max,
 * q = round(x * id), ties to even, at most 127, and d = 1 / id in a
 * float, negative where max is positive, the q then of the other sign.
 */
static inline float
fg_k_qd_id_8(float amax)
{
    return amax != 0.0f ? 127.0f / amax : 0.0f;
}


static inline void
fg_k_qd_scales_8(fg_k_block_q8_1x_t *b, float amax, int32_t sum)
{
    b->d = fg_k_via_half(amax / 127.0f);
    b->s = fg_k_via_half(amax / 127.0f * (float) sum);
    b->sum = sum;
}


static inline float
fg_k_qd_id_k(float max)
{
    return max != 0.0f ? -127.0f / max : 0.0f;
}


static inline float
fg_k_qd_d_k(float id)
{
    return id != 0.0f ? 1.0f / id : 0.0f;
}


/*
 * The 6-bit scales and mins of a Q4_K or Q5_K block, 8 of each: the
 * first 4 in the low bits of bytes 0-3 and 4-7, the last 4 in the nibbles
 * of bytes 8-11 with their top 2 bits in the top bits of bytes 0-7.
 */
static inline void
fg_k_qd_scales_k4(const uint8_t *s, uint8_t *sc, uint8_t *mn)
{
    size_t  j;

    for (j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 0xf) | ((s[j] >> 6) << 4);
        mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
}


/*
 * The 16 scales of a Q3_K block, less 32: the low 4 bits in the nibbles
 * of bytes 0-7 (low nibbles first), the top 2 in bytes 8-11, scale s's
 * at bit 2 * (s / 4) of byte 8 + s % 4.
 */
static inline void
fg_k_qd_scales_k3(const uint8_t *s, int8_t *sc)
{
    size_t  j;

    for (j = 0; j < 16; j++) {
        sc[j] = (int8_t) (((j < 8 ? s[j] & 0xf : s[j - 8] >> 4)
                           | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4))
                          - 32);
    }
}


/* rows of x a group of the SIMD kernels takes at once: 8 with AVX-512 */
#define FG_K_QD_NT  8

/* a tile of a large product: weight rows by rows of x (multiple of 4) */
#define FG_K_QD_TILE_R  32
#define FG_K_QD_TILE_T  64


/* values in a block of type: 32, or 256 for the k-quants */
static inline size_t
fg_k_qd_block(fg_k_type_e type)
{
    switch (type) {

    case FG_K_Q2_K:
    case FG_K_Q3_K:
    case FG_K_Q4_K:
    case FG_K_Q5_K:
    case FG_K_Q6_K:
        return FG_K_QK_K;

    default:
        return 32;
    }
}


static inline size_t
fg_k_qd_block_bytes(fg_k_type_e type)
{
    switch (type) {

    case FG_K_Q4_0:
        return sizeof(fg_k_block_q4_0_t);

    case FG_K_Q4_1:
        return sizeof(fg_k_block_q4_1_t);

    case FG_K_Q5_0:
        return sizeof(fg_k_block_q5_0_t);

    case FG_K_Q5_1:
        return sizeof(fg_k_block_q5_1_t);

    case FG_K_Q2_K:
        return sizeof(fg_k_block_q2_k_t);

    case FG_K_Q3_K:
        return sizeof(fg_k_block_q3_k_t);

    case FG_K_Q4_K:
        return sizeof(fg_k_block_q4_k_t);

    case FG_K_Q5_K:
        return sizeof(fg_k_block_q5_k_t);

    case FG_K_Q6_K:
        return sizeof(fg_k_block_q6_k_t);

    default:
        return 0;
    }
}


/* bytes of a weight row of in values */
static inline size_t
fg_k_qd_row_size(fg_k_type_e type, size_t in)
{
    return in / fg_k_qd_block(type) * fg_k_qd_block_bytes(type);
}


/* where a plain weight row's pieces are: its blocks, and in each */
typedef struct {
    const char      *w;             /* block 0 */
    size_t           bs;            /* bytes from a block to the next */
    size_t           od;            /* d in a block */
    size_t           om;            /* Q4_K's dmin */
    size_t           os;            /* Q4_K's scales */
    size_t           oq;            /* the quants */
} fg_k_qd_wrow_t;


/* weight row r of w */
static inline void
fg_k_qd_wrow(fg_k_qd_wrow_t *wr, fg_k_type_e type, const void *w,
    size_t in, size_t r)
{
    wr->w = (const char *) w + r * fg_k_qd_row_size(type, in);
    wr->bs = fg_k_qd_block_bytes(type);
    wr->od = 0;
    wr->om = 2;
    wr->os = 4;
    wr->oq = type == FG_K_Q4_0 ? 2 : 16;
}


/*
 * Packed matrices (fg_kernels_pack.c): Q4_0, Q8_0 and Q4_K rows in groups
 * of FG_K_PACK_ROWS, each group's 8 rows in the 32-bit lanes of a vector.
 * Block b of a group is the 8 rows' halves d (16 bytes; Q4_K's dmin
 * next), then their quants in pieces of 4 bytes, piece k of rows 0 .. 7
 * side by side, then piece k + 1: one 32-byte load holds the same 4
 * positions of the 8 rows.
 *
 * - Q4_0: 4 pieces of nibbles (byte i holds value i low, value i + 16
 *   high), 144 bytes.
 * - Q8_0: 8 pieces of bytes, each + 128 (unsigned, for vpdpbusd; the
 *   offset meets x's sum), 272 bytes.
 * - Q4_K: d, dmin, then the 6-bit scales and mins, byte 8 * i + row: the
 *   low 4 bits of sub-blocks i and i + 4 (i < 4), 32 bytes of scales
 *   (FG_K_LANES_K_SC), 32 of mins, then their top 2 bits, 2 each of
 *   scale i, scale i + 4, min i, min i + 4 (32 bytes); then 4 chunks of
 *   8 pieces (FG_K_LANES_K_QS), chunk c's low nibbles sub-block 2c and
 *   its high ones 2c + 1: 1152 bytes.
 *
 * Each row's result is then, on every path and for any rows of x, the
 * sum over blocks b in order of fma(isum_b, d_w * d_x, acc) from 0, isum_b
 * the block's exact integer product (Q4_K: fma(S_b, d_w * d_x, acc), then
 * fma(-M_b, dmin_w * d_x, acc), S_b the sub-blocks' integer products
 * times their scales and M_b their mins times x's sums).  x is quantized
 * as for Q4_0 (fg_k_block_q8_1x_t), for Q8_0 too: the same values as
 * Q8_0's direct kernels take; as for the k-quants against Q4_K.
 */
#define FG_K_PACK_ROWS     8

/* the largest packed row, which fg_k_pack_dequant_row() unpacks */
#define FG_K_PACK_ROW_MAX  16384

#define FG_K_LANES_K_SC    (4 * FG_K_PACK_ROWS)
#define FG_K_LANES_K_QS    (16 * FG_K_PACK_ROWS)

#define FG_K_LANES_PIECES(type)  ((type) == FG_K_Q4_0 ? 4 : 8)
#define FG_K_LANES_BLOCK(type)                                            \
    ((type) == FG_K_Q4_K ? FG_K_PACK_ROWS * sizeof(fg_k_block_q4_k_t)     \
                         : 2 * FG_K_PACK_ROWS                             \
                           + 32 * (size_t) FG_K_LANES_PIECES(type))


/* 1 for the types packed in lanes */
static inline int
fg_k_lanes_type(fg_k_type_e type)
{
    return type == FG_K_Q4_0 || type == FG_K_Q8_0 || type == FG_K_Q4_K;
}


/* rows [r0, r1) (whole groups) of a product by a lanes-packed matrix */
void fg_k_qd_lanes_generic(const fg_k_mm_t *mm, size_t r0, size_t r1);


/* 1 for the weight types whose products are here */
int fg_k_qd_type(fg_k_type_e type);

/* bytes of a row of in activations quantized for weights of type */
size_t fg_k_qd_xrow_size(fg_k_type_e type, size_t in);

/*
 * n rows of in floats quantized for weights of type, row after row
 * fg_k_qd_xrow_size() bytes apart.  Every path writes the same bytes.
 */
void fg_k_qd_quant_x(fg_k_type_e type, void *xq, const float *x, size_t n,
    size_t in);

/* x as the products see it (d * q), in float for sgemm */
void fg_k_qd_round_x(fg_k_type_e type, float *xr, const float *x,
    size_t n, size_t in);

/* a weight row of type by a quantized x row of in values */
float fg_k_qd_dot(fg_k_type_e type, const void *w, const void *xq,
    size_t in);

/* rows [r0, r1) of y = xq W^T, mm->xa quantized by fg_k_qd_quant_x() */
void fg_k_qd_mm_rows(const fg_k_mm_t *mm, size_t r0, size_t r1);


/* the same, per path; the SIMD ones run only where fg_k_simd says so */
float fg_k_qd_dot_generic(fg_k_type_e type, const void *w, const void *xq,
    size_t in);
void fg_k_qd_quant_generic(fg_k_type_e type, void *xq, const float *x,
    size_t in);

#if FG_K_X86
float fg_k_qd_dot_avx2(fg_k_type_e type, const void *w, const void *xq,
    size_t in);
void fg_k_qd_mm_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
void fg_k_qd_mm_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1);
void fg_k_qd_quant_avx2(fg_k_type_e type, void *xq, const float *x,
    size_t in);
float fg_k_qd_dot_avx512(fg_k_type_e type, const void *w, const void *xq,
    size_t in);
void fg_k_qd_quant_avx512(fg_k_type_e type, void *xq, const float *x,
    size_t in);
void fg_k_qd_lanes_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
void fg_k_qd_lanes_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1);
#endif


#endif /* _FG_KERNELS_QDOT_H_INCLUDED_ */
