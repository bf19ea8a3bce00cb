
/*
 * fairgate: the AVX-512 build of the quantized products
 * (fg_kernels_qdot_x86.h), for CPUs with AVX512-VNNI: vpdpbusd and
 * vpdpwssd multiply and add into int32 in one instruction where AVX2
 * takes two or three, and Q5_0's and Q5_1's fifth bits become bytes
 * through a mask register (a masked add of 16).  The vectors stay 256
 * bits wide (AVX512-VL), as ggml's k-quant products on such CPUs are.
 */


#include <string.h>

#include "fg_kernels_qdot.h"


#if FG_K_X86

#define FG_K_QD_TARGET      FG_K_AVX512
#define FG_K_QD_FN(name)    name##_avx512
#define FG_K_QD_WIDE        1


FG_K_AVX512 static inline __attribute__((always_inline)) __m256i
fg_k_qd_dpwssd(__m256i acc, __m256i p, __m256i s)
{
    return _mm256_dpwssd_epi32(acc, p, s);
}


FG_K_AVX512 static inline __attribute__((always_inline)) __m256i
fg_k_qd_dpbusd(__m256i acc, __m256i u, __m256i s)
{
    return _mm256_dpbusd_epi32(acc, u, s);
}


FG_K_AVX512 static inline __attribute__((always_inline)) __m256i
fg_k_qd_hi32(__m256i q, const uint8_t *qh)
{
    uint32_t  h;

    memcpy(&h, qh, 4);

    return _mm256_mask_add_epi8(q, _cvtu32_mask32(h), q,
                                _mm256_set1_epi8(0x10));
}


#include "fg_kernels_qdot_x86.h"

#endif
