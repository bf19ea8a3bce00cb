
/*
 * fairgate: the paged KV cache's bookkeeping, and the prefix cache's:
 * each block's hash, the table from hash to block (chains through the
 * blocks, so it never allocates) and the LRU list of evictable blocks.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_kv.h"
#include "fg_kv_int.h"
#include "fg_mem.h"




/* whether a caller's block id names one of the pool's blocks */
static inline int
fg_kv_block_in(const fg_kv_t *kv, int32_t block)
{
    return block >= 0 && (uint32_t) block < kv->n_blocks;
}


fg_kv_t *
fg_kv_create(uint32_t n_blocks, uint32_t block_size, char *err,
    size_t errlen)
{
    uint32_t   i, n;
    fg_kv_t   *kv;

    if (n_blocks == 0 || block_size == 0 || n_blocks > INT32_MAX) {
        snprintf(err, errlen, "KV pool of %u blocks of %u positions: both "
                 "must be at least 1", n_blocks, block_size);
        return NULL;
    }

    kv = calloc(1, sizeof(fg_kv_t));

    if (kv == NULL) {
        goto nomem;
    }

    for (n = 1; n < n_blocks; n *= 2) { /* void */ }

    kv->free = malloc(n_blocks * sizeof(int32_t));
    kv->refs = calloc(n_blocks, sizeof(uint32_t));
    kv->hash = calloc(n_blocks, sizeof(uint64_t));
    kv->hnext = malloc(n_blocks * sizeof(int32_t));
    kv->prev = malloc(n_blocks * sizeof(int32_t));
    kv->next = malloc(n_blocks * sizeof(int32_t));
    kv->buckets = malloc(n * sizeof(int32_t));

    if (kv->free == NULL || kv->refs == NULL || kv->hash == NULL
        || kv->hnext == NULL || kv->prev == NULL || kv->next == NULL
        || kv->buckets == NULL)
    {
        fg_kv_destroy(kv);
        goto nomem;
    }

    kv->n_blocks = n_blocks;
    kv->block_size = block_size;
    kv->n_free = n_blocks;
    kv->limit = n_blocks;
    kv->mask = n - 1;
    kv->lru_head = -1;
    kv->lru_tail = -1;

    for (i = 0; i < n; i++) {
        kv->buckets[i] = -1;
    }

    /* block 0 on top: a fresh pool hands out 0, 1, 2 ... */
    for (i = 0; i < n_blocks; i++) {
        kv->free[i] = (int32_t) (n_blocks - 1 - i);
    }

    return kv;

nomem:

    snprintf(err, errlen, "no memory for a KV pool of %u blocks", n_blocks);

    return NULL;
}


void
fg_kv_destroy(fg_kv_t *kv)
{
    uint32_t  b;

    if (kv == NULL) {
        return;
    }

    if (kv->arena) {
        for (b = 0; b < kv->n_blocks; b++) {
            if (kv->refs[b] || kv->hash[b]) {
                fg_kv_arena_give(kv->arena, kv->unit,
                                 kv->map + (size_t) b * kv->unit);
            }
        }
    }

    fg_kv_window_destroy(kv);
    fg_free_all(kv->map, kv->free, kv->refs, kv->hash, kv->hnext, kv->prev,
                kv->next, kv->buckets, kv);
}


uint32_t
fg_kv_n_blocks(const fg_kv_t *kv)
{
    return kv->n_blocks;
}


uint32_t
fg_kv_block_size(const fg_kv_t *kv)
{
    return kv->block_size;
}


uint32_t
fg_kv_free_blocks(const fg_kv_t *kv)
{
    uint32_t  held, room, fresh, heads;

    held = fg_kv_held_blocks(kv);
    room = kv->limit > held ? kv->limit - held : 0;
    fresh = kv->n_free;

    /* a free block needs its head blocks from the arena too */
    if (kv->arena) {
        heads = fg_kv_arena_free(kv->arena) / kv->unit;
        fresh = heads < fresh ? heads : fresh;
    }

    return fresh + kv->n_evictable < room ? fresh + kv->n_evictable : room;
}


