
/*
 * fairgate: the sampling kernels on a GPU (make test-gpu) against the
 * CPU's: fg_cuk_argmax() as fg_k_argmax(), ties included;
 * fg_cuk_sample() without cuts picks fg_k_sample()'s token for the same
 * u, and with top-k and top-p draws the same distribution (a grid of u).
 * The backend does not call them (the batcher samples on the host from
 * the logits), so they are tested here, apart from it.
 *
 * Built with FG_TEST_CUDA_EMU (build/t/test_cuda_sample_emu, in make
 * test), the same kernels run on the CPU emulation of CUDA (t/cuda_emu/)
 * on fewer values.
 */


#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fg_tap.h"
#include "fg_test_gpu.h"
#include "fg_kernels.h"
#include "fg_kernels_cuda.h"
#include "fg_rand.h"


/* the emulation's threads are fibers: fewer values */
#ifdef FG_TEST_CUDA_EMU
#define N_SAMPLE    2000
#define N_GRID      128
#else
#define N_SAMPLE    32000
#define N_GRID      4096
#endif


static fg_rand_t  rng = { 0x9e3779b97f4a7c15ULL };


/* the sampling kernels' inputs and output on the device, rows at a time */
typedef struct {
    float          *lg;
    float          *temp;
    float          *top_p;
    double         *u;
    int32_t        *top_k;
    int32_t        *out;
    size_t          rows;
} dsample_t;


static int
dsample_alloc(dsample_t *d, size_t rows, size_t n)
{
    memset(d, 0, sizeof(dsample_t));
    d->rows = rows;

    if (cudaMalloc((void **) &d->lg, rows * n * sizeof(float)) != cudaSuccess
        || cudaMalloc((void **) &d->temp, rows * sizeof(float)) != cudaSuccess
        || cudaMalloc((void **) &d->top_p, rows * sizeof(float))
           != cudaSuccess
        || cudaMalloc((void **) &d->u, rows * sizeof(double)) != cudaSuccess
        || cudaMalloc((void **) &d->top_k, rows * sizeof(int32_t))
           != cudaSuccess
        || cudaMalloc((void **) &d->out, rows * sizeof(int32_t))
           != cudaSuccess)
    {
        return -1;
    }

    return 0;
}


static void
dsample_free(dsample_t *d)
{
    cudaFree(d->lg);
    cudaFree(d->temp);
    cudaFree(d->top_p);
    cudaFree(d->u);
    cudaFree(d->top_k);
    cudaFree(d->out);
}


/* fg_cuk_sample() on the logits on the device, each row its parameters */
static void
dsample_run(const dsample_t *d, size_t n, const float *temp,
    const int32_t *top_k, const float *top_p, const double *u, int32_t *out)
{
    cudaMemcpy(d->temp, temp, d->rows * sizeof(float),
               cudaMemcpyHostToDevice);
    cudaMemcpy(d->top_k, top_k, d->rows * sizeof(int32_t),
               cudaMemcpyHostToDevice);
    cudaMemcpy(d->top_p, top_p, d->rows * sizeof(float),
               cudaMemcpyHostToDevice);
    cudaMemcpy(d->u, u, d->rows * sizeof(double), cudaMemcpyHostToDevice);
    fg_cuk_sample(NULL, d->out, d->lg, d->rows, n, d->temp, d->top_k,
                  d->top_p, d->u);
    cudaMemcpy(out, d->out, d->rows * sizeof(int32_t),
               cudaMemcpyDeviceToHost);
}


/*
 * Cuts: one row of logits, a grid of u, draws counted; the kernel and
 * fg_k_sample() are both the inverse of one distribution (in different
 * orders), so the counts agree within a draw or two per token.
 */
