
/*
 * fairgate: the prefix index on the engine's side: the block hashes its
 * prefix cache holds, written into the segment for the gateway's workers
 * to read without a lock (the layout and the readers' rule are
 * fg_shm_proto.h's, the reader fg_shm_client_prefix_match()).
 *
 * Keys are added and removed in the live table; a removed key leaves a
 * tombstone, so that a reader's probe for another key never stops short.
 * When keys and tombstones reach three quarters of the table, the live
 * keys are copied into the other table, which then becomes the live one:
 * at most kv_blocks keys in a table of at least twice as many slots, so a
 * rebuild comes at most once every quarter table of changes.
 */


#include "fg_shm_engine_int.h"


/* puts key into table, in the first tombstone or empty slot of its
 * probe: 1 when that slot was empty, 0 when a tombstone, -1 when the key
 * is there already */
static int
fg_shm_index_put(uint64_t *table, uint32_t slots, uint64_t key)
{
    uint32_t  i, n, dead;
    uint64_t  v;

    i = fg_shm_index_home(key, slots);
    dead = slots;

    for (n = 0; n < slots; n++) {
        v = table[i];

        if (v == key) {
            return -1;
        }

        if (v == FG_SHM_INDEX_EMPTY) {
            break;
        }

        if (v == FG_SHM_INDEX_DELETED && dead == slots) {
            dead = i;
        }

        i = (i + 1) & (slots - 1);
    }

    if (dead != slots) {
        __atomic_store_n(&table[dead], key, __ATOMIC_RELEASE);
        return 0;
    }

    __atomic_store_n(&table[i], key, __ATOMIC_RELEASE);

    return 1;
}


/* leaves a tombstone where key was; whether it was there */
static int
fg_shm_index_del(uint64_t *table, uint32_t slots, uint64_t key)
{
    uint32_t  i, n;

    i = fg_shm_index_home(key, slots);

    for (n = 0; n < slots && table[i] != FG_SHM_INDEX_EMPTY; n++) {
        if (table[i] == key) {
            __atomic_store_n(&table[i], FG_SHM_INDEX_DELETED,
                             __ATOMIC_RELEASE);
            return 1;
        }

        i = (i + 1) & (slots - 1);
    }

    return 0;
}


/*
 * The live keys into the other table, which becomes the live one.  A
 * reader still in the table about to be cleared sees started move two
 * past the done it read, and reads again.
 */
static void
fg_shm_index_rebuild(fg_shm_engine_t *e)
{
    uint32_t         i, slots;
    uint64_t         done, *from, *to;
    fg_shm_index_t  *ix;

    ix = fg_shm_index(e->base, e->h);
    slots = e->h->index_slots;
    done = ix->done;
    from = fg_shm_index_table(e->base, e->h, done);
    to = fg_shm_index_table(e->base, e->h, done + 1);

    __atomic_store_n(&ix->started, done + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);

    for (i = 0; i < slots; i++) {
        __atomic_store_n(&to[i], FG_SHM_INDEX_EMPTY, __ATOMIC_RELAXED);
    }

    e->index_used = 0;

    for (i = 0; i < slots; i++) {
        if (from[i] > FG_SHM_INDEX_DELETED
            && fg_shm_index_put(to, slots, from[i]) == 1)
        {
            e->index_used++;
        }
    }

    fg_shm_store(&ix->done, done + 1);
}


void
fg_shm_engine_index(void *ctx, uint64_t hash, int held)
{
    int               rc;
    uint32_t          slots;
    uint64_t         *table;
    fg_shm_engine_t  *e;
    fg_shm_index_t   *ix;

    e = ctx;
    slots = e->h->index_slots;
    ix = fg_shm_index(e->base, e->h);

    if (hash <= FG_SHM_INDEX_DELETED) {
        return;
    }

    if (held && e->index_used + 1 > slots / 4 * 3) {
        fg_shm_index_rebuild(e);
    }

    table = fg_shm_index_table(e->base, e->h, ix->done);

    if (held) {
        rc = fg_shm_index_put(table, slots, hash);

        if (rc >= 0) {
            e->index_used += rc;
            e->index_keys++;
        }

    } else if (fg_shm_index_del(table, slots, hash)) {
        e->index_keys--;
    }

    fg_shm_store(&ix->keys, e->index_keys);
}
