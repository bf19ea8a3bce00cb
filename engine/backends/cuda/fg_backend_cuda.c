
/*
 * fairgate: the cuda backend: the cpu backend's forward pass (fg_model.c)
 * on one GPU, cuBLAS for the matrix products of many rows and the kernels
 * of kernels/cuda/fg_kernels_cuda.cu for the rest.
 *
 * Built as its own shared object, build/fairgate-backend-cuda.so, which
 * fg_backend.c dlopen()s only when --backend cuda is asked for: the engine
 * does not link CUDA, and a machine without it never loads it.  The object
 * exports fg_backend_cuda (this table) and nothing else.
 *
 * Device memory, all taken at create time:
 *
 *   weights    one allocation: matrices in the file's type (F32, F16,
 *              BF16, Q8_0), small vectors widened to F32
 *   KV cache   halves, the kernels' layout; --kv-blocks, or what free
 *              memory holds after everything else (FG_CUDA_KV_FRACTION)
 *   scratch    activations for max_tokens rows, the halves cuBLAS takes,
 *              logits for the wanted rows, the step's inputs
 *
 * A step copies its inputs (tokens, positions, block tables) in one
 * transfer, runs the layers on one stream and copies the wanted logits
 * back.  Decode steps (one wanted token per sequence) are captured once
 * per batch size and table width as a CUDA graph and replayed, which
 * saves the launch cost of some 400 kernels a token; FAIRGATE_CUDA_GRAPHS=0
 * turns that off.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fg_backend.h"
#include "fg_ggml_types.h"
#include "fg_gguf.h"
#include "fg_llama.h"
#include "fg_kernels_cuda.h"


#define FG_CUDA_BLOCK_SIZE   16
#define FG_CUDA_MAX_TOKENS   512
#define FG_CUDA_MAX_BATCH    256

/* of the free memory left after weights and scratch, for the KV cache */
#define FG_CUDA_KV_FRACTION  0.90
#define FG_CUDA_KV_RESERVE   ((size_t) 256 << 20)

#define FG_CUDA_WORKSPACE    ((size_t) 32 << 20)
#define FG_CUDA_GRAPHS       64
#define FG_CUDA_ALIGN        256


#define fg_cuda_tname(t)     (int) (t)->name.len, (t)->name.data


typedef struct {
    const void             *data;           /* device */
    fg_k_type_e             type;
    uint32_t                in;
    uint32_t                out;
} fg_cuda_mat_t;


typedef struct {
    float                  *attn_norm;      /* device, F32 */
    float                  *ffn_norm;
    float                  *bq;             /* or NULL */
    float                  *bk;
    float                  *bv;
    fg_cuda_mat_t           wq;
    fg_cuda_mat_t           wk;
    fg_cuda_mat_t           wv;
    fg_cuda_mat_t           wo;
    fg_cuda_mat_t           w_gate;
    fg_cuda_mat_t           w_up;
    fg_cuda_mat_t           w_down;
} fg_cuda_layer_t;


typedef struct {
    cudaGraphExec_t         exec;
    uint32_t                n;
    uint32_t                stride;
    uint64_t                used;
} fg_cuda_graph_t;


/* where a step's inputs lie in the staging buffers (int32 offsets) */
typedef struct {
    size_t                  tokens;
    size_t                  pos;
    size_t                  seq;
    size_t                  orow;           /* wanted rows, pass-relative */
    size_t                  opos;
    size_t                  oseq;
    size_t                  tables;
    size_t                  end;
    size_t                  stride;
    size_t                  rows_per_seq;
} fg_cuda_step_t;


/* a pass: rows [r0, r0 + n) of a step, wanted rows [o0, o0 + n_out) */
typedef struct {
    size_t                  r0;
    size_t                  n;
    size_t                  o0;
    size_t                  n_out;
} fg_cuda_pass_t;


struct fg_backend_s {
    fg_gguf_t              *gguf;
    fg_llama_model_t        llama;
    const fg_llama_hparams_t *hp;
    uint32_t                q_dim;
    uint32_t                kv_dim;
    fg_k_rope_e             rope;

    int                     device;
    cudaStream_t            stream;
    cublasHandle_t          blas;
    void                   *blas_ws;

    char                   *wmem;           /* the weights' allocation */
    size_t                  wbytes;
    size_t                  woff;
    fg_cuda_mat_t           tok_embd;
    fg_cuda_mat_t           output;
    float                  *output_norm;
    float                  *inv_freq;
    fg_cuda_layer_t        *layers;

    void                   *kv;             /* halves */
    size_t                  kv_bytes;
    uint32_t                kv_blocks;
    uint32_t                block_size;

    uint32_t                max_rows;
    uint32_t                max_out;
    uint32_t                max_batch;
    float                  *x;              /* [max_rows][n_embd] */
    float                  *xb;
    float                  *q;              /* [max_rows][q_dim] */
    float                  *k;              /* [max_rows][kv_dim] */
    float                  *v;
    float                  *hg;             /* [max_rows][n_ff] */
    float                  *hu;
    float                  *qc;             /* the wanted rows' q, x */
    float                  *xc;
    float                  *logits;         /* [max_out][n_vocab] */
    void                   *xh;             /* x as halves for cuBLAS */
    void                   *wh;             /* a Q8_0 matrix as fp16 */

    int32_t                *d_step;
    int32_t                *h_step;         /* pinned */
    size_t                  step_cap;
    fg_cuda_pass_t         *passes;
    size_t                  passes_cap;

