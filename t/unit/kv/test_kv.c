
/*
 * fairgate: tests of the KV cache's bookkeeping: growth by positions,
 * exhaustion leaves a sequence unchanged, reference counts under prefix
 * sharing, and every block back on the free list after frees; the prefix
 * cache's blocks: kept evictable with their hash, adopted again, evicted
 * least recently released first, and every change told to the index.
 */


#include "fg_tap.h"
#include "fg_kv.h"


static int
all_free(fg_kv_t *kv)
{
    uint32_t  b;

    for (b = 0; b < fg_kv_n_blocks(kv); b++) {
        if (fg_kv_refs(kv, (int32_t) b) != 0) {
            diag("block %u still has %u references", b,
                 fg_kv_refs(kv, (int32_t) b));
            return 0;
        }
    }

    return fg_kv_free_blocks(kv) == fg_kv_n_blocks(kv);
}


static int
distinct(const fg_kv_seq_t *a, const fg_kv_seq_t *b)
{
    uint32_t  i, j;

    for (i = 0; i < a->n_blocks; i++) {
        for (j = 0; j < b->n_blocks; j++) {
            if (a->blocks[i] == b->blocks[j]) {
                return 0;
            }
        }
    }

    return 1;
}


static void
test_create(void)
{
    char      err[128];
    fg_kv_t  *kv;

    kv = fg_kv_create(0, 16, err, sizeof(err));
    ok(kv == NULL && strstr(err, "at least 1") != NULL,
       "a pool of 0 blocks is refused: %s", err);

    kv = fg_kv_create(8, 0, err, sizeof(err));
    ok(kv == NULL, "blocks of 0 positions are refused");

    kv = fg_kv_create(8, 16, err, sizeof(err));
    ok(kv != NULL, "a pool of 8 blocks of 16");
    is_int(fg_kv_free_blocks(kv), 8, "all free at first");
    is_int(fg_kv_blocks_for(kv, 0), 0, "0 positions: 0 blocks");
    is_int(fg_kv_blocks_for(kv, 1), 1, "1 position: 1 block");
    is_int(fg_kv_blocks_for(kv, 16), 1, "16 positions: 1 block");
    is_int(fg_kv_blocks_for(kv, 17), 2, "17 positions: 2 blocks");

    fg_kv_destroy(kv);
}


static void
test_grow(void)
{
    char         err[128];
    int          rc;
    uint32_t     i;
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b;

    kv = fg_kv_create(4, 16, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);

    is_int(fg_kv_grow_need(kv, &a, 20), 2, "20 positions need 2 blocks");
    ok(fg_kv_grow(kv, &a, 20) == 0, "grow by 20");
    is_int(a.n_blocks, 2, "2 blocks in the table");
    is_int(a.n_pos, 20, "20 positions reserved");
    is_int(a.blocks[0], 0, "a fresh pool gives block 0 first");
    is_int(a.blocks[1], 1, "then block 1");
    is_int(fg_kv_free_blocks(kv), 2, "2 blocks left");

    is_int(fg_kv_grow_need(kv, &a, 12), 0,
           "12 more positions fit in the second block");
    ok(fg_kv_grow(kv, &a, 12) == 0 && a.n_blocks == 2 && a.n_pos == 32,
       "grow to 32 positions without a new block");
    is_int(fg_kv_grow_need(kv, &a, 1), 1, "position 33 needs a block");

    /* one position at a time, as decoding does */
    for (i = 0; i < 16; i++) {
        if (fg_kv_grow(kv, &b, 1) != 0) {
            break;
        }
    }

    ok(i == 16 && b.n_blocks == 1 && b.n_pos == 16,
       "16 single-position growths take one block");
    ok(distinct(&a, &b), "two sequences never hold the same block");
    is_int(fg_kv_refs(kv, b.blocks[0]), 1, "a held block has 1 reference");

    /* exhaustion: 1 block left, 2 asked */
    ok(fg_kv_can_grow(kv, &b, 16), "one more block can be had");
    ok(!fg_kv_can_grow(kv, &b, 17), "two more cannot");
    rc = fg_kv_grow(kv, &b, 17);
    ok(rc == -1 && b.n_blocks == 1 && b.n_pos == 16
       && fg_kv_free_blocks(kv) == 1,
       "a growth beyond the pool fails and changes nothing");

    ok(fg_kv_grow(kv, &b, 16) == 0 && fg_kv_free_blocks(kv) == 0,
       "the last block");
    ok(fg_kv_grow(kv, &a, 1) == -1 && a.n_pos == 32,
       "an empty pool refuses even one position past a full block");

    fg_kv_seq_free(kv, &a);
    is_int(fg_kv_free_blocks(kv), 2, "freeing a sequence returns its blocks");
    ok(a.n_blocks == 0 && a.n_pos == 0 && a.blocks == NULL,
       "a freed sequence is empty");

    ok(fg_kv_grow(kv, &a, 32) == 0 && a.blocks[0] == 0 && a.blocks[1] == 1,
       "freed blocks come back in table order");

    fg_kv_seq_free(kv, &a);
    fg_kv_seq_free(kv, &b);
    ok(all_free(kv), "every block free after every sequence is");

    fg_kv_destroy(kv);
}


