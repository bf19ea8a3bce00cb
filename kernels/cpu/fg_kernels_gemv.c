
/*
 * fairgate: the direct kernels of the CPU matrix products, which
 * fg_kernels_mm.c runs for a few rows (and for every batch when products
 * must be batch-invariant): weights read in their own type and used from
 * registers, F16 and BF16 widened to float, Q8_0 by int8 products with x
 * quantized per 32-block; portable C, and AVX2 where the CPU has it.
 * Also the dot and axpy that the other kernels use.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels_gemv.h"


#if FG_K_X86
static void fg_k_quant_x_avx2(fg_k_block_q8x_t *xq, const float *x,
    size_t n);
static void fg_k_round_x_avx2(float *xr, const float *x, size_t n);
static void fg_k_mm_small_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
static void fg_k_mm_q8_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1);
#endif


/* one weight of a row of type: row tails, the portable kernel */
static inline __attribute__((always_inline)) float
fg_k_load1(const void *w, size_t i, fg_k_type_e type)
{
    switch (type) {

    case FG_K_F16:
        return fg_fp16_to_f32(((const uint16_t *) w)[i]);

    case FG_K_BF16:
        return fg_bf16_to_f32(((const uint16_t *) w)[i]);

    default:
        return ((const float *) w)[i];
    }
}


/*
 * A 32-block of x to int8 as ggml's x86 CPU backend quantizes x for its
 * Q8_0 products: q = round(x * (127 / amax)), ties to even; returns the
 * scale amax / 127 rounded to a half, as ggml's block keeps it.  Both
 * paths of a Q8_0 product see x through it (or through its AVX2 twin,
 * which makes the same operations: the same bits).
 */
static inline __attribute__((always_inline)) float
fg_k_quant_block(int8_t *q, const float *x)
{
    size_t  j;
    float   amax, id;

    amax = 0.0f;

    for (j = 0; j < FG_K_QK8_0; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
    }

    id = amax != 0.0f ? 127.0f / amax : 0.0f;

    for (j = 0; j < FG_K_QK8_0; j++) {
        q[j] = (int8_t) lrintf(x[j] * id);
    }

    return fg_k_via_half(amax / 127.0f);
}


/* x to int8 per 32-block for the direct kernels */
void
fg_k_quant_x(fg_k_block_q8x_t *xq, const float *x, size_t n)
{
    size_t  i;

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_quant_x_avx2(xq, x, n);
        return;
    }
#endif

    for (i = 0; i < n / FG_K_QK8_0; i++, x += FG_K_QK8_0) {
        xq[i].d = fg_k_quant_block(xq[i].qs, x);
    }
}


/* x as the direct kernels see it, d * q, in float for sgemm */
void
fg_k_round_x(float *xr, const float *x, size_t n)
{
    size_t  i, j;
    float   d;
    int8_t  q[FG_K_QK8_0];

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_round_x_avx2(xr, x, n);
        return;
    }
#endif

    for (i = 0; i + FG_K_QK8_0 <= n; i += FG_K_QK8_0) {
        d = fg_k_quant_block(q, x + i);

        for (j = 0; j < FG_K_QK8_0; j++) {
            xr[i + j] = d * q[j];
        }
    }
}


static void
fg_k_mm_q8_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t                    r, t, b, j, nb;
    float                     sum;
    int32_t                   isum;
    const fg_k_block_q8x_t   *xb;
    const fg_k_block_q8_0_t  *wb;

    nb = mm->in / FG_K_QK8_0;

    for (r = r0; r < r1; r++) {
        wb = (const fg_k_block_q8_0_t *) mm->w + r * nb;

        for (t = 0; t < mm->n; t++) {
            xb = mm->xq + t * nb;
            sum = 0.0f;

            for (b = 0; b < nb; b++) {
                isum = 0;

                /* integers: the compiler may vectorize the sum freely */
                for (j = 0; j < FG_K_QK8_0; j++) {
                    isum += wb[b].qs[j] * xb[b].qs[j];
                }

                sum += (float) isum * fg_fp16_to_f32(wb[b].d) * xb[b].d;
            }

            mm->y[t * mm->out + r] = sum;
        }
    }
}