static void
test_sample_cuts(const dsample_t *d, const float *lg, size_t n,
    fg_k_cand_t *cand)
{
    int            hist_ok;
    float          temp[64], topp[64];
    double         u[64];
    size_t         r, i, draw, grid, rows;
    int32_t        topk[64], out[64], want;
    uint32_t      *hc, *hg;

    rows = d->rows;
    grid = N_GRID;
    hist_ok = 1;

    hc = calloc(n, sizeof(uint32_t));
    hg = calloc(n, sizeof(uint32_t));

    for (draw = 0; draw < 3; draw++) {
        memset(hc, 0, n * sizeof(uint32_t));
        memset(hg, 0, n * sizeof(uint32_t));

        for (i = 0; i < grid; i += rows) {
            for (r = 0; r < rows; r++) {
                temp[r] = 0.7f;
                topk[r] = draw == 1 ? 0 : 40;
                topp[r] = draw == 0 ? 1.0f : 0.9f;
                u[r] = ((double) (i + r) + 0.5) / (double) grid;
            }

            /* every row the first row's logits */
            for (r = 0; r < rows; r++) {
                cudaMemcpy(d->lg + r * n, lg, n * sizeof(float),
                           cudaMemcpyHostToDevice);
            }

            dsample_run(d, n, temp, topk, topp, u, out);

            for (r = 0; r < rows; r++) {
                want = fg_k_sample(lg, n, temp[r], (size_t) topk[r],
                                   topp[r], u[r], cand);
                hc[want]++;

                if (out[r] >= 0 && (size_t) out[r] < n) {
                    hg[out[r]]++;
                }
            }
        }

        for (i = 0; i < n; i++) {
            if ((hc[i] > hg[i] ? hc[i] - hg[i] : hg[i] - hc[i]) > 2) {
                hist_ok = 0;
                diag("draw %zu: token %zu cpu %u cuda %u", draw, i, hc[i],
                     hg[i]);
                break;
            }
        }
    }

    ok(hist_ok, "sample with top-k 40, top-p 0.9, both: the same counts "
       "over a grid of %zu u, within 2", grid);

    free(hc);
    free(hg);
}


/* the sampling kernels against fg_k_argmax() and fg_k_sample() */
static void
test_sampling(void)
{
    int            same;
    float         *lg, temp[64], topp[64];
    double         u[64];
    size_t         r, i, n, rows;
    int32_t        topk[64], out[64];
    dsample_t      d;
    fg_k_cand_t   *cand;

    n = N_SAMPLE;
    rows = 64;

    if (dsample_alloc(&d, rows, n) != 0) {
        ok(0, "sampling: device memory");
        return;
    }

    lg = malloc(rows * n * sizeof(float));
    cand = malloc(n * sizeof(fg_k_cand_t));

    /* logits with ties: values on a coarse grid */
    for (i = 0; i < rows * n; i++) {
        lg[i] = (float) (fg_rand_next(&rng) % 2000) / 100.0f - 10.0f;
    }

    cudaMemcpy(d.lg, lg, rows * n * sizeof(float), cudaMemcpyHostToDevice);
    fg_cuk_argmax(NULL, d.out, d.lg, rows, n);
    cudaMemcpy(out, d.out, rows * sizeof(int32_t), cudaMemcpyDeviceToHost);

    same = 1;

    for (r = 0; r < rows; r++) {
        same &= out[r] == fg_k_argmax(lg + r * n, n);
    }

    ok(same, "argmax: %zu rows of %zu with ties, the lowest index as "
       "fg_k_argmax()", rows, n);

    /* no cuts: the same token for the same u */
    for (r = 0; r < rows; r++) {
        temp[r] = 0.5f + (float) r / 32.0f;
        topk[r] = 0;
        topp[r] = 1.0f;
        u[r] = fg_rand_double(&rng);
    }

    dsample_run(&d, n, temp, topk, topp, u, out);

    same = 0;

    for (r = 0; r < rows; r++) {
        same += out[r] == fg_k_sample(lg + r * n, n, temp[r], 0, 1.0f, u[r],
                                      cand);
    }

    ok(same >= (int) rows - 1, "sample, temperature alone: %d of %zu the "
       "same token as fg_k_sample() for the same u", same, rows);

    test_sample_cuts(&d, lg, n, cand);

    dsample_free(&d);
    free(lg);
    free(cand);
}


int
main(void)
{
    if (fg_test_gpu() != 0) {
        return 255;
    }

    fg_k_init();

    test_sampling();

    return fg_tap_done();
}
