
/*
 * fairgate: the direct kernels (fg_kernels_gemv.c) as the matrix
 * product's path choice (fg_kernels_mm.c) runs them, and the dot and axpy
 * the other kernels use.  Not part of the interface.
 */

#ifndef _FG_KERNELS_GEMV_H_INCLUDED_
#define _FG_KERNELS_GEMV_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"


/*
 * The direct kernels read weights a group of 4 rows at a time.  Short
 * groups read faster when the next group is prefetched meanwhile (30-40%
 * for F16, BF16 and Q8_0 rows of 768 here: the hardware prefetcher starts
 * over on each group); long ones already stream at memory speed, and
 * there prefetching a whole group ahead evicts lines still in use (F32
 * rows of 3072 lost 40%).  bench_kernels --n 1 measured both.
 */
#define FG_K_MM_PF_GROUP    16384

/*
 * Longer groups at n = 1 of rows twice as long as this at least (4 rows of
 * a 1b model's 8192 F16 or BF16 values) prefetch each row this far ahead
 * into the second-level cache instead: 2-5% of the 1b F16 and BF16
 * decode.  The next group (to the first-level cache) lost 6% there; rows
 * read alone lost up to 12%, and 4 rows of 6 KiB (100m) 3-10%.
 */
#define FG_K_MM_PF_AHEAD    4096

/*
 * F16 at n = 1: rows of fewer bytes one at a time, the others 4 at a time
 * (fg_k_mm_block_avx2() says why)
 */
#define FG_K_MM_ONE_ROW     4096


/* a group of nr rows of rs bytes by nt tokens prefetches the next group */
static inline int
fg_k_mm_pf_next(size_t nr, size_t nt, size_t rs)
{
    return nr * nt > 1 && nr * rs <= FG_K_MM_PF_GROUP;
}


/* ... or each of its rows FG_K_MM_PF_AHEAD bytes ahead */
static inline int
fg_k_mm_pf_ahead(size_t nr, size_t nt, size_t rs)
{
    return nr > 1 && nt == 1 && !fg_k_mm_pf_next(nr, nt, rs)
           && rs >= 2 * FG_K_MM_PF_AHEAD;
}


/* x quantized for Q8_0 products: a float scale, faster than a half here */
typedef struct {
    float           d;
    int8_t          qs[FG_K_QK8_0];
} fg_k_block_q8x_t;


/* a product y = x W^T as the pool's tasks take it, each a range of rows */
typedef struct {
    float                   *y;
    const float             *x;
    const fg_k_block_q8x_t  *xq;
    const char              *xa;        /* x for fg_kernels_qdot.h */
    size_t                   xa_row;    /* its bytes a row */
    const void              *w;
    char                    *tiles;
    fg_k_type_e              type;
    size_t                   n;
    size_t                   in;
    size_t                   out;
    size_t                   tile_rows;
    int                      packed;    /* w packed: fg_k_matmul_packed() */
} fg_k_mm_t;


/* rows [r0, r1) of y by the direct kernels: AVX2 where it runs */
void fg_k_mm_direct_rows(const fg_k_mm_t *mm, size_t r0, size_t r1);

#if FG_K_X86
/*
 * the same for F32, F16 and BF16 rows on AVX-512
 * (fg_kernels_gemv_avx512.c)
 */
void fg_k_mm_float_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1);

/*
 * BF16 by many rows of x with AVX512-BF16 (fg_kernels_bf16_avx512.c):
 * rows [t0, t1) of mm->x rounded into mm->xa, fg_k_bf16_xrow_size(in)
 * bytes a row, then rows [r0, r1) of y
 */
size_t fg_k_bf16_xrow_size(size_t in);
void fg_k_bf16_round_x(const fg_k_mm_t *mm, size_t t0, size_t t1);
void fg_k_mm_bf16_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1);
#endif

/*
 * A float through an IEEE half and back: x's Q8_0 and Q8_1 scales, which
 * ggml keeps in halves (F16C's conversion rounds as this one does).
 */
static inline float
fg_k_via_half(float f)
{
    return fg_fp16_to_f32(fg_f32_to_fp16(f));
}


/* x to int8 per 32-block for the direct kernels' Q8_0 products */
void fg_k_quant_x(fg_k_block_q8x_t *xq, const float *x, size_t n);

/* x as the direct kernels see it, d * q, in float for sgemm */
void fg_k_round_x(float *xr, const float *x, size_t n);

/* sum of a[i] * b[i] */
float fg_k_dot(const float *a, const float *b, size_t n);

/* y[i] += a * x[i] */
void fg_k_axpy(float *y, float a, const float *x, size_t n);


#endif /* _FG_KERNELS_GEMV_H_INCLUDED_ */
