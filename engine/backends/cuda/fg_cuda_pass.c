
/*
 * fairgate: a pass of the cuda backend: rows of a staged step through the
 * layers, as fg_model.c's forward pass on the CPU, the GEMV kernel or
 * cuBLAS for the matrix products and the kernels of kernels/cuda/ for the
 * rest, all launched on the backend's stream (or recorded into a graph).
 */


#include <string.h>

#include "fg_cuda_int.h"


/*
 * y[n][out] (+)= x[n][in] W^T: the GEMV kernel for a few rows, where the
 * weights' bytes are the cost; cuBLAS, fp32 accumulation, beyond.
 */
static void
fg_cuda_matmul(fg_backend_t *b, float *y, const float *x,
    const fg_cuda_mat_t *w, size_t n, int accumulate)
{
    if (n <= FG_CUK_GEMV_ROWS) {
        fg_cuda_check(b, fg_cuk_gemv(b->stream, y, x, w->data, w->type, n,
                                     w->in, w->out, accumulate),
                      "the GEMV kernel");
        return;
    }

    fg_cuda_gemm(b, y, x, w, n, accumulate);
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
 * x += w y: a product added to the residual, or, with a post norm
 * (gemma2, gemma3), written past attention's part of xb, normed, added.
 */
static void
fg_cuda_residual(fg_backend_t *b, float *x, const float *y,
    const fg_cuda_mat_t *w, const float *post, size_t n)
{
    size_t                     wide;
    float                     *t;
    const fg_llama_hparams_t  *hp;

    if (post == NULL) {
        fg_cuda_matmul(b, x, y, w, n, 1);
        return;
    }

    hp = b->hp;
    wide = b->q_dim > hp->n_embd ? b->q_dim : hp->n_embd;
    t = b->xb + (size_t) b->max_rows * wide;

    fg_cuda_matmul(b, t, y, w, n, 0);

    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, t, t, post, n, hp->n_embd,
                                    hp->rms_eps),
                  "the rmsnorm kernel");
    fg_cuda_check(b, fg_cuk_add(b->stream, x, x, t, n * hp->n_embd),
                  "the add kernel");
}


/* the feed-forward block of a layer on n rows of x, added to x */
static void
fg_cuda_ffn(fg_backend_t *b, const fg_cuda_layer_t *cl, float *x, size_t n)
{
    float                     *ys[2];
    const fg_cuda_mat_t       *mats[2];
    const fg_llama_hparams_t  *hp;

    hp = b->hp;

    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->xb, x, cl->ffn_norm, n,
                                    hp->n_embd, hp->rms_eps),
                  "the rmsnorm kernel");

    mats[0] = &cl->w_gate;
    mats[1] = &cl->w_up;
    ys[0] = b->hg;
    ys[1] = b->hu;
    fg_cuda_matmul3(b, b->xb, mats, ys, 2, n);

    if (hp->ffn_act == FG_FFN_GELU) {
        fg_cuda_check(b, fg_cuk_geglu(b->stream, b->hg, b->hg, b->hu,
                                      n * hp->n_ff),
                      "the geglu kernel");

    } else {
        fg_cuda_check(b, fg_cuk_swiglu(b->stream, b->hg, b->hg, b->hu,
                                       n * hp->n_ff),
                      "the swiglu kernel");
    }

    fg_cuda_residual(b, x, b->hg, &cl->w_down, cl->ffn_post_norm, n);
}


/* q and k of n rows: each head normed on its own (qwen3, gemma3) */
static void
fg_cuda_qk_norm(fg_backend_t *b, const fg_cuda_layer_t *cl, size_t n)
{
    const fg_llama_hparams_t  *hp;

    if (cl->q_norm == NULL) {
        return;
    }

    hp = b->hp;

    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->q, b->q, cl->q_norm,
                                    n * hp->n_head, hp->head_dim,
                                    hp->rms_eps),
                  "the rmsnorm kernel");
    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->k, b->k, cl->k_norm,
                                    n * hp->n_head_kv, hp->head_dim,
                                    hp->rms_eps),
                  "the rmsnorm kernel");
}


/*
 * One pass of n rows starting at row r0 of the step (its inputs already
 * on the device), n_out of them wanted, their logits into b->logits.
 */
void
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

    kb.tok.pos = b->d_step + st->pos + r0;
    kb.tok.seq = b->d_step + st->seq + r0;
    kb.tok.block_tables = b->d_step + st->tables;
    kb.tok.max_blocks = st->stride;
    kb.tok.n_tokens = n;
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

    if (hp->embd_scale != 1.0f) {
        fg_cuda_check(b, fg_cuk_scale(b->stream, x, n * hp->n_embd,
                                      hp->embd_scale),
                      "the scale kernel");
    }

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

        /* the norms before the biases the RoPE kernel adds: a layer with
         * both, which llama.cpp would bias first, is refused at load */
        fg_cuda_qk_norm(b, cl, n);

        fg_cuda_check(b, fg_cuk_qkv(b->stream, b->q, b->k, b->v, cl->bq,
                                    cl->bk, cl->bv, &kv, &kb, hp->n_head,
                                    hp->n_rot, cl->inv_freq, b->rope),
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

            kb.tok.pos = b->d_step + st->opos + o0;
            kb.tok.seq = b->d_step + st->oseq + o0;
            kb.tok.n_tokens = n_out;
            kb.rows_per_seq = 1;
            x = b->xc;
            q = b->qc;
            n = n_out;
        }

        fg_cuda_check(b, fg_cuk_attention_ext(b->stream, b->xb, q, &kv, &kb,
                                              hp->n_head, &cl->attn),
                      "the attention kernel");

        fg_cuda_residual(b, x, b->xb, &cl->wo, cl->attn_post_norm, n);

        fg_cuda_ffn(b, cl, x, n);
    }

    if (n_out == 0) {
        return;
    }

    fg_cuda_check(b, fg_cuk_rmsnorm(b->stream, b->xb, x, b->output_norm,
                                    n_out, hp->n_embd, hp->rms_eps),
                  "the rmsnorm kernel");

    fg_cuda_matmul(b, b->logits, b->xb, &b->output, n_out, 0);

    if (hp->final_softcap > 0) {
        fg_cuda_check(b, fg_cuk_softcap(b->stream, b->logits,
                                        n_out * hp->n_vocab,
                                        hp->final_softcap),
                      "the softcap kernel");
    }
}
