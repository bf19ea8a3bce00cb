
/*
 * fairgate: tests of the weight types and the matrix products.
 *
 * Conversions are checked exhaustively (every half) or at their rounding
 * boundaries; products against a plain double-precision reference that
 * decodes weights with its own code, for every type, odd shapes, batches
 * around the direct/sgemm threshold, with and without SIMD and threads.
 *
 * Tolerances: a float sum of n products is within n * 2^-24 of the sum of
 * their magnitudes (Higham's bound for recursive summation; blocked sums
 * do better), and we allow twice that.  A Q8_0 product rounds x to 8 bits
 * per 32-block first, on both of its paths: the reference takes x rounded
 * by the test's own code (below), and the bound stays that of float sums,
 * so a path that rounded x otherwise, or not at all, fails.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_half.h"
#include "fg_kernels.h"
#include "fg_kernels_simd.h"
#include "fg_rand.h"


#define MAX_IN   512
#define MAX_OUT  300
#define MAX_N    100


static fg_rand_t  rng = { 0x2545f4914f6cdd1dULL };

/* the paths each product runs on: portable, AVX2, the best (AVX-512) */
static const int    simds[] = { 0, FG_K_SIMD_AVX2, 1 };
static const char  *simd_names[] = { " generic", " avx2", "" };


static double
urand(void)
{
    return fg_rand_double(&rng);
}


/* the test's own decoders, written from the formats' definitions */
static double
ref_half(uint16_t h)
{
    int     e, m, s;
    double  v;

    s = h >> 15;
    e = (h >> 10) & 0x1f;
    m = h & 0x3ff;

    if (e == 0x1f) {
        v = m ? NAN : INFINITY;

    } else if (e == 0) {
        v = ldexp(m, -24);

    } else {
        v = ldexp(1024 + m, e - 25);
    }

    return s ? -v : v;
}


static double
ref_bf16(uint16_t h)
{
    float     f;
    uint32_t  bits;

    bits = (uint32_t) h << 16;
    memcpy(&f, &bits, 4);

    return f;
}


static void
ref_decode(fg_k_type_e type, const void *row, double *dst, size_t n)
{
    size_t                    i;
    const uint16_t           *h;
    const fg_k_block_q8_0_t  *b;

    h = row;
    b = row;

    for (i = 0; i < n; i++) {
        switch (type) {

        case FG_K_F32:
            dst[i] = ((const float *) row)[i];
            break;

        case FG_K_F16:
            dst[i] = ref_half(h[i]);
            break;

        case FG_K_BF16:
            dst[i] = ref_bf16(h[i]);
            break;

        case FG_K_Q8_0:
            dst[i] = ref_half(b[i / 32].d) * b[i / 32].qs[i % 32];
            break;

        default:
            /* the quantized types: test_kernels_qdot.c */
            dst[i] = NAN;
            break;
        }
    }
}


/*
 * x as a Q8_0 product must see it, as ggml's x86 CPU backend quantizes
 * it: per block of 32, q = round(x * (127 / amax)), ties to even, in
 * float, and d = amax / 127 rounded to a half; the value is d * q, here
 * exact in double.
 */
static void
ref_round_q8(double *dst, const float *x, size_t n)
{
    size_t  b, i;
    float   amax, id;

    for (b = 0; b < n; b += 32) {
        amax = 0.0f;

        for (i = b; i < b + 32; i++) {
            amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
        }

        id = amax != 0.0f ? 127.0f / amax : 0.0f;

        for (i = b; i < b + 32; i++) {
            dst[i] = (double) fg_fp16_to_f32(fg_f32_to_fp16(amax / 127.0f))
                     * rintf(x[i] * id);
        }
    }
}


static int
same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof(float)) == 0;
}


