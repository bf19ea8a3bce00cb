
/*
 * fairgate: the weight types of the CPU kernels: the bytes of a row, and
 * rows of each type to and from float (a value's conversion is
 * fg_half.h's), dispatched to the blocks' code in portable C
 * (fg_kernels_quant_ref.h) or to AVX2 where it is faster.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_simd.h"
#include "fg_kernels_quant_ref.h"


#if FG_K_X86
static void fg_k_dequant_row_avx2(fg_k_type_e type, const void *src,
    float *dst, size_t n);
#endif


/* values a block holds and its bytes, by type; 0: not a row type */
static const struct {
    uint16_t  values;
    uint16_t  bytes;
} fg_k_types[] = {
    [FG_K_F32]  = { 1, sizeof(float) },
    [FG_K_F16]  = { 1, sizeof(uint16_t) },
    [FG_K_BF16] = { 1, sizeof(uint16_t) },
    [FG_K_Q4_0] = { FG_K_QK4_0, sizeof(fg_k_block_q4_0_t) },
    [FG_K_Q4_1] = { FG_K_QK4_1, sizeof(fg_k_block_q4_1_t) },
    [FG_K_Q5_0] = { FG_K_QK5_0, sizeof(fg_k_block_q5_0_t) },
    [FG_K_Q5_1] = { FG_K_QK5_1, sizeof(fg_k_block_q5_1_t) },
    [FG_K_Q8_0] = { FG_K_QK8_0, sizeof(fg_k_block_q8_0_t) },
    [FG_K_Q8_1] = { FG_K_QK8_1, sizeof(fg_k_block_q8_1_t) },
    [FG_K_Q2_K] = { FG_K_QK_K, sizeof(fg_k_block_q2_k_t) },
    [FG_K_Q3_K] = { FG_K_QK_K, sizeof(fg_k_block_q3_k_t) },
    [FG_K_Q4_K] = { FG_K_QK_K, sizeof(fg_k_block_q4_k_t) },
    [FG_K_Q5_K] = { FG_K_QK_K, sizeof(fg_k_block_q5_k_t) },
    [FG_K_Q6_K] = { FG_K_QK_K, sizeof(fg_k_block_q6_k_t) },
    [FG_K_Q8_K] = { FG_K_QK_K, sizeof(fg_k_block_q8_k_t) },
};


size_t
fg_k_row_size(fg_k_type_e type, size_t n)
{
    size_t  values;

    if ((size_t) type >= sizeof(fg_k_types) / sizeof(fg_k_types[0])) {
        return 0;
    }

    values = fg_k_types[type].values;

    if (values == 0 || n % values) {
        return 0;
    }

    return n / values * fg_k_types[type].bytes;
}


void
fg_k_dequant_row(fg_k_type_e type, const void *src, float *dst, size_t n)
{
    size_t           i;
    const uint16_t  *h;

#if FG_K_X86
    if (fg_k_simd
        && (type == FG_K_F16 || type == FG_K_BF16 || type == FG_K_Q8_0))
    {
        fg_k_dequant_row_avx2(type, src, dst, n);
        return;
    }
#endif

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        break;

    case FG_K_F16:
        h = src;

        for (i = 0; i < n; i++) {
            dst[i] = fg_fp16_to_f32(h[i]);
        }

        break;

    case FG_K_BF16:
        h = src;

        for (i = 0; i < n; i++) {
            dst[i] = fg_bf16_to_f32(h[i]);
        }

        break;

    case FG_K_Q4_0:
        fg_k_dequant_q4_0(src, dst, n / FG_K_QK4_0);
        break;

    case FG_K_Q4_1:
        fg_k_dequant_q4_1(src, dst, n / FG_K_QK4_1);
        break;

    case FG_K_Q5_0:
        fg_k_dequant_q5_0(src, dst, n / FG_K_QK5_0);
        break;

    case FG_K_Q5_1:
        fg_k_dequant_q5_1(src, dst, n / FG_K_QK5_1);
        break;

    case FG_K_Q8_0:
        fg_k_dequant_q8_0(src, dst, n / FG_K_QK8_0);
        break;

    case FG_K_Q8_1:
        fg_k_dequant_q8_1(src, dst, n / FG_K_QK8_1);
        break;

    case FG_K_Q2_K:
        fg_k_dequant_q2_k(src, dst, n / FG_K_QK_K);
        break;

    case FG_K_Q3_K:
        fg_k_dequant_q3_k(src, dst, n / FG_K_QK_K);
        break;

    case FG_K_Q4_K:
        fg_k_dequant_q4_k(src, dst, n / FG_K_QK_K);
        break;

    case FG_K_Q5_K:
        fg_k_dequant_q5_k(src, dst, n / FG_K_QK_K);
        break;

    case FG_K_Q6_K:
        fg_k_dequant_q6_k(src, dst, n / FG_K_QK_K);
        break;

    case FG_K_Q8_K:
        fg_k_dequant_q8_k(src, dst, n / FG_K_QK_K);
        break;
    }
}


