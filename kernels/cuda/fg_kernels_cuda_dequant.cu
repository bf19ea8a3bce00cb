
/*
 * fairgate: the quantized types to fp16 (a tile of a matrix for cuBLAS,
 * fg_cuk_dequant_f16) and to float (embedding rows, fg_cuk_dequant_rows):
 * one thread per chunk of 32 values, read as the GEMV kernel reads it
 * (fg_kernels_cuda_quant.cuh), so that a weight is the same number on
 * both paths but for the fp16 rounding cuBLAS takes.
 */


#include "fg_kernels_cuda_quant.cuh"


static __device__ __forceinline__ void
fg_cuk_put(float *p, float v)
{
    *p = v;
}


static __device__ __forceinline__ void
fg_cuk_put(__half *p, float v)
{
    *p = __float2half_rn(v);
}


/*
 * Rows of dim values: row r of dst is row rows[r] of src (rows NULL: row
 * r), n_rows of them; a chunk a thread, grid-stride.
 */
template <int T, typename O>
static __global__ void
fg_cuk_dequant_kernel(O *dst, const uint8_t *src, const int32_t *rows,
    size_t dim, size_t n_rows)
{
    int             k, i;
    float           w[FG_CUK_CHUNK];
    size_t          j, r, c, cpr, base, row_bytes;
    const uint8_t  *row;

    cpr = dim / FG_CUK_CHUNK;
    row_bytes = dim / fg_cuk_qk(T) * fg_cuk_qbytes(T);

    for (j = (size_t) blockIdx.x * blockDim.x + threadIdx.x; j < n_rows * cpr;
         j += (size_t) gridDim.x * blockDim.x)
    {
        r = j / cpr;
        c = j % cpr;
        row = src + (rows != NULL ? (size_t) rows[r] : r) * row_bytes;

        base = fg_cuk_chunk<T>(row, c, w) + r * dim;

#pragma unroll
        for (k = 0; k < FG_CUK_CHUNK / fg_cuk_qrun(T); k++) {

#pragma unroll
            for (i = 0; i < fg_cuk_qrun(T); i++) {
                fg_cuk_put(dst + base + k * fg_cuk_qstride(T) + i,
                           w[k * fg_cuk_qrun(T) + i]);
            }
        }
    }
}


template <typename O>
static cudaError_t
fg_cuk_dequant(cudaStream_t s, O *dst, const void *src, const int32_t *rows,
    fg_k_type_e type, size_t dim, size_t n_rows)
{
    size_t    n;
    unsigned  grid;

    n = n_rows * (dim / FG_CUK_CHUNK);

    if (n == 0) {
        return cudaSuccess;
    }

    n = (n + FG_CUK_THREADS - 1) / FG_CUK_THREADS;
    grid = (unsigned) (n < 65535 ? n : 65535);

    switch (type) {

#define FG_CUK_DEQUANT_TYPE(t)                                                \
    case t:                                                                   \
        fg_cuk_dequant_kernel<t, O><<<grid, FG_CUK_THREADS, 0, s>>>(          \
            dst, (const uint8_t *) src, rows, dim, n_rows);                   \
        break

    FG_CUK_DEQUANT_TYPE(FG_K_Q4_0);
    FG_CUK_DEQUANT_TYPE(FG_K_Q4_1);
    FG_CUK_DEQUANT_TYPE(FG_K_Q5_0);
    FG_CUK_DEQUANT_TYPE(FG_K_Q5_1);
    FG_CUK_DEQUANT_TYPE(FG_K_Q8_0);
    FG_CUK_DEQUANT_TYPE(FG_K_Q2_K);
    FG_CUK_DEQUANT_TYPE(FG_K_Q3_K);
    FG_CUK_DEQUANT_TYPE(FG_K_Q4_K);
    FG_CUK_DEQUANT_TYPE(FG_K_Q5_K);
    FG_CUK_DEQUANT_TYPE(FG_K_Q6_K);

#undef FG_CUK_DEQUANT_TYPE

    default:
        return cudaErrorInvalidValue;
    }

    return cudaGetLastError();
}


/* ---- launchers ---- */

extern "C" int
fg_cuk_type_quant(fg_k_type_e type)
{
    return fg_cuk_is_quant(type);
}


extern "C" size_t
fg_cuk_row_bytes(fg_k_type_e type, size_t n)
{
    switch (type) {

    case FG_K_F32:
        return n * sizeof(float);

    case FG_K_F16:
    case FG_K_BF16:
        return n * sizeof(uint16_t);

    default:
        break;
    }

    if (!fg_cuk_is_quant(type) || n % fg_cuk_qk(type) != 0) {
        return 0;
    }

    return n / fg_cuk_qk(type) * fg_cuk_qbytes(type);
}


extern "C" cudaError_t
fg_cuk_dequant_f16(cudaStream_t s, void *dst, const void *src,
    fg_k_type_e type, size_t n)
{
    return fg_cuk_dequant<__half>(s, (__half *) dst, src, NULL, type, n, 1);
}


extern "C" cudaError_t
fg_cuk_dequant_rows(cudaStream_t s, float *dst, const int32_t *rows,
    size_t n, const void *src, fg_k_type_e type, size_t dim)
{
    return fg_cuk_dequant<float>(s, dst, src, rows, type, dim, n);
}
