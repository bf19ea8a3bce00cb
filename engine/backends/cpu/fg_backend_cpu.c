
/*
 * fairgate: the cpu backend: a GGUF model's forward pass (fg_model) on
 * OpenBLAS and the kernels of kernels/, over a thread pool.
 *
 * A step's sequences become one matrix of rows (fg_model_batch_t): their
 * tokens side by side, each with its position and its sequence's row in a
 * table of block ids, and a flag on each sequence's last row when its
 * logits are wanted.  The arrays grow to the largest step seen and stay.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_backend.h"
#include "fg_mem.h"
#include "fg_model.h"


/* positions per KV block and rows per pass when the configuration says 0 */
#define FG_CPU_BLOCK_SIZE  16
#define FG_CPU_MAX_TOKENS  512


struct fg_backend_s {
    fg_model_t          *model;
    const char          *kernels;       /* fg_k_init()'s path, for info */
    fg_model_kv_t        kv;
    unsigned             kv_sized:1;    /* its blocks from conf kv_bytes */
    fg_model_ctx_t      *ctx;
    fg_pool_t           *pool;

    /* the step as rows */
    int32_t             *tokens;
    int32_t             *pos;
    int32_t             *seq;
    uint8_t             *want;
    size_t               rows_cap;
    int32_t             *tables;
    size_t               tables_cap;
};


static fg_backend_t *fg_cpu_create(const fg_backend_conf_t *conf, char *err,
    size_t errlen);
static void fg_cpu_destroy(fg_backend_t *b);
static void fg_cpu_info(fg_backend_t *b, fg_backend_info_t *info);
static int fg_cpu_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen);
static int fg_cpu_grow(fg_backend_t *b, size_t rows, size_t tables);
static int fg_cpu_kv_save(fg_backend_t *b, const int32_t *blocks,
    uint32_t n, void *host, char *err, size_t errlen);
static int fg_cpu_kv_load(fg_backend_t *b, const int32_t *blocks,
    uint32_t n, const void *host, char *err, size_t errlen);
static void fg_cpu_kv_window(fg_backend_t *b, const int32_t *slots);


const fg_backend_ops_t  fg_backend_cpu = {
    "cpu",
    fg_cpu_create,
    fg_cpu_destroy,
    fg_cpu_info,
    fg_cpu_forward,
    fg_cpu_kv_save,
    fg_cpu_kv_load,
    fg_cpu_kv_window
};


/*
 * The slots the sliding layers keep (fg_backend_window_slots()), or 0
 * for none: no such layers, an arena, a window not asked for, or slots
 * that would be as many as the blocks.
 */
static uint32_t
fg_cpu_window_slots(const fg_model_t *m, const fg_backend_conf_t *conf,
    uint32_t n_blocks, uint32_t block_size, uint32_t max_tokens)
{
    uint64_t  n;

    if (!conf->kv_window || conf->kv_arena || conf->max_batch == 0
        || m->hp->n_swa == 0 || fg_model_swa_layers(m) == 0)
    {
        return 0;
    }

    n = fg_backend_window_slots(block_size, m->hp->n_swa, conf->max_batch,
                                max_tokens);

    return n < n_blocks ? (uint32_t) n : 0;
}


/* the bytes of one block's sliding layers, keys and values */
static size_t
fg_cpu_window_bytes(const fg_model_t *m, uint32_t block_size,
    size_t value_size)
{
    return 2 * (size_t) fg_model_swa_layers(m) * m->kv_dim * block_size
           * value_size;
}


/*
 * The blocks that conf->kv_bytes holds: the sliding layers' slots (sized
 * for the blocks, fg_cpu_window_slots()) taken off first where they save
 * memory, then blocks of the global layers; else blocks of every layer.
 * At most 2^24 (--kv-blocks' bound).
 */
static uint32_t
fg_cpu_size_blocks(const fg_model_t *m, const fg_backend_conf_t *conf,
    uint32_t block_size, uint32_t max_tokens)
{
    size_t    vs, full, win;
    uint32_t  slots;
    uint64_t  n;

    vs = fg_backend_kv_value_size(conf->kv_type);
    full = fg_model_kv_block_values(m, block_size) * vs;
    win = fg_cpu_window_bytes(m, block_size, vs);
    n = conf->kv_bytes / full;
    n = n < (1u << 24) ? n : (1u << 24);
    slots = fg_cpu_window_slots(m, conf, UINT32_MAX, block_size,
                                max_tokens);

    if (slots && win < full
        && conf->kv_bytes > (uint64_t) win * slots
        && (conf->kv_bytes - (uint64_t) win * slots) / (full - win) > slots)
    {
        n = (conf->kv_bytes - (uint64_t) win * slots) / (full - win);
        n = n < (1u << 24) ? n : (1u << 24);
    }

    return (uint32_t) n;
}


