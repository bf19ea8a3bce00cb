
/*
 * fairgate: the paged KV cache's bookkeeping.
 *
 * The pool is kv_blocks blocks of block_size positions (16 by default); a
 * backend holds the keys and values, this file decides which block is
 * whose.  A sequence owns a block table: block i covers its positions
 * i * block_size .. (i + 1) * block_size - 1, and the table grows as the
 * sequence does.  Blocks carry reference counts so that sequences can share
 * a common prefix (prefix caching): a shared block is only ever a full one,
 * which nobody writes into again, so appending never needs copy-on-write;
 * fg_kv_seq_share() enforces that.  A request's n choices (fg_batch.h)
 * share their prompt's full blocks so: each holds a reference, and the
 * last, partial block is each one's own, computed again rather than
 * copied.  A block returns to the free list when its last reference
 * goes.
 *
 * The prefix cache: a full block whose positions are all computed may be
 * given a hash, its identity (the chained hash of fg_shm_block_hash(): the
 * same tokens after the same prefix), which the cache's table maps to it.
 * Such a block is not freed with its last reference: it becomes
 * evictable, on an LRU list in the order of release, and a later
 * sequence may take a reference to it again (fg_kv_seq_adopt()).  A block
 * is taken from the free stack first, else the least recently released
 * evictable block is evicted (its hash leaves the table).  Evictable
 * blocks count as free for every question of room (fg_kv_free_blocks()).
 * A callback hears every hash that enters or leaves the cache (the
 * engine's segment index).
 *
 * Free blocks are kept on a stack: the block freed last is used first,
 * which keeps the cache's working set small.  Nothing here allocates after
 * fg_kv_create() but the block tables, which grow by doubling.
 */

#ifndef _FG_KV_H_INCLUDED_
#define _FG_KV_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_backend.h"


#define FG_KV_BLOCK_SIZE  16


typedef struct fg_kv_s        fg_kv_t;
typedef struct fg_kv_arena_s  fg_kv_arena_t;


/* a hash entered the cache (held 1) or left it (held 0) */
typedef void (*fg_kv_index_pt)(void *ctx, uint64_t hash, int held);


/* one sequence's block table */
typedef struct {
    int32_t    *blocks;
    uint32_t    n_blocks;
    uint32_t    cap;
    uint32_t    n_pos;          /* positions the blocks are reserved for */
    uint32_t    swa_lo;         /* it needs the window slots of blocks */
    uint32_t    swa_hi;         /* swa_lo .. swa_hi - 1 (fg_kv_seq_window) */
} fg_kv_seq_t;


/* NULL on error (no memory, or a size of 0), with a message in err */
fg_kv_t *fg_kv_create(uint32_t n_blocks, uint32_t block_size, char *err,
    size_t errlen);
void fg_kv_destroy(fg_kv_t *kv);

uint32_t fg_kv_n_blocks(const fg_kv_t *kv);
uint32_t fg_kv_block_size(const fg_kv_t *kv);

/* blocks a sequence may take now: free and evictable, within the limit */
uint32_t fg_kv_free_blocks(const fg_kv_t *kv);

/* blocks sequences hold (a reference or more; not the evictable ones) */
uint32_t fg_kv_held_blocks(const fg_kv_t *kv);

/*
 * Several models in one engine (fg_engine_mux.c): the blocks this pool may
 * hold at most, its model's quota of a shared pool, below n_blocks.  Above
 * it, fg_kv_free_blocks() is 0, so growth and joins fail as when the pool
 * is empty (the batcher preempts or waits); a limit lowered below what is
 * held takes nothing away, it only stops growth until sequences give
 * blocks back.  At the start, and above n_blocks: n_blocks, no limit.
 */
void fg_kv_set_limit(fg_kv_t *kv, uint32_t limit);
uint32_t fg_kv_limit(const fg_kv_t *kv);

/*
 * Several models in one engine on the cpu backend: this model's blocks
 * are backed by the engine's unified pool of head blocks
 * (below), unit (2 x layers x KV heads) of them a block, taken
 * when a block is taken from the free stack and given back when it
 * returns there (an evictable block keeps its own).  A block can then
 * be short because other models hold the arena: fg_kv_free_blocks()
 * counts only the free blocks the arena can back, and a grow that
 * another model's thread beat to the arena fails whole.  Before any
 * block is taken: 0, or -1 (held blocks, no memory for the map).
 */
