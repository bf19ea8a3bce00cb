
/*
 * fairgate: the direct kernels for F32, F16 and BF16 weights on CPUs
 * with AVX-512 (fg_k_mm_direct_rows() picks them there): 16 weights a
 * vector, a row's whole 64-byte line a step, and at n = 1 each row read
 * alone from its start to its end (the whole matrix one sequential
 * stream), but F16 and BF16 rows of 4 KiB and more 4 at a time (a 1b
 * model's F16 decode 9.0 tokens/s alone, 10.4 four at a time; the
 * hardware prefetcher restarts at each page); batches take blocks of 2
 * rows by 4 tokens (F16) or 4 by 2 (F32, BF16).  Every
 * output is the same sum either way (two accumulators, the same order of
 * additions), so a row's bits do not depend on the batch.
 *
 * Halves go through the 16-wide vcvtph2ps as they are, subnormals too:
 * an earlier kernel kept subnormals from it, taken to need a microcode
 * assist, and read 15-20% slower for it; converting 2% subnormal halves
 * from the second-level cache measured the same rate as none.
 */


#include "fg_kernels_gemv.h"


#if FG_K_X86

/* 16 weights from element i of a row of type, the lanes of m only */
FG_K_AVX512 static inline __attribute__((always_inline)) __m512
fg_k_load16_avx512(const void *w, size_t i, fg_k_type_e type, __mmask16 m)
{
    __m256i          h;
    const uint16_t  *p;

    if (type != FG_K_F32) {
        p = (const uint16_t *) w + i;
        h = m == 0xffff ? _mm256_loadu_si256((const __m256i *) p)
                        : _mm256_maskz_loadu_epi16(m, p);

        if (type == FG_K_F16) {
            return _mm512_cvtph_ps(h);
        }

        /* a BF16 is a float's upper half */
        return _mm512_castsi512_ps(
                   _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }

    return m == 0xffff ? _mm512_loadu_ps((const float *) w + i)
                       : _mm512_maskz_loadu_ps(m, (const float *) w + i);
}


/*
 * 16 weights of rows r .. r+nr-1 by 16 values of tokens t .. t+nt-1 into
 * sums h of each; lanes out of m read nothing and add 0.
 */
FG_K_AVX512 static inline __attribute__((always_inline)) void
fg_k_mm_step_avx512(__m512 a[4][4][2], const char *w, const float *xr,
    size_t in, size_t i, size_t nr, size_t nt, fg_k_type_e type,
    __mmask16 m, size_t h)
{
    size_t  j, k, rs;
    __m512  x[4], wv;

    rs = in * (type == FG_K_F32 ? 4 : 2);

#pragma GCC unroll 4
    for (k = 0; k < nt; k++) {
        x[k] = m == 0xffff ? _mm512_loadu_ps(xr + k * in + i)
                           : _mm512_maskz_loadu_ps(m, xr + k * in + i);
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
        wv = fg_k_load16_avx512(w + j * rs, i, type, m);

#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            a[j][k][h] = _mm512_fmadd_ps(wv, x[k], a[j][k][h]);
        }
    }
}


/*
 * y[t .. t+nt-1][r .. r+nr-1], as fg_k_mm_block_avx2(): nr and nt are
 * constants where this is inlined.  Each output keeps two sums, of the
 * first and the second 16 of every 32 values (the tail's last 16 or
 * fewer into whichever comes next), added at the end.
 */
