
/*
 * fairgate: the AVX2+FMA+F16C build of the quantized products
 * (fg_kernels_qdot_x86.h): dpbusd and dpwssd as AVX2 makes them, maddubs
 * then madd (pairs of int16 into int32) and an add; bits to bytes by a
 * shuffle or an and, a compare and an and.
 */


#include <string.h>

#include "fg_kernels_qdot.h"


#if FG_K_X86

#define FG_K_QD_TARGET      FG_K_AVX2
#define FG_K_QD_FN(name)    name##_avx2
#define FG_K_QD_WIDE        0


FG_K_AVX2 static inline __attribute__((always_inline)) __m256i
fg_k_qd_dpwssd(__m256i acc, __m256i p, __m256i s)
{
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, s));
}


FG_K_AVX2 static inline __attribute__((always_inline)) __m256i
fg_k_qd_dpbusd(__m256i acc, __m256i u, __m256i s)
{
    return fg_k_qd_dpwssd(acc, _mm256_maddubs_epi16(u, s),
                          _mm256_set1_epi16(1));
}


FG_K_AVX2 static inline __attribute__((always_inline)) __m256i
fg_k_qd_hi32(__m256i q, const uint8_t *qh)
{
    int32_t  h;
    __m256i  v, m;

    memcpy(&h, qh, 4);

    /* byte j gets byte j / 8 of h, then tests bit j % 8 of it */
    v = _mm256_shuffle_epi8(_mm256_set1_epi32(h),
                            _mm256_setr_epi64x(0, 0x0101010101010101,
                                               0x0202020202020202,
                                               0x0303030303030303));
    m = _mm256_set1_epi64x(0x8040201008040201);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, m), m);

    return _mm256_or_si256(q, _mm256_and_si256(v, _mm256_set1_epi8(0x10)));
}


#include "fg_kernels_qdot_x86.h"

#endif
