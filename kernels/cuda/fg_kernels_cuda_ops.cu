
/*
 * fairgate: the element-wise CUDA kernels (fg_kernels_cuda.h): embedding
 * rows, rmsnorm, swiglu, the gather of the wanted rows, and the
 * conversions to halves that cuBLAS takes.
 *
 * Launch shapes, and why:
 *
 *   embed, rmsnorm, gather     one block per row: rows are short (n_embd)
 *   swiglu, conversions        one thread per value, grid-stride
 */


#include "fg_kernels_cuda_int.cuh"


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


/* ---- launchers ---- */

extern "C" cudaError_t
fg_cuk_embed(cudaStream_t s, float *x, const int32_t *tokens, size_t n,
    const void *table, fg_k_type_e type, size_t dim)
{
    if (n == 0) {
        return cudaSuccess;
    }

    if (type != FG_K_Q8_0 && fg_cuk_type_quant(type)) {
        return fg_cuk_dequant_rows(s, x, tokens, n, table, type, dim);
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