static void
test_fp16(void)
{
    int       bad_decode, bad_round_trip, bad_ties, bad_near;
    float     f, mid, lo_f, hi_f;
    double    want;
    uint16_t  next;
    uint32_t  h;

    bad_decode = 0;
    bad_round_trip = 0;

    for (h = 0; h < 65536; h++) {
        f = fg_fp16_to_f32((uint16_t) h);
        want = ref_half((uint16_t) h);

        if (isnan(want) ? !isnan(f) : (double) f != want
                                      || !signbit(f) != !signbit(want))
        {
            bad_decode++;
        }

        if (isnan(want) ? ((fg_f32_to_fp16(f) & 0x7fff) <= 0x7c00)
                        : fg_f32_to_fp16(f) != h)
        {
            bad_round_trip++;
        }
    }

    is_int(bad_decode, 0, "fp16 -> f32: every half decodes exactly");
    is_int(bad_round_trip, 0, "f32 -> fp16: every half comes back (NaN "
           "stays NaN)");

    /* halfway between two halves goes to the even one; off it, nearest */
    bad_ties = 0;
    bad_near = 0;

    for (h = 0; h < 0x7bff; h++) {
        next = (uint16_t) (h + 1);
        lo_f = fg_fp16_to_f32((uint16_t) h);
        hi_f = fg_fp16_to_f32(next);
        mid = (float) (((double) lo_f + hi_f) / 2);

        if (fg_f32_to_fp16(mid) != ((h & 1) ? next : h)
            || fg_f32_to_fp16(-mid) != (((h & 1) ? next : h) | 0x8000))
        {
            bad_ties++;
        }

        if (fg_f32_to_fp16(nextafterf(mid, 0.0f)) != h
            || fg_f32_to_fp16(nextafterf(mid, INFINITY)) != next)
        {
            bad_near++;
        }
    }

    is_int(bad_ties, 0, "f32 -> fp16: ties to even, subnormals included");
    is_int(bad_near, 0, "f32 -> fp16: either side of a tie to the nearest");

    is_int(fg_f32_to_fp16(65504.0f), 0x7bff, "65504 is the largest half");
    is_int(fg_f32_to_fp16(65519.99f), 0x7bff, "65519.99 rounds down");
    is_int(fg_f32_to_fp16(65520.0f), 0x7c00, "65520 rounds to infinity");
    is_int(fg_f32_to_fp16(1e10f), 0x7c00, "1e10 is infinity");
    is_int(fg_f32_to_fp16(-INFINITY), 0xfc00, "-inf");
    is_int(fg_f32_to_fp16(1e-10f), 0, "1e-10 underflows to 0");
    is_int(fg_f32_to_fp16(-1e-10f), 0x8000, "-1e-10 to -0");
    is_int(fg_f32_to_fp16(ldexpf(1.0f, -25)), 0,
           "2^-25 (half the smallest subnormal) ties to 0");
    is_int(fg_f32_to_fp16(ldexpf(1.5f, -25)), 1, "1.5 * 2^-25 to 2^-24");
}


static void
test_bf16(void)
{
    int       bad;
    float     f;
    uint32_t  h, bits;

    bad = 0;

    for (h = 0; h < 65536; h++) {
        f = fg_bf16_to_f32((uint16_t) h);

        if (!isnan(f) && fg_f32_to_bf16(f) != h) {
            bad++;
        }

        if (isnan(f) && !isnan(fg_bf16_to_f32(fg_f32_to_bf16(f)))) {
            bad++;
        }

        /* the lower half at exactly 0x8000 is a tie: to the even one */
        if ((h & 0x7f80) != 0x7f80 && (h & 0x7fff) != 0x7f7f) {
            bits = (h << 16) | 0x8000;
            memcpy(&f, &bits, 4);

            if (fg_f32_to_bf16(f) != ((h & 1) ? h + 1 : h)) {
                bad++;
            }

            bits = (h << 16) | 0x7fff;
            memcpy(&f, &bits, 4);

            if (fg_f32_to_bf16(f) != h) {
                bad++;
            }
        }
    }

    is_int(bad, 0, "bf16: every value round trips, ties go to even");
}


