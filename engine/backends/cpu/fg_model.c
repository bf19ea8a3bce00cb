
/*
 * fairgate: the forward pass of a Llama-family model on the CPU.
 *
 * x = the rows' embeddings (times sqrt(n_embd) for gemma), then per layer,
 * for the n rows of a pass:
 *
 *     xb = rmsnorm(x) * attn_norm
 *     q, k, v = xb Wq^T (+ bq), xb Wk^T (+ bk), xb Wv^T (+ bv)
 *     q, k: each head rmsnorm'd * q_norm, k_norm (qwen3, gemma3)
 *     RoPE on q and k, at each row's position, pairing as the file says
 *     (a sliding-window layer's own frequencies)
 *     k, v -> the rows' cache slots; xb = paged attention of q (scaled,
 *     soft-capped, over a window, as the architecture says)
 *     x += xb Wo^T                  (rmsnorm'd * attn_post_norm first)
 *     xb = rmsnorm(x) * ffn_norm
 *     x += (act(xb Wgate^T) * (xb Wup^T)) Wdown^T    (ffn_post_norm)
 *
 * act being silu or gemma's tanh gelu; then the final norm and the output
 * matrix (soft-capped for gemma2), for the wanted rows only; a row whose
 * hidden state is wanted (an embedding) stops after the final norm, its
 * state added into its sequence's sum.
 * In the last layer only the wanted rows go on past the cache write:
 * the others' keys and values are all that later tokens need of them, so
 * a prefill chunk computes its last layer's attention and feed-forward
 * for one row instead of hundreds.
 *
 * A token's result does not depend on the rows beside it beyond float
 * rounding: the kernels round a Q8_0 product's input per 32-block the
 * same way whichever path the number of rows picks, so a request decodes
 * the same alone and in a batch.
 *
 * Matrix products spread their output columns over the pool, attention
 * its heads, RoPE and SwiGLU their rows, each when the work is worth
 * waking the workers for.  The rest is cheap next to the products and
 * runs on the calling thread.
 */


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fg_err.h"
#include "fg_ggml_types.h"
#include "fg_mem.h"
#include "fg_model.h"


/* elements below which an element-wise step stays on the calling thread */
#define FG_MODEL_ROWS_MIN   16384

/* rows of a pass when the caller gives none */
#define FG_MODEL_ROWS       512


struct fg_model_ctx_s {
    const fg_model_t       *m;
    fg_pool_t              *pool;
    uint32_t                max_rows;

    float                  *x;              /* residual [rows][n_embd] */
    float                  *xb;             /* norm, attention output */
    float                  *q;              /* [rows][q_dim] */
    float                  *k;              /* [rows][kv_dim] */
    float                  *v;
    float                  *y;              /* products to add to x */
    float                  *hg;             /* [rows][n_ff]: gate */
    float                  *hu;             /* up */
    int32_t                *pos;            /* the last layer's rows */
    int32_t                *seq;
    void                   *work;
};


typedef struct {
    fg_model_ctx_t          *ctx;
    const fg_model_layer_t  *layer;
    const int32_t           *pos;
} fg_model_rows_t;


static int fg_model_mat(fg_model_t *m, fg_model_mat_t *mat,
    const fg_gguf_tensor_t *t, char *err, size_t errlen);
static int fg_model_vec(const float **vec, float **own,
    const fg_gguf_tensor_t *t, char *err, size_t errlen);
static void fg_model_pass(fg_model_ctx_t *ctx, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, size_t r0, size_t n, float *logits);
static size_t fg_model_hidden(fg_model_ctx_t *ctx, const fg_model_batch_t *b,
    size_t r0, size_t n_in, const int32_t *seq, size_t n);
static void fg_model_qk_task(void *data, size_t r0, size_t r1,
    unsigned thread);
static void fg_model_swiglu_task(void *data, size_t r0, size_t r1,
    unsigned thread);
static void *fg_model_alloc(size_t n, size_t size);


/* a tensor's name for messages: GGUF strings are not NUL-terminated */
#define fg_model_tname(t)  (int) (t)->name.len, (t)->name.data


/* what the forward pass and the kernels take of the loader's shape */
static int
fg_model_check_shape(const fg_llama_hparams_t *hp, const char *path,
    char *err, size_t errlen)
{
    if (hp->head_dim > FG_K_MAX_HEAD_DIM) {
        fg_err_printf(err, errlen, "%s: a head of %u values is larger "
                      "than the kernels take (%u)", path, hp->head_dim,
                      FG_K_MAX_HEAD_DIM);
        return -1;
    }

    if (hp->n_vocab > INT32_MAX) {
        fg_err_printf(err, errlen, "%s: a vocabulary of %u tokens is more "
                      "than 32-bit token ids number", path, hp->n_vocab);
        return -1;
    }

    return 0;
}