/* the mapped file and the cache it asks for against the memory there */
static int
fg_cpu_check_memory(const fg_model_t *m, const fg_backend_conf_t *conf,
    uint32_t n_blocks, uint32_t block_size, uint32_t n_slots, char *err,
    size_t errlen)
{
    size_t       vs, swa;
    uint64_t     kv, limit;
    const char  *where;

    vs = fg_backend_kv_value_size(conf->kv_type);
    swa = n_slots ? fg_cpu_window_bytes(m, block_size, vs) : 0;
    kv = ((uint64_t) fg_model_kv_block_values(m, block_size) * vs - swa)
         * n_blocks + (uint64_t) swa * n_slots;
    limit = fg_backend_mem_limit(&where);

    return fg_backend_check_memory(conf->model_path, m->gguf->size, kv,
                                   limit, where, err, errlen);
}


static fg_backend_t *
fg_cpu_create(const fg_backend_conf_t *conf, char *err, size_t errlen)
{
    long           online;
    uint32_t       block_size, max_tokens, n_slots, n_blocks;
    unsigned       threads;
    const char    *kernels;
    fg_k_type_e    type;
    fg_backend_t  *b;

    if (conf->model_path == NULL || conf->model_path[0] == '\0') {
        snprintf(err, errlen, "the cpu backend needs a model file");
        return NULL;
    }

    if (conf->kv_blocks == 0 && conf->kv_bytes == 0) {
        snprintf(err, errlen, "the cpu backend needs a KV cache of at "
                 "least one block");
        return NULL;
    }

    block_size = conf->block_size ? conf->block_size : FG_CPU_BLOCK_SIZE;
    max_tokens = conf->max_tokens ? conf->max_tokens : FG_CPU_MAX_TOKENS;

    threads = conf->threads;

    if (threads == 0) {
        online = sysconf(_SC_NPROCESSORS_ONLN);
        threads = online > 0 ? (unsigned) online : 1;
    }

    if (threads > 1024) {
        snprintf(err, errlen, "%u threads (at most 1024)", threads);
        return NULL;
    }

    /* the SIMD paths, and OpenBLAS on the calling thread: idempotent */
    kernels = fg_k_init();

    b = calloc(1, sizeof(fg_backend_t));
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }

    b->kernels = kernels;

    b->model = fg_model_open(conf->model_path, err, errlen);
    if (b->model == NULL) {
        goto failed;
    }

    n_blocks = conf->kv_blocks
               ? conf->kv_blocks
               : fg_cpu_size_blocks(b->model, conf, block_size, max_tokens);

    b->kv_sized = conf->kv_blocks == 0;

    if (n_blocks == 0) {
        snprintf(err, errlen, "a KV cache of %llu bytes holds no block of "
                 "this model", (unsigned long long) conf->kv_bytes);
        goto failed;
    }

    n_slots = fg_cpu_window_slots(b->model, conf, n_blocks, block_size,
                                  max_tokens);

    if (conf->kv_arena == NULL
        && fg_cpu_check_memory(b->model, conf, n_blocks, block_size,
                               n_slots, err, errlen)
           != 0)
    {
        goto failed;
    }

    type = conf->kv_type == FG_BACKEND_KV_F32 ? FG_K_F32 : FG_K_F16;

    if ((conf->kv_arena
         ? fg_model_kv_map(&b->kv, b->model, n_blocks, block_size,
                           type, conf->kv_arena, conf->kv_head_bytes,
                           conf->kv_map, err, errlen)
         : fg_model_kv_init_window(&b->kv, b->model, n_blocks,
                                   n_slots, block_size, type, err, errlen))
        != 0)
    {
        goto failed;
    }

    if (threads > 1) {
        b->pool = fg_pool_create(threads);

        if (b->pool == NULL) {
            snprintf(err, errlen, "cannot start %u threads", threads);
            goto failed;
        }
    }

    b->ctx = fg_model_ctx_create(b->model, b->pool, max_tokens, err, errlen);
    if (b->ctx == NULL) {
        goto failed;
    }

    return b;

