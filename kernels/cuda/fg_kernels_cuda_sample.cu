
/*
 * fairgate: argmax and sampling on the device (fg_kernels_cuda.h), one
 * block per row of logits.
 */


#include "fg_kernels_cuda_int.cuh"


/* the CPU emulation (t/cuda_emu) runs the sampler in smaller blocks */
#ifndef FG_CUK_SAMPLE_THREADS
#define FG_CUK_SAMPLE_THREADS  1024
#endif


/*
 * The sum of v over the threads before this one, in thread order; sh
 * holds 33 values.  *total gets the sum over the block.
 */
template <typename T>
static __device__ T
fg_cuk_block_exscan(T v, T *sh, T *total)
{
    T    x, y, z;
    int  o, lane, warp, nw;

    lane = threadIdx.x & 31;
    warp = threadIdx.x >> 5;
    nw = (blockDim.x + 31) >> 5;

    x = v;

    for (o = 1; o < 32; o <<= 1) {
        y = __shfl_up_sync(0xffffffffu, x, o);
        x += lane >= o ? y : (T) 0;
    }

    __syncthreads();

    if (lane == 31) {
        sh[warp] = x;
    }

    __syncthreads();

    if (warp == 0) {
        y = lane < nw ? sh[lane] : (T) 0;

        for (o = 1; o < 32; o <<= 1) {
            z = __shfl_up_sync(0xffffffffu, y, o);
            y += lane >= o ? z : (T) 0;
        }

        /* exclusive prefix of the warps' sums, and the total */
        sh[lane] = y;

        if (lane == 31) {
            sh[32] = y;
        }
    }

    __syncthreads();

    y = (warp ? sh[warp - 1] : (T) 0) + x - v;
    *total = sh[32];

    __syncthreads();

    return y;
}


/* (v, i) before (v2, i2): larger value first, then the lower index */
static __device__ __forceinline__ int
fg_cuk_before(float v, int i, float v2, int i2)
{
    return v > v2 || (v == v2 && i < i2);
}


/* the block's first maximum: every thread gets (value, index) */
static __device__ void
fg_cuk_block_argmax(float *v, int *i, float *shv, int *shi)
{
    int    o, lane, warp, nw, i2;
    float  v2;

    lane = threadIdx.x & 31;
    warp = threadIdx.x >> 5;
    nw = (blockDim.x + 31) >> 5;

    for (o = 16; o > 0; o >>= 1) {
        v2 = __shfl_xor_sync(0xffffffffu, *v, o);
        i2 = __shfl_xor_sync(0xffffffffu, *i, o);

        if (fg_cuk_before(v2, i2, *v, *i)) {
            *v = v2;
            *i = i2;
        }
    }

    __syncthreads();

    if (lane == 0) {
        shv[warp] = *v;
        shi[warp] = *i;
    }

    __syncthreads();

    if (warp == 0) {
        *v = lane < nw ? shv[lane] : -INFINITY;
        *i = lane < nw ? shi[lane] : 0x7fffffff;

        for (o = 16; o > 0; o >>= 1) {
            v2 = __shfl_xor_sync(0xffffffffu, *v, o);
            i2 = __shfl_xor_sync(0xffffffffu, *i, o);

            if (fg_cuk_before(v2, i2, *v, *i)) {
                *v = v2;
                *i = i2;
            }
        }

        if (lane == 0) {
            shv[0] = *v;
            shi[0] = *i;
        }
    }

    __syncthreads();

    *v = shv[0];
    *i = shi[0];

    __syncthreads();
}


static __global__ void
fg_cuk_argmax_kernel(int32_t *out, const float *logits, int n)
{
    int                 i, bi;
    float               bv;
    const float        *lg;
    __shared__ float    shv[32];
    __shared__ int      shi[32];

    lg = logits + (size_t) blockIdx.x * n;
    bv = -INFINITY;
    bi = 0x7fffffff;

    for (i = threadIdx.x; i < n; i += blockDim.x) {
        if (fg_cuk_before(lg[i], i, bv, bi)) {
            bv = lg[i];
            bi = i;
        }
    }

    fg_cuk_block_argmax(&bv, &bi, shv, shi);

    if (threadIdx.x == 0) {
        /* all NaN: the CPU's argmax returns 0 then too */
        out[blockIdx.x] = bi == 0x7fffffff ? 0 : bi;
    }
}


/* floats as unsigned integers in the same order */
static __device__ __forceinline__ uint32_t
fg_cuk_key(float v)
{
    uint32_t  u;

    u = __float_as_uint(v);

    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}


/*
 * The state of one row's sampling: thread t owns the contiguous indices
 * [c0, c1), so that "the first ties in index order" is a prefix count.
 */
