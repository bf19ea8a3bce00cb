
/*
 * fairgate: tests of the products of ggml's quantized weights (Q4_0 ..
 * Q6_K) with quantized activations, on each path (portable C, AVX2,
 * AVX-512 VNNI where the CPU has it).
 *
 * The reference decodes weights with the test's own code, written from
 * ggml's dequantization loops, and multiplies them in double with x as
 * the kernels quantized it (checked first against x itself).  A product
 * is a sum of per-block terms, each an exact integer sum times a float
 * scale, so it may differ from the reference by float rounding only: we
 * allow 4 * (terms + 8) * 2^-24 of the sum of the magnitudes of its parts
 * (Higham's bound for recursive summation, twice over, and the scales'
 * own rounding), where terms is the blocks of a row, or its values on the
 * sgemm path.  A wrong weight, scale or min moves a result by far more.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_kernels_simd.h"
#include "fg_kernels_qdot.h"
#include "fg_rand.h"


#define MAX_IN   768
#define MAX_OUT  131
#define MAX_N    40


typedef struct {
    fg_k_type_e  type;
    const char  *name;
} qtype_t;


static const qtype_t  qtypes[] = {
    { FG_K_Q4_0, "Q4_0" }, { FG_K_Q4_1, "Q4_1" }, { FG_K_Q5_0, "Q5_0" },
    { FG_K_Q5_1, "Q5_1" }, { FG_K_Q2_K, "Q2_K" }, { FG_K_Q3_K, "Q3_K" },
    { FG_K_Q4_K, "Q4_K" }, { FG_K_Q5_K, "Q5_K" }, { FG_K_Q6_K, "Q6_K" }
};

#define N_QTYPES  (sizeof(qtypes) / sizeof(qtypes[0]))


/* the paths: portable, AVX2, and the best (AVX-512 where it runs) */
static const int    simds[] = { 0, FG_K_SIMD_AVX2, 1 };
static const char  *simd_names[] = { "generic", "avx2", "best" };

static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


static double
urand(void)
{
    return fg_rand_double(&rng);
}


static int
same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof(float)) == 0;
}


/* a half of magnitude lo .. hi, either sign */
static uint16_t
rand_half(double lo, double hi)
{
    double  v;

    v = lo + (hi - lo) * urand();

    return fg_f32_to_fp16((float) (urand() < 0.5 ? -v : v));
}


static double
h2d(uint16_t h)
{
    return fg_fp16_to_f32(h);
}


/* a float rounded to a half */
static float
h2f(float f)
{
    return fg_fp16_to_f32(fg_f32_to_fp16(f));
}


/*
 * A weight row: random bytes, its scales set to sane halves; with full,
 * every other byte 0xff (the largest values and scales).
 */
static void
make_row(fg_k_type_e type, uint8_t *row, size_t in, int full)
{
    size_t               i, nb;
    fg_k_block_q4_0_t   *b40;
    fg_k_block_q4_1_t   *b41;
    fg_k_block_q5_0_t   *b50;
    fg_k_block_q5_1_t   *b51;
    fg_k_block_q2_k_t   *b2k;
    fg_k_block_q3_k_t   *b3k;
    fg_k_block_q4_k_t   *b4k;
    fg_k_block_q5_k_t   *b5k;
    fg_k_block_q6_k_t   *b6k;

    for (i = 0; i < fg_k_qd_row_size(type, in); i++) {
        row[i] = full ? 0xff : (uint8_t) fg_rand_next(&rng);
    }

    nb = in / fg_k_qd_block(type);

    for (i = 0; i < nb; i++) {
        switch (type) {
        case FG_K_Q4_0:
            b40 = (fg_k_block_q4_0_t *) row + i;
            b40->d = rand_half(1e-3, 2e-2);
            break;
        case FG_K_Q4_1:
            b41 = (fg_k_block_q4_1_t *) row + i;
            b41->d = rand_half(1e-3, 2e-2);
            b41->m = rand_half(0, 0.1);
            break;
        case FG_K_Q5_0:
            b50 = (fg_k_block_q5_0_t *) row + i;
            b50->d = rand_half(1e-3, 2e-2);
            break;
        case FG_K_Q5_1:
            b51 = (fg_k_block_q5_1_t *) row + i;
            b51->d = rand_half(1e-3, 2e-2);
            b51->m = rand_half(0, 0.1);
            break;
        case FG_K_Q2_K:
            b2k = (fg_k_block_q2_k_t *) row + i;
            b2k->d = rand_half(1e-3, 2e-2);
            b2k->dmin = rand_half(1e-3, 2e-2);
            break;
        case FG_K_Q3_K:
            b3k = (fg_k_block_q3_k_t *) row + i;
            b3k->d = rand_half(1e-4, 2e-3);
            break;
        case FG_K_Q4_K:
            b4k = (fg_k_block_q4_k_t *) row + i;
            b4k->d = rand_half(1e-4, 2e-3);
            b4k->dmin = rand_half(1e-4, 2e-3);
            break;
        case FG_K_Q5_K:
            b5k = (fg_k_block_q5_k_t *) row + i;
            b5k->d = rand_half(1e-4, 2e-3);
            b5k->dmin = rand_half(1e-4, 2e-3);
            break;
        default:
            b6k = (fg_k_block_q6_k_t *) row + i;
            b6k->d = rand_half(1e-4, 2e-3);
            break;
        }
    }
}


