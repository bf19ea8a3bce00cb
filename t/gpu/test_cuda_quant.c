
/*
 * fairgate: the quantized types on a GPU (make test-gpu) against the
 * CPU's dequantization (fg_k_dequant_row), for Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K:
 *
 * - blocks of random bytes (every bit pattern of the quants and scales)
 *   with random but finite scales, rows of several blocks, out not a
 *   multiple of the GEMV's 8 columns a block;
 * - fg_cuk_dequant_rows (embedding) and fg_cuk_dequant_f16 (cuBLAS's
 *   tiles) give the CPU's values (to float's last bit, fp16's rounding);
 * - fg_cuk_gemv, 1 to 8 rows, writing and accumulating, and
 *   fg_cuk_gemv_set over three matrices, within float's rounding of the
 *   product of the CPU's values with x;
 * - the backend's batched product (fg_cuda_gemm: tiles dequantized to
 *   fp16, cuBLAS) over 11 rows, tiles of 5 rows, the last one short,
 *   within the rounding of x and W to fp16.
 *
 * Built with FG_TEST_CUDA_EMU (build/t/test_cuda_quant_emu,
 * in make test), the same kernels run on the CPU emulation of CUDA.
 */


#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fg_tap.h"
#include "fg_test_gpu.h"
#include "fg_cuda_int.h"
#include "fg_half.h"
#include "fg_kernels.h"
#include "fg_kernels_cuda.h"
#include "fg_rand.h"


#define N_ROWS      11          /* the batched product's */
#define TILE_ROWS   5
#define OUT         37


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


static const fg_k_type_e  types[] = {
    FG_K_Q4_0, FG_K_Q4_1, FG_K_Q5_0, FG_K_Q5_1, FG_K_Q8_0,
    FG_K_Q2_K, FG_K_Q3_K, FG_K_Q4_K, FG_K_Q5_K, FG_K_Q6_K
};

static const char  *names[] = {
    "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
    "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"
};


/* a matrix on the host and the device, and its values as the CPU sees them */
typedef struct {
    fg_k_type_e     type;
    size_t          in;
    size_t          out;
    size_t          row;            /* bytes */
    uint8_t        *q;
    float          *f;              /* fg_k_dequant_row's */
    void           *d;
} qmat_t;


static float
rand_unit(void)
{
    return (float) (fg_rand_double(&rng) * 2.0 - 1.0);
}


/* a scale of either sign, 2^-10 to 2^-4 in magnitude, as a half */
static uint16_t
rand_scale(void)
{
    double  v;

    v = ldexp(1.0 + fg_rand_double(&rng), -10 + (int) (fg_rand_next(&rng)
                                                      % 6));

    return fg_f32_to_fp16((float) (fg_rand_next(&rng) & 1 ? -v : v));
}


/* where each type's scales lie in its block (-1: none) */
#define FG_OFF(type, f)  (int) offsetof(type, f)

static const struct {
    fg_k_type_e     type;
    int             d;
    int             m;
} scale_at[] = {
    { FG_K_Q4_0, FG_OFF(fg_k_block_q4_0_t, d), -1 },
    { FG_K_Q4_1, FG_OFF(fg_k_block_q4_1_t, d),
                 FG_OFF(fg_k_block_q4_1_t, m) },
    { FG_K_Q5_0, FG_OFF(fg_k_block_q5_0_t, d), -1 },
    { FG_K_Q5_1, FG_OFF(fg_k_block_q5_1_t, d),
                 FG_OFF(fg_k_block_q5_1_t, m) },
    { FG_K_Q8_0, FG_OFF(fg_k_block_q8_0_t, d), -1 },
    { FG_K_Q2_K, FG_OFF(fg_k_block_q2_k_t, d),
                 FG_OFF(fg_k_block_q2_k_t, dmin) },
    { FG_K_Q3_K, FG_OFF(fg_k_block_q3_k_t, d), -1 },
    { FG_K_Q4_K, FG_OFF(fg_k_block_q4_k_t, d),
                 FG_OFF(fg_k_block_q4_k_t, dmin) },
    { FG_K_Q5_K, FG_OFF(fg_k_block_q5_k_t, d),
                 FG_OFF(fg_k_block_q5_k_t, dmin) },
    { FG_K_Q6_K, FG_OFF(fg_k_block_q6_k_t, d), -1 }
};


