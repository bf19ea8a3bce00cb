
/*
 * fairgate: the forward pass of a Llama-family model (llama, qwen2, qwen3,
 * gemma, gemma2, gemma3, phi3) on the CPU, over a GGUF file mapped
 * read-only.
 *
 * Three objects:
 *
 *   fg_model_t      the weights: tensors are used where the mapping has
 *                   them, in their own type (F32, F16, BF16, Q8_0), through
 *                   the kernels' typed matrix products; only small vectors
 *                   that are not F32 (norms, biases) are widened once.
 *                   Read-only after load: any number of contexts may share
 *                   one model.
 *
 *   fg_model_kv_t   the paged KV cache: per layer, n_blocks blocks of
 *                   block_size positions, in the kernels' layout
 *                   (kernels/fg_kernels.h).  Whoever calls the forward pass
 *                   decides which blocks a sequence uses.
 *
 *   fg_model_ctx_t  the scratch of one forward pass at a time: activations
 *                   for up to max_rows tokens, the matrix products' work
 *                   buffer, and the thread pool the pass runs on.
 *
 * A step is one matrix: every sequence's new tokens side by side, n_tokens
 * rows, so that each weight matrix is read once per step and multiplies
 * the whole batch.  Steps of more than max_rows tokens run in several
 * passes, in order, each seeing the keys the previous ones wrote.
 */

#ifndef _FG_MODEL_H_INCLUDED_
#define _FG_MODEL_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_gguf.h"
#include "fg_llama.h"
#include "fg_kernels.h"
#include "fg_pool.h"


/*
 * a weight matrix [out][in] as the kernels take it: packed, in the
 * kernels' packed layout (fg_model_place.c)
 */
typedef struct {
    const void             *data;
    fg_k_type_e             type;
    uint32_t                in;
    uint32_t                out;
    int                     packed;
} fg_model_mat_t;


typedef struct {
    const float            *attn_norm;      /* n_embd */
    const float            *ffn_norm;
    const float            *bq;             /* qwen2 biases, or NULL */
    const float            *bk;
    const float            *bv;
    const float            *q_norm;         /* head_dim, or NULL */
    const float            *k_norm;
    const float            *attn_post_norm; /* n_embd, or NULL */
    const float            *ffn_post_norm;
    const float            *inv_freq;       /* the model's or _swa */
    fg_k_attn_opts_t        attn;           /* scale, cap, window */
    fg_model_mat_t          wq;
    fg_model_mat_t          wk;
    fg_model_mat_t          wv;
    fg_model_mat_t          wo;
    fg_model_mat_t          w_gate;
    fg_model_mat_t          w_up;
    fg_model_mat_t          w_down;
} fg_model_layer_t;


typedef struct {
    fg_gguf_t              *gguf;
    fg_llama_model_t        llama;
    const fg_llama_hparams_t *hp;           /* &llama.hp */

    uint32_t                q_dim;          /* n_head * head_dim */
    uint32_t                kv_dim;         /* n_head_kv * head_dim */
    fg_k_rope_e             rope;           /* pairing */

    fg_model_mat_t          tok_embd;       /* rows looked up, any type;
                                               packed with a tied output */
    fg_model_mat_t          output;         /* tok_embd when tied */
    const float            *output_norm;
    float                  *inv_freq;       /* n_rot / 2 */
    float                  *inv_freq_swa;   /* sliding-window layers' */

    fg_model_layer_t       *layers;

    /* widened copies of small vectors that were not F32 */
    float                  *owned;

    /* the region the matrices moved into (fg_model_place.c) */
    void                   *wmem;           /* its mapping, or NULL */
    size_t                  wmem_size;
    size_t                  n_packed;
    size_t                  packed_bytes;
    size_t                  copied_bytes;
} fg_model_t;


typedef struct {
    fg_k_kv_t              *layers;         /* n_layer */
    void                   *mem;            /* its own, or NULL: mapped */
    size_t                  bytes;
    fg_k_type_e             type;           /* FG_K_F16 or FG_K_F32 */
    uint32_t                n_blocks;
    uint32_t                block_size;

    /* sliding layers in slots of their own (fg_model_window.c), or 0 */
    uint32_t                n_slots;
    uint32_t               *wmap;           /* [n_blocks][n_kv_head] */
    const int32_t          *slots;          /* a block's slot, bound by
                                               fg_model_kv_window_bind() */
} fg_model_kv_t;


/*
 * The tokens of a step (rows), as fg_k_batch_t with the token ids and
 * what is wanted of each row: want[t] & FG_MODEL_WANT_LOGITS, its logits
 * (they come out in row order, n_vocab floats each); want[t] &
 * FG_MODEL_WANT_HIDDEN, its final hidden state after the output norm,
 * added into row seq[t] of hidden (n_embd floats a sequence; embeddings
 * pool them).  want NULL: nothing.
 */
#define FG_MODEL_WANT_LOGITS  0x01
#define FG_MODEL_WANT_HIDDEN  0x02

