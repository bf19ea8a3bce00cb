
/*
 * fairgate: products of quantized weights with quantized activations
 * (fg_kernels_qdot.h): the types' sizes, the choice of path, the matrix
 * product's rows, and the portable C of each product, written from the
 * blocks' definitions (fg_kernels_quant.h).
 *
 * Every product is a sum over blocks of float(d_w * d_x) times an exact
 * integer dot product; the k-quants' mins meet x's sums of 16 (bsums),
 * Q4_1's and Q5_1's meet d_x * sum(q_x).  The SIMD paths sum the same
 * integers and differ from this one by the order of the float sums only.
 */


#include <math.h>
#include <string.h>

#include "fg_kernels_qdot.h"


int
fg_k_qd_type(fg_k_type_e type)
{
    switch (type) {

    case FG_K_Q4_0:
    case FG_K_Q4_1:
    case FG_K_Q5_0:
    case FG_K_Q5_1:
    case FG_K_Q2_K:
    case FG_K_Q3_K:
    case FG_K_Q4_K:
    case FG_K_Q5_K:
    case FG_K_Q6_K:
        return 1;

    default:
        return 0;
    }
}


size_t
fg_k_qd_xrow_size(fg_k_type_e type, size_t in)
{
    switch (type) {

    case FG_K_Q4_0:
    case FG_K_Q4_1:
    case FG_K_Q5_0:
    case FG_K_Q5_1:
        return in / FG_K_QK8_1 * sizeof(fg_k_block_q8_1x_t);

    default:
        return in / FG_K_QK_K * sizeof(fg_k_block_q8_k_t);
    }
}


/* ---- x quantized ---- */

/*
 * The value of largest magnitude with its sign, the first on ties, as
 * ggml's Q8_K takes it; with ggml's scales (fg_k_qd_scales_8() and
 * fg_k_qd_id_k() in fg_kernels_qdot.h) every path writes ggml's bytes.
 */
static float
fg_k_qd_signed_max(const float *x, size_t n)
{
    size_t  j;
    float   amax, max;

    amax = 0.0f;
    max = 0.0f;

    for (j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }

    return max;
}


/* q = round(x * id), ties to even, at most 127; returns sum(q) */
static int32_t
fg_k_qd_quant_ints(int8_t *q, const float *x, size_t n, float id)
{
    long     v;
    size_t   j;
    int32_t  sum;

    sum = 0;

    for (j = 0; j < n; j++) {
        v = lrintf(x[j] * id);
        q[j] = (int8_t) (v < 127 ? v : 127);
        sum += q[j];
    }

    return sum;
}


void
fg_k_qd_quant_generic(fg_k_type_e type, void *xq, const float *x,
    size_t in)
{
    size_t               b, j;
    float                amax, id;
    int32_t              sum;
    fg_k_block_q8_k_t   *bk;
    fg_k_block_q8_1x_t  *b1;

    switch (type) {

    case FG_K_Q4_0:
    case FG_K_Q4_1:
    case FG_K_Q5_0:
    case FG_K_Q5_1:
        b1 = xq;

        for (b = 0; b < in / FG_K_QK8_1; b++, x += FG_K_QK8_1) {
            amax = fabsf(fg_k_qd_signed_max(x, FG_K_QK8_1));
            sum = fg_k_qd_quant_ints(b1[b].qs, x, FG_K_QK8_1,
                                     fg_k_qd_id_8(amax));
            fg_k_qd_scales_8(&b1[b], amax, sum);
        }

        return;

    default:
        bk = xq;

        for (b = 0; b < in / FG_K_QK_K; b++, x += FG_K_QK_K) {
            id = fg_k_qd_id_k(fg_k_qd_signed_max(x, FG_K_QK_K));
            bk[b].d = fg_k_qd_d_k(id);

            for (j = 0; j < FG_K_QK_K / 16; j++) {
                bk[b].bsums[j] = (int16_t) fg_k_qd_quant_ints(
                                     bk[b].qs + 16 * j, x + 16 * j, 16, id);
            }
        }

        return;
    }
}


void
fg_k_qd_quant_x(fg_k_type_e type, void *xq, const float *x, size_t n,
    size_t in)
{
    size_t  t, row;
    char   *p;

    row = fg_k_qd_xrow_size(type, in);
    p = xq;

    for (t = 0; t < n; t++) {
#if FG_K_X86
        if (fg_k_simd512) {
            fg_k_qd_quant_avx512(type, p + t * row, x + t * in, in);
            continue;
        }

        if (fg_k_simd) {
            fg_k_qd_quant_avx2(type, p + t * row, x + t * in, in);
            continue;
        }
#endif
        fg_k_qd_quant_generic(type, p + t * row, x + t * in, in);
    }
}


