
/*
 * fairgate: the cuda backend: the cpu backend's forward pass (fg_model.c)
 * on one GPU, cuBLAS for the matrix products of many rows and the kernels
 * of kernels/cuda/ for the rest.  This file is its table: create (the GPU,
 * its stream, cuBLAS, and the device memory of fg_cuda_load.c, all taken
 * then), destroy and info; forward is fg_cuda_step.c's.
 *
 * Built as its own shared object, build/fairgate-backend-cuda.so, which
 * fg_backend.c dlopen()s only when --backend cuda is asked for: the engine
 * does not link CUDA, and a machine without it never loads it.  The object
 * exports fg_backend_cuda (this table) and nothing else.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_cuda_int.h"
#include "fg_mem.h"


#define FG_CUDA_BLOCK_SIZE   16
#define FG_CUDA_MAX_TOKENS   512
#define FG_CUDA_MAX_BATCH    256


static fg_backend_t *fg_cuda_create(const fg_backend_conf_t *conf,
    char *err, size_t errlen);
static void fg_cuda_destroy(fg_backend_t *b);
static void fg_cuda_info(fg_backend_t *b, fg_backend_info_t *info);
static int fg_cuda_kv_save(fg_backend_t *b, const int32_t *blocks,
    uint32_t n, void *host, char *err, size_t errlen);
static int fg_cuda_kv_load(fg_backend_t *b, const int32_t *blocks,
    uint32_t n, const void *host, char *err, size_t errlen);


__attribute__((visibility("default")))
const fg_backend_ops_t  fg_backend_cuda = {
    "cuda",
    fg_cuda_create,
    fg_cuda_destroy,
    fg_cuda_info,
    fg_cuda_forward,
    fg_cuda_kv_save,
    fg_cuda_kv_load,
    NULL                        /* sliding layers keep every position */
};


/*
 * The GPU that FAIRGATE_CUDA_DEVICE names (the first by default), once a
 * model is given; -1 with err set when there is none to use.
 */
static int
fg_cuda_device(const fg_backend_conf_t *conf, char *err, size_t errlen)
{
    int          count, dev;
    char        *env;
    cudaError_t  ce;

    if (conf->model_path == NULL || conf->model_path[0] == '\0') {
        snprintf(err, errlen, "the cuda backend needs a model file");
        return -1;
    }

    /* no driver, no device, a driver too old: all "no usable GPU" */
    ce = cudaGetDeviceCount(&count);

    if (ce != cudaSuccess || count == 0) {
        snprintf(err, errlen, "the cuda backend found no usable GPU (%s%s, "
                 "error %d); --backend cpu runs without one",
                 ce != cudaSuccess ? "cudaGetDeviceCount: " : "",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "no devices",
                 (int) ce);
        return -1;
    }

    env = getenv("FAIRGATE_CUDA_DEVICE");
    dev = env ? atoi(env) : 0;

    if (dev < 0 || dev >= count) {
        snprintf(err, errlen, "FAIRGATE_CUDA_DEVICE=%d: there are %d GPUs",
                 dev, count);
        return -1;
    }

    return dev;
}


/* cuBLAS on the backend's stream, with the backend's workspace */
static int
fg_cuda_blas(fg_backend_t *b, char *err, size_t errlen)
{
    cublasStatus_t  bs;

    bs = cublasCreate(&b->blas);

    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasCreate: %s",
                 cublasGetStatusString(bs));
        b->blas = NULL;
        return -1;
    }

    /* our own workspace: cuBLAS allocates nothing while a graph records */
    if (cublasSetStream(b->blas, b->stream) != CUBLAS_STATUS_SUCCESS
        || cublasSetWorkspace(b->blas, b->blas_ws, FG_CUDA_WORKSPACE)
           != CUBLAS_STATUS_SUCCESS)
    {
        snprintf(err, errlen, "cuda: cannot set cuBLAS's stream");
        return -1;
    }

    return 0;
}


/* the backend's one line: the GPU, what it holds, what is left free */
static void
fg_cuda_log(fg_backend_t *b, const struct cudaDeviceProp *prop)
{
    size_t  free_b, total_b;

    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        free_b = 0;
        total_b = 0;
    }

    fprintf(stderr, "fairgate-engine: cuda: %s (sm_%d%d, %zu MiB), "
            "weights %zu MiB, KV cache %u blocks (%zu MiB), %zu MiB free\n",
            prop->name, prop->major, prop->minor, total_b >> 20,
            b->wbytes >> 20, b->kv_blocks, b->kv_bytes >> 20, free_b >> 20);
}