int
fg_kv_set_arena(fg_kv_t *kv, fg_kv_arena_t *arena, uint32_t unit)
{
    if (kv->n_free != kv->n_blocks || unit == 0
        || (size_t) kv->n_blocks > SIZE_MAX / sizeof(uint32_t) / unit)
    {
        return -1;
    }

    free(kv->map);
    kv->map = malloc((size_t) kv->n_blocks * unit * sizeof(uint32_t));

    if (kv->map == NULL) {
        kv->arena = NULL;
        return -1;
    }

    kv->arena = arena;
    kv->unit = unit;

    return 0;
}


const uint32_t *
fg_kv_map(const fg_kv_t *kv)
{
    return kv->map;
}


uint32_t
fg_kv_held_blocks(const fg_kv_t *kv)
{
    return kv->n_blocks - kv->n_free - kv->n_evictable;
}


void
fg_kv_set_limit(fg_kv_t *kv, uint32_t limit)
{
    kv->limit = limit > kv->n_blocks ? kv->n_blocks : limit;
}


uint32_t
fg_kv_limit(const fg_kv_t *kv)
{
    return kv->limit;
}


uint32_t
fg_kv_blocks_for(const fg_kv_t *kv, uint64_t n)
{
    uint64_t  b;

    b = (n + kv->block_size - 1) / kv->block_size;

    return b > UINT32_MAX ? UINT32_MAX : (uint32_t) b;
}


uint32_t
fg_kv_refs(const fg_kv_t *kv, int32_t block)
{
    if (!fg_kv_block_in(kv, block)) {
        return 0;
    }

    return kv->refs[block];
}


void
fg_kv_seq_init(fg_kv_seq_t *s)
{
    memset(s, 0, sizeof(fg_kv_seq_t));
}


uint32_t
fg_kv_grow_need(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t k)
{
    uint32_t  want;

    want = fg_kv_blocks_for(kv, (uint64_t) s->n_pos + k);

    return want > s->n_blocks ? want - s->n_blocks : 0;
}


int
fg_kv_can_grow(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t k)
{
    return fg_kv_grow_need(kv, s, k) <= fg_kv_free_blocks(kv);
}


static uint32_t
fg_kv_bucket(const fg_kv_t *kv, uint64_t hash)
{
    return (uint32_t) (hash ^ (hash >> 32)) & kv->mask;
}


/* the evictable list: released blocks join at the tail */
static void
fg_kv_lru_push(fg_kv_t *kv, int32_t b)
{
    kv->prev[b] = kv->lru_tail;
    kv->next[b] = -1;

    if (kv->lru_tail >= 0) {
        kv->next[kv->lru_tail] = b;

    } else {
        kv->lru_head = b;
    }

    kv->lru_tail = b;
    kv->n_evictable++;
}


static void
fg_kv_lru_remove(fg_kv_t *kv, int32_t b)
{
    if (kv->prev[b] >= 0) {
        kv->next[kv->prev[b]] = kv->next[b];

    } else {
        kv->lru_head = kv->next[b];
    }

    if (kv->next[b] >= 0) {
        kv->prev[kv->next[b]] = kv->prev[b];

    } else {
        kv->lru_tail = kv->prev[b];
    }

    kv->n_evictable--;
}


/* takes a block's hash out of the table */
static void
fg_kv_unhash(fg_kv_t *kv, int32_t b)
{
    int32_t  *p;

    for (p = &kv->buckets[fg_kv_bucket(kv, kv->hash[b])]; *p != b;
         p = &kv->hnext[*p])
    {
        /* void */
    }

    *p = kv->hnext[b];

    if (kv->index) {
        kv->index(kv->index_ctx, kv->hash[b], 0);
    }

    kv->hash[b] = 0;
    kv->n_cached--;
}


/*
 * A block for a sequence, with one reference: a free one (with its head
 * blocks from the arena, if any), else the least recently released
 * cached one; -1 when neither is there, as when another model's lane
 * took the arena's last head blocks since the caller looked.
 */
