
/*
 * fairgate: the CUDA kernels of the GPU backend (fg_kernels_cuda.h).
 *
 * Launch shapes, and why:
 *
 *   embed, rmsnorm, gather     one block per row: rows are short (n_embd)
 *   swiglu, conversions        one thread per value, grid-stride
 *   gemv                       one warp per output column, 16-byte loads
 *                              of W streamed past L1: batch-1 decode reads
 *                              every weight once and is bound by memory
 *   qkv                        one block per (row, head): biases, RoPE and
 *                              the cache write in one pass over q, k, v
 *   attention                  one block per (row, query head), warps
 *                              taking keys in turn with an online softmax,
 *                              merged at the end: no score buffer, so any
 *                              context length fits
 *   argmax, sample             one block per row of logits
 */


#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fg_kernels_cuda.h"


#define FG_CUK_THREADS      256
#define FG_CUK_ATTN_WARPS   8

/* the CPU emulation (t/cuda_emu) runs the sampler in smaller blocks */
#ifndef FG_CUK_SAMPLE_THREADS
#define FG_CUK_SAMPLE_THREADS  1024
#endif
#define FG_CUK_Q8_0_BYTES   34


/* grid of one thread per value, capped: the kernels stride over the rest */
static unsigned
fg_cuk_blocks(size_t n)
{
    size_t  b;

    b = (n + FG_CUK_THREADS - 1) / FG_CUK_THREADS;

    return (unsigned) (b < 65535 ? (b ? b : 1) : 65535);
}


static __device__ __forceinline__ float
fg_cuk_warp_sum(float v)
{
    int  o;

    for (o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }

    return v;
}


/* sum over the block, returned to every thread; sh holds 32 values */
template <typename T>
static __device__ T
fg_cuk_block_sum(T v, T *sh)
{
    int  o, lane, warp, nw;

    lane = threadIdx.x & 31;
    warp = threadIdx.x >> 5;
    nw = (blockDim.x + 31) >> 5;

    for (o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }

    __syncthreads();

    if (lane == 0) {
        sh[warp] = v;
    }

    __syncthreads();

    if (warp == 0) {
        v = lane < nw ? sh[lane] : (T) 0;

        for (o = 16; o > 0; o >>= 1) {
            v += __shfl_xor_sync(0xffffffffu, v, o);
        }

        if (lane == 0) {
            sh[0] = v;
        }
    }

    __syncthreads();

    return sh[0];
}


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


static __device__ __forceinline__ float
fg_cuk_h2f(uint16_t h)
{
    return __half2float(__ushort_as_half(h));
}


static __device__ __forceinline__ float
fg_cuk_b2f(uint16_t h)
{
    return __uint_as_float((uint32_t) h << 16);
}


/* x as the product's other operand sees it: rounded to the weight's type */
template <int T>
static __device__ __forceinline__ float
fg_cuk_round_x(float x)
{
    if (T == FG_K_F16 || T == FG_K_Q8_0) {
        return __half2float(__float2half_rn(x));
    }

    if (T == FG_K_BF16) {
        return __bfloat162float(__float2bfloat16_rn(x));
    }

    return x;
}


/* ---- element-wise ---- */

static __global__ void
fg_cuk_embed_kernel(float *x, const int32_t *tokens, const void *table,
    int type, int dim)
{
    int             i;
    size_t          tok;
    const uint8_t  *blk;
    float          *y;

    tok = (size_t) tokens[blockIdx.x];
    y = x + (size_t) blockIdx.x * dim;

    for (i = threadIdx.x; i < dim; i += blockDim.x) {
        switch (type) {

        case FG_K_F16:
            y[i] = fg_cuk_h2f(((const uint16_t *) table)[tok * dim + i]);
            break;

        case FG_K_BF16:
            y[i] = fg_cuk_b2f(((const uint16_t *) table)[tok * dim + i]);
            break;

        case FG_K_Q8_0:
            blk = (const uint8_t *) table
                  + (tok * (dim / FG_K_QK8_0) + i / FG_K_QK8_0)
                    * FG_CUK_Q8_0_BYTES;
            y[i] = fg_cuk_h2f((uint16_t) (blk[0] | blk[1] << 8))
                   * (float) (int8_t) blk[2 + i % FG_K_QK8_0];
            break;

        default:
            y[i] = ((const float *) table)[tok * dim + i];
        }
    }
}


