
/*
 * fairgate: the CPU emulation of CUDA's device side (t/cuda_emu/:
 * cuda_runtime.h, fg_simt.cc), which runs the kernels of kernels/cuda/ in
 * make test: what it must do as a GPU does (block and grid shapes,
 * barriers, shuffles, shared memory, halves, launch errors, graphs), and
 * the faults it must report rather than hide.  Written in CUDA C++ and
 * rewritten for g++ as the kernels are (t/cuda_emu/cuda_emu.mk).
 */


#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fg_kernels.h"
#include "fg_tap.h"
#include "fg_rand.h"
#include "fg_test_proc.h"


/* ---- kernels ---- */

/* out[block] = the sum of x over the block's threads, blocks of 2 dims */
static __global__ void
sum_kernel(const float *x, float *out)
{
    int                 o, lin, lane, warp, nw, n;
    float               v;
    size_t              blk;
    __shared__ float    sh[32];

    lin = threadIdx.x + threadIdx.y * blockDim.x;
    n = blockDim.x * blockDim.y;
    blk = blockIdx.x + (size_t) blockIdx.y * gridDim.x;
    lane = lin & 31;
    warp = lin >> 5;
    nw = (n + 31) >> 5;

    v = x[blk * n + lin];

    for (o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }

    if (lane == 0) {
        sh[warp] = v;
    }

    __syncthreads();

    if (warp == 0) {
        v = lane < nw ? sh[lane] : 0.0f;

        for (o = 16; o > 0; o >>= 1) {
            v += __shfl_xor_sync(0xffffffffu, v, o);
        }

        if (lane == 0) {
            out[blk] = v;
        }
    }
}


/* an inclusive scan over each warp, and a swap within half-warps */
static __global__ void
warp_kernel(int *scan, int *swap)
{
    int  o, v, y, lane;

    lane = threadIdx.x & 31;
    v = (int) threadIdx.x + 1;

    for (o = 1; o < 32; o <<= 1) {
        y = __shfl_up_sync(0xffffffffu, v, o);
        v += lane >= o ? y : 0;
    }

    scan[threadIdx.x] = v;

    /* width 16: lane ^ 8 stays in its half; lane ^ 16 leaves it */
    swap[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int) threadIdx.x, 8, 16)
                        * 1000
                        + __shfl_xor_sync(0xffffffffu, (int) threadIdx.x, 16,
                                          16);
}


/* each thread reads its neighbour's write: right only with the barrier */
static __global__ void
neighbour_kernel(int *out, int salt, int sync)
{
    int               i;
    __shared__ int    sh[256];

    i = threadIdx.x;
    sh[i] = salt + (int) blockIdx.x * 1000 + i;

    if (sync) {
        __syncthreads();
    }

    out[blockIdx.x * blockDim.x + i] = sh[(i + 1) % blockDim.x];
}


/* threads past n return early; the rest still meet at the barrier */
static __global__ void
early_return_kernel(int *out, int n)
{
    __shared__ int  sh[64];

    if ((int) threadIdx.x >= n) {
        return;
    }

    sh[threadIdx.x] = (int) threadIdx.x * 2;

    __syncthreads();

    out[threadIdx.x] = sh[n - 1 - threadIdx.x];
}


/* dynamic shared memory: NaN until written, the block's own after */
static __global__ void
smem_kernel(float *first, float *out)
{
    extern __shared__ float  dyn[];

    if (threadIdx.x == 0) {
        first[blockIdx.x] = dyn[5];
    }

    __syncthreads();

    dyn[threadIdx.x] = (float) (blockIdx.x * 100 + threadIdx.x);

    __syncthreads();

    out[blockIdx.x * blockDim.x + threadIdx.x]
        = dyn[blockDim.x - 1 - threadIdx.x];
}