failed:

    fg_cpu_destroy(b);

    return NULL;
}


static void
fg_cpu_destroy(fg_backend_t *b)
{
    if (b == NULL) {
        return;
    }

    fg_model_ctx_destroy(b->ctx);

    if (b->pool) {
        fg_pool_destroy(b->pool);
    }

    fg_model_kv_free(&b->kv);
    fg_model_close(b->model);

    fg_free_all(b->tokens, b->pos, b->seq, b->want, b->tables, b);
}


static void
fg_cpu_info(fg_backend_t *b, fg_backend_info_t *info)
{
    const fg_llama_hparams_t  *hp;

    hp = b->model->hp;

    info->vocab = hp->n_vocab;
    info->kernels = b->kernels;
    info->context = hp->n_ctx_train;
    info->n_layer = hp->n_layer;
    info->n_kv_head = hp->n_head_kv;
    info->head_dim = hp->head_dim;
    info->kv_bytes_per_block = fg_model_kv_block_values(b->model,
                                                        b->kv.block_size)
                               * fg_k_kv_value_size(b->kv.type);
    info->n_embd = hp->n_embd;
    info->all_logits = 1;

    if (b->kv_sized) {
        info->kv_blocks = b->kv.n_blocks;
    }

    if (b->kv.n_slots) {
        info->kv_window = hp->n_swa;
        info->kv_window_slots = b->kv.n_slots;
        info->kv_window_bytes = fg_cpu_window_bytes(b->model,
                                                    b->kv.block_size,
                                                    fg_k_kv_value_size(
                                                        b->kv.type));
    }
}


static void
fg_cpu_kv_window(fg_backend_t *b, const int32_t *slots)
{
    fg_model_kv_window_bind(&b->kv, slots);
}


static int
fg_cpu_forward(fg_backend_t *b, const fg_backend_batch_t *batch,
    float *logits, char *err, size_t errlen)
{
    size_t                   s, i, rows, max_blocks, r;
    fg_model_batch_t         mb;
    const fg_backend_seq_t  *sq;

    rows = 0;
    max_blocks = 1;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];

        if (fg_backend_check_seq(sq, s, b->kv.block_size, batch->hidden,
                                 err, errlen)
            != 0)
        {
            return -1;
        }

        if (sq->want_hidden) {
            memset(batch->hidden + s * b->model->hp->n_embd, 0,
                   b->model->hp->n_embd * sizeof(float));
        }

        if (sq->block_table
            && fg_model_kv_window_sync(&b->kv, sq->block_table,
                                       sq->n_blocks)
               != 0)
        {
            snprintf(err, errlen, "the sliding layers' slots are not bound");
            return -1;
        }

        rows += sq->n_tokens;
        max_blocks = sq->n_blocks > max_blocks ? sq->n_blocks : max_blocks;
    }

    if (rows == 0) {
        return 0;
    }

    if (fg_cpu_grow(b, rows, batch->n_seqs * max_blocks) != 0) {
        snprintf(err, errlen, "out of memory for a step of %zu tokens",
                 rows);
        return -1;
    }

    r = 0;

    for (s = 0; s < batch->n_seqs; s++) {
        sq = &batch->seqs[s];

        i = 0;

        if (sq->block_table) {
            memcpy(b->tables + s * max_blocks, sq->block_table,
                   sq->n_blocks * sizeof(int32_t));
            i = sq->n_blocks;
        }

        /* entries past a sequence's own are never read; -1 if they were */
        for ( /* void */ ; i < max_blocks; i++) {
            b->tables[s * max_blocks + i] = -1;
        }

        for (i = 0; i < sq->n_tokens; i++, r++) {
            b->tokens[r] = sq->tokens[i];
            b->pos[r] = (int32_t) (sq->pos + i);
            b->seq[r] = (int32_t) s;
            b->want[r] = (sq->want_all
                          || (sq->want_logits && i + 1 == sq->n_tokens)
                          ? FG_MODEL_WANT_LOGITS : 0)
                         | (sq->want_hidden ? FG_MODEL_WANT_HIDDEN : 0);
        }
    }

    mb.tokens = b->tokens;
    mb.pos = b->pos;
    mb.seq = b->seq;
    mb.block_tables = b->tables;
    mb.want = b->want;
    mb.hidden = batch->hidden;
    mb.max_blocks = max_blocks;
    mb.n_seqs = batch->n_seqs;
    mb.n_tokens = rows;

    return fg_model_forward(b->ctx, &b->kv, &mb, logits, err, errlen);
}


