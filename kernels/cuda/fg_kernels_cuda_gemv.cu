
/*
 * fairgate: the GEMV kernel (fg_kernels_cuda.h): y[n][out] (+)= x[n][in]
 * W^T for n <= FG_CUK_GEMV_ROWS, one instance per weight type and number
 * of rows.
 *
 * One warp per output column, 16-byte loads of W streamed past L1:
 * batch-1 decode reads every weight once and is bound by memory.  The
 * quantized types are dequantized as they are read, a lane taking a
 * chunk of 32 values (fg_kernels_cuda_quant.cuh) and multiplying them
 * with x in float: each block is read once, by one or a few lanes side
 * by side, and a weight costs no conversion instruction.
 */


#include "fg_kernels_cuda_quant.cuh"


/* sum[r] += the chunk's 32 values w . x row r, its runs from base on */
template <int T, int NR>
static __device__ __forceinline__ void
fg_cuk_dot_chunk(const float *w, const float *x, int in, size_t base,
    float *sum)
{
    int            k, i, r;
    float4         xa;
    const float4  *x4;

#pragma unroll
    for (k = 0; k < FG_CUK_CHUNK / fg_cuk_qrun(T); k++) {

#pragma unroll
        for (i = 0; i < fg_cuk_qrun(T); i += 4) {

#pragma unroll
            for (r = 0; r < NR; r++) {
                x4 = (const float4 *) (x + (size_t) r * in + base
                                       + k * fg_cuk_qstride(T) + i);
                xa = __ldg(x4);
                sum[r] += w[k * fg_cuk_qrun(T) + i] * xa.x
                          + w[k * fg_cuk_qrun(T) + i + 1] * xa.y
                          + w[k * fg_cuk_qrun(T) + i + 2] * xa.z
                          + w[k * fg_cuk_qrun(T) + i + 3] * xa.w;
            }
        }
    }
}


/* x as the product's other operand sees it: rounded to the weight's type */
template <int T>
static __device__ __forceinline__ float
fg_cuk_round_x(float x)
{
    if (T == FG_K_F16) {
        return __half2float(__float2half_rn(x));
    }

    if (T == FG_K_BF16) {
        return __bfloat162float(__float2bfloat16_rn(x));
    }

    return x;
}


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
    int             col, lane, r, c, nb, out;
    size_t          base;
    float          *y;
    const void     *w;
    float           sum[NR], wf[FG_CUK_CHUNK];
    uint4           q4;
    float4          xa, xb;
    const float4   *x4;
    const uint4    *row4;
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

    if (fg_cuk_is_quant(T)) {
        nb = in / FG_CUK_CHUNK;
        blk = (const uint8_t *) w
              + (size_t) col * (in / fg_cuk_qk(T)) * fg_cuk_qbytes(T);

#pragma unroll 1
        for (c = lane; c < nb; c += 32) {
            base = fg_cuk_chunk<T>(blk, (size_t) c, wf);
            fg_cuk_dot_chunk<T, NR>(wf, x, in, base, sum);
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


/* ---- launchers ---- */

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

#define FG_CUK_GEMV_TYPE(t)                                                   \
    case t:                                                                   \
        return fg_cuk_gemv_type<t>(s, set, x, n, (int) in, accumulate)

    FG_CUK_GEMV_TYPE(FG_K_Q8_0);
    FG_CUK_GEMV_TYPE(FG_K_Q4_0);
    FG_CUK_GEMV_TYPE(FG_K_Q4_1);
    FG_CUK_GEMV_TYPE(FG_K_Q5_0);
    FG_CUK_GEMV_TYPE(FG_K_Q5_1);
    FG_CUK_GEMV_TYPE(FG_K_Q2_K);
    FG_CUK_GEMV_TYPE(FG_K_Q3_K);
    FG_CUK_GEMV_TYPE(FG_K_Q4_K);
    FG_CUK_GEMV_TYPE(FG_K_Q5_K);
    FG_CUK_GEMV_TYPE(FG_K_Q6_K);

#undef FG_CUK_GEMV_TYPE

    default:
        break;
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