static void
test_share(void)
{
    char         err[128];
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b, c;

    kv = fg_kv_create(6, 4, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);
    fg_kv_seq_init(&c);

    fg_kv_grow(kv, &a, 10);         /* 3 blocks, the last one partial */

    ok(fg_kv_seq_share(kv, &b, &a, 3) == -1,
       "a partial block cannot be shared");
    ok(fg_kv_seq_share(kv, &b, &a, 2) == 0, "two full blocks are shared");
    ok(b.n_blocks == 2 && b.n_pos == 8 && b.blocks[0] == a.blocks[0]
       && b.blocks[1] == a.blocks[1], "the sharer's table starts with them");
    is_int(fg_kv_refs(kv, a.blocks[0]), 2, "a shared block has 2 references");
    is_int(fg_kv_refs(kv, a.blocks[2]), 1, "an unshared one keeps 1");
    is_int(fg_kv_free_blocks(kv), 3, "sharing takes no block");

    ok(fg_kv_seq_share(kv, &b, &a, 1) == -1,
       "a sequence that has blocks cannot take a prefix");

    /* the sharer appends into blocks of its own */
    ok(fg_kv_grow(kv, &b, 3) == 0 && b.n_blocks == 3
       && b.blocks[2] != a.blocks[2], "appending after a shared prefix "
       "takes a new block");

    ok(fg_kv_seq_share(kv, &c, &b, 2) == 0
       && fg_kv_refs(kv, a.blocks[1]) == 3, "a third sharer: 3 references");

    fg_kv_seq_free(kv, &a);
    is_int(fg_kv_refs(kv, b.blocks[0]), 2,
           "the first owner's free leaves the sharers' references");
    is_int(fg_kv_free_blocks(kv), 3, "only its own last block is free");

    fg_kv_seq_free(kv, &b);
    is_int(fg_kv_free_blocks(kv), 4, "the second's own block is free");
    is_int(fg_kv_refs(kv, c.blocks[0]), 1, "the last sharer holds on");

    fg_kv_seq_free(kv, &c);
    ok(all_free(kv), "all free when the last reference goes");

    fg_kv_destroy(kv);
}


static int   told_in, told_out;
static uint64_t  told_last;


static void
told(void *ctx, uint64_t hash, int held)
{
    (void) ctx;

    told_in += held;
    told_out += !held;
    told_last = hash;
}