/* every tensor bound to the pass's layout: 0, or -1 with the fault in e */
static int
fg_model_bind(fg_model_t *m, char *e, size_t elen)
{
    float                   *own;
    uint32_t                 l;
    fg_model_layer_t        *ml;
    const fg_llama_layer_t  *ll;

    own = m->owned;

    if (fg_model_mat(m, &m->tok_embd, m->llama.tok_embd, e, elen)
        || fg_model_mat(m, &m->output, m->llama.output, e, elen)
        || fg_model_vec(&m->output_norm, &own, m->llama.output_norm, e,
                        elen))
    {
        return -1;
    }

    for (l = 0; l < m->hp->n_layer; l++) {
        ll = &m->llama.layers[l];
        ml = &m->layers[l];

        ml->inv_freq = ll->swa ? m->inv_freq_swa : m->inv_freq;
        ml->attn.scale = m->hp->attn_scale;
        ml->attn.softcap = m->hp->attn_softcap;
        ml->attn.window = ll->swa ? m->hp->n_swa : 0;

        if (fg_model_vec(&ml->attn_norm, &own, ll->attn_norm, e, elen)
            || fg_model_vec(&ml->ffn_norm, &own, ll->ffn_norm, e, elen)
            || fg_model_vec(&ml->q_norm, &own, ll->q_norm, e, elen)
            || fg_model_vec(&ml->k_norm, &own, ll->k_norm, e, elen)
            || fg_model_vec(&ml->attn_post_norm, &own, ll->attn_post_norm, e,
                            elen)
            || fg_model_vec(&ml->ffn_post_norm, &own, ll->ffn_post_norm, e,
                            elen)
            || fg_model_vec(&ml->bq, &own, ll->bq, e, elen)
            || fg_model_vec(&ml->bk, &own, ll->bk, e, elen)
            || fg_model_vec(&ml->bv, &own, ll->bv, e, elen)
            || fg_model_mat(m, &ml->wq, ll->wq, e, elen)
            || fg_model_mat(m, &ml->wk, ll->wk, e, elen)
            || fg_model_mat(m, &ml->wv, ll->wv, e, elen)
            || fg_model_mat(m, &ml->wo, ll->wo, e, elen)
            || fg_model_mat(m, &ml->w_gate, ll->w_gate, e, elen)
            || fg_model_mat(m, &ml->w_up, ll->w_up, e, elen)
            || fg_model_mat(m, &ml->w_down, ll->w_down, e, elen))
        {
            return -1;
        }
    }

    return 0;
}


/* RoPE frequencies that a bad rope_freqs.weight or factor did not break */
static int
fg_model_check_rope(const fg_model_t *m, const char *path, char *err,
    size_t errlen)
{
    size_t  i;

    for (i = 0; i < m->hp->n_rot / 2; i++) {
        if (!(m->inv_freq[i] > 0.0f && m->inv_freq[i] < 1e30f
              && m->inv_freq_swa[i] > 0.0f && m->inv_freq_swa[i] < 1e30f))
        {
            fg_err_printf(err, errlen, "%s: RoPE frequency %zu is %g "
                          "(rope_freqs.weight or the scaling factor)",
                          path, i, (double) m->inv_freq[i]);
            return -1;
        }
    }

    return 0;
}