/* through the quantized row: the same bits on every path */
void
fg_k_qd_round_x(fg_k_type_e type, float *xr, const float *x, size_t n,
    size_t in)
{
    size_t               t, j, nb;
    fg_k_block_q8_k_t    bk;
    fg_k_block_q8_1x_t   b1;

    nb = fg_k_qd_block(type);

    for (t = 0; t < n * in; t += nb, x += nb, xr += nb) {
        switch (type) {

        case FG_K_Q4_0:
        case FG_K_Q4_1:
        case FG_K_Q5_0:
        case FG_K_Q5_1:
            fg_k_qd_quant_x(type, &b1, x, 1, nb);

            for (j = 0; j < nb; j++) {
                xr[j] = b1.d * b1.qs[j];
            }

            break;

        default:
            fg_k_qd_quant_x(type, &bk, x, 1, nb);

            for (j = 0; j < nb; j++) {
                xr[j] = bk.d * bk.qs[j];
            }

            break;
        }
    }
}


/* ---- the portable products ---- */

/* bit k of a byte in the k-th byte of a word, in memory order */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define FG_K_QD_BIT_BYTES  0x0102040810204080ULL
#else
#define FG_K_QD_BIT_BYTES  0x8040201008040201ULL
#endif


static float
fg_k_qd_q4_0(const fg_k_block_q4_0_t *w, const fg_k_block_q8_1x_t *x,
    size_t nb)
{
    size_t   b, j;
    float    sum;
    int32_t  isum;

    sum = 0.0f;

    for (b = 0; b < nb; b++) {
        isum = 0;

        for (j = 0; j < 16; j++) {
            isum += ((w[b].qs[j] & 0xf) - 8) * x[b].qs[j]
                    + ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
        }

        sum += (float) isum * (fg_fp16_to_f32(w[b].d) * x[b].d);
    }

    return sum;
}


static float
fg_k_qd_q4_1(const fg_k_block_q4_1_t *w, const fg_k_block_q8_1x_t *x,
    size_t nb)
{
    size_t   b, j;
    float    sum;
    int32_t  isum;

    sum = 0.0f;

    for (b = 0; b < nb; b++) {
        isum = 0;

        for (j = 0; j < 16; j++) {
            isum += (w[b].qs[j] & 0xf) * x[b].qs[j]
                    + (w[b].qs[j] >> 4) * x[b].qs[j + 16];
        }

        sum += (float) isum * (fg_fp16_to_f32(w[b].d) * x[b].d)
               + fg_fp16_to_f32(w[b].m) * x[b].s;
    }

    return sum;
}


/*
 * The 32 5-bit values of a Q5_0 or Q5_1 block, 0 .. 31.  Inlined, so that
 * v is known apart from the weights and the loops vectorize (the
 * compiler's cheap model at -O2 takes no runtime alias checks).
 */
static inline __attribute__((always_inline)) void
fg_k_qd_q5_values(int8_t *v, const uint8_t *qs, const uint8_t *qh)
{
    size_t    j;
    uint64_t  m;

    /*
     * Bit j of qh, the 32 bits little-endian, is value j's fifth: each
     * byte of qh copied 8 times, the word's k-th byte in memory keeping
     * bit k, made 0x10 when set (adding 0x7f carries into bit 7 of a byte
     * alone), stored 8 bytes at once.
     */
    for (j = 0; j < 4; j++) {
        m = (qh[j] * 0x0101010101010101ULL) & FG_K_QD_BIT_BYTES;
        m = ((m + 0x7f7f7f7f7f7f7f7fULL) & 0x8080808080808080ULL) >> 3;
        memcpy(v + 8 * j, &m, 8);
    }

    for (j = 0; j < 16; j++) {
        v[j] |= qs[j] & 0xf;
        v[j + 16] |= qs[j] >> 4;
    }
}


static float
fg_k_qd_q5_0(const fg_k_block_q5_0_t *w, const fg_k_block_q8_1x_t *x,
    size_t nb)
{
    int8_t   v[32];
    size_t   b, j;
    float    sum;
    int32_t  isum;

    sum = 0.0f;

    for (b = 0; b < nb; b++) {
        fg_k_qd_q5_values(v, w[b].qs, w[b].qh);
        isum = 0;

        for (j = 0; j < 32; j++) {
            isum += (v[j] - 16) * x[b].qs[j];
        }

        sum += (float) isum * (fg_fp16_to_f32(w[b].d) * x[b].d);
    }

    return sum;
}


