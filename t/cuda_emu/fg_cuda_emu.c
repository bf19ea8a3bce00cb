
/*
 * fairgate: CUDA's runtime and cuBLAS emulated on the CPU, for
 * t/gpu/test_cuda.c built as build/t/test_cuda_emu and for
 * build/t/fairgate-backend-cuda-emu.so: engine/backends/cuda/fg_backend_cuda.c compiled
 * against the stand-in headers here, with the real kernels compiled by
 * g++ (fg_simt.cc, cuda_runtime.h), runs as it does on a GPU.  "Device"
 * memory is host memory; streams run at once, in the caller.  cuBLAS's
 * products are plain loops over the same inputs (halves widened), in
 * fp32.
 *
 * Graph capture records each launch (a function and a copy of its
 * arguments) instead of running it; a graph launch replays the record,
 * reading the buffers' contents then, as a real graph does.
 */


#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cublas_v2.h"
#include "cuda_runtime_api.h"
#include "fg_kernels.h"


#define FG_EMU_MAX_CALLS  4096


typedef struct {
    fg_emu_fn_pt    fn;
    void           *args;
} fg_emu_call_t;

struct fg_emu_exec_s {
    fg_emu_call_t  *calls;
    size_t          n;
};

struct fg_emu_event_s {
    double          ms;
};

struct fg_emu_graph_s {
    fg_emu_call_t  *calls;
    size_t          n;
};


static size_t          fg_emu_mem = (size_t) 2 << 30;
static size_t          fg_emu_used;
static int             fg_emu_capturing;
static fg_emu_call_t  *fg_emu_rec;
static size_t          fg_emu_nrec;
static int             fg_emu_stream_dummy;
static size_t          fg_emu_launches;
static cudaError_t     fg_emu_error;


void
fg_emu_set_mem(size_t bytes)
{
    fg_emu_mem = bytes;
}


size_t
fg_emu_allocated(void)
{
    return fg_emu_used;
}


size_t
fg_emu_graph_launches(void)
{
    return fg_emu_launches;
}


void
fg_emu_set_error(cudaError_t e)
{
    if (e != cudaSuccess) {
        fg_emu_error = e;
    }
}


/* runs fn now, or records it while a graph is being captured */
cudaError_t
fg_emu_launch(fg_emu_fn_pt fn, const void *args, size_t size)
{
    void  *copy;

    if (!fg_emu_capturing) {
        fn(args);
        return cudaSuccess;
    }

    if (fg_emu_nrec == FG_EMU_MAX_CALLS || (copy = malloc(size)) == NULL) {
        return cudaErrorMemoryAllocation;
    }

    memcpy(copy, args, size);
    fg_emu_rec[fg_emu_nrec].fn = fn;
    fg_emu_rec[fg_emu_nrec].args = copy;
    fg_emu_nrec++;

    return cudaSuccess;
}


/* ---- the runtime ---- */

/* FG_EMU_MEM_MB: the emulated device's memory (2 GiB) */
cudaError_t
cudaGetDeviceCount(int *count)
{
    char  *env;

    env = getenv("FG_EMU_MEM_MB");

    if (env && atol(env) > 0) {
        fg_emu_mem = (size_t) atol(env) << 20;
    }

    *count = 1;

    return cudaSuccess;
}


cudaError_t
cudaSetDevice(int dev)
{
    return dev == 0 ? cudaSuccess : cudaErrorInvalidValue;
}


cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
    (void) dev;

    memset(p, 0, sizeof(struct cudaDeviceProp));
    snprintf(p->name, sizeof(p->name), "CPU emulation");
    p->major = 9;
    p->totalGlobalMem = fg_emu_mem;
    p->multiProcessorCount = 1;

    return cudaSuccess;
}


cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void) flags;

    *s = (cudaStream_t) &fg_emu_stream_dummy;

    return cudaSuccess;
}


cudaError_t
cudaStreamDestroy(cudaStream_t s)
{
    (void) s;
    return cudaSuccess;
}


cudaError_t
cudaStreamSynchronize(cudaStream_t s)
{
    (void) s;
    return fg_emu_capturing ? cudaErrorUnknown : cudaSuccess;
}


/* a size word before each block, so that cudaFree knows what it frees */
cudaError_t
cudaMalloc(void **p, size_t bytes)
{
    size_t  *m;

    *p = NULL;

    if (fg_emu_capturing) {
        return cudaErrorUnknown;
    }

    if (bytes > fg_emu_mem - fg_emu_used) {
        return cudaErrorMemoryAllocation;
    }

    /* 256-byte aligned as cudaMalloc's: the kernels' vector loads rely
     * on it; the end exact, for test-cuda-asan */
    if (posix_memalign((void **) &m, 256, 256 + bytes) != 0) {
        return cudaErrorMemoryAllocation;
    }

    memset(m, 0, 256 + bytes);
    m[0] = bytes;
    fg_emu_used += bytes;
    *p = (char *) m + 256;

    return cudaSuccess;
}