static void
test_cache(void)
{
    char         err[128];
    int32_t      b101, b102;
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b, c;

    kv = fg_kv_create(8, 4, err, sizeof(err));
    fg_kv_set_index(kv, told, NULL);
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);
    fg_kv_seq_init(&c);

    fg_kv_grow(kv, &a, 12);
    fg_kv_grow(kv, &c, 4);

    ok(fg_kv_cache_insert(kv, a.blocks[0], 101) == 0
       && fg_kv_cache_insert(kv, a.blocks[1], 102) == 0
       && fg_kv_cache_insert(kv, a.blocks[2], 103) == 0,
       "three held blocks take their hashes");
    ok(told_in == 3 && told_last == 103, "each told to the index");
    ok(fg_kv_cache_insert(kv, c.blocks[0], 102) == -1
       && fg_kv_block_hash(kv, c.blocks[0]) == 0,
       "a hash another block holds: the second stays private");
    ok(fg_kv_cache_insert(kv, a.blocks[0], 104) == -1,
       "a block keeps its one hash");
    ok(fg_kv_cache_insert(kv, 7, 105) == -1, "a free block takes none");
    is_int(fg_kv_cache_find(kv, 102), a.blocks[1], "a hash finds its block");

    b101 = a.blocks[0];
    b102 = a.blocks[1];

    fg_kv_seq_free(kv, &a);
    fg_kv_seq_free(kv, &c);
    ok(fg_kv_cached_blocks(kv) == 3 && fg_kv_evictable_blocks(kv) == 3
       && fg_kv_free_blocks(kv) == 8 && fg_kv_refs(kv, b101) == 0,
       "released: the cached blocks are kept, evictable, and count as free");

    ok(fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, 101)) == 0
       && fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, 102)) == 0
       && b.n_pos == 8 && b.blocks[0] == b101 && b.blocks[1] == b102,
       "adopted: a sequence starts with the cached blocks");
    ok(fg_kv_refs(kv, b101) == 1 && fg_kv_evictable_blocks(kv) == 1
       && fg_kv_free_blocks(kv) == 6, "with a reference, no longer "
       "evictable");
    ok(fg_kv_seq_adopt(kv, &b, -1) == -1 && fg_kv_seq_adopt(kv, &b, 7) == -1,
       "no block, or one without a hash, is not adopted");

    ok(fg_kv_grow(kv, &b, 2) == 0
       && fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, 101)) == -1
       && fg_kv_evictions(kv) == 0,
       "a sequence with a partial block adopts none; a free block first");

    /* 5 more blocks: the 4 free, then the evictable one */
    ok(fg_kv_grow(kv, &b, 22) == 0 && fg_kv_evictions(kv) == 1
       && fg_kv_cache_find(kv, 103) == -1 && told_out == 1
       && told_last == 103 && fg_kv_cached_blocks(kv) == 2,
       "then an evictable one, its hash forgotten and told");
    ok(fg_kv_grow(kv, &b, 1) == -1, "the pool is spent");

    fg_kv_seq_free(kv, &b);
    ok(fg_kv_free_blocks(kv) == 8 && fg_kv_evictable_blocks(kv) == 2,
       "all released: 6 free, 2 evictable");

    /* the order of eviction: released last-to-first, so the later blocks
     * of a prefix leave before the earlier */
    fg_kv_grow(kv, &c, 28);
    ok(fg_kv_cache_find(kv, 102) == -1 && fg_kv_cache_find(kv, 101) >= 0,
       "one eviction: the prefix's second block went, its first stayed");
    fg_kv_seq_free(kv, &c);

    /* a block forgotten (a failed step used it): freed, its hash told */
    b101 = fg_kv_cache_find(kv, 101);
    fg_kv_cache_forget(kv, b101);
    ok(fg_kv_cache_find(kv, 101) == -1 && fg_kv_block_hash(kv, b101) == 0
       && fg_kv_cached_blocks(kv) == 0 && fg_kv_evictable_blocks(kv) == 0
       && fg_kv_free_blocks(kv) == 8 && told_last == 101,
       "a forgotten block leaves the cache for the free stack");

    fg_kv_destroy(kv);
}


/*
 * A request's n choices (fg_batch): the first computes the prompt, its
 * full blocks enter the cache and the others adopt them; the last,
 * partial block and the output are each one's own.  The shared blocks'
 * references count the choices and drop to zero as they end.
 */
