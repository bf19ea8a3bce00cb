
/*
 * fairgate: the CUDA runtime, cuBLAS and the kernels of
 * kernels/fg_kernels_cuda.h, emulated on the CPU for
 * t/unit/test_cuda_emu.c: engine/fg_backend_cuda.c compiled against the
 * stand-in headers here runs its host side for real on machines without
 * a GPU.  The kernels compute what the real ones compute, in the same
 * roundings (fp16 KV cache, x rounded to the weight's half type in
 * products, Q8_0 weights as fp16(d * q)), plainly.
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

#include "cublas_v2.h"
#include "cuda_runtime_api.h"
#include "fg_kernels_cuda.h"


#define FG_EMU_MAX_CALLS  4096


typedef void (*fg_emu_fn_pt)(const void *args);

typedef struct {
    fg_emu_fn_pt    fn;
    void           *args;
} fg_emu_call_t;

struct fg_emu_exec_s {
    fg_emu_call_t  *calls;
    size_t          n;
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


/* runs fn now, or records it while a graph is being captured */
static cudaError_t
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

    m = calloc(1, bytes + 64);
    if (m == NULL) {
        return cudaErrorMemoryAllocation;
    }

    m[0] = bytes;
    fg_emu_used += bytes;
    *p = (char *) m + 64;

    return cudaSuccess;
}


cudaError_t
cudaFree(void *p)
{
    size_t  *m;

    if (p == NULL) {
        return cudaSuccess;
    }

    m = (size_t *) ((char *) p - 64);
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


cudaError_t
cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
    *free_b = fg_emu_mem - fg_emu_used;
    *total_b = fg_emu_mem;

    return cudaSuccess;
}


const char *
cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "emulated error";
}


cudaError_t
cudaGetLastError(void)
{
    return cudaSuccess;
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


cudaError_t
cudaGraphDestroy(cudaGraph_t g)
{
    size_t  i;

    for (i = 0; i < g->n; i++) {
        free(g->calls[i].args);
    }

    free(g->calls);
    free(g);

    return cudaSuccess;
}


cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t e)
{
    size_t  i;

    for (i = 0; i < e->n; i++) {
        free(e->calls[i].args);
    }

    free(e->calls);
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
        return fg_k_fp16_to_f32(((const uint16_t *) p)[i]);

    case CUDA_R_16BF:
        return fg_k_bf16_to_f32(((const uint16_t *) p)[i]);

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


/* ---- the kernels ---- */

typedef struct {
    float           *y;
    const float     *x;
    const float     *x2;
    const float     *w;
    const void      *p;
    const int32_t   *idx;
    size_t           n;
    size_t           dim;
    fg_k_type_e      type;
    float            eps;
} fg_emu_rows_t;


static void
fg_emu_embed(const void *args)
{
    size_t                t, rs;
    const fg_emu_rows_t  *a;

    a = args;
    rs = fg_k_row_size(a->type, a->dim);

    for (t = 0; t < a->n; t++) {
        fg_k_dequant_row(a->type, (const char *) a->p + a->idx[t] * rs,
                         a->y + t * a->dim, a->dim);
    }
}


cudaError_t
fg_cuk_embed(cudaStream_t s, float *x, const int32_t *tokens, size_t n,
    const void *table, fg_k_type_e type, size_t dim)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.y = x;
    a.idx = tokens;
    a.n = n;
    a.p = table;
    a.type = type;
    a.dim = dim;

    return fg_emu_launch(fg_emu_embed, &a, sizeof(a));
}


static void
fg_emu_rmsnorm(const void *args)
{
    const fg_emu_rows_t  *a;

    a = args;
    fg_k_rmsnorm(a->y, a->x, a->w, a->n, a->dim, a->eps);
}


cudaError_t
fg_cuk_rmsnorm(cudaStream_t s, float *y, const float *x, const float *w,
    size_t n, size_t dim, float eps)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.y = y;
    a.x = x;
    a.w = w;
    a.n = n;
    a.dim = dim;
    a.eps = eps;

    return fg_emu_launch(fg_emu_rmsnorm, &a, sizeof(a));
}