cudaError_t
cudaFree(void *p)
{
    size_t  *m;

    if (p == NULL) {
        return cudaSuccess;
    }

    m = (size_t *) ((char *) p - 256);
    fg_emu_used -= m[0];
    free(m);

    return cudaSuccess;
}


cudaError_t
cudaMallocHost(void **p, size_t bytes)
{
    *p = malloc(bytes ? bytes : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}


cudaError_t
cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}


cudaError_t
cudaMemcpy(void *dst, const void *src, size_t n, cudaMemcpyKind kind)
{
    (void) kind;

    memcpy(dst, src, n);

    return cudaSuccess;
}


cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
    cudaStream_t s)
{
    (void) s;

    if (fg_emu_capturing) {
        /* the backend copies outside its graphs: this would be a bug */
        return cudaErrorUnknown;
    }

    return cudaMemcpy(dst, src, n, kind);
}


/* height rows of width bytes, each pitch bytes after the last */
cudaError_t
cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
    size_t width, size_t height, cudaMemcpyKind kind, cudaStream_t s)
{
    size_t  r;

    (void) kind;
    (void) s;

    if (fg_emu_capturing || width > dpitch || width > spitch) {
        return cudaErrorInvalidValue;
    }

    for (r = 0; r < height; r++) {
        memcpy((char *) dst + r * dpitch, (const char *) src + r * spitch,
               width);
    }

    return cudaSuccess;
}


cudaError_t
cudaMemset(void *p, int value, size_t n)
{
    if (fg_emu_capturing) {
        return cudaErrorNotSupported;
    }

    memset(p, value, n);

    return cudaSuccess;
}


cudaError_t
cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    *free_b = fg_emu_mem - fg_emu_used;
    *total_b = fg_emu_mem;

    return cudaSuccess;
}


/* events: the host's clock when recorded, streams having run already */
cudaError_t
cudaEventCreate(cudaEvent_t *e)
{
    *e = calloc(1, sizeof(struct fg_emu_event_s));

    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}


cudaError_t
cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    struct timespec  ts;

    (void) s;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    e->ms = (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;

    return cudaSuccess;
}


cudaError_t
cudaEventSynchronize(cudaEvent_t e)
{
    (void) e;

    return cudaSuccess;
}


cudaError_t
cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    *ms = (float) (end->ms - start->ms);

    return cudaSuccess;
}


cudaError_t
cudaEventDestroy(cudaEvent_t e)
{
    free(e);

    return cudaSuccess;
}


const char *
cudaGetErrorString(cudaError_t e)
{
    switch (e) {

    case cudaSuccess:
        return "no error";

    case cudaErrorInvalidValue:
        return "invalid argument";

    case cudaErrorMemoryAllocation:
        return "out of memory";

    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";

    default:
        return "emulated error";
    }
}


cudaError_t
cudaGetLastError(void)
{
    cudaError_t  e;

    e = fg_emu_error;
    fg_emu_error = cudaSuccess;

    return e;
}


cudaError_t
cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode)
{
    (void) s;
    (void) mode;

    fg_emu_rec = calloc(FG_EMU_MAX_CALLS, sizeof(fg_emu_call_t));
    if (fg_emu_rec == NULL) {
        return cudaErrorMemoryAllocation;
    }

    fg_emu_nrec = 0;
    fg_emu_capturing = 1;

    return cudaSuccess;
}


cudaError_t
cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    (void) s;

    fg_emu_capturing = 0;

    *g = malloc(sizeof(struct fg_emu_graph_s));
    if (*g == NULL) {
        return cudaErrorMemoryAllocation;
    }

    (*g)->calls = fg_emu_rec;
    (*g)->n = fg_emu_nrec;
    fg_emu_rec = NULL;

    return cudaSuccess;
}


cudaError_t
cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
    unsigned long long flags)
{
    size_t  i;

    (void) flags;

    *e = malloc(sizeof(struct fg_emu_exec_s));
    if (*e == NULL) {
        return cudaErrorMemoryAllocation;
    }

    (*e)->calls = calloc(g->n + 1, sizeof(fg_emu_call_t));
    (*e)->n = g->n;

    for (i = 0; i < g->n; i++) {
        (*e)->calls[i].fn = g->calls[i].fn;
        (*e)->calls[i].args = g->calls[i].args;
        g->calls[i].args = NULL;
    }

    return cudaSuccess;
}


/* a graph's or an instance's calls, each with its copy of the arguments */
static void
fg_emu_calls_free(fg_emu_call_t *calls, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        free(calls[i].args);
    }

    free(calls);
}


