
/*
 * fairgate: the unified KV pool (fg_kv_arena.c) under two models' caches
 * of different shapes: a block takes its unit of head blocks when taken
 * and gives them back when free; one model's holding shrinks what the
 * other may take; a grow the arena cannot back fails whole and leaves the
 * sequence as it was; no head block is ever two blocks'; an evictable
 * block keeps its head blocks and is reused when the arena is short,
 * or evicted (fg_kv_evict()) gives them back; destroying a cache gives
 * back all it held.
 */


#include <stdlib.h>

#include "fg_tap.h"
#include "fg_kv.h"


#define ARENA  24


/* no head block of the arena backs two held blocks of a and b */
static int
disjoint(const fg_kv_t *a, uint32_t ua, const fg_kv_t *b, uint32_t ub)
{
    int              pass;
    uint32_t         k, blk, i, h;
    uint8_t          seen[ARENA];
    const fg_kv_t   *kv[2];
    const uint32_t   unit[2] = { ua, ub };

    kv[0] = a;
    kv[1] = b;
    memset(seen, 0, sizeof(seen));
    pass = 1;

    for (k = 0; k < 2; k++) {
        for (blk = 0; blk < fg_kv_n_blocks(kv[k]); blk++) {
            if (fg_kv_refs(kv[k], (int32_t) blk) == 0) {
                continue;
            }

            for (i = 0; i < unit[k]; i++) {
                h = fg_kv_map(kv[k])[blk * unit[k] + i];
                pass &= h < ARENA && seen[h] == 0;
                seen[h < ARENA ? h : 0] = 1;
            }
        }
    }

    return pass;
}


static void
test_create(void)
{
    char            err[256];
    fg_kv_t        *kv;
    fg_kv_seq_t     s;
    fg_kv_arena_t  *arena;

    ok(fg_kv_arena_create(0, 64, err, sizeof(err)) == NULL,
       "an arena of no head blocks is refused: %s", err);

    arena = fg_kv_arena_create(ARENA, 64, err, sizeof(err));
    kv = fg_kv_create(6, 16, err, sizeof(err));

    ok(arena && fg_kv_arena_free(arena) == ARENA
       && fg_kv_arena_size(arena) == ARENA
       && fg_kv_arena_head_bytes(arena) == 64
       && fg_kv_arena_base(arena) != NULL, "an arena of 24 head blocks");
    ok(fg_kv_map(kv) == NULL, "no map without an arena");

    fg_kv_seq_init(&s);
    fg_kv_grow(kv, &s, 1);
    ok(fg_kv_set_arena(kv, arena, 4) == -1,
       "a cache that holds a block takes no arena");
    fg_kv_seq_free(kv, &s);

    ok(fg_kv_set_arena(kv, arena, 0) == -1, "nor a unit of 0");
    ok(fg_kv_set_arena(kv, arena, 4) == 0 && fg_kv_map(kv) != NULL,
       "an empty one does, with a map");

    fg_kv_destroy(kv);
    fg_kv_arena_destroy(arena);
}


/* a pool of blocks of 16 on the arena, heads of its head blocks a block:
 * as many as the whole arena would back */
static fg_kv_t *
pool_on(fg_kv_arena_t *arena, uint32_t heads)
{
    char      err[256];
    fg_kv_t  *kv;

    kv = fg_kv_create(ARENA / heads, 16, err, sizeof(err));
    fg_kv_set_arena(kv, arena, heads);

    return kv;
}