/* a __shared__ value outlives many waits: no CPU thread shares it */
static __global__ void
shared_kept_kernel(int *bad)
{
    int               k, v;
    __shared__ int    mine;

    if (threadIdx.x == 0) {
        mine = (int) blockIdx.x;
    }

    __syncthreads();

    v = 0;

    for (k = 0; k < 20; k++) {
        v += __shfl_xor_sync(0xffffffffu, 1, 1);
        __syncthreads();
    }

    if (mine != (int) blockIdx.x || v != 20) {
        bad[blockIdx.x] = 1;
    }
}


static __global__ void
scale_kernel(float *y, const float *x, float a, int n)
{
    int  i;

    i = blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n) {
        y[i] = a * x[i];
    }
}


/* faults: lanes split between a shuffle and a barrier; a shuffle after
 * lanes returned; a shuffle in a warp of 16 lanes */
static __global__ void
split_kernel(int *out)
{
    if (threadIdx.x < 16) {
        __syncthreads();

    } else {
        out[0] = __shfl_xor_sync(0xffffffffu, 1, 1);
    }
}


static __global__ void
returned_kernel(int *out)
{
    if (threadIdx.x & 1) {
        return;
    }

    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int) threadIdx.x, 2);
}


static __global__ void
partial_warp_kernel(int *out)
{
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int) threadIdx.x, 1);
}


static __global__ void
misaligned_kernel(float *out, const float *x)
{
    float4  v;

    v = __ldg((const float4 *) (x + 1 + 4 * threadIdx.x));
    out[threadIdx.x] = v.x;
}


/* ---- host ---- */

static fg_rand_t  rng = { 0x243f6a8885a308d3ULL };


static int
fault(const char *which)
{
    int            buf[64];
    struct rlimit  no_core;

    /* the abort is the expected end: no core file left behind */
    no_core.rlim_cur = 0;
    no_core.rlim_max = 0;
    setrlimit(RLIMIT_CORE, &no_core);

    memset(buf, 0, sizeof(buf));

    if (strcmp(which, "split") == 0) {
        split_kernel<<<1, 64>>>(buf);

    } else if (strcmp(which, "returned") == 0) {
        returned_kernel<<<1, 32>>>(buf);

    } else if (strcmp(which, "partial") == 0) {
        partial_warp_kernel<<<1, 48>>>(buf);

    } else if (strcmp(which, "misaligned") == 0) {
        alignas(16) float  x[4 * 32 + 8];

        memset(x, 0, sizeof(x));
        misaligned_kernel<<<1, 32>>>((float *) buf, x);
    }

    printf("no fault\n");

    return 0;
}


static void
test_fault(const char *self, const char *which, const char *want)
{
    int    rc;
    char  *argv[4];

    argv[0] = (char *) self;
    argv[1] = (char *) "fault";
    argv[2] = (char *) which;
    argv[3] = NULL;

    rc = fg_test_run(argv);

    ok(rc == -1 && strstr(err_buf, want) != NULL, "%s: the process aborts "
       "naming it (%s)", which, strtok(err_buf, "\n") ? err_buf : "");
}


static void
test_shapes(void)
{
    int           i, j, good;
    float        *x, out[12], want;
    const dim3    grids[2] = { dim3(12), dim3(4, 3) };
    const dim3    blocks[2] = { dim3(256), dim3(32, 8) };

    x = (float *) malloc(12 * 256 * sizeof(float));

    for (i = 0; i < 12 * 256; i++) {
        x[i] = (float) (fg_rand_next(&rng) % 1000) / 8.0f;
    }

    for (j = 0; j < 2; j++) {
        sum_kernel<<<grids[j], blocks[j]>>>(x, out);
        good = cudaGetLastError() == cudaSuccess;

        for (i = 0; i < 12; i++) {
            want = 0.0f;

            for (int t = 0; t < 256; t++) {
                want += x[i * 256 + t];
            }

            good = good && out[i] == want;
        }

        ok(good, "block sums by shuffles and shared memory: grid (%u,%u) "
           "of (%u,%u) threads, every block's exact", grids[j].x,
           grids[j].y, blocks[j].x, blocks[j].y);
    }

    free(x);
}


