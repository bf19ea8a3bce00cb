
/*
 * fairgate: the engine's compute backends, behind one table of functions.
 *
 * The engine's batcher decides which sequences run each step, owns the
 * paged KV cache's block tables (fg_kv) and samples tokens; a backend only
 * computes: given a batch of sequences, each with new tokens at known
 * positions and the KV blocks they may use, it runs the model over them,
 * writes their keys and values into those blocks, and returns logits for
 * the sequences that want them (or, for an embedding, the sum of its new
 * tokens' final hidden states).  Backends:
 *
 *     cpu     GGUF weights, OpenBLAS and the kernels of kernels/
 *     sim     no weights: sleeps the step time of a cost model
 *             (engine/backends/sim/fg_step_model.h) and returns synthetic
 *             logits, so fairness experiments run at GPU-like rates on a
 *             CPU
 *     cuda    the same on a GPU: its own shared object, loaded on first
 *             use (engine/backends/cuda/fg_backend_cuda.c, docs/cuda.md)
 *
 * KV blocks are numbered 0 .. kv_blocks - 1; block b of every layer holds
 * block_size consecutive positions of whichever sequence the batcher gave
 * it to.  A backend allocates its cache storage at create time (or is
 * given a share of a unified pool: kv_arena) and never decides which
 * block is whose.
 */

#ifndef _FG_BACKEND_H_INCLUDED_
#define _FG_BACKEND_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


typedef struct fg_backend_s  fg_backend_t;


/*
 * The KV cache's values: IEEE halves, as llama.cpp keeps them (half the
 * memory; keys and values rounded to the nearest half as they are
 * written), the default; or floats, which round nothing.
 */
typedef enum {
    FG_BACKEND_KV_F16 = 0,
    FG_BACKEND_KV_F32
} fg_backend_kv_type_e;


/* the bytes of one key or value in a cache of type */
static inline size_t
fg_backend_kv_value_size(fg_backend_kv_type_e type)
{
    return type == FG_BACKEND_KV_F32 ? sizeof(float) : sizeof(uint16_t);
}


typedef struct {
    const char            *model_path;  /* GGUF file; sim: optional */
    uint32_t               kv_blocks;   /* blocks in the KV pool */
    uint32_t               block_size;  /* positions per block, 16 */
    uint32_t               max_batch;   /* sequences in one step */
    uint32_t               max_tokens;  /* tokens in one step (all seqs) */
    uint32_t               threads;     /* cpu: worker threads */
    const char            *step_model;  /* sim: "profile:FILE", "linear:.." */
    double                 speedup;     /* sim: divide step times by this */
    uint32_t               vocab;       /* sim without a model: vocab size */
    fg_backend_kv_type_e   kv_type;     /* cpu; cuda: F16 only */

    /*
     * cpu, several models in one engine: the cache is head blocks of the
     * engine's unified pool (engine/kv/fg_kv.h), kv_map saying which
     * (fg_kv_map(): a block's 2 x layers x KV heads head blocks,
     * kv_head_bytes bytes apart from kv_arena, values of kv_type); NULL:
     * a cache of its own.  The sim backend keeps no cache; the cuda
     * backend refuses it.
     */
    void                  *kv_arena;
    size_t                 kv_head_bytes;
    const uint32_t        *kv_map;

    /*
     * cpu, a cache of its own: 1 lets a model's sliding-window layers
     * keep only their windows, in info.kv_window_slots slots of their
     * own, which the engine's fg_kv assigns to blocks (engine/kv/fg_kv.h)
     * and binds with ops->kv_window before the first step; 0: every
     * layer keeps every position.
     */
    uint32_t               kv_window;

    /* cpu, kv_blocks 0: as many blocks as kv_bytes hold (info.kv_blocks),
     * the window's slots counted */
    uint64_t               kv_bytes;
} fg_backend_conf_t;


/* what the batcher must know of the model a backend runs */
typedef struct {
    uint32_t          vocab;
    uint32_t          context;         /* positions a sequence may reach */
    uint32_t          n_layer;
    uint32_t          n_kv_head;
    uint32_t          head_dim;
    size_t            kv_bytes_per_block;  /* all layers, K and V */
    uint32_t          kv_window;       /* cpu with conf kv_window: the
                                        * window of its sliding layers,
                                        * which keep kv_window_slots
                                        * slots of kv_window_bytes; 0:
                                        * all layers in the blocks */
    uint32_t          kv_window_slots;
    size_t            kv_window_bytes; /* the sliding layers' part of
                                        * kv_bytes_per_block */
    uint32_t          kv_blocks;       /* cuda: blocks it sized from free
                                        * memory (conf kv_blocks 0); cpu:
                                        * from conf kv_bytes; else 0 */
    const char       *kernels;         /* cpu: its SIMD path (fg_k_init());
                                        * else NULL */
    uint32_t          n_embd;          /* the final hidden state's width,
                                        * for embeddings; 0: the backend
                                        * computes none (want_hidden) */
    unsigned          all_logits:1;    /* it gives the logits of every
                                        * new token (want_all); else
                                        * refuses them */
} fg_backend_info_t;