typedef struct {
    const float  *lg;
    int           c0;
    int           c1;
    float         max;
    float         temp;
    uint32_t      k_key;        /* top-k: keys above are in */
    uint32_t      k_ties;       /* and this thread's first ties at k_key */
    int           k_cut;
    uint32_t      p_key;        /* top-p: probabilities' bits above are in */
    int           p_last;       /* and ties at p_key up to this index */
    int           p_cut;
} fg_cuk_row_t;


/* the unnormalized probability of index i if it survives the cuts so far */
static __device__ __forceinline__ float
fg_cuk_prob(const fg_cuk_row_t *r, int i, uint32_t *ties)
{
    float     v, pr;
    uint32_t  key;

    v = r->lg[i];

    if (r->k_cut) {
        key = fg_cuk_key(v);

        if (key < r->k_key) {
            return 0.0f;
        }

        if (key == r->k_key) {
            if (*ties == 0) {
                return 0.0f;
            }

            (*ties)--;
        }
    }

    pr = expf((v - r->max) / r->temp);

    if (r->p_cut) {
        key = __float_as_uint(pr);

        if (key < r->p_key || (key == r->p_key && i > r->p_last)) {
            return 0.0f;
        }
    }

    return pr;
}


/* the sum of the probabilities that survive the cuts so far */
static __device__ __forceinline__ double
fg_cuk_mass(const fg_cuk_row_t *r, double *shd)
{
    int       i;
    double    mass;
    uint32_t  ties;

    mass = 0.0;
    ties = r->k_ties;

    for (i = r->c0; i < r->c1; i++) {
        mass += fg_cuk_prob(r, i, &ties);
    }

    return fg_cuk_block_sum<double>(mass, shd);
}