typedef struct {
    const int32_t          *tokens;         /* [n_tokens] */
    const int32_t          *pos;            /* [n_tokens] */
    const int32_t          *seq;            /* [n_tokens] */
    const int32_t          *block_tables;   /* [n_seqs][max_blocks] */
    const uint8_t          *want;           /* [n_tokens] or NULL */
    float                  *hidden;         /* [n_seqs][n_embd], or NULL
                                               when no row wants it */
    size_t                  max_blocks;
    size_t                  n_seqs;
    size_t                  n_tokens;
} fg_model_batch_t;


typedef struct fg_model_ctx_s  fg_model_ctx_t;


/*
 * Maps and validates a model: the loader's checks (fg_llama_load()), and
 * what this forward pass needs besides (a head size the kernels take,
 * n_head * head_dim == n_embd, aligned F32 data).  NULL with a sentence in
 * err that names the file's problem.
 */
fg_model_t *fg_model_open(const char *path, char *err, size_t errlen);
void fg_model_close(fg_model_t *m);

/*
 * Moves the matrices the products read into one region of the model's
 * own, in huge pages where the kernel has them: packed where the kernels
 * multiply them faster so (Q4_0, Q8_0, Q4_K, fg_k_pack_size()), copied
 * otherwise, the mapped pages they came from let go.  In the environment
 * FAIRGATE_CPU_PACK=0 packs nothing, and FAIRGATE_CPU_COPY=0 leaves the
 * matrices it would copy in the file's mapping.  Called by
 * fg_model_open(); memory short leaves them all where they are.
 */
void fg_model_place(fg_model_t *m);

/* values of K and V that one cache block holds, over all layers */
size_t fg_model_kv_block_values(const fg_model_t *m, uint32_t block_size);

/*
 * Allocates the cache of values of type, FG_K_F16 or FG_K_F32 (pages are
 * taken as they are first written); block_size is 1 .. FG_K_MAX_BLOCK.
 * -1 with err filled.
 */
int fg_model_kv_layers(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t block_size, fg_k_type_e type, char *err,
    size_t errlen);
int fg_model_kv_init(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t block_size, fg_k_type_e type, char *err,
    size_t errlen);
void fg_model_kv_free(fg_model_kv_t *kv);

/*
 * fg_model_window.c: a cache whose sliding-window layers (gemma2, gemma3)
 * keep their keys and values in n_slots slots of block_size positions,
 * fewer than the n_blocks of the others (engine/kv/fg_kv.h, "Sliding-
 * window layers"): block b's sliding part is in slot slots[b], which the
 * engine binds before the first step.  n_slots 0, or a model without
 * sliding layers: fg_model_kv_init()'s cache.  -1 with err filled.
 */
int fg_model_kv_init_window(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t n_slots, uint32_t block_size,
    fg_k_type_e type, char *err, size_t errlen);

/* the model's sliding layers */
uint32_t fg_model_swa_layers(const fg_model_t *m);

/* binds the slots of each block, which the engine keeps */
void fg_model_kv_window_bind(fg_model_kv_t *kv, const int32_t *slots);

/*
 * Before a step or a copy: the sliding layers of these blocks read and
 * write their slots (a block without one, at slot 0: only blocks that
 * its window needs are touched, and those have theirs).  -1 when the
 * cache has slots that nobody bound.
 */
int fg_model_kv_window_sync(fg_model_kv_t *kv, const int32_t *blocks,
    size_t n);

/*
 * The cache as a part of a pool of head blocks several models share:
 * head blocks head_bytes bytes apart from arena (at least block_size x
 * head_dim values of type, a whole number of them),
 * map[b * 2 * n_layer * n_kv_head + (2 * l + v) * n_kv_head + h] the
 * head block of keys (v 0) or values (v 1) of head h, layer l, block b.
 * The caller keeps arena and map; -1 with err filled.
 */
int fg_model_kv_map(fg_model_kv_t *kv, const fg_model_t *m,
    uint32_t n_blocks, uint32_t block_size, fg_k_type_e type, void *arena,
    size_t head_bytes, const uint32_t *map, char *err, size_t errlen);

/*
 * Scratch for steps of up to max_rows rows per pass, run on pool (NULL:
 * the calling thread).  The pool must outlive the context.
 */
fg_model_ctx_t *fg_model_ctx_create(const fg_model_t *m, fg_pool_t *pool,
    uint32_t max_rows, char *err, size_t errlen);
void fg_model_ctx_destroy(fg_model_ctx_t *ctx);

/*
 * Checks a step against the model and the cache: token ids in the
 * vocabulary, positions below the context, sequence rows in the table and
 * every block a token reaches in the cache.  0, or -1 with err filled.
 */
int fg_model_check(const fg_model_t *m, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, char *err, size_t errlen);

/*
 * Runs a step (checked first): writes each token's keys and values into
 * its block, attends over positions 0 .. pos[t] of its sequence, and
 * fills logits for the wanted rows.  0, or -1 with err filled when the
 * step does not pass fg_model_check(); nothing is computed then.
 */
int fg_model_forward(fg_model_ctx_t *ctx, const fg_model_kv_t *kv,
    const fg_model_batch_t *b, float *logits, char *err, size_t errlen);


#endif /* _FG_MODEL_H_INCLUDED_ */