fg_model_t *
fg_model_open(const char *path, char *err, size_t errlen)
{
    char                       e[FG_GGUF_ERR_LEN];
    size_t                     n_own;
    fg_model_t                *m;
    const fg_llama_hparams_t  *hp;

    m = calloc(1, sizeof(fg_model_t));
    if (m == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return NULL;
    }

    if (fg_llama_open(path, &m->gguf, &m->llama, err, errlen) != 0) {
        free(m);
        return NULL;
    }

    hp = &m->llama.hp;
    m->hp = hp;

    if (fg_model_check_shape(hp, path, err, errlen) != 0) {
        goto failed;
    }

    m->q_dim = hp->n_head * hp->head_dim;
    m->kv_dim = hp->n_head_kv * hp->head_dim;
    m->rope = hp->rope_pairing == FG_ROPE_HALVES ? FG_K_ROPE_HALVES
                                                 : FG_K_ROPE_ADJACENT;

    /* room for every small vector, in case none of them is F32 */
    n_own = hp->n_embd + (size_t) hp->n_layer
                         * (4 * hp->n_embd + m->q_dim + 2 * m->kv_dim
                            + 2 * hp->head_dim);

    m->owned = malloc(n_own * sizeof(float));
    m->inv_freq = malloc(hp->n_rot / 2 * sizeof(float));
    m->inv_freq_swa = malloc(hp->n_rot / 2 * sizeof(float));
    m->layers = calloc(hp->n_layer, sizeof(fg_model_layer_t));

    if (m->owned == NULL || m->inv_freq == NULL || m->inv_freq_swa == NULL
        || m->layers == NULL)
    {
        fg_err_printf(err, errlen, "out of memory");
        goto failed;
    }

    fg_llama_rope_freqs(hp, m->inv_freq);
    fg_llama_rope_freqs_swa(hp, m->inv_freq_swa);

    if (fg_model_bind(m, e, sizeof(e)) != 0) {
        fg_err_printf(err, errlen, "%s: %s", path, e);
        goto failed;
    }

    if (fg_model_check_rope(m, path, err, errlen) != 0) {
        goto failed;
    }

    fg_model_place(m);

    return m;

failed:

    fg_model_close(m);

    return NULL;
}


void
fg_model_close(fg_model_t *m)
{
    if (m == NULL) {
        return;
    }

    if (m->wmem != NULL) {
        (void) munmap(m->wmem, m->wmem_size);
    }

    fg_llama_close(m->gguf, &m->llama);
    fg_free_all(m->layers, m->inv_freq, m->inv_freq_swa, m->owned,
                m);
}


/* a matrix the kernels multiply by: whole blocks, aligned elements */
static int
fg_model_mat(fg_model_t *m, fg_model_mat_t *mat, const fg_gguf_tensor_t *t,
    char *err, size_t errlen)
{
    size_t  align;

    mat->data = t->data;
    mat->packed = 0;
    mat->type = (fg_k_type_e) t->type;
    mat->in = (uint32_t) t->ne[0];
    mat->out = (uint32_t) t->ne[1];

    if (fg_k_row_size(mat->type, mat->in) == 0) {
        fg_err_printf(err, errlen, "tensor %.*s: rows of %u values do not "
                      "fill whole %s blocks", fg_model_tname(t), mat->in,
                      fg_ggml_type_name(t->type));
        return -1;
    }

    /* Q8_0's blocks start with a half; F16 and BF16 are halves */
    align = mat->type == FG_K_F32 ? sizeof(float) : sizeof(uint16_t);

    if ((uintptr_t) t->data % align != 0) {
        fg_err_printf(err, errlen, "tensor %.*s is not aligned for %s "
                      "(the file's alignment is %u)", fg_model_tname(t),
                      fg_ggml_type_name(t->type), m->gguf->alignment);
        return -1;
    }

    return 0;
}


/*
 * A vector (norm weights, a bias): used in place when it is aligned F32,
 * else widened into the model's own buffer.  A NULL tensor (an absent
 * bias) leaves NULL.
 */
static int
fg_model_vec(const float **vec, float **own, const fg_gguf_tensor_t *t,
    char *err, size_t errlen)
{
    size_t  n;

    *vec = NULL;

    if (t == NULL) {
        return 0;
    }

    n = (size_t) t->ne[0];

    if (t->type == FG_GGML_F32 && (uintptr_t) t->data % sizeof(float) == 0)
    {
        *vec = t->data;
        return 0;
    }

    /* the kernels read halves and blocks in place: 2-byte aligned */
    if (fg_k_row_size((fg_k_type_e) t->type, n) == 0
        || (uintptr_t) t->data % sizeof(uint16_t) != 0)
    {
        fg_err_printf(err, errlen, "tensor %.*s: cannot read type %s",
                      fg_model_tname(t), fg_ggml_type_name(t->type));
        return -1;
    }

    fg_k_dequant_row((fg_k_type_e) t->type, t->data, *own, n);

    *vec = *own;
    *own += n;

    return 0;
}


size_t
fg_model_kv_block_values(const fg_model_t *m, uint32_t block_size)
{
    return 2 * (size_t) m->hp->n_layer * m->kv_dim * block_size;
}