cudaError_t
cudaGraphDestroy(cudaGraph_t g)
{
    fg_emu_calls_free(g->calls, g->n);
    free(g);

    return cudaSuccess;
}


cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t e)
{
    fg_emu_calls_free(e->calls, e->n);
    free(e);

    return cudaSuccess;
}


cudaError_t
cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
    size_t  i;

    (void) s;

    fg_emu_launches++;

    for (i = 0; i < e->n; i++) {
        e->calls[i].fn(e->calls[i].args);
    }

    return cudaSuccess;
}


/* ---- cuBLAS ---- */

cublasStatus_t
cublasCreate(cublasHandle_t *h)
{
    *h = (cublasHandle_t) &fg_emu_stream_dummy;
    return CUBLAS_STATUS_SUCCESS;
}


cublasStatus_t
cublasDestroy(cublasHandle_t h)
{
    (void) h;
    return CUBLAS_STATUS_SUCCESS;
}


cublasStatus_t
cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    (void) h;
    (void) s;
    return CUBLAS_STATUS_SUCCESS;
}


cublasStatus_t
cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
    (void) h;
    (void) ws;
    (void) bytes;
    return CUBLAS_STATUS_SUCCESS;
}


const char *
cublasGetStatusString(cublasStatus_t st)
{
    return st == CUBLAS_STATUS_SUCCESS ? "success" : "not supported";
}


static float
fg_emu_elem(const void *p, cudaDataType_t t, size_t i)
{
    switch (t) {

    case CUDA_R_16F:
        return fg_fp16_to_f32(((const uint16_t *) p)[i]);

    case CUDA_R_16BF:
        return fg_bf16_to_f32(((const uint16_t *) p)[i]);

    default:
        return ((const float *) p)[i];
    }
}


typedef struct {
    int             m;
    int             n;
    int             k;
    float           alpha;
    float           beta;
    const void     *a;
    cudaDataType_t  at;
    int             lda;
    const void     *b;
    cudaDataType_t  bt;
    int             ldb;
    float          *c;
    int             ldc;
} fg_emu_gemm_t;


static void
fg_emu_gemm(const void *args)
{
    int                   i, j, l;
    float                *a, *b;
    double                sum;
    const fg_emu_gemm_t  *g;

    g = args;

    /* the operands widened once: the loops below are then plain */
    a = malloc((size_t) g->m * g->k * sizeof(float));
    b = malloc((size_t) g->n * g->k * sizeof(float));

    if (a == NULL || b == NULL) {
        abort();
    }

    for (i = 0; i < g->m; i++) {
        for (l = 0; l < g->k; l++) {
            a[(size_t) i * g->k + l] = fg_emu_elem(g->a, g->at,
                                                   (size_t) i * g->lda + l);
        }
    }

    for (j = 0; j < g->n; j++) {
        for (l = 0; l < g->k; l++) {
            b[(size_t) j * g->k + l] = fg_emu_elem(g->b, g->bt,
                                                   (size_t) j * g->ldb + l);
        }
    }

    for (j = 0; j < g->n; j++) {
        for (i = 0; i < g->m; i++) {
            sum = 0.0;

            for (l = 0; l < g->k; l++) {
                sum += (double) a[(size_t) i * g->k + l]
                       * b[(size_t) j * g->k + l];
            }

            g->c[(size_t) j * g->ldc + i] = (float) (g->alpha * sum)
                + (g->beta != 0.0f
                   ? g->beta * g->c[(size_t) j * g->ldc + i] : 0.0f);
        }
    }

    free(a);
    free(b);
}


/* op(A) = A^T, op(B) = B, fp32 C: all the backend asks for */
cublasStatus_t
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
    int m, int n, int k, const void *alpha, const void *a, cudaDataType_t at,
    int lda, const void *b, cudaDataType_t bt, int ldb, const void *beta,
    void *c, cudaDataType_t ct, int ldc, cublasComputeType_t compute,
    cublasGemmAlgo_t algo)
{
    fg_emu_gemm_t  g;

    (void) h;
    (void) algo;

    if (ta != CUBLAS_OP_T || tb != CUBLAS_OP_N || ct != CUDA_R_32F
        || compute != CUBLAS_COMPUTE_32F || at != bt)
    {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }

    g.m = m;
    g.n = n;
    g.k = k;
    g.alpha = *(const float *) alpha;
    g.beta = *(const float *) beta;
    g.a = a;
    g.at = at;
    g.lda = lda;
    g.b = b;
    g.bt = bt;
    g.ldb = ldb;
    g.c = c;
    g.ldc = ldc;

    return fg_emu_launch(fg_emu_gemm, &g, sizeof(g)) == cudaSuccess
           ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
}