/*
 * The portable direct kernel for F32, F16 and BF16; like the AVX2 one,
 * each sum is made the same way whatever the batch.
 */
static void
fg_k_mm_float_generic(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t        r, t, i, in, rs;
    float         s0, s1, s2, s3;
    const char   *w;
    const float  *x;

    in = mm->in;
    rs = fg_k_row_size(mm->type, in);

    for (r = r0; r < r1; r++) {
        w = (const char *) mm->w + r * rs;

        for (t = 0; t < mm->n; t++) {
            x = mm->x + t * in;
            s0 = s1 = s2 = s3 = 0.0f;

            for (i = 0; i + 4 <= in; i += 4) {
                s0 += fg_k_load1(w, i, mm->type) * x[i];
                s1 += fg_k_load1(w, i + 1, mm->type) * x[i + 1];
                s2 += fg_k_load1(w, i + 2, mm->type) * x[i + 2];
                s3 += fg_k_load1(w, i + 3, mm->type) * x[i + 3];
            }

            for ( /* void */ ; i < in; i++) {
                s0 += fg_k_load1(w, i, mm->type) * x[i];
            }

            mm->y[t * mm->out + r] = (s0 + s1) + (s2 + s3);
        }
    }
}


void
fg_k_mm_direct_rows(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
#if FG_K_X86
    if (fg_k_simd) {
        if (mm->type == FG_K_Q8_0) {
            fg_k_mm_q8_avx2(mm, r0, r1);

        } else if (fg_k_simd512) {
            fg_k_mm_float_avx512(mm, r0, r1);

        } else {
            fg_k_mm_small_avx2(mm, r0, r1);
        }

        return;
    }
#endif

    if (mm->type == FG_K_Q8_0) {
        fg_k_mm_q8_generic(mm, r0, r1);

    } else {
        fg_k_mm_float_generic(mm, r0, r1);
    }
}


/* ---- dot and axpy ---- */

#if FG_K_X86

FG_K_AVX2 static float
fg_k_dot_avx2(const float *a, const float *b, size_t n)
{
    size_t  i;
    float   sum;
    __m256  s0, s1;

    s0 = _mm256_setzero_ps();
    s1 = _mm256_setzero_ps();

    for (i = 0; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                             s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8),
                             _mm256_loadu_ps(b + i + 8), s1);
    }

    if (i + 8 <= n) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i),
                             s0);
        i += 8;
    }

    sum = fg_k_hsum8_avx2(_mm256_add_ps(s0, s1));

    for ( /* void */ ; i < n; i++) {
        sum += a[i] * b[i];
    }

    return sum;
}


FG_K_AVX2 static void
fg_k_axpy_avx2(float *y, float a, const float *x, size_t n)
{
    size_t  i;
    __m256  va;

    va = _mm256_set1_ps(a);

    for (i = 0; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i),
                                                _mm256_loadu_ps(y + i)));
    }

    for ( /* void */ ; i < n; i++) {
        y[i] += a * x[i];
    }
}

#endif


float
fg_k_dot(const float *a, const float *b, size_t n)
{
    size_t  i;
    float   s0, s1, s2, s3;

#if FG_K_X86
    if (fg_k_simd) {
        return fg_k_dot_avx2(a, b, n);
    }
#endif

    /* four sums: shorter dependency chains, and what SIMD would do */
    s0 = s1 = s2 = s3 = 0.0f;

    for (i = 0; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }

    for ( /* void */ ; i < n; i++) {
        s0 += a[i] * b[i];
    }

    return (s0 + s1) + (s2 + s3);
}


void
fg_k_axpy(float *y, float a, const float *x, size_t n)
{
    size_t  i;

#if FG_K_X86
    if (fg_k_simd) {
        fg_k_axpy_avx2(y, a, x, n);
        return;
    }
#endif

    for (i = 0; i < n; i++) {
        y[i] += a * x[i];
    }
}


/* ---- AVX2 paths ---- */

#if FG_K_X86

