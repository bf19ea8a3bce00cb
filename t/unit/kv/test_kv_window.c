
/*
 * fairgate: tests of the sliding layers' slots: a sequence holds slots
 * only for its window's blocks as it goes, whatever the chunks; slots run
 * out with a clear -1; a cached prefix keeps the slots of its last window
 * and is usable only as far as they go; a slot nobody needs is taken
 * back; a block that lost its slot is never read as computed (-2); and
 * every slot is free again at the end.
 */


#include "fg_tap.h"
#include "fg_kv.h"


/* slots the sequence's blocks hold; 0 when one outside [lo, hi) holds
 * one, or one inside holds none */
static int
window_held(const fg_kv_t *kv, const fg_kv_seq_t *s, uint32_t lo,
    uint32_t hi)
{
    uint32_t        i;
    const int32_t  *slot;

    slot = fg_kv_slots(kv);

    for (i = 0; i < s->n_blocks; i++) {
        if ((slot[s->blocks[i]] >= 0) != (i >= lo && i < hi)) {
            diag("block %u (%d): slot %d, window %u .. %u", i,
                 s->blocks[i], slot[s->blocks[i]], lo, hi);
            return 0;
        }
    }

    return 1;
}


static void
test_set(void)
{
    char         err[160];
    fg_kv_t     *kv;
    fg_kv_seq_t  a;

    kv = fg_kv_create(8, 16, err, sizeof(err));
    ok(fg_kv_window(kv) == 0 && fg_kv_slots(kv) == NULL
       && fg_kv_window_prefix(kv, NULL, NULL, 5) == 5,
       "no window at first: a prefix is whole");

    fg_kv_seq_init(&a);
    ok(fg_kv_seq_window(kv, &a, 100, 1, 100) == 0,
       "without a window, a step needs no slot");

    ok(fg_kv_set_window(kv, 0, 4, err, sizeof(err)) == -1
       && strstr(err, "at least 1") != NULL, "a window of 0 is refused: %s",
       err);
    ok(fg_kv_set_window(kv, 32, 4, err, sizeof(err)) == 0
       && fg_kv_window(kv) == 32 && fg_kv_window_slots(kv) == 4
       && fg_kv_window_free(kv) == 4, "a window of 32 in 4 slots");
    ok(fg_kv_set_window(kv, 32, 4, err, sizeof(err)) == 0,
       "set again with the same figures: nothing changes");
    ok(fg_kv_set_window(kv, 64, 4, err, sizeof(err)) == -1,
       "another window is refused");

    fg_kv_grow(kv, &a, 1);
    fg_kv_seq_free(kv, &a);
    fg_kv_destroy(kv);
}


/* a prompt of 10 blocks in chunks of 24, then decodes: its slots follow
 * its window */
