
/*
 * fairgate: the AVX2+FMA+F16C build of the quantized products
 * (fg_kernels_qdot_x86.h): dpbusd and dpwssd as AVX2 makes them, maddubs
 * then madd (pairs of int16 into int32) and an add.
 */


#include <string.h>

#include "fg_kernels_qdot.h"


#if FG_K_X86

#define FG_K_QD_TARGET      FG_K_AVX2
#define FG_K_QD_FN(name)    name##_avx2


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


#include "fg_kernels_qdot_x86.h"

#endif