/* a block of type t: random bytes, then finite scales */
static void
fill_block(fg_k_type_e t, uint8_t *p, size_t bytes)
{
    size_t    i;
    uint16_t  h;

    for (i = 0; i < bytes; i++) {
        p[i] = (uint8_t) fg_rand_next(&rng);
    }

    for (i = 0; i < sizeof(scale_at) / sizeof(scale_at[0]); i++) {
        if (scale_at[i].type != t) {
            continue;
        }

        h = rand_scale();
        memcpy(p + scale_at[i].d, &h, sizeof(h));

        if (scale_at[i].m >= 0) {
            h = rand_scale();
            memcpy(p + scale_at[i].m, &h, sizeof(h));
        }
    }
}


static int
qmat_make(qmat_t *m, fg_k_type_e type, size_t in, size_t out)
{
    size_t  r, b, qk, bytes;

    memset(m, 0, sizeof(qmat_t));
    m->type = type;
    m->in = in;
    m->out = out;
    m->row = fg_k_row_size(type, in);

    qk = type >= FG_K_Q2_K ? FG_K_QK_K : 32;
    bytes = m->row / (in / qk);

    m->q = malloc(m->row * out);
    m->f = malloc(in * out * sizeof(float));

    if (m->q == NULL || m->f == NULL
        || cudaMalloc(&m->d, m->row * out) != cudaSuccess)
    {
        return -1;
    }

    for (r = 0; r < out; r++) {
        for (b = 0; b < in / qk; b++) {
            fill_block(type, m->q + r * m->row + b * bytes, bytes);
        }

        fg_k_dequant_row(type, m->q + r * m->row, m->f + r * in, in);
    }

    cudaMemcpy(m->d, m->q, m->row * out, cudaMemcpyHostToDevice);

    return 0;
}


static void
qmat_free(qmat_t *m)
{
    free(m->q);
    free(m->f);
    cudaFree(m->d);
}


/* a device copy of n floats */
static float *
dev_floats(const float *h, size_t n)
{
    float  *d;

    if (cudaMalloc((void **) &d, n * sizeof(float) + 16) != cudaSuccess) {
        return NULL;
    }

    if (h != NULL) {
        cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);

    } else {
        cudaMemset(d, 0, n * sizeof(float));
    }

    return d;
}


/*
 * The worst |got - want| over rows r < n and columns, each against the
 * sum of |w x| of its product (float's rounding of a sum grows with it).
 * half: W and x rounded to fp16 first, as cuBLAS takes them.
 */
static double
product_err(const qmat_t *m, const float *x, const float *y0,
    const float *got, size_t n, int half)
{
    float   w, xv;
    double  s, a, e, worst;
    size_t  r, o, i;

    worst = 0.0;

    for (r = 0; r < n; r++) {
        for (o = 0; o < m->out; o++) {
            s = y0 != NULL ? y0[r * m->out + o] : 0.0;
            a = 1e-30;

            for (i = 0; i < m->in; i++) {
                w = m->f[o * m->in + i];
                xv = x[r * m->in + i];

                if (half) {
                    w = fg_fp16_to_f32(fg_f32_to_fp16(w));
                    xv = fg_fp16_to_f32(fg_f32_to_fp16(xv));
                }

                s += (double) w * xv;
                a += fabs((double) w * xv);
            }

            e = fabs(got[r * m->out + o] - s) / a;
            worst = e > worst ? e : worst;
        }
    }

    return worst;
}


/* the kernels' row sizes are the CPU's, and refuse partial blocks */
static void
test_sizes(void)
{
    int     same;
    size_t  i, qk;

    same = 1;

    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        qk = types[i] >= FG_K_Q2_K ? FG_K_QK_K : 32;

        same &= fg_cuk_type_quant(types[i])
                && fg_cuk_row_bytes(types[i], 3 * qk)
                   == fg_k_row_size(types[i], 3 * qk)
                && fg_cuk_row_bytes(types[i], 3 * qk + 32 * (qk > 32)
                                              + 16 * (qk == 32)) == 0;
    }

    ok(same, "row sizes of the ten types as the CPU's, partial blocks 0");

    ok(!fg_cuk_type_quant(FG_K_F16) && !fg_cuk_type_quant(FG_K_Q8_K)
       && fg_cuk_row_bytes(FG_K_Q8_K, 256) == 0
       && fg_cuk_row_bytes(FG_K_F16, 5) == 10,
       "F16 is not quantized; Q8_K (activations only) is not run");
}