    fg_cuda_graph_t         graphs[FG_CUDA_GRAPHS];
    uint64_t                clock;
    unsigned                use_graphs:1;

    cudaError_t             cu_err;         /* first failure of a pass */
    const char             *cu_what;
};


static fg_backend_t *fg_cuda_create(const fg_backend_conf_t *conf,
    char *err, size_t errlen);
static void fg_cuda_destroy(fg_backend_t *b);
static void fg_cuda_info(fg_backend_t *b, fg_backend_info_t *info);
static int fg_cuda_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen);


__attribute__((visibility("default")))
const fg_backend_ops_t  fg_backend_cuda = {
    "cuda",
    fg_cuda_create,
    fg_cuda_destroy,
    fg_cuda_info,
    fg_cuda_forward
};


/* a CUDA call's failure as a sentence; 0 when it succeeded */
static int
fg_cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess) {
        return 0;
    }

    snprintf(err, errlen, "cuda: %s: %s (error %d)", what,
             cudaGetErrorString(e), (int) e);

    return -1;
}


/* records the first failure of a pass of launches */
static void
fg_cuda_check(fg_backend_t *b, cudaError_t e, const char *what)
{
    if (e != cudaSuccess && b->cu_err == cudaSuccess) {
        b->cu_err = e;
        b->cu_what = what;
    }
}


static size_t
fg_cuda_align(size_t n)
{
    return (n + FG_CUDA_ALIGN - 1) / FG_CUDA_ALIGN * FG_CUDA_ALIGN;
}


/* bytes a tensor takes in the weights' allocation */
static size_t
fg_cuda_tensor_bytes(const fg_gguf_tensor_t *t, int as_f32)
{
    if (t == NULL) {
        return 0;
    }

    if (as_f32) {
        return fg_cuda_align((size_t) t->ne[0] * sizeof(float));
    }

    return fg_cuda_align((size_t) fg_ggml_row_size(t->type, t->ne[0])
                         * (size_t) t->ne[1]);
}


static int
fg_cuda_upload_mat(fg_backend_t *b, fg_cuda_mat_t *mat,
    const fg_gguf_tensor_t *t, char *err, size_t errlen)
{
    size_t       bytes;
    cudaError_t  e;

    mat->type = (fg_k_type_e) t->type;
    mat->in = (uint32_t) t->ne[0];
    mat->out = (uint32_t) t->ne[1];

    if (!fg_ggml_type_supported(t->type)
        || (t->type == FG_GGML_Q8_0 && mat->in % FG_K_QK8_0 != 0))
    {
        snprintf(err, errlen, "tensor %.*s: %s rows of %u values are not "
                 "whole blocks", fg_cuda_tname(t),
                 fg_ggml_type_name(t->type), mat->in);
        return -1;
    }

    bytes = (size_t) fg_ggml_row_size(t->type, mat->in) * mat->out;

    e = cudaMemcpy(b->wmem + b->woff, t->data, bytes,
                   cudaMemcpyHostToDevice);

    if (fg_cuda_fail(e, "copying the weights", err, errlen) != 0) {
        return -1;
    }

    mat->data = b->wmem + b->woff;
    b->woff += fg_cuda_align(bytes);

    return 0;
}