static int32_t
fg_kv_take(fg_kv_t *kv)
{
    int32_t  b;

    if (kv->n_free
        && (kv->arena == NULL
            || fg_kv_arena_take(kv->arena, kv->unit,
                                kv->map + (size_t) kv->free[kv->n_free - 1]
                                          * kv->unit)
               == 0))
    {
        b = kv->free[--kv->n_free];

    } else if (kv->n_evictable == 0) {
        return -1;

    } else {
        b = kv->lru_head;
        fg_kv_lru_remove(kv, b);
        fg_kv_unhash(kv, b);
        fg_kv_window_drop(kv, b);
        kv->evictions++;
    }

    kv->refs[b] = 1;

    return b;
}


static int
fg_kv_seq_reserve(fg_kv_seq_t *s, uint32_t n)
{
    int32_t   *blocks;
    uint32_t   cap;

    if (n <= s->cap) {
        return 0;
    }

    cap = s->cap ? s->cap : 4;

    while (cap < n) {
        cap *= 2;
    }

    blocks = realloc(s->blocks, cap * sizeof(int32_t));

    if (blocks == NULL) {
        return -1;
    }

    s->blocks = blocks;
    s->cap = cap;

    return 0;
}


/* a free block back on the stack, its head blocks back in the arena */
static void
fg_kv_put_free(fg_kv_t *kv, int32_t b)
{
    fg_kv_window_drop(kv, b);

    if (kv->arena) {
        fg_kv_arena_give(kv->arena, kv->unit,
                         kv->map + (size_t) b * kv->unit);
    }

    kv->free[kv->n_free++] = b;
}


/* one reference less: the last one frees the block, or (hashed) makes it
 * evictable */
static void
fg_kv_release(fg_kv_t *kv, int32_t b)
{
    if (--kv->refs[b] != 0) {
        return;
    }

    if (kv->hash[b]) {
        fg_kv_lru_push(kv, b);

    } else {
        fg_kv_put_free(kv, b);
    }
}


int
fg_kv_grow(fg_kv_t *kv, fg_kv_seq_t *s, uint32_t k)
{
    int32_t   b;
    uint32_t  need, i;

    if ((uint64_t) s->n_pos + k > UINT32_MAX) {
        return -1;
    }

    need = fg_kv_grow_need(kv, s, k);

    if (need > fg_kv_free_blocks(kv)
        || fg_kv_seq_reserve(s, s->n_blocks + need) != 0)
    {
        return -1;
    }

    for (i = 0; i < need; i++) {
        b = fg_kv_take(kv);

        if (b < 0) {
            while (i-- > 0) {
                fg_kv_release(kv, s->blocks[--s->n_blocks]);
            }

            return -1;
        }

        s->blocks[s->n_blocks++] = b;
    }

    s->n_pos += k;

    return 0;
}


void
fg_kv_seq_free(fg_kv_t *kv, fg_kv_seq_t *s)
{
    uint32_t  i;

    /*
     * The table's last block first, so that its first block is reused
     * first: a sequence allocated again gets its old blocks back in order;
     * and a cached prefix's later blocks are evicted before its earlier
     * ones, which a longer prefix needs too.
     */
    fg_kv_window_seq_free(kv, s);

    for (i = s->n_blocks; i-- > 0; ) {
        fg_kv_release(kv, s->blocks[i]);
    }

    free(s->blocks);
    fg_kv_seq_init(s);
}


int
fg_kv_seq_share(fg_kv_t *kv, fg_kv_seq_t *dst, const fg_kv_seq_t *src,
    uint32_t n_blocks)
{
    uint32_t  i;

    if (dst->n_blocks != 0 || n_blocks > src->n_blocks
        || (uint64_t) n_blocks * kv->block_size > src->n_pos
        || fg_kv_seq_reserve(dst, n_blocks) != 0)
    {
        return -1;
    }

    for (i = 0; i < n_blocks; i++) {
        dst->blocks[i] = src->blocks[i];
        kv->refs[src->blocks[i]]++;
    }

    dst->n_blocks = n_blocks;
    dst->n_pos = n_blocks * kv->block_size;

    return 0;
}


void
fg_kv_set_index(fg_kv_t *kv, fg_kv_index_pt index, void *ctx)
{
    kv->index = index;
    kv->index_ctx = ctx;
}