/* the checks and the layers every kind of cache has: 0, or -1 said */
int
fg_model_kv_layers(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t block_size, fg_k_type_e type, char *err,
    size_t errlen)
{
    size_t      l;
    fg_k_kv_t  *lk;

    memset(kv, 0, sizeof(fg_model_kv_t));

    if (block_size == 0 || block_size > FG_K_MAX_BLOCK) {
        fg_err_printf(err, errlen, "a KV block of %u positions (1 to %u)",
                      block_size, FG_K_MAX_BLOCK);
        return -1;
    }

    if (n_blocks == 0) {
        fg_err_printf(err, errlen, "a KV cache of no blocks");
        return -1;
    }

    if (type != FG_K_F16 && type != FG_K_F32) {
        fg_err_printf(err, errlen, "a KV cache of type %d (F16 or F32)",
                      (int) type);
        return -1;
    }

    kv->layers = calloc(m->hp->n_layer, sizeof(fg_k_kv_t));
    if (kv->layers == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return -1;
    }

    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->type = type;

    for (l = 0; l < m->hp->n_layer; l++) {
        lk = &kv->layers[l];
        lk->type = type;
        lk->n_blocks = n_blocks;
        lk->block_size = block_size;
        lk->n_kv_head = m->hp->n_head_kv;
        lk->head_dim = m->hp->head_dim;
    }

    return 0;
}


int
fg_model_kv_init(fg_model_kv_t *kv, const fg_model_t *m, uint32_t n_blocks,
    uint32_t block_size, fg_k_type_e type, char *err, size_t errlen)
{
    size_t     per_layer, l, vs;
    uint64_t   bytes;

    if (fg_model_kv_layers(kv, m, n_blocks, block_size, type, err, errlen)
        != 0)
    {
        return -1;
    }

    vs = fg_k_kv_value_size(type);
    per_layer = (size_t) n_blocks * block_size * m->kv_dim * vs;
    bytes = (uint64_t) fg_model_kv_block_values(m, block_size) * n_blocks
            * vs;

    if (bytes / n_blocks / vs != fg_model_kv_block_values(m, block_size)
        || bytes > (uint64_t) SIZE_MAX / 2)
    {
        fg_err_printf(err, errlen, "a KV cache of %u blocks is too large",
                      n_blocks);
        fg_model_kv_free(kv);
        return -1;
    }

    /* anonymous pages: nothing is touched before a block is written */
    kv->mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (kv->mem == MAP_FAILED) {
        fg_err_printf(err, errlen, "a KV cache of %u blocks (%llu MiB): "
                      "%s", n_blocks,
                      (unsigned long long) (bytes >> 20), strerror(errno));
        kv->mem = NULL;
        fg_model_kv_free(kv);
        return -1;
    }

    kv->bytes = bytes;

    /* per_layer bytes of keys, then as many of values, layer by layer */
    for (l = 0; l < m->hp->n_layer; l++) {
        kv->layers[l].k = (char *) kv->mem + 2 * l * per_layer;
        kv->layers[l].v = (char *) kv->layers[l].k + per_layer;
    }

    return 0;
}


int
fg_model_kv_map(fg_model_kv_t *kv, const fg_model_t *m, uint32_t n_blocks,
    uint32_t block_size, fg_k_type_e type, void *arena, size_t head_bytes,
    const uint32_t *map, char *err, size_t errlen)
{
    size_t      l, nkv, vs;
    fg_k_kv_t  *lk;

    vs = fg_k_kv_value_size(type);

    if (head_bytes % vs != 0
        || head_bytes / vs < (size_t) block_size * m->hp->head_dim)
    {
        fg_err_printf(err, errlen, "head blocks of %zu bytes hold no "
                      "%u positions of heads of %u values of %zu bytes",
                      head_bytes, block_size, m->hp->head_dim, vs);
        return -1;
    }

    if (fg_model_kv_layers(kv, m, n_blocks, block_size, type, err, errlen)
        != 0)
    {
        return -1;
    }

    nkv = m->hp->n_head_kv;

    for (l = 0; l < m->hp->n_layer; l++) {
        lk = &kv->layers[l];
        lk->k = arena;
        lk->v = arena;
        lk->k_map = map + 2 * l * nkv;
        lk->v_map = lk->k_map + nkv;
        lk->map_stride = 2 * (size_t) m->hp->n_layer * nkv;
        lk->head_stride = head_bytes / vs;
    }

    return 0;
}


void
fg_model_kv_free(fg_model_kv_t *kv)
{
    if (kv->mem) {
        munmap(kv->mem, kv->bytes);
    }

    fg_free_all(kv->layers, kv->wmap);
    memset(kv, 0, sizeof(fg_model_kv_t));
}


