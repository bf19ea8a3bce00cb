
/*
 * fairgate: what the GPU tests do first: find the GPU, or bail out so
 * that make test-gpu fails rather than passing having checked nothing.
 */

#ifndef _FG_TEST_GPU_H_INCLUDED_
#define _FG_TEST_GPU_H_INCLUDED_


#include <stdio.h>

#include <cuda_runtime_api.h>

#include "fg_tap.h"


/* 0 and the GPU's name as a diagnostic; -1 after "Bail out! ..." */
static inline int
fg_test_gpu(void)
{
    int                    count;
    cudaError_t            ce;
    struct cudaDeviceProp  prop;

    ce = cudaGetDeviceCount(&count);

    if (ce != cudaSuccess || count == 0) {
        printf("Bail out! no usable GPU: %s (error %d); make test-gpu runs "
               "where one is\n", ce != cudaSuccess ? cudaGetErrorString(ce)
                                                   : "no devices", (int) ce);
        return -1;
    }

    cudaGetDeviceProperties(&prop, 0);
    diag("GPU: %s, sm_%d%d, %zu MiB", prop.name, prop.major, prop.minor,
         prop.totalGlobalMem >> 20);

    return 0;
}


#endif /* _FG_TEST_GPU_H_INCLUDED_ */