/* fg_k_quant_block(), q as 4 vectors of int32 */
FG_K_AVX2 static inline __attribute__((always_inline)) float
fg_k_quant_block_avx2(__m256i *q, const float *x)
{
    size_t  k;
    float   amax, id;
    __m256  v[4], a, sign;

    sign = _mm256_set1_ps(-0.0f);

#pragma GCC unroll 4
    for (k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
    }

    a = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]),
                                    _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]),
                                    _mm256_andnot_ps(sign, v[3])));

    amax = fg_k_hmax8_avx2(a);
    id = amax != 0.0f ? 127.0f / amax : 0.0f;

    /* the conversion rounds as lrintf() does: to nearest, ties to even */
#pragma GCC unroll 4
    for (k = 0; k < 4; k++) {
        q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], _mm256_set1_ps(id)));
    }

    return _mm_cvtss_f32(fg_k_via_half4_avx2(_mm_set_ss(amax / 127.0f)));
}


FG_K_AVX2 static void
fg_k_quant_x_avx2(fg_k_block_q8x_t *xq, const float *x, size_t n)
{
    size_t   i;
    __m256i  q[4], p;

    for (i = 0; i < n / FG_K_QK8_0; i++, x += FG_K_QK8_0) {
        xq[i].d = fg_k_quant_block_avx2(q, x);

        /* packs work within 128-bit lanes: dwords 0 4 1 5 2 6 3 7 */
        p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                               _mm256_packs_epi32(q[2], q[3]));
        p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5,
                                                             2, 6, 3, 7));

        _mm256_storeu_si256((__m256i *) xq[i].qs, p);
    }
}


FG_K_AVX2 static void
fg_k_round_x_avx2(float *xr, const float *x, size_t n)
{
    size_t   i, k;
    __m256   d;
    __m256i  q[4];

    for (i = 0; i + FG_K_QK8_0 <= n; i += FG_K_QK8_0) {
        d = _mm256_set1_ps(fg_k_quant_block_avx2(q, x + i));

#pragma GCC unroll 4
        for (k = 0; k < 4; k++) {
            _mm256_storeu_ps(xr + i + 8 * k,
                             _mm256_mul_ps(d, _mm256_cvtepi32_ps(q[k])));
        }
    }
}


