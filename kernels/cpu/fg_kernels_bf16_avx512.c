
/*
 * fairgate: BF16 weights by a prefill's rows of x on CPUs with
 * AVX512-BF16 (fg_kernels_mm.c takes it beyond the direct kernels' rows,
 * in place of widened tiles and sgemm).  x is rounded to BF16 once a
 * product (round to nearest even, as llama.cpp rounds x for its BF16
 * products), and vdpbf16ps multiplies 32 pairs and adds them into 16
 * float sums an instruction: twice the products of an FMA on floats, and
 * no tile of widened weights to write and read.  Blocks of 4 weight rows
 * by 4 rows of x share each load; tiles of 32 weight rows by 64 rows of x
 * keep x in the second-level cache.
 */


#include <string.h>

#include "fg_kernels_gemv.h"


#if FG_K_X86

#define FG_K_BF16_TARGET    __attribute__((target("avx2,fma,f16c,avx512f," \
                                "avx512vl,avx512bw,avx512bf16")))
#define FG_K_BF16_INLINE    FG_K_BF16_TARGET static inline \
                            __attribute__((always_inline))

#define FG_K_BF16_TILE_R    32
#define FG_K_BF16_TILE_T    64


size_t
fg_k_bf16_xrow_size(size_t in)
{
    return (in + 31) / 32 * 32 * sizeof(uint16_t);
}


/* rows [t0, t1) of x rounded to BF16, each padded with zeros to 32 */
FG_K_BF16_TARGET void
fg_k_bf16_round_x(const fg_k_mm_t *mm, size_t t0, size_t t1)
{
    size_t        t, i, in;
    __m512        a, b;
    __mmask16     ma, mb;
    uint16_t     *d;
    const float  *x;

    in = mm->in;

    for (t = t0; t < t1; t++) {
        x = mm->x + t * in;
        d = (uint16_t *) (mm->xa + t * mm->xa_row);

        for (i = 0; i < in; i += 32) {
            ma = in - i >= 16 ? 0xffff : (__mmask16) ((1u << (in - i)) - 1);
            mb = in - i >= 32 ? 0xffff
                 : in - i > 16 ? (__mmask16) ((1u << (in - i - 16)) - 1) : 0;
            a = _mm512_maskz_loadu_ps(ma, x + i);
            b = _mm512_maskz_loadu_ps(mb, x + i + 16);

            _mm512_storeu_si512(d + i,
                                (__m512i) _mm512_cvtne2ps_pbh(b, a));
        }
    }
}


/*
 * y[t .. t+nt-1][r .. r+nr-1]: nr and nt constants where this is
 * inlined; each output one sum of 16 lanes, added across at the end
 */
FG_K_BF16_INLINE void
fg_k_bf16_block(const fg_k_mm_t *mm, size_t r, size_t t, size_t nr,
    size_t nt)
{
    size_t           i, j, k, in;
    __m512           acc[4][4];
    __m512i          w[4], x;
    __mmask32        m;
    const uint16_t  *wr;

    in = mm->in;
    wr = (const uint16_t *) mm->w + r * in;

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            acc[j][k] = _mm512_setzero_ps();
        }
    }

    for (i = 0; i < in; i += 32) {
        m = in - i >= 32 ? 0xffffffff : (__mmask32) ((1u << (in - i)) - 1);

#pragma GCC unroll 4
        for (j = 0; j < nr; j++) {
            w[j] = _mm512_maskz_loadu_epi16(m, wr + j * in + i);
        }

#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            x = _mm512_loadu_si512(mm->xa + (t + k) * mm->xa_row
                                   + i * sizeof(uint16_t));

#pragma GCC unroll 4
            for (j = 0; j < nr; j++) {
                acc[j][k] = _mm512_dpbf16_ps(acc[j][k], (__m512bh) x,
                                             (__m512bh) w[j]);
            }
        }
    }

#pragma GCC unroll 4
    for (j = 0; j < nr; j++) {
#pragma GCC unroll 4
        for (k = 0; k < nt; k++) {
            mm->y[(t + k) * mm->out + r + j] =
                _mm512_reduce_add_ps(acc[j][k]);
        }
    }
}


/* weight rows r .. r+nr-1 by rows [t0, t1) of x, 4 of x a block */
FG_K_BF16_INLINE void
fg_k_bf16_rows(const fg_k_mm_t *mm, size_t r, size_t nr, size_t t0,
    size_t t1)
{
    size_t  t;

    for (t = t0; t + 4 <= t1; t += 4) {
        fg_k_bf16_block(mm, r, t, nr, 4);
    }

    switch (t1 - t) {

    case 3:
        fg_k_bf16_block(mm, r, t, nr, 3);
        break;

    case 2:
        fg_k_bf16_block(mm, r, t, nr, 2);
        break;

    case 1:
        fg_k_bf16_block(mm, r, t, nr, 1);
        break;
    }
}


/* rows [r0, r1) of y, x already rounded (fg_k_bf16_round_x()) */
FG_K_BF16_TARGET void
fg_k_mm_bf16_avx512(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t  rt, re, r, t, te;

    for (rt = r0; rt < r1; rt += FG_K_BF16_TILE_R) {
        re = r1 - rt < FG_K_BF16_TILE_R ? r1 : rt + FG_K_BF16_TILE_R;

        for (t = 0; t < mm->n; t += FG_K_BF16_TILE_T) {
            te = mm->n - t < FG_K_BF16_TILE_T ? mm->n
                                              : t + FG_K_BF16_TILE_T;

            for (r = rt; r + 4 <= re; r += 4) {
                fg_k_bf16_rows(mm, r, 4, t, te);
            }

            for ( /* void */ ; r < re; r++) {
                fg_k_bf16_rows(mm, r, 1, t, te);
            }
        }
    }
}

#endif