/* float to each type's blocks, nb of them */
static void (*const fg_k_quants[])(const float *x, void *dst, size_t nb) = {
    [FG_K_Q4_0] = fg_k_quant_q4_0,
    [FG_K_Q4_1] = fg_k_quant_q4_1,
    [FG_K_Q5_0] = fg_k_quant_q5_0,
    [FG_K_Q5_1] = fg_k_quant_q5_1,
    [FG_K_Q8_0] = fg_k_quant_q8_0,
    [FG_K_Q8_1] = fg_k_quant_q8_1,
    [FG_K_Q2_K] = fg_k_quant_q2_k,
    [FG_K_Q3_K] = fg_k_quant_q3_k,
    [FG_K_Q4_K] = fg_k_quant_q4_k,
    [FG_K_Q5_K] = fg_k_quant_q5_k,
    [FG_K_Q6_K] = fg_k_quant_q6_k,
    [FG_K_Q8_K] = fg_k_quant_q8_k,
};


void
fg_k_quant_row(fg_k_type_e type, const float *src, void *dst, size_t n)
{
    size_t     i;
    uint16_t  *h;

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        break;

    case FG_K_F16:
        h = dst;

        for (i = 0; i < n; i++) {
            h[i] = fg_f32_to_fp16(src[i]);
        }

        break;

    case FG_K_BF16:
        h = dst;

        for (i = 0; i < n; i++) {
            h[i] = fg_f32_to_bf16(src[i]);
        }

        break;

    default:
        if ((size_t) type < sizeof(fg_k_quants) / sizeof(fg_k_quants[0])
            && fg_k_quants[type] != NULL)
        {
            fg_k_quants[type](src, dst, n / fg_k_types[type].values);
        }

        break;
    }
}


#if FG_K_X86

FG_K_AVX2 static void
fg_k_dequant_row_avx2(fg_k_type_e type, const void *src, float *dst,
    size_t n)
{
    size_t                    i, j;
    __m256                    d;
    const fg_k_block_q8_0_t  *b;

    switch (type) {

    case FG_K_F32:
        memcpy(dst, src, n * sizeof(float));
        return;

    case FG_K_F16:
    case FG_K_BF16:
        for (i = 0; i + 8 <= n; i += 8) {
            _mm256_storeu_ps(dst + i, type == FG_K_F16
                                      ? fg_k_load8_avx2(src, i, FG_K_F16)
                                      : fg_k_load8_avx2(src, i, FG_K_BF16));
        }

        for ( /* void */ ; i < n; i++) {
            dst[i] = type == FG_K_F16
                     ? fg_fp16_to_f32(((const uint16_t *) src)[i])
                     : fg_bf16_to_f32(((const uint16_t *) src)[i]);
        }

        return;

    case FG_K_Q8_0:
        b = src;

        for (i = 0; i < n / FG_K_QK8_0; i++) {
            d = _mm256_set1_ps(_cvtsh_ss(b[i].d));

            for (j = 0; j < FG_K_QK8_0; j += 8) {
                _mm256_storeu_ps(dst + i * FG_K_QK8_0 + j,
                    _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                        _mm_loadl_epi64((const __m128i *) (b[i].qs + j))))));
            }
        }

        return;

    default:
        return;
    }
}

#endif
