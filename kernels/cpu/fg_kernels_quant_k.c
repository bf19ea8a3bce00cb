
/*
 * fairgate: float to ggml's k-quants, with the scale searches of ggml's
 * reference quantizers (ggml-quants.c's quantize_row_q*_K_ref, without
 * an importance matrix), so that a file written here holds the bytes
 * llama.cpp's quantizer would write.  Each super-block of 256 values:
 *
 *   1. each sub-block gets its own float scale (and min) from a search:
 *      Q2_K, Q4_K, Q5_K fit x ~ scale * q - min over a few trial scales
 *      (fg_k_fit_min()), weighted by |x| (Q2_K) or by |x| plus the
 *      sub-block's RMS (Q4_K, Q5_K); Q3_K refines a symmetric scale code
 *      by code (fg_k_fit_sym_refine()), Q6_K tries 19 symmetric scales
 *      (fg_k_fit_sym()), both weighted by x^2;
 *   2. the sub-blocks' scales (and mins) are themselves quantized against
 *      the largest: to 4 bits (Q2_K), 6 bits (Q3_K signed, Q4_K, Q5_K,
 *      the last two packed into 12 bytes) or int8 (Q6_K), the super-
 *      block's d (and dmin) a half;
 *   3. every value is quantized again with its sub-block's scale as it
 *      will be read back, x / (d * sc) (+ dmin * m), rounded to even.
 *
 * The arithmetic keeps ggml's order of float operations, so that ties and
 * comparisons between trial scales fall the same way.
 */


#include <string.h>

#include "fg_kernels.h"
#include "fg_kernels_quant_ref.h"


#define FG_K_GROUP_EPS  1e-15f      /* a group below this is all zero */


static inline int
fg_k_clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}


/* the x^2-weighted sums of fg_k_fit_sym() for one trial scale */
static void
fg_k_sym_sums(size_t n, int nmax, const float *x, float iscale, float *sumlx,
    float *suml2)
{
    int     l;
    size_t  i;
    float   w;

    *sumlx = 0.0f;
    *suml2 = 0.0f;

    for (i = 0; i < n; i++) {
        l = fg_k_clamp(fg_k_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        w = x[i] * x[i];
        *sumlx += w * x[i] * l;
        *suml2 += w * l * l;
    }
}


static void
fg_k_sym_codes(size_t n, int nmax, const float *x, float iscale, int8_t *L)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        L[i] = (int8_t) (nmax + fg_k_clamp(fg_k_nearest_int(iscale * x[i]),
                                           -nmax, nmax - 1));
    }
}


/*
 * ggml's make_qx_quants() with weights x^2: the scale of n values as
 * codes -nmax .. nmax-1 (L gets them plus nmax), trying nmax + is / 10
 * codes for the largest value, is = -9 .. 9, and keeping the least
 * weighted squared error.
 */
static float
fg_k_fit_sym(size_t n, int nmax, const float *x, int8_t *L)
{
    int    is;
    float  max, iscale, scale, best, sumlx, suml2;

    max = fg_k_signed_max(x, n);

    if (fabsf(max) < FG_K_GROUP_EPS) {
        memset(L, 0, n);
        return 0.0f;
    }

    iscale = -nmax / max;
    fg_k_sym_sums(n, nmax, x, iscale, &sumlx, &suml2);
    fg_k_sym_codes(n, nmax, x, iscale, L);

    scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    best = scale * sumlx;

    for (is = -9; is <= 9; is++) {
        if (is == 0) {
            continue;
        }

        iscale = -(nmax + 0.1f * is) / max;
        fg_k_sym_sums(n, nmax, x, iscale, &sumlx, &suml2);

        if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
            fg_k_sym_codes(n, nmax, x, iscale, L);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }

    return scale;
}


/*
 * ggml's make_q3_quants() with its refinement: codes -nmax .. nmax-1 for
 * the scale -nmax / max, then up to 5 passes moving each code to the one
 * the others' least-squares scale gives it, where that lowers the
 * x^2-weighted error; L gets the codes plus nmax.
 */