/*
 * 8 weights from element i of rows r .. r+nr-1 (w) by 8 values of tokens
 * t .. t+nt-1 (xr) into sums h of each
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_step_avx2(__m256 a[4][2][2], const char *w, const float *xr,
    size_t in, size_t i, size_t nr, size_t nt, fg_k_type_e type, size_t h)
{
    size_t  j, k, rs;
    __m256  x[2], wv;

    rs = in * (type == FG_K_F32 ? 4 : 2);

#pragma GCC unroll 2
    for (k = 0; k < nt; k++) {
        x[k] = _mm256_loadu_ps(xr + k * in + i);
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
        wv = fg_k_load8_avx2(w + j * rs, i, type);

#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            a[j][k][h] = _mm256_fmadd_ps(wv, x[k], a[j][k][h]);
        }
    }
}


/*
 * y[t .. t+nt-1][r .. r+nr-1] for rows of type.  nr and nt are constants
 * where this is inlined, so the loops over them unroll and the sums stay
 * in registers (a sum in memory waits on a store each step, which cost
 * these kernels 3x).  4 x 2 keeps 8 sums going, enough to hide the FMA
 * latency, and each load of x or of a weight feeds 4 or 2 products.
 *
 * F16 keeps two sums an output, of the first and the second 8 of every 16
 * values, so that at n = 1 a row alone has two chains and is read as one
 * sequential stream, 32 bytes a step: 28-30 GB/s where 4 rows of 16 bytes
 * a step read 17-22 (bench_kernels --simd avx2 --n 1), the conversion's
 * cost hidden behind the loads.  Rows of 4 KiB and more are read 4 at a
 * time even so (FG_K_MM_ONE_ROW: a 1b model's F16 decode 9.4 tokens/s a
 * row alone, 10.5 four at a time; the hardware prefetcher restarts at
 * each page).  Batches take 2 rows by 2 tokens, the same sums (8 at n = 8
 * ran at 0.7x the 4 x 2 blocks' rate: batches were 2.5x llama.cpp's,
 * batch 1 0.9x).
 */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_block_avx2(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt, fg_k_type_e type)
{
    int           pf, pa;
    size_t        i, j, k, h, o, in, rs, es, ns;
    float         s, w1;
    __m256        a[4][2][2];
    const char   *w;
    const float  *xr;

    in = mm->in;
    es = type == FG_K_F32 ? 4 : 2;
    ns = type == FG_K_F16 ? 2 : 1;
    rs = in * es;
    w = (const char *) mm->w + r * rs;
    xr = mm->x + t * in;
    pf = fg_k_mm_pf_next(nr, nt, rs);
    pa = fg_k_mm_pf_ahead(nr, nt, rs);

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            a[j][k][0] = _mm256_setzero_ps();
            a[j][k][1] = _mm256_setzero_ps();
        }
    }

    for (i = 0; i + 8 * ns <= in; i += 8 * ns) {
        if (pf) {
#pragma GCC unroll 4
            for (o = 0; o < nr * 8 * ns * es; o += 64) {
                _mm_prefetch(w + nr * rs + i * nr * es + o, _MM_HINT_T0);
            }
        }

        /* a step reads 16 or 32 bytes of each row: a line each 64 */
        if (pa && (i * es) % 64 == 0) {
#pragma GCC unroll 4
            for (j = 0; j < nr; j++) {
                _mm_prefetch(w + j * rs + i * es + FG_K_MM_PF_AHEAD,
                             _MM_HINT_T1);
            }
        }

#pragma GCC unroll 2
        for (h = 0; h < ns; h++) {
            fg_k_mm_step_avx2(a, w, xr, in, i + 8 * h, nr, nt, type, h);
        }
    }

    /* F16: a last 8 into the first sum */
    if (ns == 2 && i + 8 <= in) {
        fg_k_mm_step_avx2(a, w, xr, in, i, nr, nt, type, 0);
        i += 8;
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            s = fg_k_hsum8_avx2(ns == 2 ? _mm256_add_ps(a[j][k][0],
                                                        a[j][k][1])
                                        : a[j][k][0]);

            for (o = i; o < in; o++) {
                w1 = fg_k_load1(w + j * rs, o, type);
                s += w1 * xr[k * in + o];
            }

            mm->y[(t + k) * mm->out + r + j] = s;
        }
    }
}


FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_small_type_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1,
    fg_k_type_e type)
{
    size_t  r, t;

    /*
     * n = 1: F32 rows alone as well, one sequential stream (its one chain
     * of FMAs still outruns memory: a 1b model's F32 decode 4.8 tokens/s
     * 4 rows at a time, 5.2 alone; 100m 66 and 75); BF16, with one sum of
     * 8 values, in groups of 4 rows
     */
    if (type != FG_K_BF16 && mm->n == 1) {
        r = r0;

        if (type == FG_K_F16 && mm->in * 2 >= FG_K_MM_ONE_ROW) {
            for ( /* void */ ; r + 4 <= r1; r += 4) {
                fg_k_mm_block_avx2(mm, r, 0, 4, 1, type);
            }
        }

        for ( /* void */ ; r < r1; r++) {
            fg_k_mm_block_avx2(mm, r, 0, 1, 1, type);
        }

        return;
    }

    if (type == FG_K_F16) {
        for (r = r0; r + 2 <= r1; r += 2) {
            for (t = 0; t + 2 <= mm->n; t += 2) {
                fg_k_mm_block_avx2(mm, r, t, 2, 2, type);
            }

            if (t < mm->n) {
                fg_k_mm_block_avx2(mm, r, t, 2, 1, type);
            }
        }

    } else {
        for (r = r0; r + 4 <= r1; r += 4) {
            for (t = 0; t + 2 <= mm->n; t += 2) {
                fg_k_mm_block_avx2(mm, r, t, 4, 2, type);
            }

            if (t < mm->n) {
                fg_k_mm_block_avx2(mm, r, t, 4, 1, type);
            }
        }
    }

    for ( /* void */ ; r < r1; r++) {
        for (t = 0; t < mm->n; t++) {
            fg_k_mm_block_avx2(mm, r, t, 1, 1, type);
        }
    }
}