static fg_backend_t *
fg_cuda_create(const fg_backend_conf_t *conf, char *err, size_t errlen)
{
    int                    dev;
    char                  *env;
    cudaError_t            ce;
    fg_backend_t          *b;
    struct cudaDeviceProp  prop;

    /* its cache is device memory of its own (docs/multi-model.md) */
    if (conf->kv_arena) {
        snprintf(err, errlen, "the cuda backend keeps a KV cache of its "
                 "own: it takes no shared arena");
        return NULL;
    }

    /* its kernels read and write halves only (fg_kernels_cuda_attn.cu) */
    if (conf->kv_type != FG_BACKEND_KV_F16) {
        snprintf(err, errlen, "the cuda backend keeps its KV cache in F16 "
                 "only: --kv-type f16");
        return NULL;
    }

    dev = fg_cuda_device(conf, err, errlen);

    if (dev < 0) {
        return NULL;
    }

    b = calloc(1, sizeof(fg_backend_t));
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    b->device = dev;
    b->block_size = conf->block_size ? conf->block_size : FG_CUDA_BLOCK_SIZE;
    b->max_rows = conf->max_tokens ? conf->max_tokens : FG_CUDA_MAX_TOKENS;
    b->max_batch = conf->max_batch ? conf->max_batch : FG_CUDA_MAX_BATCH;
    b->max_out = b->max_batch < b->max_rows ? b->max_batch : b->max_rows;

    env = getenv("FAIRGATE_CUDA_GRAPHS");
    b->use_graphs = env == NULL || strcmp(env, "0") != 0;

    if (b->block_size > FG_K_MAX_BLOCK) {
        snprintf(err, errlen, "a KV block of %u positions (1 to %u)",
                 b->block_size, FG_K_MAX_BLOCK);
        goto failed;
    }

    ce = cudaSetDevice(dev);

    if (ce == cudaSuccess) {
        ce = cudaGetDeviceProperties(&prop, dev);
    }

    if (fg_cuda_fail(ce, "the GPU", err, errlen) != 0) {
        goto failed;
    }

    ce = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking);

    if (fg_cuda_fail(ce, "cudaStreamCreate", err, errlen) != 0) {
        b->stream = NULL;
        goto failed;
    }

    if (fg_cuda_load(b, conf->model_path, err, errlen) != 0
        || fg_cuda_scratch(b, err, errlen) != 0
        || fg_cuda_blas(b, err, errlen) != 0
        || fg_cuda_kv_alloc(b, conf->kv_blocks, err, errlen) != 0)
    {
        goto failed;
    }

    fg_cuda_log(b, &prop);

    return b;

failed:

    fg_cuda_destroy(b);

    return NULL;
}


static void
fg_cuda_destroy(fg_backend_t *b)
{
    if (b == NULL) {
        return;
    }

    fg_cuda_graphs_clear(b);

    if (b->stream) {
        cudaStreamSynchronize(b->stream);
    }

    if (b->blas) {
        cublasDestroy(b->blas);
    }

    cudaFree(b->kv);
    cudaFree(b->x);
    cudaFree(b->xb);
    cudaFree(b->q);
    cudaFree(b->k);
    cudaFree(b->v);
    cudaFree(b->hg);
    cudaFree(b->hu);
    cudaFree(b->qc);
    cudaFree(b->xc);
    cudaFree(b->logits);
    cudaFree(b->xh);
    cudaFree(b->wh);
    cudaFree(b->blas_ws);
    cudaFree(b->d_step);
    cudaFree(b->wmem);

    if (b->h_step) {
        cudaFreeHost(b->h_step);
    }

    if (b->stream) {
        cudaStreamDestroy(b->stream);
    }

    fg_llama_close(b->gguf, &b->llama);
    fg_free_all(b->layers, b->passes, b);
}


static void
fg_cuda_info(fg_backend_t *b, fg_backend_info_t *info)
{
    const fg_llama_hparams_t  *hp;

    hp = b->hp;

    info->vocab = hp->n_vocab;
    info->context = hp->n_ctx_train;
    info->n_layer = hp->n_layer;
    info->n_kv_head = hp->n_head_kv;
    info->head_dim = hp->head_dim;
    info->kv_bytes_per_block = (size_t) 2 * hp->n_layer * b->kv_dim
                               * b->block_size * sizeof(uint16_t);
    info->kv_blocks = b->kv_blocks;

    /* no embeddings yet: the batcher refuses them at submission */
    info->n_embd = 0;
}


/*
 * Copies blocks between the device's cache and a host buffer
 * (fg_backend.h's kv_save, kv_load), on the backend's stream, one 2D copy
 * a block: its rows are layer 0's keys, its values, layer 1's keys ...,
 * kv_blocks blocks apart on the device, side by side on the host.  The
 * host buffer is the batcher's, not pinned: a pageable copy is staged by
 * the driver, and a swap is rare next to the steps.
 */
static int
fg_cuda_kv_copy(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    char *host, int save, char *err, size_t errlen)
{
    char         *dev;
    size_t        per, pitch, rows;
    uint32_t      i;
    cudaError_t   ce;

    per = (size_t) b->block_size * b->kv_dim * sizeof(uint16_t);
    pitch = per * b->kv_blocks;
    rows = (size_t) 2 * b->hp->n_layer;
    ce = cudaSuccess;

    for (i = 0; i < n; i++) {
        if (blocks[i] < 0 || (uint32_t) blocks[i] >= b->kv_blocks) {
            snprintf(err, errlen, "cuda: KV block %d of a swap is outside "
                     "the cache of %u", blocks[i], b->kv_blocks);
            return -1;
        }
    }

    for (i = 0; i < n && ce == cudaSuccess; i++) {
        dev = (char *) b->kv + (size_t) blocks[i] * per;

        ce = save ? cudaMemcpy2DAsync(host, per, dev, pitch, per, rows,
                                      cudaMemcpyDeviceToHost, b->stream)
                  : cudaMemcpy2DAsync(dev, pitch, host, per, per, rows,
                                      cudaMemcpyHostToDevice, b->stream);
        host += rows * per;
    }

    if (ce == cudaSuccess) {
        ce = cudaStreamSynchronize(b->stream);
    }

    return fg_cuda_fail(ce, save ? "a KV swap out" : "a KV swap in", err,
                        errlen);
}


static int
fg_cuda_kv_save(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    void *host, char *err, size_t errlen)
{
    return fg_cuda_kv_copy(b, blocks, n, host, 1, err, errlen);
}


static int
fg_cuda_kv_load(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    const void *host, char *err, size_t errlen)
{
    /* not written through: the copy's direction is save's */
    return fg_cuda_kv_copy(b, blocks, n, (char *) host, 0, err, errlen);
}