/* n elements of size bytes, 64-byte aligned for the kernels' work */
static void *
fg_model_alloc(size_t n, size_t size)
{
    size_t  bytes;

    bytes = (n * size + 63) / 64 * 64;

    return aligned_alloc(64, bytes ? bytes : 64);
}


fg_model_ctx_t *
fg_model_ctx_create(const fg_model_t *m, fg_pool_t *pool, uint32_t max_rows,
    char *err, size_t errlen)
{
    size_t                     w, work, wide;
    unsigned                   threads;
    uint32_t                   l;
    fg_model_ctx_t            *ctx;
    const fg_model_mat_t      *mats[7];
    const fg_llama_hparams_t  *hp;

    hp = m->hp;

    if (max_rows == 0) {
        max_rows = FG_MODEL_ROWS;
    }

    ctx = calloc(1, sizeof(fg_model_ctx_t));
    if (ctx == NULL) {
        fg_err_printf(err, errlen, "out of memory");
        return NULL;
    }

    ctx->m = m;
    ctx->pool = pool;
    ctx->max_rows = max_rows;

    threads = fg_pool_threads(pool);

    /* one work buffer serves every product of a pass, the largest */
    work = fg_k_matmul_work_size(m->output.type, max_rows, m->output.in,
                                 threads);

    for (l = 0; l < hp->n_layer; l++) {
        mats[0] = &m->layers[l].wq;
        mats[1] = &m->layers[l].wk;
        mats[2] = &m->layers[l].wv;
        mats[3] = &m->layers[l].wo;
        mats[4] = &m->layers[l].w_gate;
        mats[5] = &m->layers[l].w_up;
        mats[6] = &m->layers[l].w_down;

        for (w = 0; w < 7; w++) {
            wide = fg_k_matmul_work_size(mats[w]->type, max_rows,
                                         mats[w]->in, threads);
            work = wide > work ? wide : work;
        }
    }

    wide = hp->n_embd > m->q_dim ? hp->n_embd : m->q_dim;

    ctx->x = fg_model_alloc((size_t) max_rows * hp->n_embd, sizeof(float));
    ctx->xb = fg_model_alloc((size_t) max_rows * wide, sizeof(float));
    ctx->q = fg_model_alloc((size_t) max_rows * m->q_dim, sizeof(float));
    ctx->k = fg_model_alloc((size_t) max_rows * m->kv_dim, sizeof(float));
    ctx->v = fg_model_alloc((size_t) max_rows * m->kv_dim, sizeof(float));
    ctx->y = fg_model_alloc((size_t) max_rows * hp->n_embd, sizeof(float));
    ctx->hg = fg_model_alloc((size_t) max_rows * hp->n_ff, sizeof(float));
    ctx->hu = fg_model_alloc((size_t) max_rows * hp->n_ff, sizeof(float));
    ctx->pos = fg_model_alloc(max_rows, sizeof(int32_t));
    ctx->seq = fg_model_alloc(max_rows, sizeof(int32_t));
    ctx->work = fg_model_alloc(work, 1);

    if (ctx->x == NULL || ctx->xb == NULL || ctx->q == NULL
        || ctx->k == NULL || ctx->v == NULL || ctx->y == NULL
        || ctx->hg == NULL || ctx->hu == NULL || ctx->pos == NULL
        || ctx->seq == NULL || ctx->work == NULL)
    {
        fg_err_printf(err, errlen, "out of memory for the scratch of %u "
                      "rows", max_rows);
        fg_model_ctx_destroy(ctx);
        return NULL;
    }

    return ctx;
}


void
fg_model_ctx_destroy(fg_model_ctx_t *ctx)
{
    if (ctx == NULL) {
        return;
    }

    fg_free_all(ctx->x, ctx->xb, ctx->q, ctx->k, ctx->v, ctx->y, ctx->hg,
                ctx->hu, ctx->pos, ctx->seq, ctx->work, ctx);
}