static int
fg_cpu_grow(fg_backend_t *b, size_t rows, size_t tables)
{
    void  *p;

    if (rows > b->rows_cap) {
        rows = rows > 2 * b->rows_cap ? rows : 2 * b->rows_cap;

        if ((p = realloc(b->tokens, rows * sizeof(int32_t))) == NULL) {
            return -1;
        }

        b->tokens = p;

        if ((p = realloc(b->pos, rows * sizeof(int32_t))) == NULL) {
            return -1;
        }

        b->pos = p;

        if ((p = realloc(b->seq, rows * sizeof(int32_t))) == NULL) {
            return -1;
        }

        b->seq = p;

        if ((p = realloc(b->want, rows)) == NULL) {
            return -1;
        }

        b->want = p;
        b->rows_cap = rows;
    }

    if (tables > b->tables_cap) {
        tables = tables > 2 * b->tables_cap ? tables : 2 * b->tables_cap;

        if ((p = realloc(b->tables, tables * sizeof(int32_t))) == NULL) {
            return -1;
        }

        b->tables = p;
        b->tables_cap = tables;
    }

    return 0;
}


/*
 * One layer's keys (map k_map) or values of a block to or from host; none
 * (zeros saved) where the block has no slot in a sliding layer.
 */
static char *
fg_cpu_kv_copy_heads(const fg_k_kv_t *lk, void *base, const uint32_t *map,
    size_t block, char *host, int save, int none)
{
    char    *head;
    size_t   h, per, vs;

    vs = fg_k_kv_value_size(lk->type);
    per = lk->block_size * lk->head_dim * vs;

    for (h = 0; h < lk->n_kv_head; h++, host += per) {
        head = (char *) base + fg_k_kv_head(lk, map, block, h) * vs;

        if (none) {
            if (save) {
                memset(host, 0, per);
            }

        } else if (save) {
            memcpy(host, head, per);

        } else {
            memcpy(head, host, per);
        }
    }

    return host;
}


/*
 * Copies blocks between the cache and a host buffer (fg_backend.h's
 * kv_save, kv_load): per block, each layer's keys then values, a block's
 * worth of one layer's being its heads' block_size * head_dim values, in
 * the cache's type, one after another.
 */
static int
fg_cpu_kv_copy(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    char *host, int save, char *err, size_t errlen)
{
    int              none;
    uint32_t         i, l;
    fg_k_kv_t       *lk;
    fg_model_kv_t   *kv;

    kv = &b->kv;

    for (i = 0; i < n; i++) {
        if (blocks[i] < 0 || (uint32_t) blocks[i] >= kv->n_blocks) {
            snprintf(err, errlen, "KV block %d of a swap is outside the "
                     "cache of %u", blocks[i], kv->n_blocks);
            return -1;
        }
    }

    if (fg_model_kv_window_sync(kv, blocks, n) != 0) {
        snprintf(err, errlen, "the sliding layers' slots are not bound");
        return -1;
    }

    for (i = 0; i < n; i++) {
        for (l = 0; l < b->model->hp->n_layer; l++) {
            lk = &kv->layers[l];
            none = lk->k_map == kv->wmap && kv->wmap
                   && kv->slots[blocks[i]] < 0;
            host = fg_cpu_kv_copy_heads(lk, lk->k, lk->k_map,
                                        (size_t) blocks[i], host, save,
                                        none);
            host = fg_cpu_kv_copy_heads(lk, lk->v, lk->v_map,
                                        (size_t) blocks[i], host, save,
                                        none);
        }
    }

    return 0;
}


static int
fg_cpu_kv_save(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    void *host, char *err, size_t errlen)
{
    return fg_cpu_kv_copy(b, blocks, n, host, 1, err, errlen);
}


static int
fg_cpu_kv_load(fg_backend_t *b, const int32_t *blocks, uint32_t n,
    const void *host, char *err, size_t errlen)
{
    /* not written through: the copy's direction is save's */
    return fg_cpu_kv_copy(b, blocks, n, (char *) host, 0, err, errlen);
}
