
/*
 * fairgate: fg_k_q8_round(), activations rounded as a Q8_0 product sees
 * them.
 *
 * - Each block of 32 becomes d * q with d = amax / 127 and integer q in
 *   -127 .. 127 (127 in magnitude at the block's largest value), within
 *   d / 2 of the input; zeros stay zeros.
 * - Rounding twice changes nothing.
 * - The reason for it: with rounded x, a Q8_0 product of one row at a
 *   time (fg_k_matmul()'s integer path) and of more rows at once than
 *   its direct kernels take (its sgemm path) agree to float rounding,
 *   1e-5 of the largest output; with raw x they differ by the 8-bit
 *   quantization of x, 1e-4 and more, which the test checks too.
 */


#include <stdint.h>

#include "fg_tap.h"
#include "fg_kernels.h"
#include "fg_kernels_q8x.h"
#include "fg_kernels_simd.h"


#define IN    256
#define OUT   64
#define ROWS  (2 * FG_K_MM_SMALL + 8)      /* sgemm's, not the direct's */


static uint64_t  rng = 0x853c49e6748fea9bULL;


static float
urand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;

    return (float) ((rng >> 11) / 9007199254740992.0 * 2 - 1);
}


static void
test_values(void)
{
    int     bad_q, bad_err, bad_max, bad_twice;
    size_t  i, j;
    float   x[IN], y[IN], z[IN], amax, d, q, qmax;

    for (i = 0; i < IN; i++) {
        /* blocks of different scales; one block of zeros */
        x[i] = i / 32 == 3 ? 0.0f : urand() * (float) (1 << (i / 32));
    }

    fg_k_q8_round(y, x, IN);
    fg_k_q8_round(z, y, IN);

    bad_q = bad_err = bad_max = bad_twice = 0;

    for (i = 0; i < IN; i += 32) {
        amax = 0.0f;

        for (j = 0; j < 32; j++) {
            amax = fmaxf(amax, fabsf(x[i + j]));
        }

        d = amax / 127.0f;
        qmax = 0.0f;

        for (j = 0; j < 32; j++) {
            q = d != 0.0f ? y[i + j] / d : 0.0f;

            if (fabsf(q - rintf(q)) > 1e-4f || fabsf(q) > 127.0f + 1e-4f) {
                bad_q++;
            }

            if (fabsf(y[i + j] - x[i + j]) > d / 2 * (1 + 1e-5f)) {
                bad_err++;
            }

            if (z[i + j] != y[i + j]
                && fabsf(z[i + j] - y[i + j]) > 1e-6f * amax)
            {
                bad_twice++;
            }

            qmax = fmaxf(qmax, fabsf(rintf(q)));
        }

        if (amax != 0.0f ? qmax != 127.0f : qmax != 0.0f) {
            bad_max++;
        }
    }

    is_int(bad_q, 0, "values are d * q, q an integer in -127 .. 127");
    is_int(bad_err, 0, "within d / 2 of the input");
    is_int(bad_max, 0, "the largest is 127 * d; zeros stay zeros");
    is_int(bad_twice, 0, "rounding twice changes nothing");
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
        d = fabs(a[i] - b[i]) > d ? fabs(a[i] - b[i]) : d;
        m = fabs(b[i]) > m ? fabs(b[i]) : m;
    }

    return d / m;
}


static void
test_paths(void)
{
    size_t   t, work_size;
    void    *work;
    float   *wf, *x, *xr, *one, *all;
    double   raw, rounded;
    uint8_t *w;

    wf = malloc(OUT * IN * sizeof(float));
    w = malloc(fg_k_row_size(FG_K_Q8_0, IN) * OUT);
    x = malloc(ROWS * IN * sizeof(float));
    xr = malloc(ROWS * IN * sizeof(float));
    one = malloc(ROWS * OUT * sizeof(float));
    all = malloc(ROWS * OUT * sizeof(float));

    for (t = 0; t < OUT * IN; t++) {
        wf[t] = urand() * 0.1f;
    }

    for (t = 0; t < OUT; t++) {
        fg_k_quant_row(FG_K_Q8_0, wf + t * IN,
                       w + t * fg_k_row_size(FG_K_Q8_0, IN), IN);
    }

    for (t = 0; t < ROWS * IN; t++) {
        x[t] = urand();
    }

    fg_k_q8_round(xr, x, ROWS * IN);

    work_size = fg_k_matmul_work_size(FG_K_Q8_0, ROWS, IN, 1);
    work = aligned_alloc(64, (work_size + 63) / 64 * 64 + 64);

    /* raw x: one row at a time against 16 rows at once */
    for (t = 0; t < ROWS; t++) {
        fg_k_matmul(NULL, one + t * OUT, x + t * IN, w, FG_K_Q8_0, 1, IN,
                    OUT, work);
    }

    fg_k_matmul(NULL, all, x, w, FG_K_Q8_0, ROWS, IN, OUT, work);
    raw = rel_diff(one, all, ROWS * OUT);

    /* rounded x */
    for (t = 0; t < ROWS; t++) {
        fg_k_matmul(NULL, one + t * OUT, xr + t * IN, w, FG_K_Q8_0, 1, IN,
                    OUT, work);
    }

    fg_k_matmul(NULL, all, xr, w, FG_K_Q8_0, ROWS, IN, OUT, work);
    rounded = rel_diff(one, all, ROWS * OUT);

    ok(rounded <= 1e-5, "rounded x: 1 row at a time and %d at once agree "
       "within 1e-5 (%.3g)", ROWS, rounded);
    ok(raw > 1e-4, "raw x: they differ by the 8-bit quantization of x "
       "(%.3g)", raw);

    free(work);
    free(wf);
    free(w);
    free(x);
    free(xr);
    free(one);
    free(all);
}


int
main(void)
{
    fg_k_init();

    test_values();
    test_paths();

    fg_k_set_simd(0);
    diag("portable C paths:");
    test_paths();

    return done_testing();
}