static __global__ void
fg_cuk_rmsnorm_kernel(float *y, const float *x, const float *w, int dim,
    float eps)
{
    int                 i;
    float               ss, scale;
    const float        *xr;
    __shared__ float    sh[32];

    xr = x + (size_t) blockIdx.x * dim;
    y += (size_t) blockIdx.x * dim;

    ss = 0.0f;

    for (i = threadIdx.x; i < dim; i += blockDim.x) {
        ss += xr[i] * xr[i];
    }

    ss = fg_cuk_block_sum<float>(ss, sh);
    scale = 1.0f / sqrtf(ss / (float) dim + eps);

    for (i = threadIdx.x; i < dim; i += blockDim.x) {
        y[i] = xr[i] * scale * w[i];
    }
}


static __global__ void
fg_cuk_swiglu_kernel(float *y, const float *gate, const float *up, size_t n)
{
    float   g;
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        g = gate[i];
        y[i] = g / (1.0f + expf(-g)) * up[i];
    }
}


static __global__ void
fg_cuk_gather_kernel(float *dst, const float *src, const int32_t *rows,
    int dim)
{
    int           i;
    const float  *s;

    s = src + (size_t) rows[blockIdx.x] * dim;
    dst += (size_t) blockIdx.x * dim;

    for (i = threadIdx.x; i < dim; i += blockDim.x) {
        dst[i] = s[i];
    }
}


static __global__ void
fg_cuk_to_half_kernel(void *dst, const float *src, size_t n, int bf16)
{
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        if (bf16) {
            ((__nv_bfloat16 *) dst)[i] = __float2bfloat16_rn(src[i]);

        } else {
            ((__half *) dst)[i] = __float2half_rn(src[i]);
        }
    }
}


static __global__ void
fg_cuk_q8_0_kernel(__half *dst, const uint8_t *src, size_t n)
{
    size_t          i;
    const uint8_t  *blk;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        blk = src + i / FG_K_QK8_0 * FG_CUK_Q8_0_BYTES;
        dst[i] = __float2half_rn(fg_cuk_h2f((uint16_t) (blk[0] | blk[1] << 8))
                                 * (float) (int8_t) blk[2 + i % FG_K_QK8_0]);
    }
}


/* ---- GEMV: y[n][out] (+)= x[n][in] W^T, n <= FG_CUK_GEMV_ROWS ---- */

/* 8 weights from 16 bytes of fp16 or bf16 */
template <int T>
static __device__ __forceinline__ void
fg_cuk_unpack8(uint4 q, float *w)
{
    uint32_t  u[4];
    int       i;

    u[0] = q.x;
    u[1] = q.y;
    u[2] = q.z;
    u[3] = q.w;

#pragma unroll
    for (i = 0; i < 4; i++) {
        if (T == FG_K_BF16) {
            w[2 * i] = __uint_as_float(u[i] << 16);
            w[2 * i + 1] = __uint_as_float(u[i] & 0xffff0000u);

        } else {
            w[2 * i] = fg_cuk_h2f((uint16_t) (u[i] & 0xffffu));
            w[2 * i + 1] = fg_cuk_h2f((uint16_t) (u[i] >> 16));
        }
    }
}


/*
 * Up to three matrices of one type and input width, each with its own
 * output, in one launch (q, k and v; gate and up): the columns of the
 * three side by side, a warp for each.
 */