int fg_kv_set_arena(fg_kv_t *kv, fg_kv_arena_t *arena, uint32_t unit);

/*
 * Which head blocks back each block: map[b * unit + i] for head block i
 * of block b, i being (2 x layer + 0 for keys, 1 for values) x KV heads
 * + head; the backend reads the cache through it.  NULL without an
 * arena.
 */
const uint32_t *fg_kv_map(const fg_kv_t *kv);

/* blocks that n positions occupy */
uint32_t fg_kv_blocks_for(const fg_kv_t *kv, uint64_t n);

/* the reference count of a block (0: free) */
uint32_t fg_kv_refs(const fg_kv_t *kv, int32_t block);


void fg_kv_seq_init(fg_kv_seq_t *s);

/* free blocks the sequence needs to hold k more positions */
uint32_t fg_kv_grow_need(const fg_kv_t *kv, const fg_kv_seq_t *s,
    uint32_t k);

/* whether the sequence can grow by k positions now */
int fg_kv_can_grow(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t k);

/*
 * Reserves k more positions: takes the blocks they need.  0, or -1 when
 * the pool (or memory for the table) falls short; the sequence is then
 * unchanged.
 */
int fg_kv_grow(fg_kv_t *kv, fg_kv_seq_t *s, uint32_t k);

/*
 * Gives up the sequence's blocks (each loses one reference) and its
 * table; the sequence is empty afterwards and may grow again.
 */
void fg_kv_seq_free(fg_kv_t *kv, fg_kv_seq_t *s);

/*
 * Prefix sharing: an empty dst takes a reference to the first n_blocks
 * blocks of src, which must be full (n_blocks * block_size <= src's
 * positions).  0, or -1 (not full, dst not empty, no memory).
 */
int fg_kv_seq_share(fg_kv_t *kv, fg_kv_seq_t *dst, const fg_kv_seq_t *src,
    uint32_t n_blocks);


/* the prefix cache */

void fg_kv_set_index(fg_kv_t *kv, fg_kv_index_pt index, void *ctx);

/* the block that holds hash, or -1 */
int32_t fg_kv_cache_find(const fg_kv_t *kv, uint64_t hash);

/*
 * Gives a held block (a full one, all computed) its hash: 0, or -1 when
 * another block holds that hash already (the first registered wins: this
 * one stays private), the block has a hash, or is not held.
 */
int fg_kv_cache_insert(fg_kv_t *kv, int32_t block, uint64_t hash);

/*
 * Appends a cached block to a sequence whose blocks are all full, with a
 * reference (an evictable block is no longer): 0, or -1 (no such cached
 * block, a sequence with a partial block, no memory).
 */
int fg_kv_seq_adopt(fg_kv_t *kv, fg_kv_seq_t *s, int32_t block);

/*
 * A cached block's contents can no longer be trusted (a backend failed a
 * step that used it): its hash leaves the cache, and the block is freed
 * with its last reference (at once when it has none).
 */
void fg_kv_cache_forget(fg_kv_t *kv, int32_t block);

/*
 * Evicts up to n evictable blocks, the least recently released first:
 * their hashes leave the cache and they are free again (with an arena,
 * their head blocks go back to it, for the other models).  How many.
 */
uint32_t fg_kv_evict(fg_kv_t *kv, uint32_t n);

/* the hash of a block, 0 for none */
uint64_t fg_kv_block_hash(const fg_kv_t *kv, int32_t block);

/* blocks with a hash, held or evictable; the evictable ones; evictions */
uint32_t fg_kv_cached_blocks(const fg_kv_t *kv);
uint32_t fg_kv_evictable_blocks(const fg_kv_t *kv);
uint64_t fg_kv_evictions(const fg_kv_t *kv);