static float
fg_k_fit_sym_refine(size_t n, int nmax, const float *x, int8_t *L)
{
    int     l, pass, changed;
    size_t  i;
    float   max, iscale, sumlx, suml2, slx, sl2, w;

    max = fg_k_signed_max(x, n);

    if (fabsf(max) < FG_K_GROUP_EPS) {
        memset(L, 0, n);
        return 0.0f;
    }

    iscale = -nmax / max;
    sumlx = 0.0f;
    suml2 = 0.0f;

    for (i = 0; i < n; i++) {
        l = fg_k_clamp(fg_k_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t) l;
        w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }

    for (pass = 0; pass < 5; pass++) {
        changed = 0;

        for (i = 0; i < n; i++) {
            w = x[i] * x[i];
            slx = sumlx - w * x[i] * L[i];

            if (!(slx > 0.0f)) {
                continue;
            }

            sl2 = suml2 - w * L[i] * L[i];
            l = fg_k_clamp(fg_k_nearest_int(x[i] * sl2 / slx), -nmax,
                           nmax - 1);

            if (l == L[i]) {
                continue;
            }

            slx += w * x[i] * l;
            sl2 += w * l * l;

            if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = (int8_t) l;
                sumlx = slx;
                suml2 = sl2;
                changed++;
            }
        }

        if (!changed) {
            break;
        }
    }

    for (i = 0; i < n; i++) {
        L[i] = (int8_t) (L[i] + nmax);
    }

    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}


/* how fg_k_fit_min() searches: ggml's rmin, rdelta, nstep, use_mad */
typedef struct {
    float   rmin;
    float   rdelta;
    int     nstep;
    int     mad;
} fg_k_search_t;


/* the weighted error of x ~ scale * L + min, absolute or squared */
static float
fg_k_fit_error(size_t n, const float *x, const float *w, const uint8_t *L,
    float scale, float min, int mad)
{
    size_t  i;
    float   err, diff;

    err = 0.0f;

    for (i = 0; i < n; i++) {
        diff = scale * L[i] + min - x[i];
        err += w[i] * (mad ? fabsf(diff) : diff * diff);
    }

    return err;
}


/*
 * ggml's make_qkx2_quants(): codes 0 .. nmax for x ~ scale * L + min with
 * min <= 0, starting from the range's own scale, then for each trial
 * scale (nmax + rmin + rdelta * is) / (max - min) the codes it rounds to
 * and the weighted least-squares scale and min for them (min held at 0 if
 * it comes out positive), keeping the least error.  Returns the scale,
 * and -min in *the_min.
 */
static float
fg_k_fit_min(size_t n, int nmax, const float *x, const float *w,
    uint8_t *L, float *the_min, const fg_k_search_t *s)
{
    int      l, is;
    size_t   i;
    float    min, max, sum_w, sum_x, iscale, scale, best, err;
    float    sum_l, sum_l2, sum_xl, D, this_scale, this_min;
    uint8_t  aux[32];

    min = x[0];
    max = x[0];
    sum_w = w[0];
    sum_x = sum_w * x[0];

    for (i = 1; i < n; i++) {
        min = x[i] < min ? x[i] : min;
        max = x[i] > max ? x[i] : max;
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }

    min = min > 0.0f ? 0.0f : min;

    if (max == min) {
        memset(L, 0, n);
        *the_min = -min;
        return 0.0f;
    }

    iscale = nmax / (max - min);
    scale = 1 / iscale;

    for (i = 0; i < n; i++) {
        L[i] = (uint8_t) fg_k_clamp(fg_k_nearest_int(iscale * (x[i] - min)),
                                    0, nmax);
    }

    best = fg_k_fit_error(n, x, w, L, scale, min, s->mad);

    for (is = 0; is <= s->nstep; is++) {
        iscale = (s->rmin + s->rdelta * is + nmax) / (max - min);
        sum_l = sum_l2 = sum_xl = 0.0f;

        for (i = 0; i < n; i++) {
            l = fg_k_clamp(fg_k_nearest_int(iscale * (x[i] - min)), 0, nmax);
            aux[i] = (uint8_t) l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }

        D = sum_w * sum_l2 - sum_l * sum_l;

        if (!(D > 0.0f)) {
            continue;
        }

        this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;

        if (this_min > 0.0f) {
            this_min = 0.0f;
            this_scale = sum_xl / sum_l2;
        }

        err = fg_k_fit_error(n, x, w, aux, this_scale, this_min, s->mad);

        if (err < best) {
            memcpy(L, aux, n);
            best = err;
            scale = this_scale;
            min = this_min;
        }
    }

    *the_min = -min;

    return scale;
}