/* a small vector, widened to F32 on the host; NULL tensor: NULL */
static int
fg_cuda_upload_vec(fg_backend_t *b, float **vec, const fg_gguf_tensor_t *t,
    char *err, size_t errlen)
{
    float       *tmp;
    size_t       n;
    cudaError_t  e;

    *vec = NULL;

    if (t == NULL) {
        return 0;
    }

    n = (size_t) t->ne[0];

    tmp = malloc(n * sizeof(float));
    if (tmp == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (fg_ggml_to_f32(t->type, t->data, tmp, n) != 0) {
        snprintf(err, errlen, "tensor %.*s: cannot read type %s",
                 fg_cuda_tname(t), fg_ggml_type_name(t->type));
        free(tmp);
        return -1;
    }

    e = cudaMemcpy(b->wmem + b->woff, tmp, n * sizeof(float),
                   cudaMemcpyHostToDevice);
    free(tmp);

    if (fg_cuda_fail(e, "copying the weights", err, errlen) != 0) {
        return -1;
    }

    *vec = (float *) (b->wmem + b->woff);
    b->woff += fg_cuda_align(n * sizeof(float));

    return 0;
}


/* the model's shape, as the kernels need it */
static int
fg_cuda_check_model(const fg_llama_hparams_t *hp, char *err, size_t errlen)
{
    if ((uint64_t) hp->n_head * hp->head_dim != hp->n_embd) {
        snprintf(err, errlen, "%u heads of %u values make %u, not the "
                 "embedding length %u", hp->n_head, hp->head_dim,
                 hp->n_head * hp->head_dim, hp->n_embd);
        return -1;
    }

    if (hp->head_dim > FG_CUK_MAX_HEAD_DIM || hp->n_rot > hp->head_dim
        || hp->n_rot % 2 != 0)
    {
        snprintf(err, errlen, "a head of %u values, %u rotated: the "
                 "kernels take up to %u, an even number rotated",
                 hp->head_dim, hp->n_rot, FG_CUK_MAX_HEAD_DIM);
        return -1;
    }

    if (hp->n_head_kv == 0 || hp->n_head % hp->n_head_kv != 0) {
        snprintf(err, errlen, "%u query heads do not share %u key/value "
                 "heads evenly", hp->n_head, hp->n_head_kv);
        return -1;
    }

    if (hp->n_vocab > INT32_MAX) {
        snprintf(err, errlen, "a vocabulary of %u tokens is more than "
                 "32-bit token ids number", hp->n_vocab);
        return -1;
    }

    return 0;
}


static int
fg_cuda_load(fg_backend_t *b, const char *path, char *err, size_t errlen)
{
    char                       e[FG_GGUF_ERR_LEN];
    float                     *freqs;
    size_t                     bytes;
    uint32_t                   l;
    cudaError_t                ce;
    fg_cuda_layer_t           *cl;
    const fg_llama_layer_t    *ll;
    const fg_llama_hparams_t  *hp;

    b->gguf = fg_gguf_open(path, e, sizeof(e));
    if (b->gguf == NULL) {
        snprintf(err, errlen, "%s", e);
        return -1;
    }

    if (fg_llama_load(b->gguf, &b->llama, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "%s: %s", path, e);
        return -1;
    }

    hp = &b->llama.hp;
    b->hp = hp;

    if (fg_cuda_check_model(hp, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "%s: %s", path, e);
        return -1;
    }

    b->q_dim = hp->n_head * hp->head_dim;
    b->kv_dim = hp->n_head_kv * hp->head_dim;
    b->rope = hp->rope_pairing == FG_ROPE_HALVES ? FG_K_ROPE_HALVES
                                                 : FG_K_ROPE_ADJACENT;

    bytes = fg_cuda_tensor_bytes(b->llama.tok_embd, 0)
            + fg_cuda_tensor_bytes(b->llama.output_norm, 1)
            + fg_cuda_align(hp->n_rot / 2 * sizeof(float));

    if (!b->llama.tied) {
        bytes += fg_cuda_tensor_bytes(b->llama.output, 0);
    }

    for (l = 0; l < hp->n_layer; l++) {
        ll = &b->llama.layers[l];

        bytes += fg_cuda_tensor_bytes(ll->attn_norm, 1)
                 + fg_cuda_tensor_bytes(ll->ffn_norm, 1)
                 + fg_cuda_tensor_bytes(ll->bq, 1)
                 + fg_cuda_tensor_bytes(ll->bk, 1)
                 + fg_cuda_tensor_bytes(ll->bv, 1)
                 + fg_cuda_tensor_bytes(ll->wq, 0)
                 + fg_cuda_tensor_bytes(ll->wk, 0)
                 + fg_cuda_tensor_bytes(ll->wv, 0)
                 + fg_cuda_tensor_bytes(ll->wo, 0)
                 + fg_cuda_tensor_bytes(ll->w_gate, 0)
                 + fg_cuda_tensor_bytes(ll->w_up, 0)
                 + fg_cuda_tensor_bytes(ll->w_down, 0);
    }

    ce = cudaMalloc((void **) &b->wmem, bytes);

    if (ce != cudaSuccess) {
        snprintf(err, errlen, "cuda: the weights of %s need %zu MiB of "
                 "device memory: %s", path, bytes >> 20,
                 cudaGetErrorString(ce));
        b->wmem = NULL;
        return -1;
    }

    b->wbytes = bytes;

    b->layers = calloc(hp->n_layer, sizeof(fg_cuda_layer_t));
    freqs = malloc(hp->n_rot / 2 * sizeof(float) + 1);

    if (b->layers == NULL || freqs == NULL) {
        free(freqs);
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    fg_llama_rope_freqs(hp, freqs);

    ce = cudaMemcpy(b->wmem + b->woff, freqs, hp->n_rot / 2 * sizeof(float),
                    cudaMemcpyHostToDevice);
    free(freqs);

    if (fg_cuda_fail(ce, "copying the weights", err, errlen) != 0) {
        return -1;
    }

    b->inv_freq = (float *) (b->wmem + b->woff);
    b->woff += fg_cuda_align(hp->n_rot / 2 * sizeof(float));

    if (fg_cuda_upload_mat(b, &b->tok_embd, b->llama.tok_embd, e, sizeof(e))
        || fg_cuda_upload_vec(b, &b->output_norm, b->llama.output_norm, e,
                              sizeof(e)))
    {
        goto invalid;
    }

    if (b->llama.tied) {
        b->output = b->tok_embd;

    } else if (fg_cuda_upload_mat(b, &b->output, b->llama.output, e,
                                  sizeof(e)))
    {
        goto invalid;
    }

    for (l = 0; l < hp->n_layer; l++) {
        ll = &b->llama.layers[l];
        cl = &b->layers[l];

        if (fg_cuda_upload_vec(b, &cl->attn_norm, ll->attn_norm, e,
                               sizeof(e))
            || fg_cuda_upload_vec(b, &cl->ffn_norm, ll->ffn_norm, e,
                                  sizeof(e))
            || fg_cuda_upload_vec(b, &cl->bq, ll->bq, e, sizeof(e))
            || fg_cuda_upload_vec(b, &cl->bk, ll->bk, e, sizeof(e))
            || fg_cuda_upload_vec(b, &cl->bv, ll->bv, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->wq, ll->wq, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->wk, ll->wk, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->wv, ll->wv, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->wo, ll->wo, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->w_gate, ll->w_gate, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->w_up, ll->w_up, e, sizeof(e))
            || fg_cuda_upload_mat(b, &cl->w_down, ll->w_down, e, sizeof(e)))
        {
            goto invalid;
        }
    }

    return 0;

invalid:

    snprintf(err, errlen, "%s: %s", path, e);

    return -1;
}


/* every matrix of the model, for sizing the scratch */
static size_t
fg_cuda_mats(fg_backend_t *b, const fg_cuda_mat_t **mats, size_t cap)
{
    size_t                  n;
    uint32_t                l;
    const fg_cuda_layer_t  *cl;

    n = 0;

    if (n < cap) {
        mats[n++] = &b->output;
    }

    for (l = 0; l < b->hp->n_layer && n + 7 <= cap; l++) {
        cl = &b->layers[l];
        mats[n++] = &cl->wq;
        mats[n++] = &cl->wk;
        mats[n++] = &cl->wv;
        mats[n++] = &cl->wo;
        mats[n++] = &cl->w_gate;
        mats[n++] = &cl->w_up;
        mats[n++] = &cl->w_down;
    }

    return n;
}



static int
fg_cuda_malloc(void **p, size_t bytes, char *err, size_t errlen)
{
    cudaError_t  ce;

    ce = cudaMalloc(p, bytes ? bytes : 1);

    if (ce != cudaSuccess) {
        snprintf(err, errlen, "cuda: %zu MiB of scratch: %s", bytes >> 20,
                 cudaGetErrorString(ce));
        *p = NULL;
        return -1;
    }

    return 0;
}


static int
fg_cuda_scratch(fg_backend_t *b, char *err, size_t errlen)
{
    size_t                     rows, out, in_max, q8_max, i, n, f, hf;
    const fg_cuda_mat_t       *mats[8];
    struct {
        void                 **p;
        size_t                 bytes;
    }                          bufs[13];
    const fg_llama_hparams_t  *hp;

    hp = b->hp;
    rows = b->max_rows;
    out = b->max_out;

    in_max = 0;
    q8_max = 0;

    /* the output matrix, then each layer's seven: the first layer's
     * shapes are every layer's */
    n = fg_cuda_mats(b, mats, 8);

    for (i = 0; i < n; i++) {
        in_max = mats[i]->in > in_max ? mats[i]->in : in_max;

        if (mats[i]->type == FG_K_Q8_0
            && (size_t) mats[i]->in * mats[i]->out > q8_max)
        {
            q8_max = (size_t) mats[i]->in * mats[i]->out;
        }
    }

    f = sizeof(float);
    hf = sizeof(uint16_t);

    bufs[0].p = (void **) &b->x;
    bufs[0].bytes = rows * hp->n_embd * f;
    bufs[1].p = (void **) &b->xb;
    bufs[1].bytes = rows * hp->n_embd * f;
    bufs[2].p = (void **) &b->q;
    bufs[2].bytes = rows * b->q_dim * f;
    bufs[3].p = (void **) &b->k;
    bufs[3].bytes = rows * b->kv_dim * f;
    bufs[4].p = (void **) &b->v;
    bufs[4].bytes = rows * b->kv_dim * f;
    bufs[5].p = (void **) &b->hg;
    bufs[5].bytes = rows * hp->n_ff * f;
    bufs[6].p = (void **) &b->hu;
    bufs[6].bytes = rows * hp->n_ff * f;
    bufs[7].p = (void **) &b->qc;
    bufs[7].bytes = out * b->q_dim * f;
    bufs[8].p = (void **) &b->xc;
    bufs[8].bytes = out * hp->n_embd * f;
    bufs[9].p = (void **) &b->logits;
    bufs[9].bytes = out * hp->n_vocab * f;
    bufs[10].p = &b->xh;
    bufs[10].bytes = rows * in_max * hf;
    bufs[11].p = &b->wh;
    bufs[11].bytes = q8_max * hf;
    bufs[12].p = &b->blas_ws;
    bufs[12].bytes = FG_CUDA_WORKSPACE;

    for (i = 0; i < 13; i++) {
        if (fg_cuda_malloc(bufs[i].p, bufs[i].bytes, err, errlen) != 0) {
            return -1;
        }
    }

    return 0;
}


static int
fg_cuda_kv_alloc(fg_backend_t *b, uint32_t blocks, char *err, size_t errlen)
{
    size_t       per_block, free_b, total_b, reserve;
    uint64_t     n;
    cudaError_t  ce;

    per_block = (size_t) 2 * b->hp->n_layer * b->kv_dim * b->block_size
                * sizeof(uint16_t);

    if (blocks == 0) {
        ce = cudaMemGetInfo(&free_b, &total_b);

        if (fg_cuda_fail(ce, "cudaMemGetInfo", err, errlen) != 0) {
            return -1;
        }

        /* cuBLAS and the driver's reserve; a quarter on a small GPU */
        reserve = FG_CUDA_KV_RESERVE < free_b / 4 ? FG_CUDA_KV_RESERVE
                                                  : free_b / 4;

        n = (uint64_t) ((double) (free_b - reserve) * FG_CUDA_KV_FRACTION
                        / (double) per_block);

        n = n < (1u << 24) ? n : (1u << 24);

        if (n == 0) {
            snprintf(err, errlen, "cuda: %zu MiB free after the weights "
                     "and scratch: no room for a KV cache block of %zu KiB",
                     free_b >> 20, per_block >> 10);
            return -1;
        }

        blocks = (uint32_t) n;
    }

    ce = cudaMalloc(&b->kv, (size_t) blocks * per_block);

    if (ce != cudaSuccess) {
        snprintf(err, errlen, "cuda: a KV cache of %u blocks (%zu MiB): %s; "
                 "--kv-blocks sets fewer", blocks,
                 (size_t) blocks * per_block >> 20, cudaGetErrorString(ce));
        b->kv = NULL;
        return -1;
    }

    b->kv_blocks = blocks;
    b->kv_bytes = (size_t) blocks * per_block;

    return 0;
}


static fg_backend_t *
fg_cuda_create(const fg_backend_conf_t *conf, char *err, size_t errlen)
{
    int                    count, dev;
    char                  *env;
    size_t                 free_b, total_b;
    cudaError_t            ce;
    fg_backend_t          *b;
    cublasStatus_t         bs;
    struct cudaDeviceProp  prop;

    if (conf->model_path == NULL || conf->model_path[0] == '\0') {
        snprintf(err, errlen, "the cuda backend needs a model file");
        return NULL;
    }

    /* no driver, no device, a driver too old: all "no usable GPU" */
    ce = cudaGetDeviceCount(&count);

    if (ce != cudaSuccess || count == 0) {
        snprintf(err, errlen, "the cuda backend found no usable GPU (%s%s, "
                 "error %d); --backend cpu runs without one",
                 ce != cudaSuccess ? "cudaGetDeviceCount: " : "",
                 ce != cudaSuccess ? cudaGetErrorString(ce) : "no devices",
                 (int) ce);
        return NULL;
    }

    env = getenv("FAIRGATE_CUDA_DEVICE");
    dev = env ? atoi(env) : 0;

    if (dev < 0 || dev >= count) {
        snprintf(err, errlen, "FAIRGATE_CUDA_DEVICE=%d: there are %d GPUs",
                 dev, count);
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
        || fg_cuda_scratch(b, err, errlen) != 0)
    {
        goto failed;
    }

    bs = cublasCreate(&b->blas);

    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, errlen, "cuda: cublasCreate: %s",
                 cublasGetStatusString(bs));
        b->blas = NULL;
        goto failed;
    }

    /* our own workspace: cuBLAS allocates nothing while a graph records */
    if (cublasSetStream(b->blas, b->stream) != CUBLAS_STATUS_SUCCESS
        || cublasSetWorkspace(b->blas, b->blas_ws, FG_CUDA_WORKSPACE)
           != CUBLAS_STATUS_SUCCESS)
    {
        snprintf(err, errlen, "cuda: cannot set cuBLAS's stream");
        goto failed;
    }

    if (fg_cuda_kv_alloc(b, conf->kv_blocks, err, errlen) != 0) {
        goto failed;
    }

    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        free_b = 0;
        total_b = 0;
    }

    fprintf(stderr, "fairgate-engine: cuda: %s (sm_%d%d, %zu MiB), "
            "weights %zu MiB, KV cache %u blocks (%zu MiB), %zu MiB free\n",
            prop.name, prop.major, prop.minor, total_b >> 20,
            b->wbytes >> 20, b->kv_blocks, b->kv_bytes >> 20, free_b >> 20);

    return b;