template <int T, int NR>
static __global__ void
fg_cuk_gemv_kernel(fg_cuk_gemv_set_t set, const float *x, int in,
    int accumulate)
{
    int             col, lane, r, c, j, nb, out;
    float          *y;
    const void     *w;
    float           sum[NR], wf[8], d;
    uint4           q4;
    float4          xa, xb;
    const float4   *x4;
    uint16_t        h;
    const uint4    *row4;
    const float    *xr;
    const uint8_t  *blk;

    col = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    lane = threadIdx.x & 31;

    /* which matrix: compared, not indexed, so the set stays in registers */
    if (col < set.out[0]) {
        w = set.w[0];
        y = set.y[0];
        out = set.out[0];

    } else if (col < set.out[0] + set.out[1]) {
        col -= set.out[0];
        w = set.w[1];
        y = set.y[1];
        out = set.out[1];

    } else if (col < set.out[0] + set.out[1] + set.out[2]) {
        col -= set.out[0] + set.out[1];
        w = set.w[2];
        y = set.y[2];
        out = set.out[2];

    } else {
        return;
    }

#pragma unroll
    for (r = 0; r < NR; r++) {
        sum[r] = 0.0f;
    }

    if (T == FG_K_Q8_0) {
        nb = in / FG_K_QK8_0;

#pragma unroll 2
        for (c = lane; c < nb; c += 32) {
            blk = (const uint8_t *) w
                  + ((size_t) col * nb + c) * FG_CUK_Q8_0_BYTES;
            h = __ldg((const unsigned short *) blk);
            d = fg_cuk_h2f(h);

#pragma unroll
            for (j = 0; j < FG_K_QK8_0; j += 2) {
                h = __ldg((const unsigned short *) (blk + 2 + j));
                wf[0] = __half2float(__float2half_rn(d * (float) (int8_t)
                                                     (h & 0xff)));
                wf[1] = __half2float(__float2half_rn(d * (float) (int8_t)
                                                     (h >> 8)));

#pragma unroll
                for (r = 0; r < NR; r++) {
                    xr = x + (size_t) r * in + c * FG_K_QK8_0 + j;
                    sum[r] += wf[0] * fg_cuk_round_x<T>(__ldg(xr))
                              + wf[1] * fg_cuk_round_x<T>(__ldg(xr + 1));
                }
            }
        }

    } else if (T != FG_K_F32 && in % 8 == 0) {
        row4 = (const uint4 *) ((const uint16_t *) w + (size_t) col * in);

#pragma unroll 4
        for (c = lane; c < in / 8; c += 32) {
            fg_cuk_unpack8<T>(__ldcs(row4 + c), wf);

#pragma unroll
            for (r = 0; r < NR; r++) {
                x4 = (const float4 *) (x + (size_t) r * in) + c * 2;
                xa = __ldg(x4);
                xb = __ldg(x4 + 1);
                sum[r] += wf[0] * fg_cuk_round_x<T>(xa.x)
                          + wf[1] * fg_cuk_round_x<T>(xa.y)
                          + wf[2] * fg_cuk_round_x<T>(xa.z)
                          + wf[3] * fg_cuk_round_x<T>(xa.w)
                          + wf[4] * fg_cuk_round_x<T>(xb.x)
                          + wf[5] * fg_cuk_round_x<T>(xb.y)
                          + wf[6] * fg_cuk_round_x<T>(xb.z)
                          + wf[7] * fg_cuk_round_x<T>(xb.w);
            }
        }

    } else if (T == FG_K_F32 && in % 4 == 0) {
        row4 = (const uint4 *) ((const float *) w + (size_t) col * in);

#pragma unroll 4
        for (c = lane; c < in / 4; c += 32) {
            q4 = __ldcs(row4 + c);
            wf[0] = __uint_as_float(q4.x);
            wf[1] = __uint_as_float(q4.y);
            wf[2] = __uint_as_float(q4.z);
            wf[3] = __uint_as_float(q4.w);

#pragma unroll
            for (r = 0; r < NR; r++) {
                xa = __ldg((const float4 *) (x + (size_t) r * in) + c);
                sum[r] += wf[0] * xa.x + wf[1] * xa.y + wf[2] * xa.z
                          + wf[3] * xa.w;
            }
        }

    } else {
        /* rows not a multiple of 16 bytes: small models only */
        for (c = lane; c < in; c += 32) {
            if (T == FG_K_F32) {
                wf[0] = ((const float *) w)[(size_t) col * in + c];

            } else if (T == FG_K_BF16) {
                wf[0] = fg_cuk_b2f(((const uint16_t *) w)[(size_t) col * in
                                                          + c]);

            } else {
                wf[0] = fg_cuk_h2f(((const uint16_t *) w)[(size_t) col * in
                                                          + c]);
            }

#pragma unroll
            for (r = 0; r < NR; r++) {
                sum[r] += wf[0] * fg_cuk_round_x<T>(x[(size_t) r * in + c]);
            }
        }
    }

#pragma unroll
    for (r = 0; r < NR; r++) {
        sum[r] = fg_cuk_warp_sum(sum[r]);
    }

    if (lane == 0) {

#pragma unroll
        for (r = 0; r < NR; r++) {
            if (accumulate) {
                y[(size_t) r * out + col] += sum[r];

            } else {
                y[(size_t) r * out + col] = sum[r];
            }
        }
    }
}