static void
test_walk(void)
{
    char         err[160];
    int          good;
    uint32_t     pos, n, lo;
    fg_kv_t     *kv;
    fg_kv_seq_t  a;

    kv = fg_kv_create(16, 16, err, sizeof(err));
    fg_kv_set_window(kv, 32, 5, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_grow(kv, &a, 160);

    good = 1;

    for (pos = 0; pos < 160 && good; pos += n) {
        n = 160 - pos < 24 ? 160 - pos : 24;
        good = fg_kv_seq_window(kv, &a, pos, n, pos) == 0;
        lo = pos + 1 > 32 ? (pos + 1 - 32) / 16 : 0;
        good = good && window_held(kv, &a, lo, (pos + n + 15) / 16);
        good = good && fg_kv_seq_window(kv, &a, pos + n, 0, pos + n) == 0;
        lo = pos + n + 1 > 32 ? (pos + n + 1 - 32) / 16 : 0;
        good = good && window_held(kv, &a, lo, (pos + n + 15) / 16);
    }

    ok(good, "a prompt in chunks: slots for the window and the chunk, no "
       "more");
    ok(fg_kv_window_free(kv) == 3, "after the prompt, 2 slots held: the "
       "next token sees positions 129 .. 159, blocks 8 and 9");

    for (pos = 160; pos < 220 && good; pos++) {
        good = fg_kv_grow(kv, &a, 1) == 0
               && fg_kv_seq_window(kv, &a, pos, 1, pos) == 0
               && window_held(kv, &a, (pos + 1 - 32) / 16, pos / 16 + 1);
    }

    ok(good && fg_kv_window_free(kv) >= 2, "decodes: at most 3 slots "
       "all along");

    ok(fg_kv_seq_window(kv, &a, 0, 24, 0) == 0
       && window_held(kv, &a, 0, 2) && fg_kv_window_free(kv) == 3,
       "computed again from position 0: its window begins there");

    fg_kv_seq_free(kv, &a);
    ok(fg_kv_window_free(kv) == 5 && fg_kv_free_blocks(kv) == 16,
       "freed: every slot and block back");

    fg_kv_destroy(kv);
}


static void
test_short(void)
{
    char         err[160];
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b;

    kv = fg_kv_create(16, 16, err, sizeof(err));
    fg_kv_set_window(kv, 32, 3, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);
    fg_kv_grow(kv, &a, 48);
    fg_kv_grow(kv, &b, 48);

    ok(fg_kv_seq_window(kv, &a, 0, 48, 0) == 0
       && fg_kv_window_free(kv) == 0, "a prompt of 3 blocks at once takes "
       "the 3 slots");
    ok(fg_kv_seq_window(kv, &b, 0, 16, 0) == -1,
       "another sequence finds none: -1");
    ok(fg_kv_seq_window(kv, &a, 0, 64, 0) == -1,
       "positions not reserved: -1");

    ok(fg_kv_seq_window(kv, &a, 48, 0, 48) == 0
       && fg_kv_window_free(kv) == 1
       && fg_kv_seq_window(kv, &b, 0, 16, 0) == 0,
       "the first moves on: its oldest block's slot serves the other");

    fg_kv_seq_free(kv, &a);
    fg_kv_seq_free(kv, &b);
    ok(fg_kv_window_free(kv) == 3, "freed: every slot back");
    fg_kv_destroy(kv);
}


/* a finished conversation of 4 cached blocks, window 32 */
static void
test_prefix(void)
{
    char         err[160];
    int32_t      blk[4];
    uint32_t     i;
    uint64_t     hashes[4] = { 11, 12, 13, 14 };
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b, c;

    kv = fg_kv_create(16, 16, err, sizeof(err));
    fg_kv_set_window(kv, 32, 4, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);
    fg_kv_seq_init(&c);
    fg_kv_grow(kv, &a, 64);

    for (i = 0; i < 4; i++) {
        fg_kv_seq_window(kv, &a, i * 16, 16, i * 16);
        fg_kv_seq_window(kv, &a, i * 16 + 16, 0, i * 16 + 16);
        fg_kv_cache_insert(kv, a.blocks[i], hashes[i]);
        blk[i] = a.blocks[i];
    }

    fg_kv_seq_free(kv, &a);

    ok(fg_kv_slots(kv)[blk[0]] < 0 && fg_kv_slots(kv)[blk[1]] < 0
       && fg_kv_slots(kv)[blk[2]] >= 0 && fg_kv_slots(kv)[blk[3]] >= 0,
       "ended: its last window's cached blocks keep their slots");
    is_int(fg_kv_window_prefix(kv, hashes, NULL, 4), 4,
           "the whole conversation is a usable prefix");
    is_int(fg_kv_window_prefix(kv, hashes, NULL, 3), 0,
           "3 blocks are not: block 1 lost its slot, and block 0 too");
    is_int(fg_kv_window_prefix(kv, hashes, blk, 4), 4,
           "the same from the blocks themselves");

    for (i = 0; i < 4; i++) {
        fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, hashes[i]));
    }

    fg_kv_grow(kv, &b, 8);
    ok(fg_kv_seq_window(kv, &b, 64, 0, 64) == 0
       && fg_kv_seq_window(kv, &b, 64, 8, 64) == 0,
       "a sequence that adopts the 4 blocks goes on after them");

    /* c takes the last free slots and one that nobody needs */
    fg_kv_grow(kv, &c, 48);
    ok(fg_kv_seq_window(kv, &c, 0, 16, 0) == 0, "another sequence's "
       "first block takes the last free slot");
    fg_kv_seq_free(kv, &b);
    ok(fg_kv_seq_window(kv, &c, 16, 32, 16) == 0
       && fg_kv_window_free(kv) == 0,
       "slots short: those of cached blocks nobody needs are taken back");
    is_int(fg_kv_window_prefix(kv, hashes, NULL, 4), 0,
           "the conversation is no longer a usable prefix");

    fg_kv_seq_free(kv, &c);
    fg_kv_seq_init(&b);
    fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, hashes[0]));
    fg_kv_seq_adopt(kv, &b, fg_kv_cache_find(kv, hashes[1]));
    fg_kv_grow(kv, &b, 1);
    ok(fg_kv_seq_window(kv, &b, 32, 1, 32) == -2,
       "adopted anyway, blocks without their slots are not read: -2");

    fg_kv_seq_free(kv, &b);
    fg_kv_evict(kv, 16);
    ok(fg_kv_window_free(kv) == 4 && fg_kv_free_blocks(kv) == 16
       && fg_kv_cached_blocks(kv) == 0, "all freed and evicted: every "
       "slot back");
    fg_kv_destroy(kv);
}


/* two choices share a prompt's blocks: a slot goes with the last that
 * needs it */
static void
test_share(void)
{
    char         err[160];
    int32_t      b1;
    fg_kv_t     *kv;
    fg_kv_seq_t  a, b;

    kv = fg_kv_create(16, 16, err, sizeof(err));
    fg_kv_set_window(kv, 40, 8, err, sizeof(err));
    fg_kv_seq_init(&a);
    fg_kv_seq_init(&b);
    fg_kv_grow(kv, &a, 48);
    fg_kv_seq_window(kv, &a, 0, 48, 0);
    fg_kv_seq_window(kv, &a, 48, 0, 48);
    fg_kv_seq_share(kv, &b, &a, 2);
    fg_kv_grow(kv, &b, 16);
    b1 = a.blocks[1];

    ok(fg_kv_window_prefix(kv, NULL, b.blocks, 2) == 2
       && fg_kv_seq_window(kv, &b, 32, 16, 32) == 0,
       "the second choice starts after the shared blocks");
    fg_kv_grow(kv, &a, 32);
    fg_kv_seq_window(kv, &a, 48, 32, 48);
    fg_kv_seq_window(kv, &a, 80, 0, 80);
    ok(fg_kv_slots(kv)[b1] >= 0, "the first gone past block 1: the "
       "second still needs its slot");
    fg_kv_grow(kv, &b, 32);
    fg_kv_seq_window(kv, &b, 48, 32, 48);
    fg_kv_seq_window(kv, &b, 80, 0, 80);
    ok(fg_kv_slots(kv)[b1] < 0, "both past it: its slot is free");
    is_int(fg_kv_window_prefix(kv, NULL, a.blocks, 3), 0, "a third choice "
           "could not start after 3 of those blocks");

    fg_kv_seq_free(kv, &a);
    fg_kv_seq_free(kv, &b);
    ok(fg_kv_window_free(kv) == 8, "freed: every slot back");
    fg_kv_destroy(kv);
}


int
main(void)
{
    test_set();
    test_walk();
    test_short();
    test_prefix();
    test_share();

    return done_testing();
}
