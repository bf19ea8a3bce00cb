
/*
 * fairgate: the KV pool's state, which the files of engine/kv/ share.
 */

#ifndef _FG_KV_INT_H_INCLUDED_
#define _FG_KV_INT_H_INCLUDED_


#include "fg_kv.h"


struct fg_kv_s {
    uint32_t         n_blocks;
    uint32_t         block_size;
    uint32_t         n_free;
    uint32_t         limit;     /* blocks held at most (fg_kv_set_limit) */
    int32_t         *free;      /* stack: free[n_free - 1] is taken next */
    uint32_t        *refs;

    /* the prefix cache */
    uint64_t        *hash;      /* a block's, 0: none */
    int32_t         *hnext;     /* the next block in its bucket, -1: none */
    int32_t         *buckets;
    uint32_t         mask;
    uint32_t         n_cached;  /* blocks with a hash */

    /* evictable blocks (a hash, no reference), least recently released
     * first */
    int32_t         *prev;
    int32_t         *next;
    int32_t          lru_head;
    int32_t          lru_tail;
    uint32_t         n_evictable;
    uint64_t         evictions;

    fg_kv_index_pt   index;
    void            *index_ctx;

    /* a unified pool's (fg_kv_set_arena()): a held or evictable block's
     * unit head blocks are map[b * unit ..]; a free block has none */
    fg_kv_arena_t   *arena;
    uint32_t        *map;
    uint32_t         unit;

    /* sliding layers' slots (fg_kv_set_window(), fg_kv_window.c) */
    uint32_t         window;    /* positions; 0: none */
    uint32_t         n_slots;
    uint32_t         n_slot_free;
    uint32_t         cursor;    /* where a reclaim looks first */
    int32_t         *slot;      /* a block's slot, -1: none */
    uint32_t        *srefs;     /* sequences that need a block's slot */
    int32_t         *slot_free; /* stack of free slots */
};


/* the first block that a token at position pos sees keys in */
static inline uint32_t
fg_kv_window_lo(const fg_kv_t *kv, uint64_t pos)
{
    return pos + 1 > kv->window
           ? (uint32_t) ((pos + 1 - kv->window) / kv->block_size) : 0;
}


/* fg_kv_window.c: a block's slot goes (freed, evicted, reused) */
void fg_kv_window_drop(fg_kv_t *kv, int32_t b);

/* fg_kv_window.c: a freed sequence's references to slots */
void fg_kv_window_seq_free(fg_kv_t *kv, fg_kv_seq_t *s);

/* fg_kv_window.c: the window's arrays */
void fg_kv_window_destroy(fg_kv_t *kv);


#endif /* _FG_KV_INT_H_INCLUDED_ */