static void
fg_emu_swiglu(const void *args)
{
    const fg_emu_rows_t  *a;

    a = args;
    fg_k_swiglu(a->y, a->x, a->x2, a->n);
}


cudaError_t
fg_cuk_swiglu(cudaStream_t s, float *y, const float *gate, const float *up,
    size_t n)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.y = y;
    a.x = gate;
    a.x2 = up;
    a.n = n;

    return fg_emu_launch(fg_emu_swiglu, &a, sizeof(a));
}


static void
fg_emu_gather(const void *args)
{
    size_t                t;
    const fg_emu_rows_t  *a;

    a = args;

    for (t = 0; t < a->n; t++) {
        memcpy(a->y + t * a->dim, a->x + (size_t) a->idx[t] * a->dim,
               a->dim * sizeof(float));
    }
}


cudaError_t
fg_cuk_gather(cudaStream_t s, float *dst, const float *src,
    const int32_t *rows, size_t n, size_t dim)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.y = dst;
    a.x = src;
    a.idx = rows;
    a.n = n;
    a.dim = dim;

    return fg_emu_launch(fg_emu_gather, &a, sizeof(a));
}


static void
fg_emu_to_half(const void *args)
{
    size_t                i;
    const fg_emu_rows_t  *a;

    a = args;

    for (i = 0; i < a->n; i++) {
        ((uint16_t *) a->p)[i] = a->type == FG_K_BF16
                                 ? fg_k_f32_to_bf16(a->x[i])
                                 : fg_k_f32_to_fp16(a->x[i]);
    }
}


cudaError_t
fg_cuk_to_half(cudaStream_t s, void *dst, const float *src, size_t n,
    fg_k_type_e type)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.p = dst;
    a.x = src;
    a.n = n;
    a.type = type;

    return fg_emu_launch(fg_emu_to_half, &a, sizeof(a));
}


/* Q8_0 value i of a matrix as the GPU uses it: fp16(d * q) */
static float
fg_emu_q8(const void *w, size_t i)
{
    const uint8_t  *blk;
    uint16_t        d;

    blk = (const uint8_t *) w + i / FG_K_QK8_0 * sizeof(fg_k_block_q8_0_t);
    d = (uint16_t) (blk[0] | blk[1] << 8);

    return fg_k_fp16_to_f32(fg_k_f32_to_fp16(fg_k_fp16_to_f32(d)
                                             * (float) (int8_t)
                                               blk[2 + i % FG_K_QK8_0]));
}


static void
fg_emu_q8_0(const void *args)
{
    size_t                i;
    const fg_emu_rows_t  *a;

    a = args;

    for (i = 0; i < a->n; i++) {
        ((uint16_t *) a->y)[i] = fg_k_f32_to_fp16(fg_emu_q8(a->p, i));
    }
}


cudaError_t
fg_cuk_q8_0_to_f16(cudaStream_t s, void *dst, const void *src, size_t n)
{
    fg_emu_rows_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.y = dst;
    a.p = src;
    a.n = n;

    return fg_emu_launch(fg_emu_q8_0, &a, sizeof(a));
}


typedef struct {
    fg_cuk_gemv_set_t   set;
    const float        *x;
    fg_k_type_e         type;
    size_t              n;
    size_t              in;
    int                 accumulate;
} fg_emu_gemv_t;