int32_t
fg_kv_cache_find(const fg_kv_t *kv, uint64_t hash)
{
    int32_t  b;

    for (b = kv->buckets[fg_kv_bucket(kv, hash)]; b >= 0; b = kv->hnext[b]) {
        if (kv->hash[b] == hash) {
            return b;
        }
    }

    return -1;
}


int
fg_kv_cache_insert(fg_kv_t *kv, int32_t block, uint64_t hash)
{
    uint32_t  i;

    if (!fg_kv_block_in(kv, block) || hash == 0
        || kv->refs[block] == 0 || kv->hash[block] != 0
        || fg_kv_cache_find(kv, hash) >= 0)
    {
        return -1;
    }

    i = fg_kv_bucket(kv, hash);

    kv->hash[block] = hash;
    kv->hnext[block] = kv->buckets[i];
    kv->buckets[i] = block;
    kv->n_cached++;

    if (kv->index) {
        kv->index(kv->index_ctx, hash, 1);
    }

    return 0;
}


int
fg_kv_seq_adopt(fg_kv_t *kv, fg_kv_seq_t *s, int32_t block)
{
    if (!fg_kv_block_in(kv, block)
        || kv->hash[block] == 0
        || s->n_pos != s->n_blocks * kv->block_size
        || (uint64_t) s->n_pos + kv->block_size > UINT32_MAX
        || (kv->refs[block] == 0 && fg_kv_free_blocks(kv) == 0)
        || fg_kv_seq_reserve(s, s->n_blocks + 1) != 0)
    {
        return -1;
    }

    if (kv->refs[block]++ == 0) {
        fg_kv_lru_remove(kv, block);
    }

    s->blocks[s->n_blocks++] = block;
    s->n_pos += kv->block_size;

    return 0;
}


void
fg_kv_cache_forget(fg_kv_t *kv, int32_t block)
{
    if (!fg_kv_block_in(kv, block) || kv->hash[block] == 0) {
        return;
    }

    if (kv->refs[block] == 0) {
        fg_kv_lru_remove(kv, block);
        fg_kv_put_free(kv, block);
    }

    fg_kv_unhash(kv, block);
}


uint32_t
fg_kv_evict(fg_kv_t *kv, uint32_t n)
{
    int32_t   b;
    uint32_t  i;

    for (i = 0; i < n && kv->n_evictable; i++) {
        b = kv->lru_head;
        fg_kv_lru_remove(kv, b);
        fg_kv_unhash(kv, b);
        kv->evictions++;
        fg_kv_put_free(kv, b);
    }

    return i;
}


uint64_t
fg_kv_block_hash(const fg_kv_t *kv, int32_t block)
{
    if (!fg_kv_block_in(kv, block)) {
        return 0;
    }

    return kv->hash[block];
}


uint32_t
fg_kv_cached_blocks(const fg_kv_t *kv)
{
    return kv->n_cached;
}


uint32_t
fg_kv_evictable_blocks(const fg_kv_t *kv)
{
    return kv->n_evictable;
}


uint64_t
fg_kv_evictions(const fg_kv_t *kv)
{
    return kv->evictions;
}


/* block i of a prefix: blocks[i], or the cached block of hashes[i] */
static int32_t
fg_kv_window_block(const fg_kv_t *kv, const uint64_t *hashes,
    const int32_t *blocks, uint32_t i)
{
    return blocks ? blocks[i] : fg_kv_cache_find(kv, hashes[i]);
}


uint32_t
fg_kv_window_prefix(const fg_kv_t *kv, const uint64_t *hashes,
    const int32_t *blocks, uint32_t m)
{
    int32_t   b;
    uint32_t  i;

    if (kv->window == 0) {
        return m;
    }

    /* a block without its slot in m's window: stop before it, and look
     * at the shorter prefix's window; m falls at every turn */
    i = m;

    while (m > 0 && i-- > fg_kv_window_lo(kv, (uint64_t) m
                                                * kv->block_size))
    {
        b = fg_kv_window_block(kv, hashes, blocks, i);

        if (b < 0 || kv->slot[b] < 0) {
            m = i;
        }
    }

    return m;
}
