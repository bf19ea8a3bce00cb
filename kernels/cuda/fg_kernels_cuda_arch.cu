
/*
 * fairgate: the element-wise CUDA kernels of the architectures beyond
 * llama's (fg_kernels_cuda.h), mirroring cpu/fg_kernels_arch.c: GeGLU
 * (gemma's feed-forward), soft-capping (gemma2's final logits), a scale
 * (gemma's embedding), and the sum that adds a post-normed block output
 * to the residual (gemma2, gemma3).  One thread per value, grid-stride.
 */


#include "fg_kernels_cuda_int.cuh"


/* sqrt(2 / pi) and the cubic's coefficient of the tanh approximation */
#define FG_CUK_GELU_C    0.7978845608028654f
#define FG_CUK_GELU_A    0.044715f


/* 0.5 (1 + tanh z) as 1 / (1 + e^-2z), as the CPU's fg_k_geglu() */
static __global__ void
fg_cuk_geglu_kernel(float *y, const float *gate, const float *up, size_t n)
{
    float   g;
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        g = gate[i];
        y[i] = g / (1.0f + expf(-2.0f * FG_CUK_GELU_C
                                * (g + FG_CUK_GELU_A * g * g * g)))
               * up[i];
    }
}


static __global__ void
fg_cuk_softcap_kernel(float *x, size_t n, float cap)
{
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        x[i] = cap * tanhf(x[i] / cap);
    }
}


static __global__ void
fg_cuk_scale_kernel(float *x, size_t n, float s)
{
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        x[i] *= s;
    }
}


static __global__ void
fg_cuk_add_kernel(float *y, const float *a, const float *b, size_t n)
{
    size_t  i;

    for (i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x)
    {
        y[i] = a[i] + b[i];
    }
}


extern "C" cudaError_t
fg_cuk_geglu(cudaStream_t s, float *y, const float *gate, const float *up,
    size_t n)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_geglu_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        y, gate, up, n);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_softcap(cudaStream_t s, float *x, size_t n, float cap)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_softcap_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        x, n, cap);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_scale(cudaStream_t s, float *x, size_t n, float f)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_scale_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        x, n, f);

    return cudaGetLastError();
}


extern "C" cudaError_t
fg_cuk_add(cudaStream_t s, float *y, const float *a, const float *b,
    size_t n)
{
    if (n == 0) {
        return cudaSuccess;
    }

    fg_cuk_add_kernel<<<fg_cuk_blocks(n), FG_CUK_THREADS, 0, s>>>(
        y, a, b, n);

    return cudaGetLastError();
}
