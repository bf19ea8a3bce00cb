
/*
 * fairgate: what the matrix product's files share: fg_kernels_mm.c
 * (the choice of path, sgemm over tiles), fg_kernels_gemv.c (the direct
 * kernels) and fg_kernels_types.c (the weight types).  Not part of the
 * interface.
 */

#ifndef _FG_KERNELS_MM_H_INCLUDED_
#define _FG_KERNELS_MM_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"


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
    const void              *w;
    char                    *tiles;
    fg_k_type_e              type;
    size_t                   n;
    size_t                   in;
    size_t                   out;
    size_t                   tile_rows;
} fg_k_mm_t;


/* rows [r0, r1) of y by the direct kernels: AVX2 where it runs */
void fg_k_mm_direct_rows(const fg_k_mm_t *mm, size_t r0, size_t r1);

/* x to int8 per 32-block for the direct kernels' Q8_0 products */
void fg_k_quant_x(fg_k_block_q8x_t *xq, const float *x, size_t n);

/* x as the direct kernels see it, d * q, in float for sgemm */
void fg_k_round_x(float *xr, const float *x, size_t n);


#if FG_K_X86

/* 8 weights from element i of a row of type, as floats */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_load8_avx2(const void *w, size_t i, fg_k_type_e type)
{
    __m128i  h;

    switch (type) {

    case FG_K_F16:
        h = _mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i));
        return _mm256_cvtph_ps(h);

    case FG_K_BF16:
        h = _mm_loadu_si128((const __m128i *) ((const uint16_t *) w + i));
        return _mm256_castsi256_ps(
                   _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));

    default:
        return _mm256_loadu_ps((const float *) w + i);
    }
}

#endif


#endif /* _FG_KERNELS_MM_H_INCLUDED_ */