/*
 * Sliding-window layers (fg_kv_window.c).  A model whose sliding layers
 * see only the last `window` positions (gemma2, gemma3) need not keep
 * their keys and values for older ones: its backend keeps those layers
 * in n_slots slots of block_size positions (fewer than the blocks) and
 * the other layers in the blocks.  A block has a slot (fg_kv_slots():
 * slot[b], -1 for none) while a sequence's window needs it, and each
 * sequence counts which: before a step computes positions pos .. pos +
 * n - 1, fg_kv_seq_window() lets go of the blocks wholly before pos + 1
 * - window, and takes the slots of those from there to pos + n - 1; a
 * block that begins below known (positions computed already) must have
 * kept its slot (-2 if not: its sliding layers are lost).  After a step,
 * the same with n 0 lets go of what the next token no longer sees.
 *
 * A sequence that ends with a cached block in its window leaves it its
 * slot: a later sequence with that prefix starts there.  Any slot that
 * no sequence needs is taken back when the free ones run out, so a
 * cached prefix is usable (fg_kv_window_prefix()) only as far as the
 * window before its end has kept its slots: a prompt that extends the
 * whole of an earlier conversation reuses it, a shared prefix that
 * earlier sequences went a window past is computed again (llama.cpp's
 * cache for such layers does the same).  Slots enough for every running
 * sequence's window and a step's new blocks never run out (the backend
 * sizes them so: fg_backend_window_slots()).  Not with an arena.
 */

/* once, before any block is taken (again with the same figures: 0);
 * -1 with err filled */
int fg_kv_set_window(fg_kv_t *kv, uint32_t window, uint32_t n_slots,
    char *err, size_t errlen);

/* the window (0: none), the slots, the free ones; slot[b] of each block,
 * NULL without a window */
uint32_t fg_kv_window(const fg_kv_t *kv);
uint32_t fg_kv_window_slots(const fg_kv_t *kv);
uint32_t fg_kv_window_free(const fg_kv_t *kv);
const int32_t *fg_kv_slots(const fg_kv_t *kv);

/*
 * Before computing positions pos .. pos + n - 1 (reserved already): 0;
 * -1 (positions not reserved, no slot free), -2 (a block below known
 * lost its slot).  The sequence's references stay consistent either way.
 */
int fg_kv_seq_window(fg_kv_t *kv, fg_kv_seq_t *s, uint32_t pos,
    uint32_t n, uint32_t known);

/*
 * Of a prefix of m full blocks, blocks[] (or, blocks NULL, the cached
 * blocks of hashes[]), the most that a sequence can start after: the
 * largest m' <= m whose window's blocks all have their slots.  m without
 * a window.
 */
uint32_t fg_kv_window_prefix(const fg_kv_t *kv, const uint64_t *hashes,
    const int32_t *blocks, uint32_t m);


/*
 * The arena (fg_kv_arena.c): the unified KV pool of several models in
 * one engine (MuxServe's head-wise cache), head blocks, each one head's
 * keys or values for block_size positions, that every model's cache takes
 * from.  A model's token block (block_size positions of all its layers)
 * takes 2 x layers x kv_heads head blocks, from anywhere in the arena, so
 * models of different shapes share it without fragmentation; its fg_kv
 * takes them when it takes the block and gives them back when the block
 * is free again (fg_kv_set_arena()), and the model's backend reads them
 * through the map fg_kv keeps (kernels/fg_kernels.h, fg_k_kv_head()).
 *
 * The models' lanes run on threads, so taking and giving are under a
 * mutex; nothing else changes after creation.  The memory is anonymous
 * pages, taken as they are first written: the arena's resident size
 * follows the most head blocks the models held at once, where caches of
 * their own would each keep the most they had held.
 */

/*
 * n head blocks of head_bytes bytes each (block_size x the largest head
 * size of the models x the bytes of a value of the engine's KV type).
 * NULL with err filled.
 */
fg_kv_arena_t *fg_kv_arena_create(uint32_t n, size_t head_bytes,
    char *err, size_t errlen);
void fg_kv_arena_destroy(fg_kv_arena_t *a);

void *fg_kv_arena_base(const fg_kv_arena_t *a);
size_t fg_kv_arena_head_bytes(const fg_kv_arena_t *a);
uint32_t fg_kv_arena_size(const fg_kv_arena_t *a);

/* head blocks free now; the most ever held at once */
uint32_t fg_kv_arena_free(fg_kv_arena_t *a);
uint32_t fg_kv_arena_peak(fg_kv_arena_t *a);

/* a backend's cache in the arena's head blocks that map says (fg_kv_map()) */
void fg_kv_arena_conf(const fg_kv_arena_t *a, const uint32_t *map,
    fg_backend_conf_t *conf);

/* n head blocks into out: 0, or -1 (fewer free; nothing taken) */
int fg_kv_arena_take(fg_kv_arena_t *a, uint32_t n, uint32_t *out);
void fg_kv_arena_give(fg_kv_arena_t *a, uint32_t n, const uint32_t *in);


#endif /* _FG_KV_H_INCLUDED_ */