failed:

    fg_cuda_destroy(b);

    return NULL;
}


static void
fg_cuda_graphs_clear(fg_backend_t *b)
{
    size_t  i;

    for (i = 0; i < FG_CUDA_GRAPHS; i++) {
        if (b->graphs[i].exec) {
            cudaGraphExecDestroy(b->graphs[i].exec);
        }
    }

    memset(b->graphs, 0, sizeof(b->graphs));
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

    free(b->layers);
    free(b->passes);

    if (b->llama.layers) {
        fg_llama_free(&b->llama);
    }

    fg_gguf_close(b->gguf);
    free(b);
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
}


/*
 * y[n][out] (+)= x[n][in] W^T: the GEMV kernel for a few rows, where the
 * weights' bytes are the cost; cuBLAS, fp32 accumulation, beyond.
 */
static void
fg_cuda_matmul(fg_backend_t *b, float *y, const float *x,
    const fg_cuda_mat_t *w, size_t n, int accumulate)
{
    float           alpha, beta;
    const void     *a, *bx;
    cudaDataType_t  type;
    cublasStatus_t  st;

    if (n <= FG_CUK_GEMV_ROWS) {
        fg_cuda_check(b, fg_cuk_gemv(b->stream, y, x, w->data, w->type, n,
                                     w->in, w->out, accumulate),
                      "the GEMV kernel");
        return;
    }

    a = w->data;
    bx = x;
    type = CUDA_R_32F;

    switch (w->type) {

    case FG_K_F16:
    case FG_K_Q8_0:
        type = CUDA_R_16F;
        break;

    case FG_K_BF16:
        type = CUDA_R_16BF;
        break;

    default:
        break;
    }

    if (w->type == FG_K_Q8_0) {
        fg_cuda_check(b, fg_cuk_q8_0_to_f16(b->stream, b->wh, w->data,
                                            (size_t) w->in * w->out),
                      "dequantizing Q8_0");
        a = b->wh;
    }

    if (type != CUDA_R_32F) {
        fg_cuda_check(b, fg_cuk_to_half(b->stream, b->xh, x, n * w->in,
                                        type == CUDA_R_16BF ? FG_K_BF16
                                                            : FG_K_F16),
                      "converting activations");
        bx = b->xh;
    }

    alpha = 1.0f;
    beta = accumulate ? 1.0f : 0.0f;

    /*
     * Column-major, cuBLAS's view: W [out][in] row-major is W^T in
     * column-major with ld in; y^T (out x n) = W (out x in) x^T (in x n).
     */
    st = cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int) w->out,
                      (int) n, (int) w->in, &alpha, a, type, (int) w->in, bx,
                      type, (int) w->in, &beta, y, CUDA_R_32F, (int) w->out,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);

    if (st != CUBLAS_STATUS_SUCCESS && b->cu_err == cudaSuccess) {
        b->cu_err = cudaErrorUnknown;
        b->cu_what = cublasGetStatusString(st);
    }
}