static void
test_rows(void)
{
    int          simd, bad;
    size_t       i, t, n;
    float        x[256], got[256], amax, step;
    double       want[256];
    uint8_t      row[1024];

    static const fg_k_type_e  types[] = {
        FG_K_F32, FG_K_F16, FG_K_BF16, FG_K_Q8_0
    };

    is_int(fg_k_row_size(FG_K_F32, 10), 40, "F32 row size");
    is_int(fg_k_row_size(FG_K_F16, 10), 20, "F16 row size");
    is_int(fg_k_row_size(FG_K_BF16, 10), 20, "BF16 row size");
    is_int(fg_k_row_size(FG_K_Q8_0, 64), 68, "Q8_0 row size: 34 per block");
    is_int(fg_k_row_size(FG_K_Q8_0, 40), 0, "Q8_0 needs whole blocks");
    is_int(fg_k_row_size((fg_k_type_e) 4, 32), 0, "unknown type: 0");
    is_int(sizeof(fg_k_block_q8_0_t), 34, "a Q8_0 block is 34 bytes");

    n = 256;
    memset(row, 0, sizeof(row));

    for (i = 0; i < n; i++) {
        x[i] = (float) ((urand() * 2 - 1) * (i < 32 ? 1e-3 : 3.0));
    }

    x[40] = 0.0f;

    for (t = 0; t < 4; t++) {
        fg_k_quant_row(types[t], x, row, n - (types[t] == FG_K_Q8_0 ? 0 : 3));
        ref_decode(types[t], row, want, n);

        for (simd = 0; simd <= 1; simd++) {
            fg_k_set_simd(simd);
            fg_k_dequant_row(types[t], row, got, n);

            bad = 0;

            for (i = 0; i < n - (types[t] == FG_K_Q8_0 ? 0 : 3); i++) {
                bad += !same_bits(got[i], (float) want[i]);
            }

            is_int(bad, 0, "dequant type %d%s: exactly the decoded values",
                   types[t], simd ? "" : " (generic)");
        }
    }

    /* Q8_0 quantization: each value within half a step of the original */
    fg_k_quant_row(FG_K_Q8_0, x, row, n);
    ref_decode(FG_K_Q8_0, row, want, n);
    bad = 0;

    for (t = 0; t < n / 32; t++) {
        amax = 0.0f;

        for (i = 0; i < 32; i++) {
            amax = fmaxf(amax, fabsf(x[t * 32 + i]));
        }

        /*
         * Half a step (amax / 127), plus the step's own rounding to a half
         * (2^-11 relative, or 2^-25 absolute below 2^-14 where halves are
         * subnormal) times |q| <= 127.
         */
        step = amax / 127.0f;

        for (i = 0; i < 32; i++) {
            bad += fabs(want[t * 32 + i] - x[t * 32 + i])
                   > (step / 2 + 127 * fmax(step / 2048, ldexp(1, -25)))
                     * 1.0001;
        }
    }

    is_int(bad, 0, "Q8_0: every value within half a step (amax / 127)");

    fg_k_set_simd(1);
}


typedef struct {
    fg_k_type_e  type;
    const char  *name;
    size_t       shapes[4][2];           /* in, out */
} mm_case_t;


/* x to BF16, rounded to nearest even, where round is set; else as it is */
static void
ref_round_bf16(double *xd, const float *x, size_t n, int round)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        xd[i] = round ? fg_bf16_to_f32(fg_f32_to_bf16(x[i])) : x[i];
    }
}


/*
 * y[n][out] against the product in double of the decoded weights wd and
 * x as the kernels see it, xd: each within 2 * in * 2^-24 of the sum of
 * the products' magnitudes.  Returns the misses, the first told; *worst
 * is the largest error relative to its bound.
 */
static size_t
check_product(const char *name, const float *y, const double *wd,
    const double *xd, size_t n, size_t in, size_t out, int simd, int p,
    double *worst)
{
    size_t  t, j, i, bad;
    double  sum, mag, bound;

    bad = 0;

    for (t = 0; t < n; t++) {
        for (j = 0; j < out; j++) {
            sum = 0;
            mag = 0;

            for (i = 0; i < in; i++) {
                sum += wd[j * in + i] * xd[t * in + i];
                mag += fabs(wd[j * in + i] * xd[t * in + i]);
            }

            bound = 2.0 * in * ldexp(mag, -24) + 1e-30;

            if (!(fabs(y[t * out + j] - sum) <= bound) && bad++ == 0) {
                diag("%s %zux%zu n=%zu simd=%d pool=%d y[%zu][%zu] = %.9g, "
                     "want %.9g within %.3g", name, in, out, n, simd, p, t,
                     j, y[t * out + j], sum, bound);
            }

            *worst = fmax(*worst, fabs(y[t * out + j] - sum) / bound);
        }
    }

    return bad;
}


