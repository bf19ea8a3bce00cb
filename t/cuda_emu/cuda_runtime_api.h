
/*
 * fairgate: a stand-in for CUDA's runtime API on the CPU, only as much as
 * engine/backends/cuda/fg_backend_cuda.c and the kernels' launchers call, so that the
 * backend and its kernels are tested by make test on machines without a
 * GPU (t/gpu/test_cuda.c built as build/t/test_cuda_emu).  "Device"
 * memory is host memory; streams run at once; graph capture records the
 * launches, a graph launch replays them (fg_cuda_emu.c).  The device side
 * of CUDA C++ is in cuda_runtime.h here.
 */

#ifndef _FG_CUDA_EMU_RUNTIME_H_INCLUDED_
#define _FG_CUDA_EMU_RUNTIME_H_INCLUDED_


#include <stddef.h>


typedef enum {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum {
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3
} cudaMemcpyKind;

typedef enum {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1
} cudaStreamCaptureMode;

#define cudaStreamNonBlocking  1

typedef struct fg_emu_stream_s  *cudaStream_t;
typedef struct fg_emu_graph_s   *cudaGraph_t;
typedef struct fg_emu_exec_s    *cudaGraphExec_t;
typedef struct fg_emu_event_s   *cudaEvent_t;

struct cudaDeviceProp {
    char        name[256];
    int         major;
    int         minor;
    size_t      totalGlobalMem;
    int         multiProcessorCount;
};


#ifdef __cplusplus
extern "C" {
#endif

/* for the test: "device" memory, and how many graphs were replayed */
void fg_emu_set_mem(size_t bytes);
size_t fg_emu_allocated(void);
size_t fg_emu_graph_launches(void);

/*
 * for the kernels (fg_simt.cc): runs fn(args) now, or records it and a
 * copy of args' size bytes while a graph is being captured; and the
 * error that cudaGetLastError() returns next
 */
typedef void (*fg_emu_fn_pt)(const void *args);

cudaError_t fg_emu_launch(fg_emu_fn_pt fn, const void *args, size_t size);
void fg_emu_set_error(cudaError_t e);

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
    cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
    cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
    size_t spitch, size_t width, size_t height, cudaMemcpyKind kind,
    cudaStream_t s);
cudaError_t cudaMemset(void *p, int value, size_t n);
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total_b);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start,
    cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t e);
const char *cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaStreamBeginCapture(cudaStream_t s,
    cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
    unsigned long long flags);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);

#ifdef __cplusplus
}
#endif


#endif /* _FG_CUDA_EMU_RUNTIME_H_INCLUDED_ */
