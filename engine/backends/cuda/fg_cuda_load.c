
/*
 * fairgate: the cuda backend's device memory, all taken at create time:
 *
 *   weights    one allocation: each matrix in its own type, as the file
 *              holds it (F32, F16, BF16 and the quantized types of
 *              fg_cuk_type_quant(): a Q4_K_M file's Q4_K, Q6_K and F32
 *              side by side), small vectors widened to F32
 *   scratch    activations for max_rows rows, the halves cuBLAS takes (x,
 *              and a tile of a quantized matrix), logits for the wanted
 *              rows
 *   KV cache   halves, the kernels' layout; --kv-blocks, or what free
 *              memory holds after everything else (FG_CUDA_KV_FRACTION)
 */


#include <stdio.h>
#include <stdlib.h>

#include "fg_cuda_int.h"
#include "fg_ggml_types.h"


/* of the free memory left after weights and scratch, for the KV cache */
#define FG_CUDA_KV_FRACTION  0.90
#define FG_CUDA_KV_RESERVE   ((size_t) 256 << 20)

#define FG_CUDA_ALIGN        256


#define fg_cuda_tname(t)     (int) (t)->name.len, (t)->name.data


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
    size_t       row, bytes;
    const char  *name;
    cudaError_t  e;

    mat->type = (fg_k_type_e) t->type;
    mat->in = (uint32_t) t->ne[0];
    mat->out = (uint32_t) t->ne[1];

    name = fg_ggml_type_name(t->type);
    name = name != NULL ? name : "unknown";

    /* the kernels' own sizes, checked against the file's */
    row = fg_cuk_row_bytes(mat->type, mat->in);

    if (row == 0 && fg_cuk_row_bytes(mat->type, FG_K_QK_K) == 0) {
        snprintf(err, errlen, "tensor %.*s: type %s (%u) is not run by the "
                 "cuda backend", fg_cuda_tname(t), name, t->type);
        return -1;
    }

    if (row == 0 || row != fg_ggml_row_size(t->type, mat->in)) {
        snprintf(err, errlen, "tensor %.*s: %s rows of %u values are not "
                 "whole blocks", fg_cuda_tname(t), name, mat->in);
        return -1;
    }

    bytes = row * mat->out;

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

    if (fg_k_row_size((fg_k_type_e) t->type, n) == 0
        || (uintptr_t) t->data % sizeof(uint16_t) != 0)
    {
        snprintf(err, errlen, "tensor %.*s: cannot read type %s",
                 fg_cuda_tname(t), fg_ggml_type_name(t->type));
        free(tmp);
        return -1;
    }

    fg_k_dequant_row((fg_k_type_e) t->type, t->data, tmp, n);

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


/* bytes of the weights' allocation: each tensor aligned, the RoPE table */
static size_t
fg_cuda_weights_bytes(const fg_llama_model_t *m)
{
    size_t                     bytes;
    uint32_t                   l;
    const fg_llama_layer_t    *ll;
    const fg_llama_hparams_t  *hp;

    hp = &m->hp;

    bytes = fg_cuda_tensor_bytes(m->tok_embd, 0)
            + fg_cuda_tensor_bytes(m->output_norm, 1)
            + 2 * fg_cuda_align(hp->n_rot / 2 * sizeof(float));

    if (!m->tied) {
        bytes += fg_cuda_tensor_bytes(m->output, 0);
    }

    for (l = 0; l < hp->n_layer; l++) {
        ll = &m->layers[l];

        bytes += fg_cuda_tensor_bytes(ll->attn_norm, 1)
                 + fg_cuda_tensor_bytes(ll->ffn_norm, 1)
                 + fg_cuda_tensor_bytes(ll->bq, 1)
                 + fg_cuda_tensor_bytes(ll->bk, 1)
                 + fg_cuda_tensor_bytes(ll->bv, 1)
                 + fg_cuda_tensor_bytes(ll->q_norm, 1)
                 + fg_cuda_tensor_bytes(ll->k_norm, 1)
                 + fg_cuda_tensor_bytes(ll->attn_post_norm, 1)
                 + fg_cuda_tensor_bytes(ll->ffn_post_norm, 1)
                 + fg_cuda_tensor_bytes(ll->wq, 0)
                 + fg_cuda_tensor_bytes(ll->wk, 0)
                 + fg_cuda_tensor_bytes(ll->wv, 0)
                 + fg_cuda_tensor_bytes(ll->wo, 0)
                 + fg_cuda_tensor_bytes(ll->w_gate, 0)
                 + fg_cuda_tensor_bytes(ll->w_up, 0)
                 + fg_cuda_tensor_bytes(ll->w_down, 0);
    }

    return bytes;
}


