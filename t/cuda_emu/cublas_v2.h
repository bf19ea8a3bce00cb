
/*
 * fairgate: a stand-in for cuBLAS on the CPU (see cuda_runtime_api.h
 * here): cublasGemmEx for the transposes and types the backend uses.
 */

#ifndef _FG_CUDA_EMU_CUBLAS_H_INCLUDED_
#define _FG_CUDA_EMU_CUBLAS_H_INCLUDED_


#include "cuda_runtime_api.h"


typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum {
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1
} cublasOperation_t;

typedef enum {
    CUDA_R_32F = 0,
    CUDA_R_16F = 2,
    CUDA_R_16BF = 14
} cudaDataType_t;

typedef enum {
    CUBLAS_COMPUTE_32F = 68
} cublasComputeType_t;

typedef enum {
    CUBLAS_GEMM_DEFAULT = -1
} cublasGemmAlgo_t;

typedef struct fg_emu_blas_s  *cublasHandle_t;


cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes);
const char *cublasGetStatusString(cublasStatus_t st);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta,
    cublasOperation_t tb, int m, int n, int k, const void *alpha,
    const void *a, cudaDataType_t at, int lda, const void *b,
    cudaDataType_t bt, int ldb, const void *beta, void *c,
    cudaDataType_t ct, int ldc, cublasComputeType_t compute,
    cublasGemmAlgo_t algo);


#endif /* _FG_CUDA_EMU_CUBLAS_H_INCLUDED_ */