/* top-k: the largest key with at least k values at or above it */
static __device__ __forceinline__ void
fg_cuk_cut_top_k(fg_cuk_row_t *r, int kk, uint32_t *shu)
{
    int       i;
    uint32_t  lo, hi, mid, cnt, gt, ties, tb, all;

    lo = 0;
    hi = 0xffffffffu;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2 + 1;
        cnt = 0;

        for (i = r->c0; i < r->c1; i++) {
            cnt += fg_cuk_key(r->lg[i]) >= mid;
        }

        if (fg_cuk_block_sum<uint32_t>(cnt, shu) >= (uint32_t) kk) {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    gt = 0;
    ties = 0;

    for (i = r->c0; i < r->c1; i++) {
        gt += fg_cuk_key(r->lg[i]) > lo;
        ties += fg_cuk_key(r->lg[i]) == lo;
    }

    gt = fg_cuk_block_sum<uint32_t>(gt, shu);
    tb = fg_cuk_block_exscan<uint32_t>(ties, shu, &all);

    /* kk - gt ties are in, the lowest indices first */
    r->k_key = lo;
    r->k_cut = 1;
    r->k_ties = (uint32_t) kk - gt > tb
                ? min((uint32_t) kk - gt - tb, ties) : 0;
}


/*
 * top-p: the nucleus is the largest probabilities' prefix to top_p of
 * total; returns the mass left in it.
 */
static __device__ __forceinline__ double
fg_cuk_cut_top_p(fg_cuk_row_t *r, float tp, double total, int n,
    double *shd, float *shv, int *shi)
{
    int       i, bi;
    float     bv, pr;
    double    mass, before, target, acc;
    uint32_t  lo, hi, mid, ties;

    target = tp * total;
    lo = 0;
    hi = 0x7f800000u;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2 + 1;
        mass = 0.0;
        ties = r->k_ties;

        for (i = r->c0; i < r->c1; i++) {
            pr = fg_cuk_prob(r, i, &ties);
            mass += __float_as_uint(pr) >= mid ? pr : 0.0f;
        }

        if (fg_cuk_block_sum<double>(mass, shd) >= target) {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    mass = 0.0;
    acc = 0.0;
    ties = r->k_ties;

    for (i = r->c0; i < r->c1; i++) {
        pr = fg_cuk_prob(r, i, &ties);

        if (__float_as_uint(pr) > lo) {
            mass += pr;

        } else if (__float_as_uint(pr) == lo) {
            acc += pr;
        }
    }

    mass = fg_cuk_block_sum<double>(mass, shd);
    before = fg_cuk_block_exscan<double>(acc, shd, &acc);

    /* the tie that brings the mass to target, lowest index first */
    bi = 0x7fffffff;
    acc = mass + before;
    ties = r->k_ties;

    for (i = r->c0; i < r->c1; i++) {
        pr = fg_cuk_prob(r, i, &ties);

        if (__float_as_uint(pr) == lo) {
            acc += pr;

            if (acc >= target) {
                bi = i;
                break;
            }
        }
    }

    bv = 0.0f;
    fg_cuk_block_argmax(&bv, &bi, shv, shi);

    r->p_key = lo;
    r->p_last = bi == 0x7fffffff ? n : bi;
    r->p_cut = 1;

    return fg_cuk_mass(r, shd);
}


/* the draw: the inverse of the distribution, in index order */
static __device__ __forceinline__ int
fg_cuk_draw(const fg_cuk_row_t *r, double u, double total, double *shd,
    float *shv, int *shi)
{
    int       i, bi, found;
    float     bv, pr;
    double    mass, before, target, acc;
    uint32_t  ties;

    target = u * total;
    mass = 0.0;
    ties = r->k_ties;

    for (i = r->c0; i < r->c1; i++) {
        mass += fg_cuk_prob(r, i, &ties);
    }

    before = fg_cuk_block_exscan<double>(mass, shd, &acc);

    found = 0x7fffffff;
    bi = -1;
    acc = before;
    ties = r->k_ties;

    for (i = r->c0; i < r->c1; i++) {
        pr = fg_cuk_prob(r, i, &ties);

        if (pr > 0.0f) {
            bi = i;
            acc += pr;

            if (target < acc) {
                found = i;
                break;
            }
        }
    }

    /* the first index found; none (u close to 1): the last with mass */
    bv = 0.0f;
    fg_cuk_block_argmax(&bv, &found, shv, shi);

    bv = 0.0f;
    i = bi < 0 ? 0x7fffffff : -bi;
    fg_cuk_block_argmax(&bv, &i, shv, shi);

    return found != 0x7fffffff ? found : (i == 0x7fffffff ? 0 : -i);
}


static __global__ void
__launch_bounds__(FG_CUK_SAMPLE_THREADS)
fg_cuk_sample_kernel(int32_t *out, const float *logits, int n,
    const float *temperature, const int32_t *top_k, const float *top_p,
    const double *uniform)
{
    int                    i, bi, chunk, kk, tok;
    float                  bv, tp;
    double                 total;
    fg_cuk_row_t           r;
    __shared__ float       shv[33];
    __shared__ int         shi[33];
    __shared__ uint32_t    shu[33];
    __shared__ double      shd[33];

    r.lg = logits + (size_t) blockIdx.x * n;
    chunk = (n + blockDim.x - 1) / blockDim.x;
    r.c0 = min((int) threadIdx.x * chunk, n);
    r.c1 = min(r.c0 + chunk, n);
    r.temp = temperature[blockIdx.x];
    r.k_cut = 0;
    r.k_key = 0;
    r.k_ties = 0;
    r.p_cut = 0;
    r.p_key = 0;
    r.p_last = n;
    kk = top_k[blockIdx.x];
    tp = top_p[blockIdx.x];

    bv = -INFINITY;
    bi = 0x7fffffff;

    for (i = r.c0; i < r.c1; i++) {
        if (fg_cuk_before(r.lg[i], i, bv, bi)) {
            bv = r.lg[i];
            bi = i;
        }
    }

    fg_cuk_block_argmax(&bv, &bi, shv, shi);

    if (r.temp <= 0.0f || kk == 1 || n == 1 || bv == -INFINITY
        || bi == 0x7fffffff)
    {
        if (threadIdx.x == 0) {
            out[blockIdx.x] = bi == 0x7fffffff ? 0 : bi;
        }

        return;
    }

    r.max = bv;

    if (kk > 0 && kk < n) {
        fg_cuk_cut_top_k(&r, kk, shu);
    }

    total = fg_cuk_mass(&r, shd);

    if (tp > 0.0f && tp < 1.0f) {
        total = fg_cuk_cut_top_p(&r, tp, total, n, shd, shv, shi);
    }

    tok = fg_cuk_draw(&r, uniform[blockIdx.x], total, shd, shv, shi);

    if (threadIdx.x == 0) {
        out[blockIdx.x] = tok;
    }
}


/* ---- launchers ---- */

extern "C" cudaError_t
fg_cuk_argmax(cudaStream_t s, int32_t *out, const float *logits,
    size_t n_rows, size_t n)
{
    if (n_rows == 0) {
        return cudaSuccess;
    }

    fg_cuk_argmax_kernel<<<(unsigned) n_rows, FG_CUK_SAMPLE_THREADS, 0, s>>>(
        out, logits, (int) n);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_sample(cudaStream_t s, int32_t *out, const float *logits,
    size_t n_rows, size_t n, const float *temperature, const int32_t *top_k,
    const float *top_p, const double *u)
{
    if (n_rows == 0) {
        return cudaSuccess;
    }

    fg_cuk_sample_kernel<<<(unsigned) n_rows, FG_CUK_SAMPLE_THREADS, 0, s>>>(
        out, logits, (int) n, temperature, top_k, top_p, u);

    return cudaGetLastError();
}