/* RoPE's inverse frequencies, computed once on the host: the model's,
 * then its sliding-window layers' */
static int
fg_cuda_upload_freqs(fg_backend_t *b, char *err, size_t errlen)
{
    int           i;
    float        *freqs;
    size_t        bytes;
    cudaError_t   ce;

    bytes = b->hp->n_rot / 2 * sizeof(float);
    freqs = malloc(bytes + 1);

    if (freqs == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    for (i = 0; i < 2; i++) {
        if (i == 0) {
            fg_llama_rope_freqs(b->hp, freqs);
            b->inv_freq = (float *) (b->wmem + b->woff);

        } else {
            fg_llama_rope_freqs_swa(b->hp, freqs);
            b->inv_freq_swa = (float *) (b->wmem + b->woff);
        }

        ce = cudaMemcpy(b->wmem + b->woff, freqs, bytes,
                        cudaMemcpyHostToDevice);

        if (fg_cuda_fail(ce, "copying the weights", err, errlen) != 0) {
            free(freqs);
            return -1;
        }

        b->woff += fg_cuda_align(bytes);
    }

    free(freqs);

    return 0;
}


static int
fg_cuda_upload_layer(fg_backend_t *b, fg_cuda_layer_t *cl,
    const fg_llama_layer_t *ll, char *e, size_t elen)
{
    if (ll->q_norm && (ll->bq || ll->bk)) {
        snprintf(e, elen, "tensor %.*s: q/k biases beside q/k norms are "
                 "not supported by the cuda backend",
                 fg_cuda_tname(ll->bq ? ll->bq : ll->bk));
        return -1;
    }

    cl->inv_freq = ll->swa ? b->inv_freq_swa : b->inv_freq;
    cl->attn.scale = b->hp->attn_scale;
    cl->attn.softcap = b->hp->attn_softcap;
    cl->attn.window = ll->swa ? b->hp->n_swa : 0;

    if (fg_cuda_upload_vec(b, &cl->attn_norm, ll->attn_norm, e, elen)
        || fg_cuda_upload_vec(b, &cl->q_norm, ll->q_norm, e, elen)
        || fg_cuda_upload_vec(b, &cl->k_norm, ll->k_norm, e, elen)
        || fg_cuda_upload_vec(b, &cl->attn_post_norm, ll->attn_post_norm, e,
                              elen)
        || fg_cuda_upload_vec(b, &cl->ffn_post_norm, ll->ffn_post_norm, e,
                              elen)
        || fg_cuda_upload_vec(b, &cl->ffn_norm, ll->ffn_norm, e, elen)
        || fg_cuda_upload_vec(b, &cl->bq, ll->bq, e, elen)
        || fg_cuda_upload_vec(b, &cl->bk, ll->bk, e, elen)
        || fg_cuda_upload_vec(b, &cl->bv, ll->bv, e, elen)
        || fg_cuda_upload_mat(b, &cl->wq, ll->wq, e, elen)
        || fg_cuda_upload_mat(b, &cl->wk, ll->wk, e, elen)
        || fg_cuda_upload_mat(b, &cl->wv, ll->wv, e, elen)
        || fg_cuda_upload_mat(b, &cl->wo, ll->wo, e, elen)
        || fg_cuda_upload_mat(b, &cl->w_gate, ll->w_gate, e, elen)
        || fg_cuda_upload_mat(b, &cl->w_up, ll->w_up, e, elen)
        || fg_cuda_upload_mat(b, &cl->w_down, ll->w_down, e, elen))
    {
        return -1;
    }

    return 0;
}


/* every tensor into the one allocation, in the file's order of layers */
static int
fg_cuda_upload(fg_backend_t *b, char *e, size_t elen)
{
    uint32_t  l;

    if (fg_cuda_upload_mat(b, &b->tok_embd, b->llama.tok_embd, e, elen)
        || fg_cuda_upload_vec(b, &b->output_norm, b->llama.output_norm, e,
                              elen))
    {
        return -1;
    }

    if (b->llama.tied) {
        b->output = b->tok_embd;

    } else if (fg_cuda_upload_mat(b, &b->output, b->llama.output, e, elen))
    {
        return -1;
    }

    for (l = 0; l < b->hp->n_layer; l++) {
        if (fg_cuda_upload_layer(b, &b->layers[l], &b->llama.layers[l], e,
                                 elen)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


int
fg_cuda_load(fg_backend_t *b, const char *path, char *err, size_t errlen)
{
    char                       e[FG_GGUF_ERR_LEN];
    size_t                     bytes;
    cudaError_t                ce;
    const fg_llama_hparams_t  *hp;

    if (fg_llama_open(path, &b->gguf, &b->llama, err, errlen) != 0) {
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

    bytes = fg_cuda_weights_bytes(&b->llama);

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

    if (b->layers == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (fg_cuda_upload_freqs(b, err, errlen) != 0) {
        return -1;
    }

    if (fg_cuda_upload(b, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "%s: %s", path, e);
        return -1;
    }

    return 0;
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


/* 1 when a matrix of the model is quantized: cuBLAS needs tiles then */
static int
fg_cuda_quantized(fg_backend_t *b)
{
    uint32_t                l;
    const fg_cuda_layer_t  *cl;

    if (fg_cuk_type_quant(b->output.type)) {
        return 1;
    }

    for (l = 0; l < b->hp->n_layer; l++) {
        cl = &b->layers[l];

        if (fg_cuk_type_quant(cl->wq.type) || fg_cuk_type_quant(cl->wk.type)
            || fg_cuk_type_quant(cl->wv.type)
            || fg_cuk_type_quant(cl->wo.type)
            || fg_cuk_type_quant(cl->w_gate.type)
            || fg_cuk_type_quant(cl->w_up.type)
            || fg_cuk_type_quant(cl->w_down.type))
        {
            return 1;
        }
    }

    return 0;
}


/* halves of the tile of a quantized matrix dequantized for cuBLAS */
static size_t
fg_cuda_tile_values(const fg_cuda_mat_t *m)
{
    size_t  rows;

    rows = FG_CUDA_TILE_VALUES / m->in;
    rows = rows > 0 ? rows : 1;
    rows = rows < m->out ? rows : m->out;

    return rows * m->in;
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


int
fg_cuda_scratch(fg_backend_t *b, char *err, size_t errlen)
{
    size_t                     rows, out, in_max, wh, i, n, f, hf;
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
    wh = 0;

    /* the output matrix, then each layer's seven: the first layer's
     * shapes are every layer's */
    n = fg_cuda_mats(b, mats, 8);

    for (i = 0; i < n; i++) {
        in_max = mats[i]->in > in_max ? mats[i]->in : in_max;

        if (fg_cuda_tile_values(mats[i]) > wh) {
            wh = fg_cuda_tile_values(mats[i]);
        }
    }

    /* the types may change from layer to layer, the shapes do not */
    b->wh_values = fg_cuda_quantized(b) ? wh : 0;

    f = sizeof(float);
    hf = sizeof(uint16_t);

    bufs[0].p = (void **) &b->x;
    bufs[0].bytes = rows * hp->n_embd * f;
    /* attention's output (q_dim), then a block's output to post-norm */
    bufs[1].p = (void **) &b->xb;
    bufs[1].bytes = rows * ((b->q_dim > hp->n_embd ? b->q_dim : hp->n_embd)
                            + hp->n_embd) * f;
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
    bufs[11].bytes = b->wh_values * hf;
    bufs[12].p = &b->blas_ws;
    bufs[12].bytes = FG_CUDA_WORKSPACE;

    for (i = 0; i < 13; i++) {
        if (fg_cuda_malloc(bufs[i].p, bufs[i].bytes, err, errlen) != 0) {
            return -1;
        }
    }

    return 0;
}


int
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