/*
 * The test's decoders, loop for loop as ggml's dequantize_row_*() walk
 * the blocks: w[i] = a[i] + c[i], a the scaled value and c the min (or
 * offset) part, kept apart for the error bound.
 */
static void
ref_q32(fg_k_type_e type, const uint8_t *row, double *a, double *c,
    size_t in)
{
    int                       q0, q1;
    size_t                    b, j;
    double                    d, m;
    uint32_t                  qh;
    const uint8_t            *qs;
    const fg_k_block_q4_0_t  *b40;
    const fg_k_block_q4_1_t  *b41;
    const fg_k_block_q5_0_t  *b50;
    const fg_k_block_q5_1_t  *b51;

    for (b = 0; b < in / 32; b++) {
        qh = 0;
        m = 0;

        if (type == FG_K_Q4_0) {
            b40 = (const fg_k_block_q4_0_t *) row + b;
            d = h2d(b40->d);
            qs = b40->qs;
            m = -8 * d;
        } else if (type == FG_K_Q4_1) {
            b41 = (const fg_k_block_q4_1_t *) row + b;
            d = h2d(b41->d);
            m = h2d(b41->m);
            qs = b41->qs;
        } else if (type == FG_K_Q5_0) {
            b50 = (const fg_k_block_q5_0_t *) row + b;
            d = h2d(b50->d);
            qs = b50->qs;
            memcpy(&qh, b50->qh, 4);
            m = -16 * d;
        } else {
            b51 = (const fg_k_block_q5_1_t *) row + b;
            d = h2d(b51->d);
            m = h2d(b51->m);
            qs = b51->qs;
            memcpy(&qh, b51->qh, 4);
        }

        for (j = 0; j < 16; j++) {
            q0 = (qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10);
            q1 = (qs[j] >> 4) | ((qh >> (j + 12)) & 0x10);
            a[b * 32 + j] = d * q0;
            a[b * 32 + j + 16] = d * q1;
            c[b * 32 + j] = m;
            c[b * 32 + j + 16] = m;
        }
    }
}


static void
ref_q2_k(const fg_k_block_q2_k_t *x, double *a, double *c)
{
    int             is, j, l, n, shift;
    double          d, dmin;
    const uint8_t  *q;

    d = h2d(x->d);
    dmin = h2d(x->dmin);
    q = x->qs;
    is = 0;

    for (n = 0; n < 256; n += 128, q += 32) {
        for (j = 0, shift = 0; j < 4; j++, shift += 2) {
            for (l = 0; l < 32; l++) {
                a[n + 32 * j + l] = d * (x->scales[is + l / 16] & 0xf)
                                    * ((q[l] >> shift) & 3);
                c[n + 32 * j + l] = -dmin * (x->scales[is + l / 16] >> 4);
            }

            is += 2;
        }
    }
}