/* embedding rows (float) and a whole matrix (fp16) against the CPU's */
static void
test_dequant(const char *name, const qmat_t *m)
{
    float     *d, *got;
    double     e, worst, worst_h;
    size_t     i, r, n;
    int32_t   *drows;
    uint16_t  *h;
    int32_t    rows[6];
    void      *dh;

    rows[0] = (int32_t) m->out - 1;
    rows[1] = 0;
    rows[2] = 3;
    rows[3] = 3;
    rows[4] = 17;
    rows[5] = (int32_t) m->out / 2;

    n = m->in * m->out;
    got = malloc(n * sizeof(float));
    h = malloc(n * sizeof(uint16_t));
    d = dev_floats(NULL, 6 * m->in);
    cudaMalloc((void **) &drows, sizeof(rows));
    cudaMalloc(&dh, n * sizeof(uint16_t));
    cudaMemcpy(drows, rows, sizeof(rows), cudaMemcpyHostToDevice);

    ok(fg_cuk_dequant_rows(NULL, d, drows, 6, m->d, m->type, m->in)
       == cudaSuccess
       && fg_cuk_dequant_f16(NULL, dh, m->d, m->type, n) == cudaSuccess,
       "%s: the dequantization kernels launch", name);

    cudaMemcpy(got, d, 6 * m->in * sizeof(float), cudaMemcpyDeviceToHost);
    cudaMemcpy(h, dh, n * sizeof(uint16_t), cudaMemcpyDeviceToHost);

    worst = 0.0;

    for (r = 0; r < 6; r++) {
        for (i = 0; i < m->in; i++) {
            e = fabs(got[r * m->in + i] - m->f[rows[r] * m->in + i]);
            worst = e > worst ? e : worst;
        }
    }

    ok(worst == 0.0, "%s: 6 embedding rows of %zu, repeated and out of "
       "order, the CPU's values to the bit (worst %.3g)", name, m->in,
       worst);

    worst_h = 0.0;

    for (i = 0; i < n; i++) {
        e = fabs(fg_fp16_to_f32(h[i])
                 - fg_fp16_to_f32(fg_f32_to_fp16(m->f[i])));
        worst_h = e > worst_h ? e : worst_h;
    }

    ok(worst_h == 0.0, "%s: %zu x %zu to fp16, the CPU's values rounded "
       "(worst %.3g)", name, m->out, m->in, worst_h);

    free(got);
    free(h);
    cudaFree(d);
    cudaFree(drows);
    cudaFree(dh);
}


/* GEMV of 1 to 8 rows, then accumulating into y */
static void
test_gemv(const char *name, const qmat_t *m, const float *x, float *dx)
{
    float   *y, *dy, *y0;
    double   e, worst;
    size_t   n;

    y = malloc(8 * m->out * sizeof(float));
    y0 = malloc(8 * m->out * sizeof(float));
    dy = dev_floats(NULL, 8 * m->out);
    worst = 0.0;

    for (n = 1; n <= FG_CUK_GEMV_ROWS; n++) {
        if (fg_cuk_gemv(NULL, dy, dx, m->d, m->type, n, m->in, m->out, 0)
            != cudaSuccess)
        {
            worst = 1.0;
            break;
        }

        cudaMemcpy(y, dy, n * m->out * sizeof(float),
                   cudaMemcpyDeviceToHost);
        e = product_err(m, x, NULL, y, n, 0);
        worst = e > worst ? e : worst;
    }

    ok(worst < 1e-5, "%s: GEMV of 1 to 8 rows, %zu x %zu, within float's "
       "rounding of the CPU's values times x (worst %.3g)", name, m->out,
       m->in, worst);

    for (n = 0; n < 3 * m->out; n++) {
        y0[n] = rand_unit();
    }

    cudaMemcpy(dy, y0, 3 * m->out * sizeof(float), cudaMemcpyHostToDevice);
    fg_cuk_gemv(NULL, dy, dx, m->d, m->type, 3, m->in, m->out, 1);
    cudaMemcpy(y, dy, 3 * m->out * sizeof(float), cudaMemcpyDeviceToHost);
    e = product_err(m, x, y0, y, 3, 0);

    ok(e < 1e-5, "%s: GEMV of 3 rows added to y (%.3g)", name, e);

    free(y);
    free(y0);
    cudaFree(dy);
}


