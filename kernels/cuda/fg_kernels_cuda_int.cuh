
/*
 * fairgate: what the CUDA kernels' files share, not part of the interface
 * (fg_kernels_cuda.h is): the launch width, the Q8_0 block's size, warp
 * and block sums, and the half conversions.  The device functions here
 * are inline or templates: each kernel that calls them has them inlined,
 * as when the kernels were one file, and a file that does not call one
 * keeps no copy.
 */

#ifndef _FG_KERNELS_CUDA_INT_CUH_INCLUDED_
#define _FG_KERNELS_CUDA_INT_CUH_INCLUDED_


#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fg_kernels_cuda.h"


#define FG_CUK_THREADS      256
#define FG_CUK_Q8_0_BYTES   34


/* grid of one thread per value, capped: the kernels stride over the rest */
static inline unsigned
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


#endif /* _FG_KERNELS_CUDA_INT_CUH_INCLUDED_ */
