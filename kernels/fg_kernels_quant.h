
/*
 * fairgate: ggml's quantized blocks, byte for byte as GGUF files hold
 * them (ggml-common.h is the spec; the sizes are asserted below).  The
 * CPU kernels (cpu/), the CUDA kernels (cuda/) and the model generator
 * read and write these structs; nothing else knows their insides.
 *
 * A row of n values of a quantized type is n / block values blocks in a
 * row.  d and m (dmin) are IEEE halves (fg_half.h) unless said otherwise.
 *
 *   Q4_0  32 values:  x = d * (q - 8),            q 4 bits
 *   Q4_1  32 values:  x = d * q + m,              q 4 bits
 *   Q5_0  32 values:  x = d * (q - 16),           q 5 bits (4 in qs, 1 in qh)
 *   Q5_1  32 values:  x = d * q + m,              q 5 bits
 *   Q8_0  32 values:  x = d * q,                  q int8
 *   Q2_K  256 values in 16 sub-blocks of 16: x = d * sc * q - dmin * mn,
 *                     sc and mn 4 bits each in scales[], q 2 bits
 *   Q3_K  256 values in 16 sub-blocks of 16: x = d * (sc - 32) * (q - 4h),
 *                     sc 6 bits packed in scales[12], q 2 bits in qs and
 *                     the high bit (h = 0 when set) in hmask
 *   Q4_K  256 values in 8 sub-blocks of 32:  x = d * sc * q - dmin * mn,
 *                     sc and mn 6 bits packed in scales[12], q 4 bits
 *   Q5_K  as Q4_K with a fifth bit of q in qh
 *   Q6_K  256 values in 16 sub-blocks of 16: x = d * sc * (q - 32),
 *                     sc int8, q 6 bits (4 in ql, 2 in qh)
 *
 * Activations are quantized for the integer dot products as ggml does:
 * to Q8_0 against Q4_0, Q5_0 and Q8_0 weights, to Q8_1 (with d * sum(q))
 * against Q4_1 and Q5_1, and to Q8_K (float d, sums of 16) against the
 * k-quants.
 */

#ifndef _FG_KERNELS_QUANT_H_INCLUDED_
#define _FG_KERNELS_QUANT_H_INCLUDED_


#include <stdint.h>


/* C11's static assertion, or C++'s (the CUDA kernels include this) */
#ifdef __cplusplus
#define FG_K_ASSERT_SIZE(t, n)  static_assert(sizeof(t) == n, #t)
#else
#define FG_K_ASSERT_SIZE(t, n)  _Static_assert(sizeof(t) == n, #t)
#endif


#define FG_K_QK4_0          32
#define FG_K_QK4_1          32
#define FG_K_QK5_0          32
#define FG_K_QK5_1          32
#define FG_K_QK8_1          32
#define FG_K_QK_K           256     /* values in a k-quant super-block */
#define FG_K_K_SCALE_SIZE   12      /* Q3_K..Q5_K's packed 6-bit scales */


typedef struct {
    uint16_t        d;
    uint8_t         qs[FG_K_QK4_0 / 2];
} fg_k_block_q4_0_t;


typedef struct {
    uint16_t        d;
    uint16_t        m;
    uint8_t         qs[FG_K_QK4_1 / 2];
} fg_k_block_q4_1_t;


typedef struct {
    uint16_t        d;
    uint8_t         qh[4];
    uint8_t         qs[FG_K_QK5_0 / 2];
} fg_k_block_q5_0_t;


typedef struct {
    uint16_t        d;
    uint16_t        m;
    uint8_t         qh[4];
    uint8_t         qs[FG_K_QK5_1 / 2];
} fg_k_block_q5_1_t;


/* activations against Q4_1 and Q5_1: s = d * sum(qs) */
typedef struct {
    uint16_t        d;
    uint16_t        s;
    int8_t          qs[FG_K_QK8_1];
} fg_k_block_q8_1_t;


typedef struct {
    uint8_t         scales[FG_K_QK_K / 16];
    uint8_t         qs[FG_K_QK_K / 4];
    uint16_t        d;
    uint16_t        dmin;
} fg_k_block_q2_k_t;


typedef struct {
    uint8_t         hmask[FG_K_QK_K / 8];
    uint8_t         qs[FG_K_QK_K / 4];
    uint8_t         scales[FG_K_K_SCALE_SIZE];
    uint16_t        d;
} fg_k_block_q3_k_t;


typedef struct {
    uint16_t        d;
    uint16_t        dmin;
    uint8_t         scales[FG_K_K_SCALE_SIZE];
    uint8_t         qs[FG_K_QK_K / 2];
} fg_k_block_q4_k_t;


typedef struct {
    uint16_t        d;
    uint16_t        dmin;
    uint8_t         scales[FG_K_K_SCALE_SIZE];
    uint8_t         qh[FG_K_QK_K / 8];
    uint8_t         qs[FG_K_QK_K / 2];
} fg_k_block_q5_k_t;


typedef struct {
    uint8_t         ql[FG_K_QK_K / 2];
    uint8_t         qh[FG_K_QK_K / 4];
    int8_t          scales[FG_K_QK_K / 16];
    uint16_t        d;
} fg_k_block_q6_k_t;


/* activations against the k-quants: d a float, bsums of each 16 */
typedef struct {
    float           d;
    int8_t          qs[FG_K_QK_K];
    int16_t         bsums[FG_K_QK_K / 16];
} fg_k_block_q8_k_t;


/* ggml's sizes: a struct that differs is a file read wrong */
FG_K_ASSERT_SIZE(fg_k_block_q4_0_t, 18);
FG_K_ASSERT_SIZE(fg_k_block_q4_1_t, 20);
FG_K_ASSERT_SIZE(fg_k_block_q5_0_t, 22);
FG_K_ASSERT_SIZE(fg_k_block_q5_1_t, 24);
FG_K_ASSERT_SIZE(fg_k_block_q8_1_t, 36);
FG_K_ASSERT_SIZE(fg_k_block_q2_k_t, 84);
FG_K_ASSERT_SIZE(fg_k_block_q3_k_t, 110);
FG_K_ASSERT_SIZE(fg_k_block_q4_k_t, 144);
FG_K_ASSERT_SIZE(fg_k_block_q5_k_t, 176);
FG_K_ASSERT_SIZE(fg_k_block_q6_k_t, 210);
FG_K_ASSERT_SIZE(fg_k_block_q8_k_t, 292);


#endif /* _FG_KERNELS_QUANT_H_INCLUDED_ */