static float
fg_k_qd_q5_1(const fg_k_block_q5_1_t *w, const fg_k_block_q8_1x_t *x,
    size_t nb)
{
    int8_t   v[32];
    size_t   b, j;
    float    sum;
    int32_t  isum;

    sum = 0.0f;

    for (b = 0; b < nb; b++) {
        fg_k_qd_q5_values(v, w[b].qs, w[b].qh);
        isum = 0;

        for (j = 0; j < 32; j++) {
            isum += v[j] * x[b].qs[j];
        }

        sum += (float) isum * (fg_fp16_to_f32(w[b].d) * x[b].d)
               + fg_fp16_to_f32(w[b].m) * x[b].s;
    }

    return sum;
}


/*
 * A k-quant super-block's 256 values, unpacked per 16 (q) with their
 * scales (sc) and mins (mn, 0 for the types without): value i is
 * d * sc[i / 16] * q[i] - dmin * mn[i / 16].
 */
typedef struct {
    int8_t      q[FG_K_QK_K];       /* int8: the sums below vectorize */
    int         sc[16];
    int         mn[16];
    float       d;
    float       dmin;
} fg_k_qd_kvals_t;


static void
fg_k_qd_unpack_q2_k(fg_k_qd_kvals_t *v, const fg_k_block_q2_k_t *w)
{
    size_t  h, j, l, s;

    /* each 32 bytes of qs hold 128 values, 2 bits of a byte for each 32 */
    for (h = 0; h < 2; h++) {
        for (j = 0; j < 4; j++) {
            for (l = 0; l < 32; l++) {
                v->q[128 * h + 32 * j + l] = (w->qs[32 * h + l] >> (2 * j))
                                             & 3;
            }
        }
    }

    for (s = 0; s < 16; s++) {
        v->sc[s] = w->scales[s] & 0xf;
        v->mn[s] = w->scales[s] >> 4;
    }

    v->d = fg_fp16_to_f32(w->d);
    v->dmin = fg_fp16_to_f32(w->dmin);
}


static void
fg_k_qd_unpack_q3_k(fg_k_qd_kvals_t *v, const fg_k_block_q3_k_t *w)
{
    size_t  h, j, l, s;
    int8_t  sc[16];

    /* as Q2_K, less 4 where the value's bit in hmask is clear */
    for (h = 0; h < 2; h++) {
        for (j = 0; j < 4; j++) {
            for (l = 0; l < 32; l++) {
                v->q[128 * h + 32 * j + l] =
                    ((w->qs[32 * h + l] >> (2 * j)) & 3)
                    - 4 * (~w->hmask[l] >> (4 * h + j) & 1);
            }
        }
    }

    fg_k_qd_scales_k3(w->scales, sc);

    for (s = 0; s < 16; s++) {
        v->sc[s] = sc[s];
        v->mn[s] = 0;
    }

    v->d = fg_fp16_to_f32(w->d);
    v->dmin = 0.0f;
}


/* Q4_K, and Q5_K when qh is given: 64 values per 32 bytes of qs; inlined */
static inline __attribute__((always_inline)) void
fg_k_qd_unpack_q45_k(fg_k_qd_kvals_t *v, const uint8_t *qs,
    const uint8_t *qh, const uint8_t *scales, uint16_t d, uint16_t dmin)
{
    size_t   c, l, s;
    uint8_t  sc[8], mn[8];

    for (c = 0; c < 4; c++) {
        for (l = 0; l < 32; l++) {
            v->q[64 * c + l] = qs[32 * c + l] & 0xf;
            v->q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
        }

        if (qh == NULL) {
            continue;
        }

        for (l = 0; l < 32; l++) {
            v->q[64 * c + l] |= ((qh[l] >> (2 * c)) & 1) << 4;
            v->q[64 * c + 32 + l] |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
        }
    }

    fg_k_qd_scales_k4(scales, sc, mn);

    for (s = 0; s < 16; s++) {
        v->sc[s] = sc[s / 2];
        v->mn[s] = mn[s / 2];
    }

    v->d = fg_fp16_to_f32(d);
    v->dmin = fg_fp16_to_f32(dmin);
}


static void
fg_k_qd_unpack_q6_k(fg_k_qd_kvals_t *v, const fg_k_block_q6_k_t *w)
{
    size_t          i, h, l;
    const uint8_t  *ql, *qh;

    /*
     * Each half of 128: value 32k + l has 4 bits of ql[l] (k = 0, 2: low
     * nibbles) or ql[l + 32] (k = 1, 3: high for 2, 3) and 2 bits of
     * qh[l] at bit 2k.
     */
    for (h = 0; h < 2; h++) {
        ql = w->ql + 64 * h;
        qh = w->qh + 32 * h;

        for (l = 0; l < 32; l++) {
            v->q[128 * h + l] = ((ql[l] & 0xf) | (qh[l] & 3) << 4) - 32;
            v->q[128 * h + 32 + l] = ((ql[l + 32] & 0xf)
                                      | ((qh[l] >> 2) & 3) << 4) - 32;
            v->q[128 * h + 64 + l] = ((ql[l] >> 4)
                                      | ((qh[l] >> 4) & 3) << 4) - 32;
            v->q[128 * h + 96 + l] = ((ql[l + 32] >> 4)
                                      | ((qh[l] >> 6) & 3) << 4) - 32;
        }
    }

    for (i = 0; i < 16; i++) {
        v->sc[i] = w->scales[i];
        v->mn[i] = 0;
    }

    v->d = fg_fp16_to_f32(w->d);
    v->dmin = 0.0f;
}