/*
 * Products of several matrices over the same x (q, k, v; gate, up): one
 * GEMV launch for a few rows when they share a type and width, which
 * decode at batch 1 spends in launch gaps otherwise; else one by one.
 */
static void
fg_cuda_matmul3(fg_backend_t *b, const float *x, const fg_cuda_mat_t **w,
    float **y, size_t k, size_t n)
{
    size_t             i;
    fg_cuk_gemv_set_t  set;

    for (i = 1; i < k; i++) {
        if (w[i]->type != w[0]->type || w[i]->in != w[0]->in) {
            break;
        }
    }

    if (n > FG_CUK_GEMV_ROWS || i < k) {
        for (i = 0; i < k; i++) {
            fg_cuda_matmul(b, y[i], x, w[i], n, 0);
        }

        return;
    }

    memset(&set, 0, sizeof(set));

    for (i = 0; i < k; i++) {
        set.w[i] = w[i]->data;
        set.y[i] = y[i];
        set.out[i] = (int) w[i]->out;
    }

    fg_cuda_check(b, fg_cuk_gemv_set(b->stream, &set, x, w[0]->type, n,
                                     w[0]->in, 0),
                  "the GEMV kernel");
}


/*
 * One pass of n rows starting at row r0 of the step (its inputs already
 * on the device), n_out of them wanted, their logits into b->logits.
 */