static void
fg_emu_gemv(const void *args)
{
    int                   m;
    float                *xr, *w, sum, *y;
    size_t                r, c, i, in;
    const fg_emu_gemv_t  *g;

    g = args;
    in = g->in;

    /* x as the products see it, and a row of weights, widened once */
    xr = malloc(g->n * in * sizeof(float));
    w = malloc(in * sizeof(float));

    if (xr == NULL || w == NULL) {
        abort();
    }

    for (i = 0; i < g->n * in; i++) {
        xr[i] = g->type == FG_K_BF16
                ? fg_k_bf16_to_f32(fg_k_f32_to_bf16(g->x[i]))
                : g->type == FG_K_F32
                  ? g->x[i] : fg_k_fp16_to_f32(fg_k_f32_to_fp16(g->x[i]));
    }

    for (m = 0; m < 3; m++) {
        for (c = 0; c < (size_t) g->set.out[m]; c++) {
            for (i = 0; i < in; i++) {
                switch (g->type) {

                case FG_K_F16:
                    w[i] = fg_k_fp16_to_f32(((const uint16_t *)
                                             g->set.w[m])[c * in + i]);
                    break;

                case FG_K_BF16:
                    w[i] = fg_k_bf16_to_f32(((const uint16_t *)
                                             g->set.w[m])[c * in + i]);
                    break;

                case FG_K_Q8_0:
                    w[i] = fg_emu_q8(g->set.w[m], c * in + i);
                    break;

                default:
                    w[i] = ((const float *) g->set.w[m])[c * in + i];
                }
            }

            for (r = 0; r < g->n; r++) {
                sum = 0.0f;

                for (i = 0; i < in; i++) {
                    sum += w[i] * xr[r * in + i];
                }

                y = g->set.y[m] + r * g->set.out[m] + c;
                *y = g->accumulate ? *y + sum : sum;
            }
        }
    }

    free(xr);
    free(w);
}


cudaError_t
fg_cuk_gemv_set(cudaStream_t s, const fg_cuk_gemv_set_t *set,
    const float *x, fg_k_type_e type, size_t n, size_t in, int accumulate)
{
    fg_emu_gemv_t  g;

    (void) s;

    if (n > FG_CUK_GEMV_ROWS) {
        return cudaErrorInvalidValue;
    }

    g.set = *set;
    g.x = x;
    g.type = type;
    g.n = n;
    g.in = in;
    g.accumulate = accumulate;

    return fg_emu_launch(fg_emu_gemv, &g, sizeof(g));
}


cudaError_t
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


typedef struct {
    float           *q;
    float           *k;
    float           *v;
    const float     *bq;
    const float     *bk;
    const float     *bv;
    fg_cuk_kv_t      kv;
    fg_cuk_batch_t   b;
    size_t           n_head;
    size_t           rot_dim;
    const float     *inv_freq;
    fg_k_rope_e      rope;
} fg_emu_attn_t;


/* where position p of row t's sequence lies in a layer's cache */
static size_t
fg_emu_slot(const fg_emu_attn_t *a, size_t t, size_t p, size_t h)
{
    int32_t  block;

    block = a->b.block_tables[(size_t) a->b.seq[t] * a->b.max_blocks
                              + p / a->kv.block_size];

    return (((size_t) block * a->kv.n_kv_head + h) * a->kv.block_size
            + p % a->kv.block_size) * a->kv.head_dim;
}


static void
fg_emu_qkv(const void *args)
{
    size_t                t, i, h, qd, kd, off;
    const fg_emu_attn_t  *a;

    a = args;
    qd = a->n_head * a->kv.head_dim;
    kd = a->kv.n_kv_head * a->kv.head_dim;

    for (t = 0; t < a->b.n_tokens; t++) {
        for (i = 0; i < qd && a->bq; i++) {
            a->q[t * qd + i] += a->bq[i];
        }

        for (i = 0; i < kd; i++) {
            a->k[t * kd + i] += a->bk ? a->bk[i] : 0.0f;
            a->v[t * kd + i] += a->bv ? a->bv[i] : 0.0f;
        }

        fg_k_rope(a->q + t * qd, 1, qd, a->n_head, a->kv.head_dim,
                  a->rot_dim, a->b.pos + t, a->inv_freq, a->rope);
        fg_k_rope(a->k + t * kd, 1, kd, a->kv.n_kv_head, a->kv.head_dim,
                  a->rot_dim, a->b.pos + t, a->inv_freq, a->rope);

        for (h = 0; h < a->kv.n_kv_head; h++) {
            off = fg_emu_slot(a, t, (size_t) a->b.pos[t], h);

            for (i = 0; i < a->kv.head_dim; i++) {
                ((uint16_t *) a->kv.k)[off + i] =
                    fg_k_f32_to_fp16(a->k[t * kd + h * a->kv.head_dim + i]);
                ((uint16_t *) a->kv.v)[off + i] =
                    fg_k_f32_to_fp16(a->v[t * kd + h * a->kv.head_dim + i]);
            }
        }
    }
}