static float
fg_k_qd_k(fg_k_type_e type, const char *w, const fg_k_block_q8_k_t *x,
    size_t nb)
{
    size_t                    b, s, j;
    float                     sum;
    int32_t                   isum, msum, ssum;
    fg_k_qd_kvals_t           v;
    const fg_k_block_q4_k_t  *w4;
    const fg_k_block_q5_k_t  *w5;

    sum = 0.0f;

    for (b = 0; b < nb; b++, x++) {
        switch (type) {

        case FG_K_Q2_K:
            fg_k_qd_unpack_q2_k(&v, (const fg_k_block_q2_k_t *) w + b);
            break;

        case FG_K_Q3_K:
            fg_k_qd_unpack_q3_k(&v, (const fg_k_block_q3_k_t *) w + b);
            break;

        case FG_K_Q4_K:
            w4 = (const fg_k_block_q4_k_t *) w + b;
            fg_k_qd_unpack_q45_k(&v, w4->qs, NULL, w4->scales, w4->d,
                                 w4->dmin);
            break;

        case FG_K_Q5_K:
            w5 = (const fg_k_block_q5_k_t *) w + b;
            fg_k_qd_unpack_q45_k(&v, w5->qs, w5->qh, w5->scales, w5->d,
                                 w5->dmin);
            break;

        default:
            fg_k_qd_unpack_q6_k(&v, (const fg_k_block_q6_k_t *) w + b);
            break;
        }

        isum = 0;
        msum = 0;

        for (s = 0; s < 16; s++) {
            ssum = 0;

            for (j = 0; j < 16; j++) {
                ssum += v.q[16 * s + j] * x->qs[16 * s + j];
            }

            isum += v.sc[s] * ssum;
            msum += v.mn[s] * x->bsums[s];
        }

        sum += v.d * x->d * (float) isum - v.dmin * x->d * (float) msum;
    }

    return sum;
}


float
fg_k_qd_dot_generic(fg_k_type_e type, const void *w, const void *xq,
    size_t in)
{
    size_t  nb;

    nb = in / fg_k_qd_block(type);

    switch (type) {

    case FG_K_Q4_0:
        return fg_k_qd_q4_0(w, xq, nb);

    case FG_K_Q4_1:
        return fg_k_qd_q4_1(w, xq, nb);

    case FG_K_Q5_0:
        return fg_k_qd_q5_0(w, xq, nb);

    case FG_K_Q5_1:
        return fg_k_qd_q5_1(w, xq, nb);

    default:
        return fg_k_qd_k(type, w, xq, nb);
    }
}


float
fg_k_qd_dot(fg_k_type_e type, const void *w, const void *xq, size_t in)
{
#if FG_K_X86
    if (fg_k_simd512) {
        return fg_k_qd_dot_avx512(type, w, xq, in);
    }

    if (fg_k_simd) {
        return fg_k_qd_dot_avx2(type, w, xq, in);
    }
#endif

    return fg_k_qd_dot_generic(type, w, xq, in);
}


/*
 * Each weight row is read from memory once and stays in the first-level
 * cache while it meets every row of x; each output is one dot product,
 * made the same way whatever the batch and the threads.
 */
void
fg_k_qd_mm_rows(const fg_k_mm_t *mm, size_t r0, size_t r1)
{
    size_t       r, t, rs;
    const char  *w;

#if FG_K_X86
    if (fg_k_simd512) {
        fg_k_qd_mm_avx512(mm, r0, r1);
        return;
    }

    if (fg_k_simd) {
        fg_k_qd_mm_avx2(mm, r0, r1);
        return;
    }
#endif

    rs = fg_k_qd_row_size(mm->type, mm->in);

    for (r = r0; r < r1; r++) {
        w = (const char *) mm->w + r * rs;

        for (t = 0; t < mm->n; t++) {
            mm->y[t * mm->out + r] = fg_k_qd_dot(mm->type, w,
                                                 mm->xa + t * mm->xa_row,
                                                 mm->in);
        }
    }
}