static void
fg_cuda_pass(fg_backend_t *b, const fg_cuda_step_t *st, size_t r0, size_t n,
    size_t o0, size_t n_out)
{
    int                        last;
    float                     *x, *q, *ys[3];
    uint32_t                   l;
    fg_cuk_kv_t                kv;
    fg_cuk_batch_t             kb;
    const fg_cuda_mat_t       *mats[3];
    const fg_cuda_layer_t     *cl;
    const fg_llama_hparams_t  *hp;

    hp = b->hp;

    kb.pos = b->d_step + st->pos + r0;
    kb.seq = b->d_step + st->seq + r0;
    kb.block_tables = b->d_step + st->tables;
    kb.max_blocks = st->stride;
    kb.n_tokens = n;
    kb.rows_per_seq = st->rows_per_seq;

    kv.block_size = b->block_size;
    kv.n_kv_head = hp->n_head_kv;
    kv.head_dim = hp->head_dim;

    x = b->x;
    q = b->q;

    fg_cuda_check(b, fg_cuk_embed(b->stream, x, b->d_step + st->tokens + r0,
                                  n, b->tok_embd.data, b->tok_embd.type,
                                  hp->n_embd),
                  "the embedding kernel");

    for (l = 0; l < hp->n_layer; l++) {
        cl = &b->layers[l];
        last = l + 1 == hp->n_layer;

        kv.k = (uint16_t *) b->kv + (size_t) 2 * l * b->kv_blocks
                                    * b->block_size * b->kv_dim;
        kv.v = (uint16_t *) kv.k + (size_t) b->kv_blocks * b->block_size
                                   * b->kv_dim;

        fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->xb, x, cl->attn_norm,
                                        n, hp->n_embd, hp->rms_eps),
                      "the rmsnorm kernel");

        mats[0] = &cl->wq;
        mats[1] = &cl->wk;
        mats[2] = &cl->wv;
        ys[0] = b->q;
        ys[1] = b->k;
        ys[2] = b->v;
        fg_cuda_matmul3(b, b->xb, mats, ys, 3, n);

        fg_cuda_check(b, fg_cuk_qkv(b->stream, b->q, b->k, b->v, cl->bq,
                                    cl->bk, cl->bv, &kv, &kb, hp->n_head,
                                    hp->n_rot, b->inv_freq, b->rope),
                      "the RoPE kernel");

        /* the last layer goes on with the wanted rows only (fg_model.c) */
        if (last && n_out < n) {
            if (n_out == 0) {
                return;
            }

            fg_cuda_check(b, fg_cuk_gather(b->stream, b->qc, b->q,
                                           b->d_step + st->orow + o0, n_out,
                                           b->q_dim),
                          "the gather kernel");
            fg_cuda_check(b, fg_cuk_gather(b->stream, b->xc, x,
                                           b->d_step + st->orow + o0, n_out,
                                           hp->n_embd),
                          "the gather kernel");

            kb.pos = b->d_step + st->opos + o0;
            kb.seq = b->d_step + st->oseq + o0;
            kb.n_tokens = n_out;
            kb.rows_per_seq = 1;
            x = b->xc;
            q = b->qc;
            n = n_out;
        }

        fg_cuda_check(b, fg_cuk_attention(b->stream, b->xb, q, &kv, &kb,
                                          hp->n_head),
                      "the attention kernel");

        fg_cuda_matmul(b, x, b->xb, &cl->wo, n, 1);

        fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->xb, x, cl->ffn_norm,
                                        n, hp->n_embd, hp->rms_eps),
                      "the rmsnorm kernel");

        mats[0] = &cl->w_gate;
        mats[1] = &cl->w_up;
        ys[0] = b->hg;
        ys[1] = b->hu;
        fg_cuda_matmul3(b, b->xb, mats, ys, 2, n);

        fg_cuda_check(b, fg_cuk_swiglu(b->stream, b->hg, b->hg, b->hu,
                                       n * hp->n_ff),
                      "the swiglu kernel");

        fg_cuda_matmul(b, x, b->hg, &cl->w_down, n, 1);
    }

    if (n_out == 0) {
        return;
    }

    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->xb, x, b->output_norm,
                                    n_out, hp->n_embd, hp->rms_eps),
                  "the rmsnorm kernel");

    fg_cuda_matmul(b, b->logits, b->xb, &b->output, n_out, 0);
}