static void
test_warp(void)
{
    int  i, scan[64], swap[64], good_scan, good_swap, lane, want;

    warp_kernel<<<1, 64>>>(scan, swap);

    good_scan = 1;
    good_swap = 1;

    for (i = 0; i < 64; i++) {
        lane = i & 31;
        want = 0;

        for (int k = i - lane; k <= i; k++) {
            want += k + 1;
        }

        good_scan = good_scan && scan[i] == want;

        /* lane ^ 16 is outside a 16-wide segment: the lane's own value */
        good_swap = good_swap && swap[i] == (i ^ 8) * 1000 + i;
    }

    ok(good_scan, "__shfl_up_sync: an inclusive scan per warp, lanes below "
       "the offset keep their value");
    ok(good_swap, "__shfl_xor_sync with width 16: within the half-warp, and "
       "a source outside it gives the lane's own");
}


static void
test_barriers(void)
{
    int   i, b, out[4 * 256], fwd_ok, rev_ok, racy_fwd, racy_rev, stale;

    /* each launch writes its own values: no stale one is ever right */
    for (b = 0; b < 2; b++) {
        fg_simt_set_order(b);
        neighbour_kernel<<<4, 256>>>(out, 10000 * (b + 1), 1);

        fwd_ok = 1;

        for (i = 0; i < 4 * 256; i++) {
            fwd_ok = fwd_ok && out[i] == 10000 * (b + 1) + (i / 256) * 1000
                                         + (i % 256 + 1) % 256;
        }

        ok(fwd_ok, "with __syncthreads(), each thread reads its neighbour's "
           "write (threads queued %s)", b ? "last first" : "in order");
    }

    /* without it, the two orders read differently: the race shows */
    fg_simt_set_order(0);
    neighbour_kernel<<<4, 256>>>(out, 30000, 0);
    racy_fwd = out[256 + 5];

    fg_simt_set_order(1);
    neighbour_kernel<<<4, 256>>>(out, 40000, 0);
    racy_rev = out[256 + 5];

    ok(racy_fwd != 31006 && racy_rev == 41006, "without it, the read "
       "depends on the order (%d in order, %d last first)", racy_fwd,
       racy_rev);

    /* the default mixes the orders: some blocks of one launch read stale */
    fg_simt_set_order(FG_SIMT_ORDER_MIXED);
    neighbour_kernel<<<4, 256>>>(out, 50000, 0);

    stale = 0;

    for (i = 0; i < 4; i++) {
        stale += out[i * 256 + 5] != 50000 + i * 1000 + 6;
    }

    ok(stale == 2, "by default orders alternate by block: %d of 4 blocks "
       "of a launch missing its barrier read stale values", stale);

    memset(out, 0xff, 64 * sizeof(int));
    early_return_kernel<<<1, 64>>>(out, 40);
    rev_ok = out[0] == 78 && out[39] == 0 && out[40] == -1;

    ok(rev_ok, "threads that returned count as arrived at __syncthreads()");
}


static void
test_smem(void)
{
    int    i, good;
    float  first[3], out[3 * 128];

    smem_kernel<<<3, 128, 128 * sizeof(float)>>>(first, out);

    good = 1;

    for (i = 0; i < 3 * 128; i++) {
        good = good && out[i] == (float) ((i / 128) * 100 + 127 - i % 128);
    }

    ok(isnan(first[0]) && isnan(first[1]) && isnan(first[2]),
       "dynamic shared memory reads NaN before a block writes it");
    ok(good, "and the block's own values after");
}


static void
test_threads(void)
{
    int  bad[512], i, any;

    memset(bad, 0, sizeof(bad));
    shared_kept_kernel<<<512, 64>>>(bad);

    any = 0;

    for (i = 0; i < 512; i++) {
        any |= bad[i];
    }

    ok(!any, "512 blocks over the CPU threads: each block keeps its "
       "__shared__ value across 40 waits");
}