FG_K_AVX512 static inline __attribute__((always_inline)) void
fg_k_mm_block_avx512(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt, fg_k_type_e type)
{
    int           pf, pa;
    size_t        i, j, k, o, in, rs, es;
    __m512        a[4][4][2], s;
    const char   *w;
    const float  *xr;

    in = mm->in;
    es = type == FG_K_F32 ? 4 : 2;
    rs = in * es;
    w = (const char *) mm->w + r * rs;
    xr = mm->x + t * in;
    /*
     * One row alone reads the matrix as one sequential stream, which the
     * hardware prefetcher follows: prefetching the next row as well lost
     * 10-20% for F32 and up to 10% for F16 there.  Blocks prefetch the
     * next block's rows when they are short; a longer group of rows at
     * n = 1, each row ahead (FG_K_MM_PF_AHEAD).
     */
    pf = fg_k_mm_pf_next(nr, nt, rs);
    pa = fg_k_mm_pf_ahead(nr, nt, rs);

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            a[j][k][0] = _mm512_setzero_ps();
            a[j][k][1] = _mm512_setzero_ps();
        }
    }

    for (i = 0; i + 32 <= in; i += 32) {
        if (pf) {
#pragma GCC unroll 8
            for (o = 0; o < nr * 32 * es; o += 64) {
                _mm_prefetch(w + nr * rs + i * nr * es + o, _MM_HINT_T0);
            }
        }

        if (pa) {
#pragma GCC unroll 4
            for (j = 0; j < nr; j++) {
                for (o = 0; o < 32 * es; o += 64) {
                    _mm_prefetch(w + j * rs + i * es + o + FG_K_MM_PF_AHEAD,
                                 _MM_HINT_T1);
                }
            }
        }

        fg_k_mm_step_avx512(a, w, xr, in, i, nr, nt, type, 0xffff, 0);
        fg_k_mm_step_avx512(a, w, xr, in, i + 16, nr, nt, type, 0xffff, 1);
    }

    if (i + 16 <= in) {
        fg_k_mm_step_avx512(a, w, xr, in, i, nr, nt, type, 0xffff, 0);
        i += 16;
    }

    if (i < in) {
        fg_k_mm_step_avx512(a, w, xr, in, i, nr, nt, type,
                            (__mmask16) ((1u << (in - i)) - 1),
                            in % 32 > 16);
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            s = _mm512_add_ps(a[j][k][0], a[j][k][1]);
            mm->y[(t + k) * mm->out + r + j] = fg_k_hsum8_avx2(
                _mm256_add_ps(_mm512_castps512_ps256(s),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(
                                  _mm512_castps_pd(s), 1))));
        }
    }
}


/* rows r .. r+nr-1 by every token, nt (2 or 4) tokens a block */
FG_K_AVX512 static inline __attribute__((always_inline)) void
fg_k_mm_rows_avx512(const fg_k_mm_t *mm, size_t r, size_t nr, size_t nt,
    fg_k_type_e type)
{
    size_t  t;

    for (t = 0; t + nt <= mm->n; t += nt) {
        fg_k_mm_block_avx512(mm, r, t, nr, nt, type);
    }

    switch (mm->n - t) {

    case 3:
        fg_k_mm_block_avx512(mm, r, t, nr, 3, type);
        break;

    case 2:
        fg_k_mm_block_avx512(mm, r, t, nr, 2, type);
        break;

    case 1:
        fg_k_mm_block_avx512(mm, r, t, nr, 1, type);
        break;
    }
}


/*
 * Batches: F16 in blocks of 2 rows by 4 tokens, each weight converted
 * once per 4 tokens (4 x 2 took 1.3x the AVX2 kernel's time at n = 8);
 * F32, with nothing to convert, in 4 rows by 2 tokens, fewer loads of x
 * (2 x 4 lost 10% of F32's decode at 8 sequences), and BF16, whose
 * conversion is a widening load and a shift, likewise (2 x 4 lost 4-7%
 * of a 1b model's decode at 8 and 16 sequences, 4 x 2 gained as much)
 */
FG_K_AVX512 static inline __attribute__((always_inline)) void
fg_k_mm_float_type_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1,
    fg_k_type_e type)
{
    size_t  r, nr;

    /* one row of x: short weight rows alone, one stream at a time */
    if (mm->n == 1) {
        r = r0;

        if (type != FG_K_F32 && mm->in * 2 >= FG_K_MM_ONE_ROW) {
            for ( /* void */ ; r + 4 <= r1; r += 4) {
                fg_k_mm_block_avx512(mm, r, 0, 4, 1, type);
            }
        }

        for ( /* void */ ; r < r1; r++) {
            fg_k_mm_block_avx512(mm, r, 0, 1, 1, type);
        }

        return;
    }

    nr = type == FG_K_F16 ? 2 : 4;

    for (r = r0; r + nr <= r1; r += nr) {
        if (type == FG_K_F16) {
            fg_k_mm_rows_avx512(mm, r, 2, 4, type);

        } else {
            fg_k_mm_rows_avx512(mm, r, 4, 2, type);
        }
    }

    for ( /* void */ ; r < r1; r++) {
        fg_k_mm_rows_avx512(mm, r, 1, 4, type);
    }
}


FG_K_AVX512 void
fg_k_mm_float_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    /* one copy of the loops per type, its loads resolved at compile time */
    switch (mm->type) {

    case FG_K_F16:
        fg_k_mm_float_type_avx512(mm, r0, r1, FG_K_F16);
        break;

    case FG_K_BF16:
        fg_k_mm_float_type_avx512(mm, r0, r1, FG_K_BF16);
        break;

    default:
        fg_k_mm_float_type_avx512(mm, r0, r1, FG_K_F32);
        break;
    }
}

#endif
