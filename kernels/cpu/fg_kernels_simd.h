
/*
 * fairgate: what the CPU kernels' files share, not part of the interface.
 *
 * The SIMD paths are compiled for AVX2+FMA+F16C with target attributes and
 * chosen at run time (fg_k_init(), fg_kernels_simd.c), so one binary runs
 * on any x86-64 and uses what the CPU has; the build needs no -march flag.
 */

#ifndef _FG_KERNELS_SIMD_H_INCLUDED_
#define _FG_KERNELS_SIMD_H_INCLUDED_


#include <stddef.h>

#include "fg_kernels.h"


#if defined(__x86_64__) && defined(__GNUC__)
#define FG_K_X86     1
#define FG_K_AVX2    __attribute__((target("avx2,fma,f16c")))
#define FG_K_AVX512  __attribute__((target("avx2,fma,f16c,avx512f," \
                                           "avx512vl,avx512bw,"     \
                                           "avx512vnni")))
#include <immintrin.h>
#else
#define FG_K_X86     0
#endif


/*
 * Rows of x up to which matrix products use the direct kernels rather
 * than sgemm (fg_kernels_mm.c says why); tests pick their bounds by it.
 * fg_k_mm_direct_max starts there, fg_k_mm_qd_max_* at the bounds
 * below; the benchmark moves them to compare the paths.
 */
#define FG_K_MM_SMALL  16

/*
 * With SIMD, ggml's quantized types go direct up to more rows: the
 * 32-value blocks (Q4_0 .. Q5_1) to FG_K_MM_QD_32, the k-quants always,
 * and with AVX-512 VNNI Q4_0 and Q5_0 always too (FG_K_MM_QD_0;
 * fg_kernels_mm.c says why).
 */
#define FG_K_MM_QD_32  128
#define FG_K_MM_QD_K   ((size_t) -1)
#define FG_K_MM_QD_0   ((size_t) -1)

/*
 * With SIMD, F16 and BF16 go direct up to FG_K_MM_HALF rows: widening
 * their tiles for sgemm costs as much as the products below about 100
 * rows (fg_kernels_mm.c says how it was measured).
 */
#define FG_K_MM_HALF   64

extern size_t  fg_k_mm_direct_max;
extern size_t  fg_k_mm_half_max;
extern size_t  fg_k_mm_qd_max_32;
extern size_t  fg_k_mm_qd_max_k;
extern size_t  fg_k_mm_qd_max_0;

/*
 * Whether a product of n rows of x by an unpacked matrix of type takes
 * the direct kernels under the bounds above (fg_kernels_mm.c)
 */
int fg_k_mm_takes_direct(fg_k_type_e type, size_t n);


/* 1 when the AVX2 paths run; set by fg_k_init() and fg_k_set_simd()
 * (fg_kernels_simd.c) */
extern int  fg_k_simd;

/* 1 when the AVX-512 VNNI paths run too (fg_kernels_qdot.h's products) */
extern int  fg_k_simd512;

/* 1 when AVX512-BF16's products run too (fg_kernels_bf16_avx512.c) */
extern int  fg_k_simd_bf16;


#if FG_K_X86

/* the sum of 8 values */
FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_hsum8_avx2(__m256 v)
{
    __m128  s;

    s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));

    return _mm_cvtss_f32(s);
}


/* the largest of 8 values */
FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_hmax8_avx2(__m256 v)
{
    v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0x4e));
    v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, 0xb1));

    return _mm256_cvtss_f32(v);
}


/*
 * Four floats through IEEE halves and back by F16C: fg_k_via_half()'s
 * rounding (to nearest, ties to even), without its branches
 */
FG_K_AVX2 static inline __attribute__((always_inline)) __m128
fg_k_via_half4_avx2(__m128 v)
{
    return _mm_cvtph_ps(_mm_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}


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


/*
 * e^x, 8 at a time: 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2,
 * e^r by its Taylor polynomial of degree 6 (relative error below 2e-7 on
 * that range), 2^n added to the exponent bits.  x is clamped to [-86, 88],
 * where 2^n stays a normal float: e^-86 = 4e-38 is as good as 0 beside
 * softmax's e^0 = 1 and in silu's 1 + e^-g, and attention masks the lanes
 * that must be exactly 0 itself.  The clamps take x as their second
 * operand, which max and min return when it is a NaN: a NaN stays one.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_exp8_avx2(__m256 x)
{
    __m256   n, r, p;
    __m256i  e;

    x = _mm256_min_ps(_mm256_set1_ps(88.0f),
                      _mm256_max_ps(_mm256_set1_ps(-86.0f), x));

    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);

    /* ln 2 in two parts, the first of 9 bits: n (7 bits) times it is exact */
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);

    p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));

    e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);

    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

#endif


#endif /* _FG_KERNELS_SIMD_H_INCLUDED_ */