FG_K_AVX2 static void
fg_k_mm_small_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    /* one copy of the loops per type, its loads resolved at compile time */
    switch (mm->type) {

    case FG_K_F16:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_F16);
        break;

    case FG_K_BF16:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_BF16);
        break;

    default:
        fg_k_mm_small_type_avx2(mm, r0, r1, FG_K_F32);
        break;
    }
}


/*
 * The sum of 32 products of signed bytes as 8 int32 sums in floats.
 * maddubs multiplies unsigned by signed bytes, so w's signs move onto x:
 * |w| * (x * sign(w)).  |-128| reads as 128 unsigned, still right; x is
 * never -128, so its negation never overflows, and a pair of products
 * (at most 2 * 128 * 127) fits the int16 sums.
 */
FG_K_AVX2 static inline __attribute__((always_inline)) __m256
fg_k_dot32_avx2(__m256i aw, __m256i w, __m256i x)
{
    __m256i  p;

    p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w));
    p = _mm256_madd_epi16(p, _mm256_set1_epi16(1));

    return _mm256_cvtepi32_ps(p);
}


/* Q8_0 rows r .. r+nr-1 by tokens t .. t+nt-1, as fg_k_mm_block_avx2() */
FG_K_AVX2 static inline __attribute__((always_inline)) void
fg_k_mm_q8_block_avx2(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt)
{
    int                       pf;
    size_t                    b, j, k, o, nb;
    float                     wd;
    __m256                    a[4][2];
    __m256i                   x[2], wv, aw;
    const fg_k_block_q8x_t   *xb;
    const fg_k_block_q8_0_t  *wb;

    nb = mm->in / FG_K_QK8_0;
    wb = (const fg_k_block_q8_0_t *) mm->w + r * nb;
    xb = mm->xq + t * nb;
    pf = nr * nb * sizeof(fg_k_block_q8_0_t) <= FG_K_MM_PF_GROUP;

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            a[j][k] = _mm256_setzero_ps();
        }
    }

    for (b = 0; b < nb; b++) {
        if (pf) {
#pragma GCC unroll 4
            for (o = 0; o < nr * sizeof(fg_k_block_q8_0_t); o += 64) {
                _mm_prefetch((const char *) (wb + nr * nb + b * nr) + o,
                             _MM_HINT_T0);
            }
        }

#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            x[k] = _mm256_loadu_si256((const __m256i *) xb[k * nb + b].qs);
        }

#pragma GCC unroll 4
        for (j = 0; j < nr; j++) {
            wv = _mm256_loadu_si256((const __m256i *) wb[j * nb + b].qs);
            aw = _mm256_sign_epi8(wv, wv);
            wd = _cvtsh_ss(wb[j * nb + b].d);

#pragma GCC unroll 2
            for (k = 0; k < nt; k++) {
                a[j][k] = _mm256_fmadd_ps(
                              fg_k_dot32_avx2(aw, wv, x[k]),
                              _mm256_set1_ps(wd * xb[k * nb + b].d),
                              a[j][k]);
            }
        }
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 2
        for (k = 0; k < nt; k++) {
            mm->y[(t + k) * mm->out + r + j] = fg_k_hsum8_avx2(a[j][k]);
        }
    }
}


FG_K_AVX2 static void
fg_k_mm_q8_avx2(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t  r, t;

    for (r = r0; r + 4 <= r1; r += 4) {
        for (t = 0; t + 2 <= mm->n; t += 2) {
            fg_k_mm_q8_block_avx2(mm, r, t, 4, 2);
        }

        if (t < mm->n) {
            fg_k_mm_q8_block_avx2(mm, r, t, 4, 1);
        }
    }

    for ( /* void */ ; r < r1; r++) {
        for (t = 0; t < mm->n; t++) {
            fg_k_mm_q8_block_avx2(mm, r, t, 1, 1);
        }
    }
}

#endif