static void
test_launch_errors(void)
{
    float  y[4], x[4] = { 1, 2, 3, 4 };

    y[0] = -1.0f;

    scale_kernel<<<1, 1025>>>(y, x, 2.0f, 4);
    ok(cudaGetLastError() == cudaErrorInvalidConfiguration && y[0] == -1.0f,
       "a block of 1025 threads: invalid configuration, nothing run");
    ok(cudaGetLastError() == cudaSuccess, "and the error is read once");

    scale_kernel<<<dim3(1, 65536), 32>>>(y, x, 2.0f, 4);
    ok(cudaGetLastError() == cudaErrorInvalidConfiguration,
       "a grid of 65536 in y: invalid configuration");

    scale_kernel<<<1, 32, 48 * 1024 + 4>>>(y, x, 2.0f, 4);
    ok(cudaGetLastError() == cudaErrorInvalidValue, "more than 48 KiB of "
       "dynamic shared memory without an opt-in: invalid value");

    scale_kernel<<<1, 32>>>(y, x, 2.0f, 4);
    ok(cudaGetLastError() == cudaSuccess && y[3] == 8.0f,
       "then a good launch runs");
}


static void
test_graph(void)
{
    float            x[64], y[64];
    int              i, good;
    cudaStream_t     s;
    cudaGraph_t      g;
    cudaGraphExec_t  e;

    for (i = 0; i < 64; i++) {
        x[i] = (float) i;
        y[i] = -1.0f;
    }

    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    scale_kernel<<<2, 32, 0, s>>>(y, x, 3.0f, 64);
    cudaStreamEndCapture(s, &g);

    ok(y[10] == -1.0f, "a launch captured in a graph does not run");

    cudaGraphInstantiate(&e, g, 0);
    x[10] = 100.0f;
    cudaGraphLaunch(e, s);

    good = y[10] == 300.0f;

    for (i = 0; i < 64; i++) {
        good = good && (i == 10 || y[i] == 3.0f * (float) i);
    }

    ok(good, "the graph's launch runs it on the buffers' contents then");

    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
}


static void
test_halves(void)
{
    int       i, h_ok, b_ok;
    float     f;
    uint32_t  u;

    h_ok = 1;
    b_ok = 1;

    for (i = 0; i < 200000; i++) {
        u = (uint32_t) fg_rand_next(&rng);

        /* every exponent, infinities included; NaNs below */
        memcpy(&f, &u, sizeof(f));

        if (isnan(f)) {
            continue;
        }

        h_ok = h_ok && __float2half_rn(f).x == fg_f32_to_fp16(f);
        b_ok = b_ok && __float2bfloat16_rn(f).x == fg_f32_to_bf16(f);
    }

    ok(h_ok, "__float2half_rn and the cpu's fg_f32_to_fp16 agree on 2e5 "
       "random floats");
    ok(b_ok, "__float2bfloat16_rn and fg_f32_to_bf16 agree on them");
    ok(__half2float(__float2half_rn(1.0f + 1.0f / 2048)) == 1.0f
       && __half2float(__float2half_rn(65520.0f)) == INFINITY
       && isnan(__half2float(__float2half_rn(NAN)))
       && isnan(__bfloat162float(__float2bfloat16_rn(NAN))),
       "halves round to even, overflow to infinity, keep NaNs");
}


int
main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fault") == 0) {
        return fault(argv[2]);
    }

    test_shapes();
    test_warp();
    test_barriers();
    test_smem();
    test_threads();
    test_launch_errors();
    test_graph();
    test_halves();

    test_fault(argv[0], "split", "warp 0: 16 lanes at a shuffle, 16 at "
               "__syncthreads()");
    test_fault(argv[0], "returned", "a shuffle with 16 of its lanes "
               "returned");
    test_fault(argv[0], "partial", "names lanes that do not exist");
    test_fault(argv[0], "misaligned", "not aligned to its 16 bytes");

    return done_testing();
}