cudaError_t
fg_cuk_qkv(cudaStream_t s, float *q, float *k, float *v, const float *bq,
    const float *bk, const float *bv, const fg_cuk_kv_t *kv,
    const fg_cuk_batch_t *b, size_t n_head, size_t rot_dim,
    const float *inv_freq, fg_k_rope_e rope)
{
    fg_emu_attn_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.q = q;
    a.k = k;
    a.v = v;
    a.bq = bq;
    a.bk = bk;
    a.bv = bv;
    a.kv = *kv;
    a.b = *b;
    a.n_head = n_head;
    a.rot_dim = rot_dim;
    a.inv_freq = inv_freq;
    a.rope = rope;

    return fg_emu_launch(fg_emu_qkv, &a, sizeof(a));
}


static void
fg_emu_attention(const void *args)
{
    float                 *out, *sc, m, sum;
    size_t                 t, h, kh, p, j, i, hd, off;
    const float           *qv;
    const uint16_t        *kc, *vc;
    const fg_emu_attn_t   *a;

    a = args;
    hd = a->kv.head_dim;
    kc = a->kv.k;
    vc = a->kv.v;

    for (t = 0; t < a->b.n_tokens; t++) {
        p = (size_t) a->b.pos[t];
        sc = malloc((p + 1) * sizeof(float));

        for (h = 0; h < a->n_head; h++) {
            kh = h / (a->n_head / a->kv.n_kv_head);
            qv = a->q + (t * a->n_head + h) * hd;
            out = a->v + (t * a->n_head + h) * hd;
            m = -INFINITY;

            for (j = 0; j <= p; j++) {
                off = fg_emu_slot(a, t, j, kh);
                sum = 0.0f;

                for (i = 0; i < hd; i++) {
                    sum += qv[i] * fg_k_fp16_to_f32(kc[off + i]);
                }

                sc[j] = sum / sqrtf((float) hd);
                m = sc[j] > m ? sc[j] : m;
            }

            sum = 0.0f;

            for (j = 0; j <= p; j++) {
                sc[j] = expf(sc[j] - m);
                sum += sc[j];
            }

            for (i = 0; i < hd; i++) {
                out[i] = 0.0f;
            }

            for (j = 0; j <= p; j++) {
                off = fg_emu_slot(a, t, j, kh);

                for (i = 0; i < hd; i++) {
                    out[i] += sc[j] / sum * fg_k_fp16_to_f32(vc[off + i]);
                }
            }
        }

        free(sc);
    }
}


cudaError_t
fg_cuk_attention(cudaStream_t s, float *out, const float *q,
    const fg_cuk_kv_t *kv, const fg_cuk_batch_t *b, size_t n_head)
{
    fg_emu_attn_t  a;

    (void) s;

    memset(&a, 0, sizeof(a));
    a.q = (float *) q;
    a.v = out;
    a.kv = *kv;
    a.b = *b;
    a.n_head = n_head;

    return fg_emu_launch(fg_emu_attention, &a, sizeof(a));
}


cudaError_t
fg_cuk_argmax(cudaStream_t s, int32_t *out, const float *logits,
    size_t n_rows, size_t n)
{
    size_t  r;

    (void) s;

    for (r = 0; r < n_rows; r++) {
        out[r] = fg_k_argmax(logits + r * n, n);
    }

    return cudaSuccess;
}


cudaError_t
fg_cuk_sample(cudaStream_t s, int32_t *out, const float *logits,
    size_t n_rows, size_t n, const float *temperature, const int32_t *top_k,
    const float *top_p, const double *u)
{
    size_t        r;
    fg_k_cand_t  *cand;

    (void) s;

    cand = malloc(n * sizeof(fg_k_cand_t));
    if (cand == NULL) {
        return cudaErrorMemoryAllocation;
    }

    for (r = 0; r < n_rows; r++) {
        out[r] = fg_k_sample(logits + r * n, n, temperature[r],
                             (size_t) top_k[r], top_p[r], u[r], cand);
    }

    free(cand);

    return cudaSuccess;
}