static void
test_choices(void)
{
    char         err[128];
    int32_t      b0, b1;
    uint32_t     i, k, shared;
    fg_kv_t     *kv;
    fg_kv_seq_t  s[4];

    kv = fg_kv_create(16, 4, err, sizeof(err));

    for (i = 0; i < 4; i++) {
        fg_kv_seq_init(&s[i]);
    }

    /* a prompt of 10 positions: 2 full blocks, then 2 of a third */
    ok(fg_kv_grow(kv, &s[0], 10) == 0
       && fg_kv_cache_insert(kv, s[0].blocks[0], 201) == 0
       && fg_kv_cache_insert(kv, s[0].blocks[1], 202) == 0,
       "choice 0 computes the prompt, its full blocks cached");

    b0 = s[0].blocks[0];
    b1 = s[0].blocks[1];

    for (i = 1; i < 4; i++) {
        ok(fg_kv_seq_adopt(kv, &s[i], fg_kv_cache_find(kv, 201)) == 0
           && fg_kv_seq_adopt(kv, &s[i], fg_kv_cache_find(kv, 202)) == 0
           && fg_kv_grow(kv, &s[i], 2) == 0,
           "choice %u adopts the full blocks, grows its own partial one", i);
    }

    is_int(fg_kv_refs(kv, b0), 4, "a shared block: a reference a choice");
    is_int(fg_kv_refs(kv, b1), 4, "... both of them");
    is_int(fg_kv_held_blocks(kv), 2 + 4, "2 shared blocks, 4 partial ones");

    /* each choice's output: its own blocks, never a shared one */
    shared = 0;

    for (i = 0; i < 4; i++) {
        fg_kv_grow(kv, &s[i], 6);

        for (k = 2; k < s[i].n_blocks; k++) {
            shared += fg_kv_refs(kv, s[i].blocks[k]) != 1;
        }
    }

    is_int(shared, 0, "past the prompt's full blocks, every block is one "
           "choice's");
    is_int(fg_kv_held_blocks(kv), 2 + 4 * 2, "16 positions each: 2 "
           "shared blocks, 2 own blocks a choice");

    for (i = 0; i < 4; i++) {
        fg_kv_seq_free(kv, &s[i]);
        is_int(fg_kv_refs(kv, b0), 3 - i, "a choice ends: one reference "
               "less");
    }

    ok(fg_kv_held_blocks(kv) == 0 && fg_kv_free_blocks(kv) == 16
       && fg_kv_evictable_blocks(kv) == 2,
       "all ended: nothing held, the prompt's blocks evictable, none lost");

    fg_kv_destroy(kv);
}


/* a model's quota of a shared pool: growth stops at the limit */
static void
test_limit(void)
{
    char          err[128];
    fg_kv_t      *kv;
    fg_kv_seq_t   a, b;

    kv = fg_kv_create(8, 16, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);

    ok(fg_kv_limit(kv) == 8 && fg_kv_free_blocks(kv) == 8,
       "no limit at first: the whole pool");

    fg_kv_set_limit(kv, 3);
    ok(fg_kv_limit(kv) == 3 && fg_kv_free_blocks(kv) == 3,
       "a limit of 3: 3 free");
    ok(fg_kv_grow(kv, &a, 32) == 0 && fg_kv_held_blocks(kv) == 2
       && fg_kv_free_blocks(kv) == 1, "2 held, 1 left under the limit");
    ok(fg_kv_grow(kv, &b, 32) == -1 && b.n_blocks == 0,
       "growth past the limit fails, the sequence unchanged");
    ok(!fg_kv_can_grow(kv, &a, 17) && fg_kv_can_grow(kv, &a, 16),
       "can_grow follows the limit");

    /* lowered below what is held: nothing taken, no growth */
    fg_kv_set_limit(kv, 1);
    ok(fg_kv_held_blocks(kv) == 2 && fg_kv_free_blocks(kv) == 0
       && fg_kv_grow(kv, &b, 1) == -1,
       "a limit below the held blocks: they stay, none more");

    fg_kv_seq_free(kv, &a);
    ok(fg_kv_free_blocks(kv) == 1 && fg_kv_grow(kv, &b, 16) == 0,
       "under it again after a release: growth resumes");

    fg_kv_set_limit(kv, 0);
    ok(fg_kv_free_blocks(kv) == 0 && fg_kv_grow(kv, &a, 1) == -1,
       "a limit of 0: nothing more");

    fg_kv_set_limit(kv, UINT32_MAX);
    ok(fg_kv_limit(kv) == 8 && fg_kv_free_blocks(kv) == 7,
       "a limit above the pool lifts it");

    fg_kv_seq_free(kv, &b);
    fg_kv_destroy(kv);
}


int
main(void)
{
    test_create();
    test_grow();
    test_share();
    test_cache();
    test_choices();
    test_limit();

    return done_testing();
}