static void
test_matmul(void)
{
    int          pass[4][3][2], si, p;
    size_t       c, s, ni, n, in, out, i, work_size;
    double       worst;
    float       *x, *y, *wf;
    double      *wd, *xd;
    uint8_t     *w;
    void        *work;
    fg_pool_t   *pools[2];

    static const size_t     ns[] = { 1, 2, 7, 16, 17, 32, 65, 100 };
    static const mm_case_t  cases[] = {
        { FG_K_F32, "F32", { { 8, 4 }, { 37, 19 }, { 100, 33 },
                             { 512, 300 } } },
        { FG_K_F16, "F16", { { 8, 4 }, { 37, 19 }, { 100, 33 },
                             { 512, 300 } } },
        { FG_K_BF16, "BF16", { { 8, 4 }, { 37, 19 }, { 100, 33 },
                               { 512, 300 } } },
        { FG_K_Q8_0, "Q8_0", { { 32, 5 }, { 96, 37 }, { 256, 70 },
                               { 512, 300 } } }
    };

    x = malloc(MAX_N * MAX_IN * sizeof(float));
    y = malloc(MAX_N * MAX_OUT * sizeof(float));
    wf = malloc(MAX_IN * MAX_OUT * sizeof(float));
    wd = malloc(MAX_IN * MAX_OUT * sizeof(double));
    xd = malloc(MAX_N * MAX_IN * sizeof(double));
    w = malloc(MAX_IN * MAX_OUT * sizeof(float));

    pools[0] = NULL;
    pools[1] = fg_pool_create(2);

    work_size = fg_k_matmul_work_size(FG_K_Q8_0, MAX_N, MAX_IN, 2);
    work_size = (fg_k_matmul_work_size(FG_K_F16, MAX_N, MAX_IN, 2)
                 > work_size) ? fg_k_matmul_work_size(FG_K_F16, MAX_N,
                                                      MAX_IN, 2)
                              : work_size;
    work = aligned_alloc(64, (work_size + 63) & ~(size_t) 63);

    ok(x && y && wf && wd && xd && w && pools[1] && work,
       "buffers and a pool");

    for (c = 0; c < 4; c++) {
        worst = 0;

        for (si = 0; si < 3; si++) {
            for (p = 0; p < 2; p++) {
                pass[c][si][p] = 1;
            }
        }

        for (s = 0; s < 4; s++) {
            in = cases[c].shapes[s][0];
            out = cases[c].shapes[s][1];

            for (i = 0; i < out * in; i++) {
                wf[i] = (float) (urand() * 2 - 1);
            }

            for (i = 0; i < out; i++) {
                fg_k_quant_row(cases[c].type, wf + i * in,
                               w + i * fg_k_row_size(cases[c].type, in), in);
                ref_decode(cases[c].type,
                           w + i * fg_k_row_size(cases[c].type, in),
                           wd + i * in, in);
            }

            for (ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
                n = ns[ni];

                for (i = 0; i < n * in; i++) {
                    x[i] = (float) (urand() * 2 - 1);
                    xd[i] = x[i];
                }

                /* Q8_0: the values its products see, whatever n */
                if (cases[c].type == FG_K_Q8_0) {
                    ref_round_q8(xd, x, n * in);
                }

                for (si = 0; si < 3; si++) {
                    fg_k_set_simd(simds[si]);

                    /* BF16 beyond the direct rows: x rounded, as llama.cpp */
                    if (cases[c].type == FG_K_BF16) {
                        ref_round_bf16(xd, x, n * in,
                                       fg_k_simd_bf16 && n > FG_K_MM_SMALL);
                    }

                    for (p = 0; p < 2; p++) {
                        memset(y, 0xff, n * out * sizeof(float));

                        fg_k_matmul(pools[p], y, x, w, cases[c].type, n, in,
                                    out, work);

                        if (check_product(cases[c].name, y, wd, xd, n, in,
                                          out, simds[si], p, &worst)
                            != 0)
                        {
                            pass[c][si][p] = 0;
                        }
                    }
                }
            }
        }

        for (si = 0; si < 3; si++) {
            for (p = 0; p < 2; p++) {
                ok(pass[c][si][p], "matmul %s%s%s: 4 shapes x n = 1, 2, "
                   "7, 16, 17, 32, 65, 100 within bounds", cases[c].name,
                   simd_names[si], p ? " 2 threads" : "");
            }
        }

        diag("%s: largest error %.3g of its bound", cases[c].name, worst);
    }

    fg_k_set_simd(1);

    fg_pool_destroy(pools[1]);
    free(work);
    free(w);
    free(xd);
    free(wd);
    free(wf);
    free(y);
    free(x);
}


/*
 * Each row of a batch must come out with the same bits as that row alone:
 * always for batches of up to FG_K_MM_SMALL rows, and for any batch with
 * batch invariance on; with and without SIMD, on 1 and 2 threads.
 */