int
fg_model_check(const fg_model_t *m, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, char *err, size_t errlen)
{
    size_t          t, j, last, checked;
    int32_t         s, p, block;
    const int32_t  *row;

    checked = 0;
    s = -1;

    for (t = 0; t < b->n_tokens; t++) {
        if (b->tokens[t] < 0 || (uint32_t) b->tokens[t] >= m->hp->n_vocab) {
            fg_err_printf(err, errlen, "row %zu: token %d is not in the "
                          "vocabulary of %u", t, b->tokens[t],
                          m->hp->n_vocab);
            return -1;
        }

        if (b->want && (b->want[t] & FG_MODEL_WANT_HIDDEN)
            && b->hidden == NULL)
        {
            fg_err_printf(err, errlen, "row %zu wants its hidden state, "
                          "the step has no room for it", t);
            return -1;
        }

        p = b->pos[t];

        if (p < 0 || (uint32_t) p >= m->hp->n_ctx_train) {
            fg_err_printf(err, errlen, "row %zu: position %d is outside "
                          "the context of %u", t, p, m->hp->n_ctx_train);
            return -1;
        }

        if (b->seq[t] < 0 || (size_t) b->seq[t] >= b->n_seqs) {
            fg_err_printf(err, errlen, "row %zu: sequence %d of %zu", t,
                          b->seq[t], b->n_seqs);
            return -1;
        }

        last = (size_t) p / kv->block_size;

        if (last >= b->max_blocks) {
            fg_err_printf(err, errlen, "row %zu: position %d needs block "
                          "%zu of a table of %zu", t, p, last,
                          b->max_blocks);
            return -1;
        }

        /*
         * Attention reads blocks 0 .. last of the row's table: each run
         * of one sequence's rows checks each entry once.
         */
        if (b->seq[t] != s) {
            s = b->seq[t];
            checked = 0;
        }

        row = b->block_tables + (size_t) s * b->max_blocks;

        for (j = checked; j <= last; j++) {
            block = row[j];

            if (block < 0 || (uint32_t) block >= kv->n_blocks) {
                fg_err_printf(err, errlen, "row %zu: block %d (entry %zu "
                              "of sequence %d's table) is not in the "
                              "cache of %u blocks", t, block, j, s,
                              kv->n_blocks);
                return -1;
            }
        }

        checked = last + 1 > checked ? last + 1 : checked;
    }

    return 0;
}


int
fg_model_forward(fg_model_ctx_t *ctx, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, float *logits, char *err, size_t errlen)
{
    size_t  r0, n, t, n_out;

    if (fg_model_check(ctx->m, kv, b, err, errlen) != 0) {
        return -1;
    }

    for (r0 = 0; r0 < b->n_tokens; r0 += n) {
        n = b->n_tokens - r0;
        n = n < ctx->max_rows ? n : ctx->max_rows;

        fg_model_pass(ctx, kv, b, r0, n, logits);

        if (b->want) {
            n_out = 0;

            for (t = r0; t < r0 + n; t++) {
                n_out += (b->want[t] & FG_MODEL_WANT_LOGITS) != 0;
            }

            logits += n_out * ctx->m->hp->n_vocab;
        }
    }

    return 0;
}


static void
fg_model_matmul(fg_model_ctx_t *ctx, float *y, const float *x,
    const fg_model_mat_t *w, size_t n)
{
    if (w->packed) {
        fg_k_matmul_packed(ctx->pool, y, x, w->data, w->type, n, w->in,
                           w->out, ctx->work);
        return;
    }

    fg_k_matmul(ctx->pool, y, x, w->data, w->type, n, w->in, w->out,
                ctx->work);
}


/* rows task: element-wise work of n rows of dim, on the pool if large */
static void
fg_model_rows(fg_model_ctx_t *ctx, fg_pool_task_pt task,
    fg_model_rows_t *r, size_t n, size_t dim)
{
    size_t  grain;

    grain = FG_MODEL_ROWS_MIN / (dim ? dim : 1) + 1;

    fg_pool_for(ctx->pool, n, grain, task, r);
}


/* y, the output of a block, added to x: rmsnorm'd * post first if any */
static void
fg_model_residual(fg_model_ctx_t *ctx, const float *post, size_t n)
{
    size_t  embd;

    embd = ctx->m->hp->n_embd;

    if (post) {
        fg_k_rmsnorm(ctx->y, ctx->y, post, n, embd, ctx->m->hp->rms_eps);
    }

    fg_k_add(ctx->x, ctx->x, ctx->y, n * embd);
}


/* attention of n rows of q over the cache, through Wo, into x */
static void
fg_model_attn(fg_model_ctx_t *ctx, const fg_k_kv_t *kv,
    const fg_model_layer_t *layer, const fg_k_batch_t *kb, size_t n)
{
    fg_k_attention_ext(ctx->pool, ctx->xb, ctx->q, kv, kb, ctx->m->hp->n_head,
                       &layer->attn);

    fg_model_matmul(ctx, ctx->y, ctx->xb, &layer->wo, n);
    fg_model_residual(ctx, layer->attn_post_norm, n);
}