/* packs 256 codes of 2 bits, four values 32 apart to a byte */
static void
fg_k_pack2(const uint8_t *L, uint8_t *qs)
{
    size_t  j, l;

    for (j = 0; j < FG_K_QK_K; j += 128) {
        for (l = 0; l < 32; l++) {
            qs[j / 4 + l] = (uint8_t) (L[j + l] | L[j + l + 32] << 2
                                       | L[j + l + 64] << 4
                                       | L[j + l + 96] << 6);
        }
    }
}


void
fg_k_quant_q2_k(const float *x, void *dst, size_t nb)
{
    size_t                i, j, l;
    float                 scales[16], mins[16], w[16];
    float                 max_scale, max_min, d, dm;
    uint8_t               L[FG_K_QK_K];
    fg_k_block_q2_k_t    *b;
    static fg_k_search_t  search = { -0.5f, 0.1f, 15, 1 };

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        max_scale = 0.0f;
        max_min = 0.0f;

        for (j = 0; j < 16; j++) {
            for (l = 0; l < 16; l++) {
                w[l] = fabsf(x[16 * j + l]);
            }

            scales[j] = fg_k_fit_min(16, 3, x + 16 * j, w, L + 16 * j,
                                     &mins[j], &search);
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }

        memset(b->scales, 0, sizeof(b->scales));
        b->d = fg_f32_to_fp16(max_scale > 0.0f ? max_scale / 15 : 0.0f);
        b->dmin = fg_f32_to_fp16(max_min > 0.0f ? max_min / 15 : 0.0f);

        for (j = 0; j < 16; j++) {
            if (max_scale > 0.0f) {
                b->scales[j] = (uint8_t) fg_k_nearest_int(15 / max_scale
                                                          * scales[j]);
            }

            if (max_min > 0.0f) {
                b->scales[j] |= (uint8_t) (fg_k_nearest_int(15 / max_min
                                                             * mins[j]) << 4);
            }
        }

        for (j = 0; j < 16; j++) {
            d = fg_fp16_to_f32(b->d) * (b->scales[j] & 0xf);

            if (d == 0.0f) {
                continue;
            }

            dm = fg_fp16_to_f32(b->dmin) * (b->scales[j] >> 4);

            for (l = 0; l < 16; l++) {
                L[16 * j + l] = (uint8_t) fg_k_clamp(
                    fg_k_nearest_int((x[16 * j + l] + dm) / d), 0, 3);
            }
        }

        fg_k_pack2(L, b->qs);
    }
}


/* Q3_K's 16 scale codes (0 .. 63) into 12 bytes, fg_kernels_dequant.c's
 * layout */
static void
fg_k_pack_q3_scales(const int *sc, uint8_t *scales)
{
    size_t  j;

    memset(scales, 0, FG_K_K_SCALE_SIZE);

    for (j = 0; j < 16; j++) {
        scales[j % 8] |= (uint8_t) ((sc[j] & 0xf) << (j < 8 ? 0 : 4));
        scales[8 + j % 4] |= (uint8_t) ((sc[j] >> 4) << (2 * (j / 4)));
    }
}