static void
test_invariance(void)
{
    int          si, inv, pass, p;
    size_t       c, t, n, in, out, i, work_size;
    float       *x, *yb, *y1;
    uint8_t     *w;
    void        *work;
    fg_pool_t   *pools[2];

    static const fg_k_type_e  types[] = {
        FG_K_F32, FG_K_F16, FG_K_BF16, FG_K_Q8_0
    };
    static const char  *names[] = { "F32", "F16", "BF16", "Q8_0" };

    /*
     * 344 = 10 * 32 + 16 + 8: the AVX-512 kernels' every kind of tail
     * (Q8_0 takes whole blocks: 320); F16 and BF16 2056 = 64 * 32 + 8,
     * rows of over 4 KiB, which one token reads 4 at a time
     * (FG_K_MM_ONE_ROW)
     */
    in = 2056;
    out = 300;

    x = malloc(MAX_N * in * sizeof(float));
    yb = malloc(MAX_N * out * sizeof(float));
    y1 = malloc(out * sizeof(float));
    w = malloc(out * in * sizeof(float));

    pools[0] = NULL;
    pools[1] = fg_pool_create(2);

    fg_k_set_batch_invariant(1);
    work_size = fg_k_matmul_work_size(FG_K_Q8_0, MAX_N, in, 2);
    i = fg_k_matmul_work_size(FG_K_F16, MAX_N, in, 2);
    work_size = i > work_size ? i : work_size;
    fg_k_set_batch_invariant(0);

    work = aligned_alloc(64, (work_size + 63) & ~(size_t) 63);

    for (i = 0; i < MAX_N * in; i++) {
        x[i] = (float) (urand() * 2 - 1);
    }

    for (c = 0; c < 4; c++) {
        in = types[c] == FG_K_Q8_0 ? 320 : types[c] == FG_K_F32 ? 344 : 2056;

        for (i = 0; i < out; i++) {
            fg_k_quant_row(types[c], x + (i % MAX_N) * in,
                           w + i * fg_k_row_size(types[c], in), in);
        }

        for (inv = 0; inv < 2; inv++) {
            fg_k_set_batch_invariant(inv);
            n = inv ? MAX_N : FG_K_MM_SMALL;

            for (si = 0; si < 3; si++) {
                fg_k_set_simd(simds[si]);
                pass = 1;

                for (p = 0; p < 2; p++) {
                    fg_k_matmul(pools[p], yb, x, w, types[c], n, in, out,
                                work);

                    for (t = 0; t < n; t++) {
                        fg_k_matmul(pools[1 - p], y1, x + t * in, w,
                                    types[c], 1, in, out, work);

                        if (memcmp(y1, yb + t * out, out * sizeof(float))) {
                            pass = 0;
                        }
                    }
                }

                ok(pass, "matmul %s%s: each of a batch of %zu rows%s has "
                   "the bits it has alone, on 1 or 2 threads", names[c],
                   simd_names[si], n,
                   inv ? " (batch invariance on)" : "");
            }
        }
    }

    fg_k_set_batch_invariant(0);
    fg_k_set_simd(1);

    fg_pool_destroy(pools[1]);
    free(work);
    free(w);
    free(y1);
    free(yb);
    free(x);
}


/* largest |a - b| over n values, relative to the largest |b| */
static double
rel_diff(const float *a, const float *b, size_t n)
{
    size_t  i;
    double  d, m;

    d = 0.0;
    m = 1e-30;

    for (i = 0; i < n; i++) {
        d = fmax(d, fabs((double) a[i] - b[i]));
        m = fmax(m, fabs((double) b[i]));
    }

    return d / m;
}


/*
 * Q8_0's rounding of x does not depend on the batch: a row alone (the
 * direct kernels' int8 products) and in a batch of 40 (sgemm on x rounded
 * to the same values) agree to float rounding, 1e-5 of the largest
 * output, and so do both paths on one row (sgemm forced at n = 1).  Were
 * x not rounded for sgemm, they would differ by its 8-bit rounding, 4e-3
 * here.  With and without SIMD.
 */
