
/*
 * fairgate: what the cuda backend's files share, not part of the backend
 * interface (fg_backend.h is): the device-side model, the backend's
 * state, and the functions one file calls in another.
 *
 *     fg_backend_cuda.c   the table: create, destroy, info
 *     fg_cuda_load.c      device memory: the weights, the scratch, the
 *                         KV cache
 *     fg_cuda_pass.c      a pass of rows through the layers: the kernels
 *                         and cuBLAS
 *     fg_cuda_gemm.c      the products of many rows: cuBLAS, quantized
 *                         matrices dequantized by tiles
 *     fg_cuda_step.c      forward: a step checked, staged, cut into
 *                         passes, decode passes replayed as CUDA graphs
 */

#ifndef _FG_CUDA_INT_H_INCLUDED_
#define _FG_CUDA_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fg_backend.h"
#include "fg_gguf.h"
#include "fg_llama.h"
#include "fg_kernels_cuda.h"


#define FG_CUDA_WORKSPACE    ((size_t) 32 << 20)
#define FG_CUDA_GRAPHS       64

/* the most values of a quantized matrix dequantized for cuBLAS at once
 * (fp16: 32 MiB of scratch) */
#define FG_CUDA_TILE_VALUES  ((size_t) 16 << 20)


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
    float                  *q_norm;         /* head_dim, or NULL */
    float                  *k_norm;
    float                  *attn_post_norm; /* n_embd, or NULL */
    float                  *ffn_post_norm;
    const float            *inv_freq;       /* the model's or _swa */
    fg_k_attn_opts_t        attn;           /* scale, cap, window */
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
    float                  *inv_freq_swa;   /* sliding-window layers' */
    fg_cuda_layer_t        *layers;

    void                   *kv;             /* halves */
    size_t                  kv_bytes;
    uint32_t                kv_blocks;
    uint32_t                block_size;

    uint32_t                max_rows;
    uint32_t                max_out;
    uint32_t                max_batch;
    float                  *x;              /* [max_rows][n_embd] */
    float                  *xb;             /* [max_rows][max(n_embd, q_dim)],
                                               then [max_rows][n_embd] for
                                               post-normed outputs */
    float                  *q;              /* [max_rows][q_dim] */
    float                  *k;              /* [max_rows][kv_dim] */
    float                  *v;
    float                  *hg;             /* [max_rows][n_ff] */
    float                  *hu;
    float                  *qc;             /* the wanted rows' q, x */
    float                  *xc;
    float                  *logits;         /* [max_out][n_vocab] */
    void                   *xh;             /* x as halves for cuBLAS */
    void                   *wh;             /* a tile of weights, fp16 */
    size_t                  wh_values;

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


/* a CUDA call's failure as a sentence in err; 0 when it succeeded (here,
 * so that every file of the backend says it alike and calls none above) */
static inline int
fg_cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess) {
        return 0;
    }

    snprintf(err, errlen, "cuda: %s: %s (error %d)", what,
             cudaGetErrorString(e), (int) e);

    return -1;
}

/* the model at path onto the device, and b's shape from it */
int fg_cuda_load(fg_backend_t *b, const char *path, char *err,
    size_t errlen);

/* the activations and buffers of max_rows rows and max_out wanted ones */
int fg_cuda_scratch(fg_backend_t *b, char *err, size_t errlen);

/* a KV cache of blocks blocks; 0: what free memory holds */
int fg_cuda_kv_alloc(fg_backend_t *b, uint32_t blocks, char *err,
    size_t errlen);

/* rows [r0, r0 + n) of a staged step, n_out wanted from o0, on b->stream */
void fg_cuda_pass(fg_backend_t *b, const fg_cuda_step_t *st, size_t r0,
    size_t n, size_t o0, size_t n_out);

/* y[n][out] (+)= x[n][in] W^T by cuBLAS, W quantized by tiles in b->wh */
void fg_cuda_gemm(fg_backend_t *b, float *y, const float *x,
    const fg_cuda_mat_t *w, size_t n, int accumulate);

/* drops the recorded decode graphs: their buffers moved, or destroy */
void fg_cuda_graphs_clear(fg_backend_t *b);

/* the table's forward (fg_backend.h) */
int fg_cuda_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen);


/* records the first failure of a pass of launches */
static inline void
fg_cuda_check(fg_backend_t *b, cudaError_t e, const char *what)
{
    if (e != cudaSuccess && b->cu_err == cudaSuccess) {
        b->cu_err = e;
        b->cu_what = what;
    }
}


#endif /* _FG_CUDA_INT_H_INCLUDED_ */