void
fg_k_quant_q3_k(const float *x, void *dst, size_t nb)
{
    int                 sc[16], l;
    size_t              i, j;
    float               scales[16], max_scale, iscale, d;
    int8_t              L[FG_K_QK_K];
    fg_k_block_q3_k_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        max_scale = 0.0f;

        for (j = 0; j < 16; j++) {
            scales[j] = fg_k_fit_sym_refine(16, 4, x + 16 * j, L + 16 * j);
            max_scale = fabsf(scales[j]) > fabsf(max_scale) ? scales[j]
                                                            : max_scale;
        }

        iscale = max_scale != 0.0f ? -32 / max_scale : 0.0f;

        /* no scale at all: ggml leaves the scales' bytes zero */
        for (j = 0; j < 16; j++) {
            sc[j] = max_scale == 0.0f
                    ? 0
                    : fg_k_clamp(fg_k_nearest_int(iscale * scales[j]), -32,
                                 31) + 32;
        }

        fg_k_pack_q3_scales(sc, b->scales);
        b->d = fg_f32_to_fp16(max_scale != 0.0f ? 1 / iscale : 0.0f);

        for (j = 0; j < FG_K_QK_K; j++) {
            d = fg_fp16_to_f32(b->d) * (sc[j / 16] - 32);

            if (d != 0.0f) {
                l = fg_k_clamp(fg_k_nearest_int(x[j] / d), -4, 3);
                L[j] = (int8_t) (l + 4);
            }
        }

        /* the high bit of value j in bit j / 32 of hmask[j % 32] */
        memset(b->hmask, 0, sizeof(b->hmask));

        for (j = 0; j < FG_K_QK_K; j++) {
            if (L[j] > 3) {
                b->hmask[j % 32] |= (uint8_t) (1 << (j / 32));
                L[j] -= 4;
            }
        }

        fg_k_pack2((uint8_t *) L, b->qs);
    }
}


/*
 * Q4_K's and Q5_K's first two steps: the sub-blocks' fits, their scales
 * and mins to 6 bits packed in scales[12], d and dmin; then the codes of
 * 0 .. nmax for the scales as read back.
 */
static void
fg_k_quant_k4(const float *x, int nmax, const fg_k_search_t *search,
    uint16_t *bd, uint16_t *bdmin, uint8_t *packed, uint8_t *L)
{
    size_t   j, l;
    float    scales[8], mins[8], w[32], sum_x2, av_x, max_scale, max_min;
    float    inv_scale, inv_min, d, dm;
    uint8_t  ls, lm, sc, m;

    max_scale = 0.0f;
    max_min = 0.0f;

    for (j = 0; j < 8; j++) {
        for (sum_x2 = 0.0f, l = 0; l < 32; l++) {
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        }

        av_x = sqrtf(sum_x2 / 32);

        for (l = 0; l < 32; l++) {
            w[l] = av_x + fabsf(x[32 * j + l]);
        }

        scales[j] = fg_k_fit_min(32, nmax, x + 32 * j, w, L + 32 * j,
                                 &mins[j], search);
        max_scale = scales[j] > max_scale ? scales[j] : max_scale;
        max_min = mins[j] > max_min ? mins[j] : max_min;
    }

    inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
    inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;

    for (j = 0; j < 8; j++) {
        ls = (uint8_t) fg_k_nearest_int(inv_scale * scales[j]);
        lm = (uint8_t) fg_k_nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;

        if (j < 4) {
            packed[j] = ls;
            packed[j + 4] = lm;

        } else {
            packed[j + 4] = (uint8_t) ((ls & 0xf) | (lm & 0xf) << 4);
            packed[j - 4] |= (uint8_t) ((ls >> 4) << 6);
            packed[j] |= (uint8_t) ((lm >> 4) << 6);
        }
    }

    *bd = fg_f32_to_fp16(max_scale / 63.0f);
    *bdmin = fg_f32_to_fp16(max_min / 63.0f);

    for (j = 0; j < 8; j++) {
        fg_k_scale_min_k4(packed, j, &sc, &m);
        d = fg_fp16_to_f32(*bd) * sc;

        if (d == 0.0f) {
            continue;
        }

        dm = fg_fp16_to_f32(*bdmin) * m;

        for (l = 0; l < 32; l++) {
            L[32 * j + l] = (uint8_t) fg_k_clamp(
                fg_k_nearest_int((x[32 * j + l] + dm) / d), 0, nmax);
        }
    }
}