/* the graph of a decode pass of n rows and tables of stride, recorded once */
static cudaGraphExec_t
fg_cuda_graph(fg_backend_t *b, const fg_cuda_step_t *st, size_t n)
{
    size_t            i, lru;
    cudaGraph_t       graph;
    cudaError_t       ce;
    cudaGraphExec_t   exec;
    fg_cuda_graph_t  *g;

    lru = 0;

    for (i = 0; i < FG_CUDA_GRAPHS; i++) {
        g = &b->graphs[i];

        if (g->exec && g->n == n && g->stride == st->stride) {
            g->used = ++b->clock;
            return g->exec;
        }

        if (g->used < b->graphs[lru].used) {
            lru = i;
        }
    }

    ce = cudaStreamBeginCapture(b->stream,
                                cudaStreamCaptureModeThreadLocal);
    if (ce != cudaSuccess) {
        goto failed;
    }

    b->cu_err = cudaSuccess;
    fg_cuda_pass(b, st, 0, n, 0, n);

    graph = NULL;
    ce = cudaStreamEndCapture(b->stream, &graph);

    if (ce != cudaSuccess || b->cu_err != cudaSuccess) {
        if (graph) {
            cudaGraphDestroy(graph);
        }

        goto failed;
    }

    ce = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);

    if (ce != cudaSuccess) {
        goto failed;
    }

    g = &b->graphs[lru];

    if (g->exec) {
        cudaGraphExecDestroy(g->exec);
    }

    g->exec = exec;
    g->n = (uint32_t) n;
    g->stride = (uint32_t) st->stride;
    g->used = ++b->clock;

    return exec;

failed:

    /* run eagerly from now on, and say so once */
    fprintf(stderr, "fairgate-engine: cuda: recording a decode graph "
            "failed (%s%s%s): running without graphs\n",
            cudaGetErrorString(ce != cudaSuccess ? ce : b->cu_err),
            b->cu_what ? ", " : "", b->cu_what ? b->cu_what : "");

    b->use_graphs = 0;
    b->cu_err = cudaSuccess;
    b->cu_what = NULL;
    (void) cudaGetLastError();

    return NULL;
}


/* the staging buffers hold at least words int32s; a move drops the graphs */
static int
fg_cuda_step_grow(fg_backend_t *b, size_t words, char *err, size_t errlen)
{
    cudaError_t  ce;

    if (words <= b->step_cap) {
        return 0;
    }

    words = words > 2 * b->step_cap ? words : 2 * b->step_cap;

    fg_cuda_graphs_clear(b);
    cudaStreamSynchronize(b->stream);

    cudaFree(b->d_step);
    b->d_step = NULL;

    if (b->h_step) {
        cudaFreeHost(b->h_step);
        b->h_step = NULL;
    }

    b->step_cap = 0;

    ce = cudaMalloc((void **) &b->d_step, words * sizeof(int32_t));

    if (ce == cudaSuccess) {
        ce = cudaMallocHost((void **) &b->h_step, words * sizeof(int32_t));
    }

    if (fg_cuda_fail(ce, "the step's buffers", err, errlen) != 0) {
        return -1;
    }

    b->step_cap = words;

    return 0;
}


/* room for a step's passes: at most one a row */
static int
fg_cuda_passes_grow(fg_backend_t *b, size_t rows)
{
    void  *p;

    if (rows <= b->passes_cap) {
        return 0;
    }

    p = realloc(b->passes, rows * sizeof(fg_cuda_pass_t));
    if (p == NULL) {
        return -1;
    }

    b->passes = p;
    b->passes_cap = rows;

    return 0;
}


/* what the cpu backend and fg_model_check() refuse, refused alike */
static int
fg_cuda_check_batch(fg_backend_t *b, const fg_backend_batch_t *batch,
    size_t *rows, size_t *outs, size_t *max_blocks, char *err, size_t errlen)
{
    size_t                   s, i, last;
    int32_t                  blk;
    uint64_t                 end;
    const fg_backend_seq_t  *sq;

    *rows = 0;
    *outs = 0;
    *max_blocks = 1;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];
        end = (uint64_t) sq->pos + sq->n_tokens;

        if (sq->n_tokens == 0 && sq->want_logits) {
            snprintf(err, errlen, "sequence %zu wants logits but has no "
                     "new tokens", s);
            return -1;
        }

        if (sq->n_tokens == 0) {
            continue;
        }

        if (sq->tokens == NULL || sq->block_table == NULL) {
            snprintf(err, errlen, "sequence %zu has no %s", s,
                     sq->tokens == NULL ? "tokens" : "block table");
            return -1;
        }

        if (end > (uint64_t) sq->n_blocks * b->block_size) {
            snprintf(err, errlen, "sequence %zu: positions up to %llu need "
                     "%llu blocks of %u, its table has %u", s,
                     (unsigned long long) end,
                     (unsigned long long) ((end + b->block_size - 1)
                                           / b->block_size),
                     b->block_size, sq->n_blocks);
            return -1;
        }

        if (end > b->hp->n_ctx_train) {
            snprintf(err, errlen, "sequence %zu: position %llu is outside "
                     "the context of %u", s, (unsigned long long) end - 1,
                     b->hp->n_ctx_train);
            return -1;
        }

        for (i = 0; i < sq->n_tokens; i++) {
            if (sq->tokens[i] < 0
                || (uint32_t) sq->tokens[i] >= b->hp->n_vocab)
            {
                snprintf(err, errlen, "sequence %zu: token %d is not in the "
                         "vocabulary of %u", s, sq->tokens[i],
                         b->hp->n_vocab);
                return -1;
            }
        }

        last = (size_t) ((end - 1) / b->block_size);

        for (i = 0; i <= last; i++) {
            blk = sq->block_table[i];

            if (blk < 0 || (uint32_t) blk >= b->kv_blocks) {
                snprintf(err, errlen, "sequence %zu: block %d (entry %zu of "
                         "its table) is not in the cache of %u blocks", s,
                         blk, i, b->kv_blocks);
                return -1;
            }
        }

        *rows += sq->n_tokens;
        *outs += sq->want_logits;
        *max_blocks = last + 1 > *max_blocks ? last + 1 : *max_blocks;
    }

    return 0;
}