static void
ref_q3_k(const fg_k_block_q3_k_t *x, double *a, double *c)
{
    int             is, j, l, n, shift, m, sc[16];
    double          d;
    const uint8_t  *q, *s;

    s = x->scales;

    /* 6 bits: low 4 from bytes 0-7's nibbles, high 2 from bytes 8-11 */
    for (j = 0; j < 16; j++) {
        sc[j] = ((j < 8 ? s[j] : s[j - 8] >> 4) & 0xf)
                | ((s[8 + (j & 3)] >> (2 * (j >> 2))) & 3) << 4;
    }

    d = h2d(x->d);
    q = x->qs;
    is = 0;
    m = 1;

    for (n = 0; n < 256; n += 128, q += 32) {
        for (j = 0, shift = 0; j < 4; j++, shift += 2, m <<= 1) {
            for (l = 0; l < 32; l++) {
                a[n + 32 * j + l] = d * (sc[is + l / 16] - 32)
                                    * (((q[l] >> shift) & 3)
                                       - ((x->hmask[l] & m) ? 0 : 4));
                c[n + 32 * j + l] = 0;
            }

            is += 2;
        }
    }
}


/* Q4_K, and Q5_K with qh */
static void
ref_q45_k(const uint8_t *qs, const uint8_t *qh, const uint8_t *s,
    uint16_t hd, uint16_t hdmin, double *a, double *c)
{
    int     j, l, is, sc[8], mn[8], u;
    double  d, dmin;

    for (j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = s[j] & 63;
            mn[j] = s[j + 4] & 63;
        } else {
            sc[j] = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
            mn[j] = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
    }

    d = h2d(hd);
    dmin = h2d(hdmin);

    for (j = 0, is = 0, u = 1; j < 256; j += 64, is += 2, u <<= 2) {
        for (l = 0; l < 32; l++) {
            a[j + l] = d * sc[is] * ((qs[l] & 0xf)
                                     + (qh && (qh[l] & u) ? 16 : 0));
            a[j + l + 32] = d * sc[is + 1]
                            * ((qs[l] >> 4) + (qh && (qh[l] & (u << 1))
                                               ? 16 : 0));
            c[j + l] = -dmin * mn[is];
            c[j + l + 32] = -dmin * mn[is + 1];
        }

        qs += 32;
    }
}