/* one sequence's part of a step */
typedef struct {
    const int32_t    *tokens;          /* new tokens */
    uint32_t          n_tokens;
    uint32_t          pos;             /* position of tokens[0] */
    const int32_t    *block_table;     /* blocks covering 0 .. pos+n-1 */
    uint32_t          n_blocks;
    unsigned          want_logits:1;   /* logits of its last new token */
    unsigned          first:1;         /* its first chunk since it joined
                                          the batch: at pos 0, or past a
                                          prefix the prefix cache held */
    unsigned          want_hidden:1;   /* an embedding: the sum of its new
                                          tokens' final hidden states,
                                          after the output norm, into its
                                          row of the batch's hidden */
    unsigned          want_all:1;      /* logits of every new token, in
                                          order (a prompt's
                                          log-probabilities), the last
                                          one's included; with
                                          info.all_logits alone */
} fg_backend_seq_t;


typedef struct {
    const fg_backend_seq_t  *seqs;
    uint32_t                 n_seqs;

    /* n_seqs rows of info.n_embd floats, row s for sequence s, written
     * for those with want_hidden (the others' are left as they were);
     * NULL when none wants it */
    float                   *hidden;
} fg_backend_batch_t;


typedef struct {
    const char  *name;

    /* returns NULL and fills err (a sentence naming the problem) */
    fg_backend_t *(*create)(const fg_backend_conf_t *conf,
        char *err, size_t errlen);

    void (*destroy)(fg_backend_t *b);

    void (*info)(fg_backend_t *b, fg_backend_info_t *info);

    /*
     * Runs one step.  logits receives vocab floats for each sequence with
     * want_logits, n_tokens rows of them for one with want_all, in batch
     * order.  Returns 0, or -1 with err filled; the
     * cache contents of the batch's sequences are then undefined.
     */
    int (*forward)(fg_backend_t *b, const fg_backend_batch_t *batch,
        float *logits, char *err, size_t errlen);

    /*
     * Optional, NULL where the backend cannot (the batcher's swap
     * preemption then recomputes): kv_save copies blocks[0 .. n), every
     * layer's keys and values, into host, n * info.kv_bytes_per_block
     * bytes, block after block; kv_load copies such a buffer back into
     * blocks[0 .. n), which may be other blocks than those saved.  Both
     * return when the copy is done: 0, or -1 with err filled.
     */
    int (*kv_save)(fg_backend_t *b, const int32_t *blocks, uint32_t n,
        void *host, char *err, size_t errlen);
    int (*kv_load)(fg_backend_t *b, const int32_t *blocks, uint32_t n,
        const void *host, char *err, size_t errlen);

    /*
     * Optional: binds the slot of each block (fg_kv_slots(), kept by the
     * caller) of a backend whose info says kv_window; a copy (kv_save,
     * kv_load) of a block without its slot skips its sliding layers
     * (zeros saved).
     */
    void (*kv_window)(fg_backend_t *b, const int32_t *slots);
} fg_backend_ops_t;


extern const fg_backend_ops_t  fg_backend_cpu;
extern const fg_backend_ops_t  fg_backend_sim;
extern const fg_backend_ops_t  fg_backend_cuda;    /* in its .so only */


/*
 * The slots that sliding layers of window positions need so that they
 * never run short (engine/kv/fg_kv.h): between steps, each of max_batch
 * running sequences holds at most ceil((window - 1) / block_size) + 2,
 * and a step's new positions, max_tokens of them at most, one block
 * more each sequence.
 */
static inline uint64_t
fg_backend_window_slots(uint32_t block_size, uint32_t window,
    uint32_t max_batch, uint32_t max_tokens)
{
    return (uint64_t) max_batch
           * ((window + block_size - 2) / block_size + 3)
           + (max_tokens + block_size - 1) / block_size;
}


/*
 * The backend of this name, or NULL with err filled (a sentence naming
 * the problem: not built, cannot be loaded).  "cuda" dlopen()s
 * fairgate-backend-cuda.so on first use (fg_backend.c).
 */
const fg_backend_ops_t *fg_backend_load(const char *name, char *err,
    size_t errlen);

/* the same without the reason */
const fg_backend_ops_t *fg_backend_find(const char *name);

/*
 * What every backend's forward refuses of sequence s of a batch: logits
 * wanted of no tokens, tokens without tokens or a block table, positions
 * past its table of blocks of block_size, hidden states wanted of a batch
 * without room for them (hidden NULL).  0, or -1 with err saying which.
 */
int fg_backend_check_seq(const fg_backend_seq_t *sq, size_t s,
    uint32_t block_size, const float *hidden, char *err, size_t errlen);

/*
 * The memory this process may use: the smaller of the machine's (MemTotal
 * of /proc/meminfo) and its cgroup's limit (memory.max); 0 when neither
 * can be read.  where names which one bound ("the machine", "the cgroup").
 */
uint64_t fg_backend_mem_limit(const char **where);

/*
 * Refuses a model whose weights (the mapped file) and KV cache together
 * exceed limit bytes (0: unknown, nothing refused): better one clear line
 * at start than the kernel's OOM killer once the cache fills.  0, or -1
 * with err naming the file, the figures and what to change.
 */
int fg_backend_check_memory(const char *path, uint64_t weights,
    uint64_t kv, uint64_t limit, const char *where, char *err,
    size_t errlen);


#endif /* _FG_BACKEND_H_INCLUDED_ */