static void
test_q8_batch(void)
{
    int       simd;
    size_t    t, in, out, rows, direct, work_size;
    void     *work;
    float    *wf, *x, *one, *all;
    double    batch, path;
    uint8_t  *w;

    in = 256;
    out = 64;
    rows = 2 * FG_K_MM_SMALL + 8;

    wf = malloc(out * in * sizeof(float));
    w = malloc(fg_k_row_size(FG_K_Q8_0, in) * out);
    x = malloc(rows * in * sizeof(float));
    one = malloc(rows * out * sizeof(float));
    all = malloc(rows * out * sizeof(float));

    for (t = 0; t < out * in; t++) {
        wf[t] = (float) ((urand() * 2 - 1) * 0.1);
    }

    for (t = 0; t < out; t++) {
        fg_k_quant_row(FG_K_Q8_0, wf + t * in,
                       w + t * fg_k_row_size(FG_K_Q8_0, in), in);
    }

    for (t = 0; t < rows * in; t++) {
        x[t] = (float) (urand() * 2 - 1);
    }

    /* sized with every row direct and with sgemm for 1 row */
    direct = fg_k_mm_direct_max;
    fg_k_mm_direct_max = 0;
    work_size = fg_k_matmul_work_size(FG_K_Q8_0, rows, in, 1);
    fg_k_mm_direct_max = direct;
    t = fg_k_matmul_work_size(FG_K_Q8_0, rows, in, 1);
    work_size = t > work_size ? t : work_size;

    work = aligned_alloc(64, (work_size + 63) & ~(size_t) 63);

    for (simd = 1; simd >= 0; simd--) {
        fg_k_set_simd(simd);

        for (t = 0; t < rows; t++) {
            fg_k_matmul(NULL, one + t * out, x + t * in, w, FG_K_Q8_0, 1,
                        in, out, work);
        }

        fg_k_matmul(NULL, all, x, w, FG_K_Q8_0, rows, in, out, work);
        batch = rel_diff(all, one, rows * out);

        fg_k_mm_direct_max = 0;

        for (t = 0; t < rows; t++) {
            fg_k_matmul(NULL, all + t * out, x + t * in, w, FG_K_Q8_0, 1,
                        in, out, work);
        }

        fg_k_mm_direct_max = direct;
        path = rel_diff(all, one, rows * out);

        ok(batch <= 1e-5 && path <= 1e-5, "matmul Q8_0%s: a row alone and "
           "in %zu at once (sgemm), and sgemm on one row, agree within "
           "1e-5 (%.2g, %.2g)", simd ? "" : " generic", rows, batch, path);
    }

    fg_k_set_simd(1);

    free(work);
    free(all);
    free(one);
    free(x);
    free(w);
    free(wf);
}


/*
 * Every finite half as a weight: x one-hot, so each output is one weight
 * read exactly, subnormals among them (the AVX-512 kernel takes those
 * apart from vcvtph2ps), on every path, alone and in a batch of 3.
 */
static void
test_f16_every_half(void)
{
    int        si, pass;
    size_t     i, k, t, in, out, n, ni;
    float     *x, *y, want;
    uint16_t  *w, h;
    void      *work;

    in = 64;
    out = 0x7c00 * 2 / in;
    n = 3;

    x = calloc(n * in, sizeof(float));
    y = malloc(n * out * sizeof(float));
    w = malloc(out * in * sizeof(uint16_t));
    work = aligned_alloc(64, (fg_k_matmul_work_size(FG_K_F16, n, in, 1)
                              + 63) & ~(size_t) 63);

    /* 0x0000 .. 0x7bff, then the same with the sign */
    for (i = 0; i < out * in; i++) {
        w[i] = (uint16_t) (i < 0x7c00 ? i : 0x8000 + (i - 0x7c00));
    }

    for (si = 0; si < 3; si++) {
        fg_k_set_simd(simds[si]);
        pass = 1;

        for (k = 0; k < 2 * in; k++) {
            /* alone (one row at a time) and 3 together (2 x 4 blocks) */
            ni = k < in ? 1 : n;
            memset(x, 0, n * in * sizeof(float));

            for (t = 0; t < ni; t++) {
                x[t * in + (k + t) % in] = 1.0f;
            }

            fg_k_matmul(NULL, y, x, w, FG_K_F16, ni, in, out, work);

            for (t = 0; t < ni; t++) {
                for (i = 0; i < out; i++) {
                    h = w[i * in + (k + t) % in];
                    want = fg_fp16_to_f32(h);

                    if (y[t * out + i] != want && pass) {
                        diag("half 0x%04x read as %.9g, want %.9g", h,
                             y[t * out + i], want);
                        pass = 0;
                    }
                }
            }
        }

        ok(pass, "matmul F16%s: every finite half, subnormals too, read "
           "exactly", simd_names[si]);
    }

    fg_k_set_simd(1);

    free(work);
    free(w);
    free(y);
    free(x);
}


int
main(void)
{
    diag("kernels: %s", fg_k_init());

    test_fp16();
    test_bf16();
    test_rows();
    test_matmul();
    test_invariance();
    test_f16_every_half();
    test_q8_batch();

    return done_testing();
}