/* the feed-forward block of n rows of x, added to x */
static void
fg_model_ffn(fg_model_ctx_t *ctx, fg_model_rows_t *rows, size_t n)
{
    const fg_model_layer_t  *layer;

    layer = rows->layer;

    fg_k_rmsnorm(ctx->xb, ctx->x, layer->ffn_norm, n, ctx->m->hp->n_embd,
                 ctx->m->hp->rms_eps);

    fg_model_matmul(ctx, ctx->hg, ctx->xb, &layer->w_gate, n);
    fg_model_matmul(ctx, ctx->hu, ctx->xb, &layer->w_up, n);

    fg_model_rows(ctx, fg_model_swiglu_task, rows, n, ctx->m->hp->n_ff);

    fg_model_matmul(ctx, ctx->y, ctx->hg, &layer->w_down, n);
    fg_model_residual(ctx, layer->ffn_post_norm, n);
}


static void
fg_model_pass(fg_model_ctx_t *ctx, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, size_t r0, size_t n, float *logits)
{
    int                        last;
    float                      eps;
    size_t                     t, j, n_in, n_out, embd, row_size;
    uint32_t                   l;
    fg_k_batch_t               kb;
    fg_model_rows_t            rows;
    const fg_model_t          *m;
    const fg_model_layer_t    *layer;
    const fg_llama_hparams_t  *hp;

    m = ctx->m;
    hp = m->hp;
    embd = hp->n_embd;
    eps = hp->rms_eps;

    kb.pos = b->pos + r0;
    kb.seq = b->seq + r0;
    kb.block_tables = b->block_tables;
    kb.max_blocks = b->max_blocks;
    kb.n_tokens = n;

    n_in = n;
    n_out = 0;

    for (t = 0; t < n; t++) {
        n_out += b->want && b->want[r0 + t];
    }

    /* the embeddings of the rows' tokens, widened from the file's type */
    row_size = fg_k_row_size(m->tok_embd.type, embd);

    for (t = 0; t < n; t++) {
        if (m->tok_embd.packed) {
            fg_k_pack_dequant_row(m->tok_embd.type, m->tok_embd.data, embd,
                                  (size_t) b->tokens[r0 + t],
                                  ctx->x + t * embd);
            continue;
        }

        fg_k_dequant_row(m->tok_embd.type,
                         (const char *) m->tok_embd.data
                         + (size_t) b->tokens[r0 + t] * row_size,
                         ctx->x + t * embd, embd);
    }

    if (hp->embd_scale != 1.0f) {
        fg_k_scale(ctx->x, n * embd, hp->embd_scale);
    }

    rows.ctx = ctx;

    for (l = 0; l < hp->n_layer; l++) {
        layer = &m->layers[l];
        last = l + 1 == hp->n_layer;

        fg_k_rmsnorm(ctx->xb, ctx->x, layer->attn_norm, n, embd, eps);

        fg_model_matmul(ctx, ctx->q, ctx->xb, &layer->wq, n);
        fg_model_matmul(ctx, ctx->k, ctx->xb, &layer->wk, n);
        fg_model_matmul(ctx, ctx->v, ctx->xb, &layer->wv, n);

        rows.layer = layer;
        rows.pos = kb.pos;
        fg_model_rows(ctx, fg_model_qk_task, &rows, n, m->q_dim);

        fg_k_kv_write(&kv->layers[l], &kb, ctx->k, ctx->v, m->kv_dim);

        if (last && n_out < n) {
            if (n_out == 0) {
                return;
            }

            /* only the wanted rows go on: their q, x, positions */
            for (t = 0, j = 0; t < n; t++) {
                if (!b->want[r0 + t]) {
                    continue;
                }

                if (j != t) {
                    memmove(ctx->q + j * m->q_dim, ctx->q + t * m->q_dim,
                            m->q_dim * sizeof(float));
                    memmove(ctx->x + j * embd, ctx->x + t * embd,
                            embd * sizeof(float));
                }

                ctx->pos[j] = kb.pos[t];
                ctx->seq[j] = kb.seq[t];
                j++;
            }

            kb.pos = ctx->pos;
            kb.seq = ctx->seq;
            kb.n_tokens = n_out;
            n = n_out;
        }

        fg_model_attn(ctx, &kv->layers[l], layer, &kb, n);
        fg_model_ffn(ctx, &rows, n);
    }

    if (n_out == 0) {
        return;
    }

    /* every row left is wanted: the last layer kept only those */
    fg_k_rmsnorm(ctx->xb, ctx->x, m->output_norm, n_out, embd, eps);

    n_out = fg_model_hidden(ctx, b, r0, n_in, kb.seq, n_out);

    if (n_out == 0) {
        return;
    }

    fg_model_matmul(ctx, logits, ctx->xb, &m->output, n_out);

    if (hp->final_softcap > 0) {
        fg_k_softcap(logits, n_out * hp->n_vocab, hp->final_softcap);
    }
}