static int
fg_cuda_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen)
{
    int                      want;
    size_t                   s, i, r, o, rows, outs, max_blocks, stride;
    size_t                   k, np, vocab;
    int32_t                 *h;
    cudaError_t              ce;
    fg_cuda_step_t           st;
    fg_cuda_pass_t          *pass;
    cudaGraphExec_t          exec;
    const fg_backend_seq_t  *sq;

    if (fg_cuda_check_batch(b, batch, &rows, &outs, &max_blocks, err,
                            errlen)
        != 0)
    {
        return -1;
    }

    if (rows == 0) {
        return 0;
    }

    /* tables as wide as a power of two: few distinct decode graphs */
    stride = 4;

    while (stride < max_blocks) {
        stride *= 2;
    }

    st.stride = stride;
    st.rows_per_seq = (rows + batch->n_seqs - 1) / batch->n_seqs;
    st.tokens = 0;
    st.pos = rows;
    st.seq = 2 * rows;
    st.orow = 3 * rows;
    st.opos = 3 * rows + outs;
    st.oseq = 3 * rows + 2 * outs;
    st.tables = 3 * rows + 3 * outs;
    st.end = st.tables + batch->n_seqs * stride;

    if (fg_cuda_step_grow(b, st.end, err, errlen) != 0) {
        return -1;
    }

    h = b->h_step;

    /*
     * Rows in batch order, cut into passes of at most max_rows rows and
     * max_out wanted ones; wanted rows are numbered within their pass.
     */
    if (fg_cuda_passes_grow(b, rows) != 0) {
        snprintf(err, errlen, "out of memory for a step of %zu rows", rows);
        return -1;
    }

    r = 0;
    o = 0;
    np = 0;
    pass = NULL;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];

        for (i = 0; i < sq->n_tokens; i++, r++) {
            want = sq->want_logits && i + 1 == sq->n_tokens;

            if (pass == NULL || pass->n == b->max_rows
                || (want && pass->n_out == b->max_out))
            {
                pass = &b->passes[np++];
                pass->r0 = r;
                pass->n = 0;
                pass->o0 = o;
                pass->n_out = 0;
            }

            h[st.tokens + r] = sq->tokens[i];
            h[st.pos + r] = (int32_t) (sq->pos + i);
            h[st.seq + r] = (int32_t) s;

            if (want) {
                h[st.orow + o] = (int32_t) pass->n;
                h[st.opos + o] = (int32_t) (sq->pos + i);
                h[st.oseq + o] = (int32_t) s;
                o++;
                pass->n_out++;
            }

            pass->n++;
        }

        for (i = 0; i < stride; i++) {
            h[st.tables + s * stride + i] = sq->block_table
                                            && i < sq->n_blocks
                                            ? sq->block_table[i] : -1;
        }
    }

    ce = cudaMemcpyAsync(b->d_step, h, st.end * sizeof(int32_t),
                         cudaMemcpyHostToDevice, b->stream);

    if (fg_cuda_fail(ce, "copying the step", err, errlen) != 0) {
        return -1;
    }

    vocab = b->hp->n_vocab;
    b->cu_err = cudaSuccess;
    b->cu_what = NULL;

    for (k = 0; k < np; k++) {
        pass = &b->passes[k];
        exec = NULL;

        if (b->use_graphs && np == 1 && pass->n_out == pass->n
            && pass->n == batch->n_seqs && pass->n <= b->max_batch)
        {
            exec = fg_cuda_graph(b, &st, pass->n);
        }

        if (exec) {
            fg_cuda_check(b, cudaGraphLaunch(exec, b->stream),
                          "cudaGraphLaunch");

        } else {
            fg_cuda_pass(b, &st, pass->r0, pass->n, pass->o0, pass->n_out);
        }

        if (pass->n_out) {
            fg_cuda_check(b, cudaMemcpyAsync(logits + pass->o0 * vocab,
                                             b->logits,
                                             pass->n_out * vocab
                                             * sizeof(float),
                                             cudaMemcpyDeviceToHost,
                                             b->stream),
                          "copying the logits");
        }
    }

    ce = cudaStreamSynchronize(b->stream);

    if (b->cu_err != cudaSuccess) {
        snprintf(err, errlen, "cuda: %s: %s", b->cu_what,
                 cudaGetErrorString(b->cu_err));
        return -1;
    }

    return fg_cuda_fail(ce, "the step", err, errlen);
}