/* three matrices of one type and width in one launch, out 37, 13, 8 */
static void
test_gemv_set(const char *name, fg_k_type_e type, size_t in, const float *x,
    float *dx)
{
    int                ok3;
    float             *y, *dy[3];
    double             e;
    size_t             i, outs[3] = { OUT, 13, 8 };
    qmat_t             m[3];
    fg_cuk_gemv_set_t  set;

    ok3 = 1;
    y = malloc(2 * OUT * sizeof(float));
    memset(&set, 0, sizeof(set));

    for (i = 0; i < 3; i++) {
        if (qmat_make(&m[i], type, in, outs[i]) != 0) {
            ok3 = 0;
        }

        dy[i] = dev_floats(NULL, 2 * outs[i]);
        set.w[i] = m[i].d;
        set.y[i] = dy[i];
        set.out[i] = (int) outs[i];
    }

    ok3 &= fg_cuk_gemv_set(NULL, &set, dx, type, 2, in, 0) == cudaSuccess;

    for (i = 0; i < 3 && ok3; i++) {
        cudaMemcpy(y, dy[i], 2 * outs[i] * sizeof(float),
                   cudaMemcpyDeviceToHost);
        e = product_err(&m[i], x, NULL, y, 2, 0);
        ok3 &= e < 1e-5;
    }

    ok(ok3, "%s: three matrices (37, 13, 8 columns) in one GEMV launch",
       name);

    for (i = 0; i < 3; i++) {
        qmat_free(&m[i]);
        cudaFree(dy[i]);
    }

    free(y);
}


/* the backend's batched product: tiles of 5 rows of W as fp16, cuBLAS */
static void
test_gemm(const char *name, const qmat_t *m, const float *x, float *dx)
{
    float          *y, *y0, *dy;
    double          e, e2;
    size_t          n;
    fg_backend_t    b;
    fg_cuda_mat_t   w;

    memset(&b, 0, sizeof(b));
    b.wh_values = TILE_ROWS * m->in;

    if (cublasCreate(&b.blas) != CUBLAS_STATUS_SUCCESS
        || cudaMalloc(&b.xh, N_ROWS * m->in * sizeof(uint16_t))
           != cudaSuccess
        || cudaMalloc(&b.wh, b.wh_values * sizeof(uint16_t)) != cudaSuccess)
    {
        ok(0, "%s: cuBLAS and the tiles' scratch", name);
        return;
    }

    w.data = m->d;
    w.type = m->type;
    w.in = (uint32_t) m->in;
    w.out = (uint32_t) m->out;

    n = N_ROWS * m->out;
    y = malloc(n * sizeof(float));
    y0 = malloc(n * sizeof(float));
    dy = dev_floats(NULL, n);

    fg_cuda_gemm(&b, dy, dx, &w, N_ROWS, 0);
    cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    e = product_err(m, x, NULL, y, N_ROWS, 1);

    for (n = 0; n < N_ROWS * m->out; n++) {
        y0[n] = rand_unit();
    }

    cudaMemcpy(dy, y0, n * sizeof(float), cudaMemcpyHostToDevice);
    fg_cuda_gemm(&b, dy, dx, &w, N_ROWS, 1);
    cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost);
    e2 = product_err(m, x, y0, y, N_ROWS, 1);

    ok(b.cu_err == cudaSuccess && e < 1e-5 && e2 < 1e-5, "%s: batched "
       "product of %d rows, tiles of %d of %zu rows, writing and adding, "
       "within float's rounding of fp16 W and x (%.3g, %.3g)", name,
       N_ROWS, TILE_ROWS, m->out, e, e2);

    free(y);
    free(y0);
    cudaFree(dy);
    cudaFree(b.xh);
    cudaFree(b.wh);
    cublasDestroy(b.blas);
}


/* each type at a width of several lane rounds and at the smallest */
static void
test_type(size_t t)
{
    float    *x, *dx;
    size_t    i, k, in, qk, widths[2];
    qmat_t    m;

    qk = types[t] >= FG_K_Q2_K ? FG_K_QK_K : 32;
    widths[0] = qk == 32 ? 32 * 45 : FG_K_QK_K * 9;
    widths[1] = qk;

    for (k = 0; k < 2; k++) {
        in = widths[k];
        x = malloc(N_ROWS * in * sizeof(float));

        for (i = 0; i < N_ROWS * in; i++) {
            x[i] = rand_unit();
        }

        dx = dev_floats(x, N_ROWS * in);

        if (qmat_make(&m, types[t], in, OUT) != 0 || dx == NULL) {
            ok(0, "%s: %zu x %zu on the device", names[t], in, OUT);
            return;
        }

        test_dequant(names[t], &m);

        test_gemv(names[t], &m, x, dx);

        if (k == 0) {
            test_gemv_set(names[t], types[t], in, x, dx);
        }

        test_gemm(names[t], &m, x, dx);

        qmat_free(&m);
        cudaFree(dx);
        free(x);
    }
}


int
main(void)
{
    size_t  t;

    if (fg_test_gpu() != 0) {
        return 255;
    }

    fg_k_init();

    test_sizes();

    for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        test_type(t);
    }

    return fg_tap_done();
}
