
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
 * fg_kv_seq_share() enforces that.  A block returns to the free list when
 * its last reference goes.
 *
 * Free blocks are kept on a stack: the block freed last is used first,
 * which keeps the cache's working set small.  Nothing here allocates after
 * fg_kv_create() but the block tables, which grow by doubling.
 */

#ifndef _FG_KV_H_INCLUDED_
#define _FG_KV_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


#define FG_KV_BLOCK_SIZE  16


typedef struct fg_kv_s  fg_kv_t;


/* one sequence's block table */
typedef struct {
    int32_t    *blocks;
    uint32_t    n_blocks;
    uint32_t    cap;
    uint32_t    n_pos;          /* positions the blocks are reserved for */
} fg_kv_seq_t;


/* NULL on error (no memory, or a size of 0), with a message in err */
fg_kv_t *fg_kv_create(uint32_t n_blocks, uint32_t block_size, char *err,
    size_t errlen);
void fg_kv_destroy(fg_kv_t *kv);

uint32_t fg_kv_n_blocks(const fg_kv_t *kv);
uint32_t fg_kv_block_size(const fg_kv_t *kv);
uint32_t fg_kv_free_blocks(const fg_kv_t *kv);

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


#endif /* _FG_KV_H_INCLUDED_ */