template <int T>
static cudaError_t
fg_cuk_gemv_type(cudaStream_t s, const fg_cuk_gemv_set_t *set,
    const float *x, size_t n, int in, int accumulate)
{
    int       cols;
    unsigned  grid;

    cols = set->out[0] + set->out[1] + set->out[2];
    grid = (unsigned) ((cols + FG_CUK_THREADS / 32 - 1)
                       / (FG_CUK_THREADS / 32));

    switch (n) {

#define FG_CUK_GEMV_CASE(nr)                                                  \
    case nr:                                                                  \
        fg_cuk_gemv_kernel<T, nr><<<grid, FG_CUK_THREADS, 0, s>>>(            \
            *set, x, in, accumulate);                                         \
        break

    FG_CUK_GEMV_CASE(1);
    FG_CUK_GEMV_CASE(2);
    FG_CUK_GEMV_CASE(3);
    FG_CUK_GEMV_CASE(4);
    FG_CUK_GEMV_CASE(5);
    FG_CUK_GEMV_CASE(6);
    FG_CUK_GEMV_CASE(7);
    FG_CUK_GEMV_CASE(8);

#undef FG_CUK_GEMV_CASE

    default:
        return cudaErrorInvalidValue;
    }

    return cudaGetLastError();
}


/* ---- RoPE, biases and the cache write ---- */

static __global__ void
fg_cuk_qkv_kernel(float *q, float *k, float *v, const float *bq,
    const float *bk, const float *bv, __half *kc, __half *vc,
    fg_cuk_batch_t b, int n_head, int n_kv_head, int head_dim,
    int block_size, int rot_dim, const float *inv_freq, int halves)
{
    int           t, h, kh, d, i, half, p, slot;
    float        *x, *xv, x0, x1, c, s;
    double        sn, cs;
    size_t        off;
    int32_t       block;
    const float  *bias, *bias_v;

    t = blockIdx.x;
    h = blockIdx.y;
    p = b.pos[t];

    kh = h - n_head;
    xv = NULL;
    bias_v = NULL;

    if (kh < 0) {
        x = q + ((size_t) t * n_head + h) * head_dim;
        bias = bq ? bq + (size_t) h * head_dim : NULL;

    } else {
        x = k + ((size_t) t * n_kv_head + kh) * head_dim;
        xv = v + ((size_t) t * n_kv_head + kh) * head_dim;
        bias = bk ? bk + (size_t) kh * head_dim : NULL;
        bias_v = bv ? bv + (size_t) kh * head_dim : NULL;
    }

    for (d = threadIdx.x; d < head_dim; d += blockDim.x) {
        if (bias) {
            x[d] += bias[d];
        }

        if (bias_v) {
            xv[d] += bias_v[d];
        }
    }

    __syncthreads();

    half = rot_dim / 2;

    for (i = threadIdx.x; i < half; i += blockDim.x) {

        /* in double, as the CPU: pos * freq reaches 1e5 radians */
        sincos((double) p * inv_freq[i], &sn, &cs);
        c = (float) cs;
        s = (float) sn;

        if (halves) {
            x0 = x[i];
            x1 = x[i + half];
            x[i] = x0 * c - x1 * s;
            x[i + half] = x0 * s + x1 * c;

        } else {
            x0 = x[2 * i];
            x1 = x[2 * i + 1];
            x[2 * i] = x0 * c - x1 * s;
            x[2 * i + 1] = x0 * s + x1 * c;
        }
    }

    if (kh < 0) {
        return;
    }

    __syncthreads();

    block = b.block_tables[(size_t) b.seq[t] * b.max_blocks
                           + p / block_size];
    slot = p % block_size;
    off = (((size_t) block * n_kv_head + kh) * block_size + slot) * head_dim;

    for (d = threadIdx.x; d < head_dim; d += blockDim.x) {
        kc[off + d] = __float2half_rn(x[d]);
        vc[off + d] = __float2half_rn(xv[d]);
    }
}


/* ---- paged attention ---- */