/*
 * The final hidden states of the kept rows (n of them, in xb, the pass's
 * rows r0 .. r0 + n_in with any want, in order; seq their sequences):
 * those wanted added into their sequence's row of b->hidden, then the
 * rows whose logits are wanted moved to the front of xb.  Returns how
 * many of those there are.
 */
static size_t
fg_model_hidden(fg_model_ctx_t *ctx, const fg_model_batch_t *b, size_t r0,
    size_t n_in, const int32_t *seq, size_t n)
{
    float   *h;
    size_t   t, j, k, embd;
    uint8_t  w;

    embd = ctx->m->hp->n_embd;
    k = 0;

    for (t = r0, j = 0; t < r0 + n_in && j < n; t++) {
        w = b->want[t];

        if (w == 0) {
            continue;
        }

        if (w & FG_MODEL_WANT_HIDDEN) {
            h = b->hidden + (size_t) seq[j] * embd;
            fg_k_add(h, h, ctx->xb + j * embd, embd);
        }

        if (w & FG_MODEL_WANT_LOGITS) {
            if (k != j) {
                memmove(ctx->xb + k * embd, ctx->xb + j * embd,
                        embd * sizeof(float));
            }

            k++;
        }

        j++;
    }

    return k;
}


/* biases, then RoPE on q and k, for rows [r0, r1) */
static void
fg_model_qk_task(void *data, size_t r0, size_t r1, unsigned thread)
{
    size_t                     t;
    fg_model_ctx_t            *ctx;
    const fg_model_t          *m;
    const fg_model_rows_t     *r;
    const fg_model_layer_t    *layer;
    const fg_llama_hparams_t  *hp;

    (void) thread;

    r = data;
    ctx = r->ctx;
    m = ctx->m;
    hp = m->hp;
    layer = r->layer;

    for (t = r0; t < r1; t++) {
        if (layer->bq) {
            fg_k_add(ctx->q + t * m->q_dim, ctx->q + t * m->q_dim,
                     layer->bq, m->q_dim);
        }

        if (layer->bk) {
            fg_k_add(ctx->k + t * m->kv_dim, ctx->k + t * m->kv_dim,
                     layer->bk, m->kv_dim);
        }

        if (layer->bv) {
            fg_k_add(ctx->v + t * m->kv_dim, ctx->v + t * m->kv_dim,
                     layer->bv, m->kv_dim);
        }
    }

    /* each head normed on its own: rows of head_dim */
    if (layer->q_norm) {
        fg_k_rmsnorm(ctx->q + r0 * m->q_dim, ctx->q + r0 * m->q_dim,
                     layer->q_norm, (r1 - r0) * hp->n_head, hp->head_dim,
                     hp->rms_eps);
        fg_k_rmsnorm(ctx->k + r0 * m->kv_dim, ctx->k + r0 * m->kv_dim,
                     layer->k_norm, (r1 - r0) * hp->n_head_kv, hp->head_dim,
                     hp->rms_eps);
    }

    fg_k_rope(ctx->q + r0 * m->q_dim, r1 - r0, m->q_dim, hp->n_head,
              hp->head_dim, hp->n_rot, r->pos + r0, layer->inv_freq,
              m->rope);
    fg_k_rope(ctx->k + r0 * m->kv_dim, r1 - r0, m->kv_dim, hp->n_head_kv,
              hp->head_dim, hp->n_rot, r->pos + r0, layer->inv_freq,
              m->rope);
}


static void
fg_model_swiglu_task(void *data, size_t r0, size_t r1, unsigned thread)
{
    size_t                  ff;
    fg_model_ctx_t         *ctx;
    const fg_model_rows_t  *r;

    (void) thread;

    r = data;
    ctx = r->ctx;
    ff = ctx->m->hp->n_ff;

    if (ctx->m->hp->ffn_act == FG_FFN_GELU) {
        fg_k_geglu(ctx->hg + r0 * ff, ctx->hg + r0 * ff, ctx->hu + r0 * ff,
                   (r1 - r0) * ff);
        return;
    }

    fg_k_swiglu(ctx->hg + r0 * ff, ctx->hg + r0 * ff, ctx->hu + r0 * ff,
                (r1 - r0) * ff);
}