static void
ref_q6_k(const fg_k_block_q6_k_t *x, double *a, double *c)
{
    int             n, l, is, q[4], k;
    double          d;
    const uint8_t  *ql, *qh;
    const int8_t   *sc;

    d = h2d(x->d);
    ql = x->ql;
    qh = x->qh;
    sc = x->scales;

    for (n = 0; n < 256; n += 128, ql += 64, qh += 32, sc += 8) {
        for (l = 0; l < 32; l++) {
            is = l / 16;
            q[0] = (ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4;
            q[1] = (ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4;
            q[2] = (ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4;
            q[3] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4;

            for (k = 0; k < 4; k++) {
                a[n + l + 32 * k] = d * sc[is + 2 * k] * q[k];
                c[n + l + 32 * k] = -32 * d * sc[is + 2 * k];
            }
        }
    }
}


static void
ref_decode(fg_k_type_e type, const uint8_t *row, double *a, double *c,
    size_t in)
{
    size_t                    b;
    const fg_k_block_q4_k_t  *b4;
    const fg_k_block_q5_k_t  *b5;

    if (fg_k_qd_block(type) == 32) {
        ref_q32(type, row, a, c, in);
        return;
    }

    for (b = 0; b < in / 256; b++, a += 256, c += 256) {
        switch (type) {
        case FG_K_Q2_K:
            ref_q2_k((const fg_k_block_q2_k_t *) row + b, a, c);
            break;
        case FG_K_Q3_K:
            ref_q3_k((const fg_k_block_q3_k_t *) row + b, a, c);
            break;
        case FG_K_Q4_K:
            b4 = (const fg_k_block_q4_k_t *) row + b;
            ref_q45_k(b4->qs, NULL, b4->scales, b4->d, b4->dmin, a, c);
            break;
        case FG_K_Q5_K:
            b5 = (const fg_k_block_q5_k_t *) row + b;
            ref_q45_k(b5->qs, b5->qh, b5->scales, b5->d, b5->dmin, a, c);
            break;
        default:
            ref_q6_k((const fg_k_block_q6_k_t *) row + b, a, c);
            break;
        }
    }
}


/*
 * The test's decoders against fg_k_dequant_row(), written apart: the same
 * values within the float rounding of d * sc (and of dmin * mn).
 */
static void
test_decoders(void)
{
    int      bad, si;
    size_t   t, k, i, in;
    float    got[MAX_IN];
    double   a[MAX_IN], c[MAX_IN];
    uint8_t  row[MAX_IN * 2];

    in = 512;

    for (t = 0; t < N_QTYPES; t++) {
        for (si = 0; si < 3; si += 2) {
            fg_k_set_simd(simds[si]);
            bad = 0;

            for (k = 0; k < 8; k++) {
                make_row(qtypes[t].type, row, in, k == 0);
                ref_decode(qtypes[t].type, row, a, c, in);
                fg_k_dequant_row(qtypes[t].type, row, got, in);

                for (i = 0; i < in; i++) {
                    bad += !(fabs(got[i] - (a[i] + c[i]))
                             <= ldexp(1, -22) * (fabs(a[i]) + fabs(c[i])));
                }
            }

            is_int(bad, 0, "%s: the test's decoder and fg_k_dequant_row() "
                   "(%s) agree", qtypes[t].name, simd_names[si]);
        }
    }

    fg_k_set_simd(1);
}


/* x as the products see it, from its quantized row; s: Q8_1's sums */
static void
ref_x(fg_k_type_e type, const void *xq, double *x, double *s, size_t in)
{
    size_t                     i;
    const fg_k_block_q8_1x_t  *b1;
    const fg_k_block_q8_k_t   *bk;

    b1 = xq;
    bk = xq;

    for (i = 0; i < in; i++) {
        switch (type) {
        case FG_K_Q4_0:
        case FG_K_Q5_0:
        case FG_K_Q4_1:
        case FG_K_Q5_1:
            x[i] = (double) b1[i / 32].d * b1[i / 32].qs[i % 32];
            s[i / 32] = b1[i / 32].s;
            break;
        default:
            x[i] = (double) bk[i / 256].d * bk[i / 256].qs[i % 256];
            break;
        }
    }
}


/*
 * The product of a weight row and a quantized x row as ggml defines it,
 * in double, and in *mag the sum of the magnitudes of its parts.  Q4_1's
 * and Q5_1's mins meet x's stored sums (s), not the sums of x; sgemm,
 * which sees x only, sums x itself (sums set).
 */
static double
ref_dot(fg_k_type_e type, const uint8_t *row, const void *xq, size_t in,
    int sums, double *mag)
{
    size_t  i;
    double  sum, a[MAX_IN], c[MAX_IN], x[MAX_IN], s[MAX_IN / 32];

    ref_decode(type, row, a, c, in);
    ref_x(type, xq, x, s, in);

    sum = 0;
    *mag = 0;

    for (i = 0; i < in; i++) {
        sum += a[i] * x[i];
        *mag += fabs(a[i] * x[i]) + fabs(c[i] * x[i]);

        if ((type == FG_K_Q4_1 || type == FG_K_Q5_1) && !sums) {
            if (i % 32 == 0) {
                sum += c[i] * s[i / 32];
                *mag += fabs(c[i] * s[i / 32]);
            }

        } else {
            sum += c[i] * x[i];
        }
    }

    return sum;
}


static double
tolerance(double mag, size_t terms)
{
    return 4.0 * (double) (terms + 8) * ldexp(1, -24) * mag + 1e-30;
}


static void
rand_x(float *x, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        x[i] = (float) ((urand() * 2 - 1) * (i / 64 % 3 == 0 ? 1e-3 : 2.0));
    }
}


/*
 * Rows of x for the comparison with ggml: random, and 256-blocks whose
 * value of largest magnitude is negative, positive, tied with its
 * negative (the first one counts), and zero; 32-blocks of each sign, and
 * one of values x * 127 / amax halfway between integers.
 */
static void
ggml_x(float *x, size_t n)
{
    size_t  i;

    rand_x(x, n);

    for (i = 0; i + 1024 <= n; i += 1024) {
        x[i + 10] = -3.0f;
        x[i + 256 + 100] = 3.0f;
        memset(x + i + 512, 0, 256 * sizeof(float));
        x[i + 768 + 3] = -3.0f;
        x[i + 768 + 200] = 3.0f;
        x[i + 800 + 5] = 2.5f;
        x[i + 800 + 10] = -2.5f;

        /* ties, where ggml's reference rounds away from zero */
        x[i + 832] = 127.0f;
        x[i + 833] = 2.5f;
        x[i + 834] = -4.5f;
    }
}


/*
 * A 32-block's q against ggml's: the rule of its x86 backend, which the
 * products follow (round(x * (127 / amax)), ties to even), exactly, and
 * its reference quantizer's q (ref) wherever that rule and the
 * reference's (round(x * (1 / d)), halves away from zero) agree; *differ
 * counts where they do not.
 */
static int
ggml_q8_bad(const int8_t *q, const int8_t *ref, const float *x, int *differ)
{
    int     bad, q86, qref;
    size_t  j;
    float   amax, d;

    amax = 0.0f;

    for (j = 0; j < 32; j++) {
        amax = fmaxf(amax, fabsf(x[j]));
    }

    d = amax / 127.0f;
    bad = 0;

    for (j = 0; j < 32; j++) {
        q86 = (int) rintf(x[j] * (amax != 0.0f ? 127.0f / amax : 0.0f));
        qref = (int) roundf(x[j] * (d != 0.0f ? 1.0f / d : 0.0f));
        bad += q[j] != q86 || (q86 == qref && q[j] != ref[j]);
        *differ += q86 != qref;
    }

    return bad;
}


/*
 * x's blocks on every path against ggml's (fg_k_quant_row()'s Q8_K, Q8_1
 * and Q8_0, tested against ggml's own bytes in test_kernels_ggml): Q8_K
 * byte for byte; Q8_1 (Q4_0 .. Q5_1) and Q8_0 (Q8_0's products) the same
 * d and s, as halves, and q as ggml_q8_bad() checks it.
 */
static void
test_quant_ref(void)
{
    int                  bad[3], differ;
    size_t               b, k, si;
    float                x[2048];
    fg_k_block_q8x_t     q8[64];
    fg_k_block_q8_0_t    r0[64];
    fg_k_block_q8_1_t    r1[64];
    fg_k_block_q8_k_t    qk[8], rk[8];
    fg_k_block_q8_1x_t   b1[64];

    differ = 0;

    for (si = 0; si < 3; si++) {
        fg_k_set_simd(simds[si]);
        memset(bad, 0, sizeof(bad));

        for (k = 0; k < 4; k++) {
            ggml_x(x, 2048);

            fg_k_qd_quant_x(FG_K_Q4_K, qk, x, 1, 2048);
            fg_k_quant_row(FG_K_Q8_K, x, rk, 2048);
            bad[0] += memcmp(qk, rk, sizeof(qk)) != 0;

            fg_k_qd_quant_x(FG_K_Q4_1, b1, x, 1, 2048);
            fg_k_quant_row(FG_K_Q8_1, x, r1, 2048);

            for (b = 0; b < 64; b++) {
                bad[1] += ggml_q8_bad(b1[b].qs, r1[b].qs, x + 32 * b,
                                      &differ)
                          + (b1[b].d != h2d(r1[b].d));

                if (memcmp(b1[b].qs, r1[b].qs, 32) == 0) {
                    bad[1] += b1[b].s != h2d(r1[b].s);
                }
            }

            fg_k_quant_x(q8, x, 2048);
            fg_k_quant_row(FG_K_Q8_0, x, r0, 2048);

            for (b = 0; b < 64; b++) {
                bad[2] += ggml_q8_bad(q8[b].qs, r0[b].qs, x + 32 * b,
                                      &differ)
                          + (q8[b].d != h2d(r0[b].d));
            }
        }

        is_int(bad[0], 0, "x for the k-quants (%s): fg_k_quant_row()'s "
               "Q8_K, ggml's, byte for byte", simd_names[si]);
        is_int(bad[1], 0, "x for Q4_0 .. Q5_1 (%s): ggml's Q8_1 (d, s, q)",
               simd_names[si]);
        is_int(bad[2], 0, "x for Q8_0 (%s): ggml's Q8_0 (d, q)",
               simd_names[si]);
    }

    diag("ggml's two roundings of Q8_0's q differ at %d of %d values",
         differ, 3 * 4 * 2 * 2048);
    fg_k_set_simd(1);
}


/*
 * x's quantization: the same bytes on every path, each value within half
 * a step (d / 2) of x, the sums those of the values.
 */
static void
test_quant_x(void)
{
    int                  si, bad, same;
    size_t               t, i, j, in, row, bs;
    float                x[512];
    double               xd[512], s[16], amax;
    int32_t              sum;
    uint8_t              q[3][4096];
    fg_k_block_q8_k_t   *bk;
    fg_k_block_q8_1x_t  *b1;

    static const fg_k_type_e  types[] = { FG_K_Q5_0, FG_K_Q4_1, FG_K_Q4_K };

    in = 512;
    rand_x(x, in);

    for (i = 256; i < 288; i++) {
        x[i] = 0.0f;                        /* a block of zeros */
    }

    for (t = 0; t < 3; t++) {
        row = fg_k_qd_xrow_size(types[t], in);

        for (si = 0; si < 3; si++) {
            fg_k_set_simd(simds[si]);
            memset(q[si], 0x5a, sizeof(q[si]));
            fg_k_qd_quant_x(types[t], q[si], x, 1, in);
        }

        same = memcmp(q[0], q[1], row) == 0 && memcmp(q[0], q[2], row) == 0;
        ok(same, "x for %s: every path writes the same bytes",
           types[t] == FG_K_Q5_0 ? "Q5_0" : types[t] == FG_K_Q4_1
                                            ? "Q4_1" : "Q4_K");

        ref_x(types[t], q[0], xd, s, in);
        bad = 0;

        /* each 32 values, or 256 for Q8_K, share a scale */
        bs = fg_k_qd_block(types[t]);

        for (i = 0; i < in; i++) {
            amax = 0;

            for (j = i / bs * bs; j < (i / bs + 1) * bs; j++) {
                amax = fmax(amax, fabs(x[j]));
            }

            /* half a step, and the step's rounding to a half times 127 */
            bad += fabs(xd[i] - x[i])
                   > amax / 127 / 2 * 1.0001
                     + (bs == 32 ? 127 * fmax(amax / 127 / 2048,
                                              ldexp(1, -25)) : 0);
        }

        if (bs == 32) {
            b1 = (fg_k_block_q8_1x_t *) q[0];

            for (i = 0; i < in / 32; i++) {
                sum = 0;
                amax = 0;

                for (j = 0; j < 32; j++) {
                    sum += b1[i].qs[j];
                    amax = fmax(amax, fabs(x[i * 32 + j]));
                }

                /* ggml's s: d before its rounding to a half, times sum */
                bad += b1[i].s != h2f((float) amax / 127.0f * (float) sum)
                       || b1[i].sum != sum;
            }

        } else if (types[t] == FG_K_Q4_K) {
            bk = (fg_k_block_q8_k_t *) q[0];

            for (i = 0; i < in / 16; i++) {
                sum = 0;

                for (j = 0; j < 16; j++) {
                    sum += bk[i / 16].qs[i % 16 * 16 + j];
                }

                bad += bk[i / 16].bsums[i % 16] != sum;
            }
        }

        is_int(bad, 0, "... within half a step of x, sums exact");
    }

    fg_k_set_simd(1);
}


/*
 * Each type's dot product on each path, random and extreme blocks, rows
 * of 1 to 23 blocks (32-value ones: an odd count, past the pairs).
 */
static void
test_dot(void)
{
    int         si, bad, full;
    size_t      t, k, i, in;
    float       x[MAX_IN], got;
    double      want, mag, worst;
    uint8_t     row[MAX_IN * 2], xq[MAX_IN * 2];
    fg_k_type_e type;

    static const size_t  ins[] = { 256, 512, 768 };
    static const size_t  ins32[] = { 32, 96, 736 };     /* odd blocks */

    for (t = 0; t < N_QTYPES; t++) {
        type = qtypes[t].type;

        for (si = 0; si < 3; si++) {
            fg_k_set_simd(simds[si]);
            bad = 0;
            worst = 0;

            for (k = 0; k < 3 * 4; k++) {
                in = fg_k_qd_block(type) == 32 ? ins32[k % 3] : ins[k % 3];
                full = k / 3 == 3;
                make_row(type, row, in, full);
                rand_x(x, in);

                if (full) {
                    for (i = 0; i < in; i++) {
                        x[i] = i % 2 ? 1.0f : -1.0f;
                    }
                }

                fg_k_qd_quant_x(type, xq, x, 1, in);
                got = fg_k_qd_dot(type, row, xq, in);
                want = ref_dot(type, row, xq, in, 0, &mag);

                if (fabs(got - want)
                    > tolerance(mag, in / fg_k_qd_block(type)))
                {
                    bad++;
                }

                worst = fmax(worst, fabs(got - want) / (mag + 1e-30));
            }

            is_int(bad, 0, "%s dot (%s): within float rounding of the "
                   "reference (worst %.2g of the magnitudes)",
                   qtypes[t].name, simd_names[si], worst);
        }
    }

    fg_k_set_simd(1);
}


/* a type's products: the data, and each row's reference */
typedef struct {
    fg_k_type_e   type;
    const char   *name;
    size_t        in;
    size_t        out;
    uint8_t      *w;
    float        *x;
    float        *y;
    float        *y1;                   /* [MAX_N][out]: each row alone */
    double       *want;
    double       *want_sgemm;           /* Q4_1's, Q5_1's mins: sum(x) */
    double       *tol_direct;
    double       *tol_sgemm;
    void         *work;
} mm_case_t;


static int
mm_case_init(mm_case_t *c, const qtype_t *qt, void *work)
{
    size_t   r, t, rs;
    double   mag;
    uint8_t  xq[MAX_IN * 2];

    c->type = qt->type;
    c->name = qt->name;
    c->in = fg_k_qd_block(c->type) == 32 ? 160 : 512;
    c->out = MAX_OUT;
    rs = fg_k_qd_row_size(c->type, c->in);

    c->w = malloc(c->out * rs);
    c->x = malloc(MAX_N * c->in * sizeof(float));
    c->y = malloc(MAX_N * c->out * sizeof(float));
    c->y1 = malloc(MAX_N * c->out * sizeof(float));
    c->want = malloc(MAX_N * c->out * sizeof(double));
    c->want_sgemm = malloc(MAX_N * c->out * sizeof(double));
    c->tol_direct = malloc(MAX_N * c->out * sizeof(double));
    c->tol_sgemm = malloc(MAX_N * c->out * sizeof(double));
    c->work = work;

    if (c->w == NULL || c->x == NULL || c->y == NULL || c->y1 == NULL
        || c->want == NULL || c->want_sgemm == NULL || c->tol_direct == NULL
        || c->tol_sgemm == NULL || c->work == NULL)
    {
        return -1;
    }

    for (r = 0; r < c->out; r++) {
        make_row(c->type, c->w + r * rs, c->in, r == 5);
    }

    rand_x(c->x, MAX_N * c->in);

    for (t = 0; t < MAX_N; t++) {
        fg_k_qd_quant_x(c->type, xq, c->x + t * c->in, 1, c->in);

        for (r = 0; r < c->out; r++) {
            c->want_sgemm[t * c->out + r] = ref_dot(c->type,
                                                    c->w + r * rs, xq,
                                                    c->in, 1, &mag);
            c->want[t * c->out + r] = ref_dot(c->type, c->w + r * rs, xq,
                                              c->in, 0, &mag);
            c->tol_direct[t * c->out + r] =
                tolerance(mag, c->in / fg_k_qd_block(c->type));
            c->tol_sgemm[t * c->out + r] = tolerance(mag, c->in);
        }
    }

    return 0;
}


static void
mm_case_free(mm_case_t *c)
{
    free(c->tol_sgemm);
    free(c->tol_direct);
    free(c->want_sgemm);
    free(c->want);
    free(c->y1);
    free(c->y);
    free(c->x);
    free(c->w);
}


/* outputs of a product of n rows off the reference */
static int
mm_bad(const mm_case_t *c, size_t n, int direct)
{
    int     bad;
    size_t  i;
    double  tol;

    bad = 0;

    for (i = 0; i < n * c->out; i++) {
        tol = direct ? c->tol_direct[i] : c->tol_sgemm[i];
        bad += !(fabs(c->y[i] - (direct ? c->want[i] : c->want_sgemm[i]))
                 <= tol);
    }

    return bad;
}


/* outputs of n rows whose bits differ from each row's product alone */
static int
mm_moved(const mm_case_t *c, size_t n)
{
    int     moved;
    size_t  i;

    moved = 0;

    for (i = 0; i < n * c->out; i++) {
        moved += !same_bits(c->y[i], c->y1[i]);
    }

    return moved;
}


/*
 * Every path, on the calling thread and on 3 threads, batches of 1 to
 * 40 rows across the direct/sgemm threshold (with SIMD these types go
 * direct further, and sgemm too when the bounds are moved down): within
 * rounding of the reference, and batches of up to FG_K_MM_SMALL rows
 * (all of them with batch invariance on) bit for bit each row's product
 * alone.
 */
static void
test_matmul_case(mm_case_t *c, fg_pool_t *pool3)
{
    int         si, p, bad, moved, direct;
    size_t      t, ni, n;
    fg_pool_t  *pool;

    static const size_t  ns[] = { 1, 2, 3, 7, 16, 17, 33, 40 };

    for (si = 0; si < 4; si++) {
        fg_k_set_simd(simds[si % 3]);
        fg_k_mm_qd_max_32 = si == 3 ? FG_K_MM_SMALL : FG_K_MM_QD_32;
        fg_k_mm_qd_max_k = si == 3 ? FG_K_MM_SMALL : FG_K_MM_QD_K;
        fg_k_mm_qd_max_0 = si == 3 ? FG_K_MM_SMALL : FG_K_MM_QD_0;

        for (t = 0; t < MAX_N; t++) {
            fg_k_matmul(NULL, c->y1 + t * c->out, c->x + t * c->in, c->w,
                        c->type, 1, c->in, c->out, c->work);
        }

        for (p = 0; p < 2; p++) {
            pool = p ? pool3 : NULL;
            bad = 0;
            moved = 0;

            for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                n = ns[ni];
                fg_k_matmul(pool, c->y, c->x, c->w, c->type, n, c->in,
                            c->out, c->work);
                direct = n <= FG_K_MM_SMALL || (si % 3 != 0 && si != 3);
                bad += mm_bad(c, n, direct);
                moved += n <= FG_K_MM_SMALL ? mm_moved(c, n) : 0;
            }

            is_int(bad, 0, "%s matmul (%s%s, %d thread%s): in %zu, out %zu, "
                   "n 1..40 within rounding of the reference", c->name,
                   simd_names[si % 3], si == 3 ? ", sgemm above 16" : "",
                   p ? 3 : 1, p ? "s" : "", c->in, c->out);
            is_int(moved, 0, "... up to %d rows: each row's bits as alone",
                   FG_K_MM_SMALL);
        }

        fg_k_set_batch_invariant(1);
        fg_k_matmul(pool3, c->y, c->x, c->w, c->type, MAX_N, c->in, c->out,
                    c->work);
        fg_k_set_batch_invariant(0);

        is_int(mm_moved(c, MAX_N), 0, "... batch invariance: 40 rows on 3 "
               "threads, each row's bits as alone");
    }

    fg_k_mm_qd_max_32 = FG_K_MM_QD_32;
    fg_k_mm_qd_max_k = FG_K_MM_QD_K;
    fg_k_mm_qd_max_0 = FG_K_MM_QD_0;
    fg_k_set_simd(1);
}


/*
 * The types one after another on one work buffer, sized as an engine
 * sizes it for a file that mixes them: the largest of their sizes.
 */
static void
test_matmul(void)
{
    void       *work;
    size_t      t, size, most;
    mm_case_t   c;
    fg_pool_t  *pool3;

    most = 0;

    for (t = 0; t < N_QTYPES; t++) {
        size = fg_k_matmul_work_size(qtypes[t].type, MAX_N,
                                     fg_k_qd_block(qtypes[t].type) == 32
                                     ? 160 : 512, 3);
        most = size > most ? size : most;
    }

    pool3 = fg_pool_create(3);
    work = aligned_alloc(64, (most + 63) / 64 * 64);

    if (pool3 == NULL || work == NULL) {
        ok(0, "pool of 3 threads, work buffer");
        return;
    }

    for (t = 0; t < N_QTYPES; t++) {
        if (mm_case_init(&c, &qtypes[t], work) != 0) {
            ok(0, "memory for %s", qtypes[t].name);
            return;
        }

        test_matmul_case(&c, pool3);
        mm_case_free(&c);
    }

    free(work);
    fg_pool_destroy(pool3);
}


int
main(void)
{
    diag("kernels: %s", fg_k_init());

    test_decoders();
    test_quant_x();
    test_quant_ref();
    test_dot();
    test_matmul();

    return done_testing();
}