/*
 * A block takes the queries of G heads that share a kv head, for R rows
 * of one sequence (NQ >= R * G queries in all), so that each key and
 * value it reads from the cache serves all of them: G = 4 for Llama 3's
 * grouped heads in decode, and R > 1 rows of a prefill chunk, where
 * every row would otherwise read the whole context again.
 *
 * Lane l holds dimensions l, l + 32, ... of the head (ND of them).  Each
 * warp takes KEYS keys at a time, their loads in flight together, and
 * keeps a running max, sum and weighted values per query (an online
 * softmax, no score buffer: any context fits); the warps' states are
 * merged at the end.  A key past a query's position is masked for it:
 * causal masking of a chunk and decode over block tables are one loop.
 * Rows of other sequences in a block's R (decode batches) are taken in
 * turn.
 */
template <int ND, int NQ>
static __global__ void
__launch_bounds__(FG_CUK_ATTN_WARPS * 32)
fg_cuk_attention_kernel(float *out, const float *q, const __half *kc,
    const __half *vc, fg_cuk_batch_t b, int n_head, int n_kv_head,
    int head_dim, int block_size, float scale, int rows, int heads)
{
    const int            KEYS = NQ >= 4 ? 2 : 4;
    int                  lane, warp, kh, h0, t0, t1, ts, te, nq, qi, i, u;
    int                  j, j0, d, w, pmax, seq, pq[NQ];
    float                qv[NQ][ND], acc[NQ][ND], m[NQ], l[NQ];
    float                kr[KEYS][ND], vr[KEYS][ND], sc[KEYS][NQ];
    float                mx, c, e, tot;
    size_t               off;
    const int32_t       *table;
    __shared__ float     sm[FG_CUK_ATTN_WARPS][NQ];
    __shared__ float     sl[FG_CUK_ATTN_WARPS][NQ];
    extern __shared__ float  sacc[];

    lane = threadIdx.x & 31;
    warp = threadIdx.x >> 5;
    h0 = blockIdx.y * heads;
    kh = h0 / (n_head / n_kv_head);
    t0 = blockIdx.x * rows;
    t1 = min(t0 + rows, (int) b.n_tokens);

    for (ts = t0; ts < t1; ts = te) {
        seq = b.seq[ts];

        for (te = ts + 1; te < t1 && b.seq[te] == seq; te++) {
            /* void */
        }

        nq = (te - ts) * heads;
        table = b.block_tables + (size_t) seq * b.max_blocks;
        pmax = 0;

#pragma unroll
        for (qi = 0; qi < NQ; qi++) {
            pq[qi] = -1;
            m[qi] = -INFINITY;
            l[qi] = 0.0f;

            if (qi < nq) {
                pq[qi] = b.pos[ts + qi / heads];
                pmax = max(pmax, pq[qi]);
            }

#pragma unroll
            for (i = 0; i < ND; i++) {
                d = lane + 32 * i;
                acc[qi][i] = 0.0f;
                qv[qi][i] = qi < nq && d < head_dim
                            ? q[((size_t) (ts + qi / heads) * n_head + h0
                                 + qi % heads) * head_dim + d] * scale
                            : 0.0f;
            }
        }

        for (j0 = warp * KEYS; j0 <= pmax;
             j0 += FG_CUK_ATTN_WARPS * KEYS)
        {

#pragma unroll
            for (u = 0; u < KEYS; u++) {
                j = j0 + u;
                off = 0;

                if (j <= pmax) {
                    off = (((size_t) table[j / block_size] * n_kv_head + kh)
                           * block_size + j % block_size) * head_dim;
                }

#pragma unroll
                for (i = 0; i < ND; i++) {
                    d = lane + 32 * i;
                    kr[u][i] = 0.0f;
                    vr[u][i] = 0.0f;

                    if (j <= pmax && d < head_dim) {
                        kr[u][i] = __half2float(kc[off + d]);
                        vr[u][i] = __half2float(vc[off + d]);
                    }
                }
            }

#pragma unroll
            for (u = 0; u < KEYS; u++) {

#pragma unroll
                for (qi = 0; qi < NQ; qi++) {
                    e = 0.0f;

#pragma unroll
                    for (i = 0; i < ND; i++) {
                        e += qv[qi][i] * kr[u][i];
                    }

                    e = fg_cuk_warp_sum(e);
                    sc[u][qi] = j0 + u <= pq[qi] ? e : -INFINITY;
                }
            }

#pragma unroll
            for (qi = 0; qi < NQ; qi++) {
                mx = m[qi];

#pragma unroll
                for (u = 0; u < KEYS; u++) {
                    mx = fmaxf(mx, sc[u][qi]);
                }

                /* no key of this round is this query's yet */
                if (mx == -INFINITY) {
                    continue;
                }

                c = expf(m[qi] - mx);
                l[qi] *= c;

#pragma unroll
                for (i = 0; i < ND; i++) {
                    acc[qi][i] *= c;
                }

#pragma unroll
                for (u = 0; u < KEYS; u++) {
                    e = expf(sc[u][qi] - mx);
                    l[qi] += e;

#pragma unroll
                    for (i = 0; i < ND; i++) {
                        acc[qi][i] += e * vr[u][i];
                    }
                }

                m[qi] = mx;
            }
        }

        /* the warps' states, merged */
        if (lane == 0) {

#pragma unroll
            for (qi = 0; qi < NQ; qi++) {
                sm[warp][qi] = m[qi];
                sl[warp][qi] = l[qi];
            }
        }

#pragma unroll
        for (qi = 0; qi < NQ; qi++) {

#pragma unroll
            for (i = 0; i < ND; i++) {
                d = lane + 32 * i;

                if (qi < nq && d < head_dim) {
                    sacc[(warp * NQ + qi) * head_dim + d] = acc[qi][i];
                }
            }
        }

        __syncthreads();

        for (i = threadIdx.x; i < nq * head_dim; i += blockDim.x) {
            qi = i / head_dim;
            d = i % head_dim;

            /* warp 0 has key 0, every query's: mx is finite */
            mx = -INFINITY;

            for (w = 0; w < FG_CUK_ATTN_WARPS; w++) {
                mx = fmaxf(mx, sm[w][qi]);
            }

            tot = 0.0f;
            e = 0.0f;

            for (w = 0; w < FG_CUK_ATTN_WARPS; w++) {
                if (sl[w][qi] != 0.0f) {
                    c = expf(sm[w][qi] - mx);
                    tot += sl[w][qi] * c;
                    e += sacc[(w * NQ + qi) * head_dim + d] * c;
                }
            }

            out[((size_t) (ts + qi / heads) * n_head + h0 + qi % heads)
                * head_dim + d] = e / tot;
        }

        __syncthreads();
    }
}