void
fg_k_quant_q4_k(const float *x, void *dst, size_t nb)
{
    size_t                i, j, l;
    uint8_t               L[FG_K_QK_K];
    fg_k_block_q4_k_t    *b;
    static fg_k_search_t  search = { -1.0f, 0.1f, 20, 0 };

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        fg_k_quant_k4(x, 15, &search, &b->d, &b->dmin, b->scales, L);

        for (j = 0; j < FG_K_QK_K; j += 64) {
            for (l = 0; l < 32; l++) {
                b->qs[j / 2 + l] = (uint8_t) (L[j + l] | L[j + l + 32] << 4);
            }
        }
    }
}


void
fg_k_quant_q5_k(const float *x, void *dst, size_t nb)
{
    size_t                i, j, l;
    uint8_t               L[FG_K_QK_K];
    fg_k_block_q5_k_t    *b;
    static fg_k_search_t  search = { -0.5f, 0.1f, 15, 0 };

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        fg_k_quant_k4(x, 31, &search, &b->d, &b->dmin, b->scales, L);
        memset(b->qh, 0, sizeof(b->qh));

        /* value j's fifth bit in bit j / 32 of qh[j % 32] */
        for (j = 0; j < FG_K_QK_K; j++) {
            b->qh[j % 32] |= (uint8_t) ((L[j] >> 4) << (j / 32));
        }

        for (j = 0; j < FG_K_QK_K; j += 64) {
            for (l = 0; l < 32; l++) {
                b->qs[j / 2 + l] = (uint8_t) ((L[j + l] & 0xf)
                                              | (L[j + l + 32] & 0xf) << 4);
            }
        }
    }
}


/* Q6_K's codes 0 .. 63: low nibbles in ql, top two bits in qh */
static void
fg_k_pack_q6(const int8_t *L, uint8_t *ql, uint8_t *qh)
{
    size_t  j, l;

    for (j = 0; j < FG_K_QK_K; j += 128, ql += 64, qh += 32) {
        for (l = 0; l < 32; l++) {
            ql[l] = (uint8_t) ((L[j + l] & 0xf) | (L[j + l + 64] & 0xf) << 4);
            ql[l + 32] = (uint8_t) ((L[j + l + 32] & 0xf)
                                    | (L[j + l + 96] & 0xf) << 4);
            qh[l] = (uint8_t) (L[j + l] >> 4 | (L[j + l + 32] >> 4) << 2
                               | (L[j + l + 64] >> 4) << 4
                               | (L[j + l + 96] >> 4) << 6);
        }
    }
}


void
fg_k_quant_q6_k(const float *x, void *dst, size_t nb)
{
    int                 l;
    size_t              i, j;
    float               scales[16], max_scale, iscale, d;
    int8_t              L[FG_K_QK_K];
    fg_k_block_q6_k_t  *b;

    for (b = dst, i = 0; i < nb; i++, b++, x += FG_K_QK_K) {
        max_scale = 0.0f;

        for (j = 0; j < 16; j++) {
            scales[j] = fg_k_fit_sym(16, 32, x + 16 * j, L + 16 * j);
            max_scale = fabsf(scales[j]) > fabsf(max_scale) ? scales[j]
                                                            : max_scale;
        }

        if (fabsf(max_scale) < FG_K_GROUP_EPS) {
            memset(b, 0, sizeof(fg_k_block_q6_k_t));
            continue;
        }

        iscale = -128.0f / max_scale;
        b->d = fg_f32_to_fp16(1 / iscale);

        for (j = 0; j < 16; j++) {
            l = fg_k_nearest_int(iscale * scales[j]);
            b->scales[j] = (int8_t) (l < 127 ? l : 127);
        }

        for (j = 0; j < FG_K_QK_K; j++) {
            d = fg_fp16_to_f32(b->d) * b->scales[j / 16];

            if (d != 0.0f) {
                l = fg_k_clamp(fg_k_nearest_int(x[j] / d), -32, 31);
                L[j] = (int8_t) (l + 32);
            }
        }

        fg_k_pack_q6(L, b->ql, b->qh);
    }
}