static void
test_share(void)
{
    char            err[256];
    fg_kv_t        *a, *b;
    fg_kv_seq_t     sa, sb, sc;
    fg_kv_arena_t  *arena;

    arena = fg_kv_arena_create(ARENA, 64, err, sizeof(err));
    a = pool_on(arena, 4);
    b = pool_on(arena, 6);
    fg_kv_seq_init(&sa);
    fg_kv_seq_init(&sb);
    fg_kv_seq_init(&sc);

    is_int(fg_kv_free_blocks(a), 6, "a (4 head blocks a block) may take 6");
    is_int(fg_kv_free_blocks(b), 4, "b (6 a block) may take 4");

    ok(fg_kv_grow(a, &sa, 48) == 0 && fg_kv_arena_free(arena) == 12,
       "a's 3 blocks took 12 head blocks");
    is_int(fg_kv_free_blocks(b), 2, "b may take 2 of what is left");

    ok(fg_kv_grow(b, &sb, 32) == 0 && fg_kv_arena_free(arena) == 0,
       "b's 2 took the other 12");
    is_int(fg_kv_free_blocks(a), 0, "a may take none, its free blocks "
           "unbacked");
    ok(fg_kv_grow(a, &sa, 16) == -1 && sa.n_blocks == 3 && sa.n_pos == 48,
       "a's grow fails whole, the sequence as it was");
    ok(disjoint(a, 4, b, 6), "no head block backs two blocks");
    is_int(fg_kv_arena_peak(arena), ARENA, "the peak: all 24 at once");

    fg_kv_seq_free(b, &sb);
    ok(fg_kv_arena_free(arena) == 12 && fg_kv_free_blocks(a) == 3,
       "b's blocks freed: their head blocks back, a may take 3 again");
    ok(fg_kv_grow(a, &sc, 48) == 0 && disjoint(a, 4, b, 6),
       "a takes them, each head block once");

    fg_kv_seq_free(a, &sc);
    fg_kv_destroy(a);
    is_int(fg_kv_arena_free(arena), ARENA,
           "a destroyed with a sequence held: all given back");

    fg_kv_destroy(b);
    fg_kv_arena_destroy(arena);
    free(sa.blocks);
}


/* an evictable block keeps its head blocks; the arena short, it is reused */
static void
test_evictable(void)
{
    char            err[256];
    fg_kv_t        *a, *b;
    fg_kv_seq_t     sa, sb;
    fg_kv_arena_t  *arena;

    arena = fg_kv_arena_create(ARENA, 64, err, sizeof(err));
    a = pool_on(arena, 4);
    b = pool_on(arena, 4);
    fg_kv_seq_init(&sa);
    fg_kv_seq_init(&sb);

    fg_kv_grow(a, &sa, 16);
    ok(fg_kv_cache_insert(a, sa.blocks[0], 0x1234) == 0, "a block cached");
    fg_kv_seq_free(a, &sa);
    ok(fg_kv_evictable_blocks(a) == 1 && fg_kv_arena_free(arena) == 20,
       "released, it is evictable and keeps its 4 head blocks");

    fg_kv_grow(b, &sb, 64);
    ok(fg_kv_arena_free(arena) == 4 && fg_kv_free_blocks(a) == 2,
       "b holds 16: a may take 1 fresh and its evictable one");
    ok(fg_kv_grow(a, &sa, 32) == 0 && fg_kv_evictions(a) == 1
       && fg_kv_arena_free(arena) == 0,
       "a grows by 2: a fresh block, then the evicted one");
    ok(disjoint(a, 4, b, 4), "no head block backs two blocks");

    fg_kv_seq_free(a, &sa);
    fg_kv_seq_free(b, &sb);
    is_int(fg_kv_arena_free(arena), ARENA, "all freed, all back");

    fg_kv_destroy(a);
    fg_kv_destroy(b);
    fg_kv_arena_destroy(arena);
}


/* fg_kv_evict(): the cached blocks go, their head blocks back to the arena */
static void
test_evict(void)
{
    char            err[256];
    fg_kv_t        *a;
    fg_kv_seq_t     sa;
    fg_kv_arena_t  *arena;

    arena = fg_kv_arena_create(ARENA, 64, err, sizeof(err));
    a = pool_on(arena, 4);
    fg_kv_seq_init(&sa);

    fg_kv_grow(a, &sa, 48);
    fg_kv_cache_insert(a, sa.blocks[0], 0x11);
    fg_kv_cache_insert(a, sa.blocks[1], 0x22);
    fg_kv_seq_free(a, &sa);

    ok(fg_kv_evictable_blocks(a) == 2 && fg_kv_arena_free(arena) == 16,
       "two cached blocks keep 8 head blocks");
    ok(fg_kv_evict(a, 5) == 2 && fg_kv_evictable_blocks(a) == 0
       && fg_kv_cache_find(a, 0x11) < 0 && fg_kv_cache_find(a, 0x22) < 0
       && fg_kv_arena_free(arena) == ARENA,
       "evicting 5 evicts the 2, their hashes gone, the arena whole again");

    fg_kv_destroy(a);
    fg_kv_arena_destroy(arena);
}


int
main(void)
{
    test_create();
    test_share();
    test_evictable();
    test_evict();

    return done_testing();
}