/* ---- argmax and sampling ---- */

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


static __global__ void
__launch_bounds__(FG_CUK_SAMPLE_THREADS)
fg_cuk_sample_kernel(int32_t *out, const float *logits, int n,
    const float *temperature, const int32_t *top_k, const float *top_p,
    const double *uniform)
{
    int                    i, bi, chunk, kk, found;
    float                  bv, pr, tp;
    double                 mass, before, total, target, acc;
    uint32_t               lo, hi, mid, cnt, gt, ties, tb, all;
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

    /* top-k: the largest key with at least k values at or above it */
    if (kk > 0 && kk < n) {
        lo = 0;
        hi = 0xffffffffu;

        while (lo < hi) {
            mid = lo + (hi - lo) / 2 + 1;
            cnt = 0;

            for (i = r.c0; i < r.c1; i++) {
                cnt += fg_cuk_key(r.lg[i]) >= mid;
            }

            if (fg_cuk_block_sum<uint32_t>(cnt, shu) >= (uint32_t) kk) {
                lo = mid;

            } else {
                hi = mid - 1;
            }
        }

        gt = 0;
        ties = 0;

        for (i = r.c0; i < r.c1; i++) {
            gt += fg_cuk_key(r.lg[i]) > lo;
            ties += fg_cuk_key(r.lg[i]) == lo;
        }

        gt = fg_cuk_block_sum<uint32_t>(gt, shu);
        tb = fg_cuk_block_exscan<uint32_t>(ties, shu, &all);

        /* kk - gt ties are in, the lowest indices first */
        r.k_key = lo;
        r.k_cut = 1;
        r.k_ties = (uint32_t) kk - gt > tb
                   ? min((uint32_t) kk - gt - tb, ties) : 0;
    }

    mass = 0.0;
    ties = r.k_ties;

    for (i = r.c0; i < r.c1; i++) {
        mass += fg_cuk_prob(&r, i, &ties);
    }

    total = fg_cuk_block_sum<double>(mass, shd);

    /* top-p: the nucleus is the largest probabilities' prefix to top_p */
    if (tp > 0.0f && tp < 1.0f) {
        target = tp * total;
        lo = 0;
        hi = 0x7f800000u;

        while (lo < hi) {
            mid = lo + (hi - lo) / 2 + 1;
            mass = 0.0;
            ties = r.k_ties;

            for (i = r.c0; i < r.c1; i++) {
                pr = fg_cuk_prob(&r, i, &ties);
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
        ties = r.k_ties;

        for (i = r.c0; i < r.c1; i++) {
            pr = fg_cuk_prob(&r, i, &ties);

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
        ties = r.k_ties;

        for (i = r.c0; i < r.c1; i++) {
            pr = fg_cuk_prob(&r, i, &ties);

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

        r.p_key = lo;
        r.p_last = bi == 0x7fffffff ? n : bi;
        r.p_cut = 1;

        mass = 0.0;
        ties = r.k_ties;

        for (i = r.c0; i < r.c1; i++) {
            mass += fg_cuk_prob(&r, i, &ties);
        }

        total = fg_cuk_block_sum<double>(mass, shd);
    }

    /* the draw: the inverse of the distribution, in index order */
    target = uniform[blockIdx.x] * total;
    mass = 0.0;
    ties = r.k_ties;

    for (i = r.c0; i < r.c1; i++) {
        mass += fg_cuk_prob(&r, i, &ties);
    }

    before = fg_cuk_block_exscan<double>(mass, shd, &acc);

    found = 0x7fffffff;
    bi = -1;
    acc = before;
    ties = r.k_ties;

    for (i = r.c0; i < r.c1; i++) {
        pr = fg_cuk_prob(&r, i, &ties);

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

    if (threadIdx.x == 0) {
        out[blockIdx.x] = found != 0x7fffffff ? found
                          : (i == 0x7fffffff ? 0 : -i);
    }
}


/* ---- launchers ---- */

extern "C" cudaError_t
fg_cuk_embed(cudaStream_t s, float *x, const int32_t *tokens, size_t n,
    const void *table, fg_k_type_e type, size_t dim)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_embed_kernel<<<(unsigned) n, FG_CUK_THREADS, 0, s>>>(
        x, tokens, table, (int) type, (int) dim);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_rmsnorm(cudaStream_t s, float *y, const float *x, const float *w,
    size_t n, size_t dim, float eps)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_rmsnorm_kernel<<<(unsigned) n, FG_CUK_THREADS * 2, 0, s>>>(
        y, x, w, (int) dim, eps);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_swiglu(cudaStream_t s, float *y, const float *gate, const float *up,
    size_t n)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_swiglu_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        y, gate, up, n);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_gather(cudaStream_t s, float *dst, const float *src,
    const int32_t *rows, size_t n, size_t dim)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_gather_kernel<<<(unsigned) n, FG_CUK_THREADS, 0, s>>>(
        dst, src, rows, (int) dim);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_to_half(cudaStream_t s, void *dst, const float *src, size_t n,
    fg_k_type_e type)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_to_half_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        dst, src, n, type == FG_K_BF16);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_q8_0_to_f16(cudaStream_t s, void *dst, const void *src, size_t n)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_q8_0_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        (__half *) dst, (const uint8_t *) src, n);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_gemv_set(cudaStream_t s, const fg_cuk_gemv_set_t *set,
    const float *x, fg_k_type_e type, size_t n, size_t in, int accumulate)
{
    if (n == 0 || set->out[0] + set->out[1] + set->out[2] == 0) {
        return cudaSuccess;
    }

    switch (type) {

    case FG_K_F32:
        return fg_cuk_gemv_type<FG_K_F32>(s, set, x, n, (int) in,
                                          accumulate);

    case FG_K_F16:
        return fg_cuk_gemv_type<FG_K_F16>(s, set, x, n, (int) in,
                                          accumulate);

    case FG_K_BF16:
        return fg_cuk_gemv_type<FG_K_BF16>(s, set, x, n, (int) in,
                                           accumulate);

    case FG_K_Q8_0:
        return fg_cuk_gemv_type<FG_K_Q8_0>(s, set, x, n, (int) in,
                                           accumulate);
    }

    return cudaErrorInvalidValue;
}


extern "C" cudaError_t
fg_cuk_gemv(cudaStream_t s, float *y, const float *x, const void *w,
    fg_k_type_e type, size_t n, size_t in, size_t out, int accumulate)
{
    fg_cuk_gemv_set_t  set;

    memset(&set, 0, sizeof(set));
    set.w[0] = w;
    set.y[0] = y;
    set.out[0] = (int) out;

    return fg_cuk_gemv_set(s, &set, x, type, n, in, accumulate);
}


extern "C" cudaError_t
fg_cuk_qkv(cudaStream_t s, float *q, float *k, float *v, const float *bq,
    const float *bk, const float *bv, const fg_cuk_kv_t *kv,
    const fg_cuk_batch_t *b, size_t n_head, size_t rot_dim,
    const float *inv_freq, fg_k_rope_e rope)
{
    dim3      grid;
    unsigned  threads;

    if (b->n_tokens == 0) {
        return cudaSuccess;
    }

    grid = dim3((unsigned) b->n_tokens, (unsigned) (n_head + kv->n_kv_head));
    threads = kv->head_dim < 128 ? 32 : 128;

    fg_cuk_qkv_kernel<<<grid, threads, 0, s>>>(
        q, k, v, bq, bk, bv, (__half *) kv->k, (__half *) kv->v, *b,
        (int) n_head, (int) kv->n_kv_head, (int) kv->head_dim,
        (int) kv->block_size, (int) rot_dim, inv_freq,
        rope == FG_K_ROPE_HALVES);

    return cudaGetLastError();
}


/* queries a block may take for a head of this size: 48 KiB of merging */
static int
fg_cuk_attn_nq(size_t head_dim)
{
    return head_dim <= 128 ? 8 : (head_dim <= 256 ? 4 : 2);
}


extern "C" cudaError_t
fg_cuk_attention(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head)
{
    int     group, heads, rows, nq, nq_max, code;
    dim3    grid;
    float   scale;
    size_t  smem;

    if (b->n_tokens == 0) {
        return cudaSuccess;
    }

    if (kv->head_dim > FG_CUK_MAX_HEAD_DIM || kv->n_kv_head == 0
        || n_head % kv->n_kv_head != 0)
    {
        return cudaErrorInvalidValue;
    }

    /* the heads of a kv group that fit, and rows of a chunk beside them */
    nq_max = fg_cuk_attn_nq(kv->head_dim);
    group = (int) (n_head / kv->n_kv_head);

    for (heads = nq_max < group ? nq_max : group; group % heads; heads--) {
        /* void */
    }

    rows = b->rows_per_seq > 1 ? nq_max / heads : 1;

    for (nq = 1; nq < rows * heads; nq *= 2) {
        /* void */
    }

    grid = dim3((unsigned) ((b->n_tokens + rows - 1) / rows),
                (unsigned) (n_head / heads));
    scale = 1.0f / sqrtf((float) kv->head_dim);
    smem = (size_t) FG_CUK_ATTN_WARPS * nq * kv->head_dim * sizeof(float);

    code = kv->head_dim <= 32 ? 1 : kv->head_dim <= 64 ? 2
           : kv->head_dim <= 128 ? 4 : kv->head_dim <= 256 ? 8 : 16;

#define FG_CUK_ATTN(nd, n)                                                    \
    case nd * 100 + n:                                                        \
        fg_cuk_attention_kernel<nd, n>                                        \
            <<<grid, FG_CUK_ATTN_WARPS * 32, smem, s>>>(                      \
            out, q, (const __half *) kv->k, (const __half *) kv->v, *b,       \
            (int) n_head, (int) kv->n_kv_head, (int) kv->head_dim,            \
            (int) kv->block_size, scale, rows, heads);                        \
        break

    switch (code * 100 + nq) {

    FG_CUK_ATTN(1, 1);
    FG_CUK_ATTN(1, 2);
    FG_CUK_ATTN(1, 4);
    FG_CUK_ATTN(1, 8);
    FG_CUK_ATTN(2, 1);
    FG_CUK_ATTN(2, 2);
    FG_CUK_ATTN(2, 4);
    FG_CUK_ATTN(2, 8);
    FG_CUK_ATTN(4, 1);
    FG_CUK_ATTN(4, 2);
    FG_CUK_ATTN(4, 4);
    FG_CUK_ATTN(4, 8);
    FG_CUK_ATTN(8, 1);
    FG_CUK_ATTN(8, 2);
    FG_CUK_ATTN(8, 4);
    FG_CUK_ATTN(16, 1);
    FG_CUK_ATTN(16, 2);

    default:
        return cudaErrorInvalidValue;
    }

#undef FG_CUK_ATTN

    return cudaGetLastError();
}


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
