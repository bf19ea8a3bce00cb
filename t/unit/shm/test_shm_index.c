
/*
 * fairgate: the segment's prefix index under a writer that never stops.
 * The engine's side of a segment (fg_shm_engine_create, in this process)
 * and a worker's client of it, attached through its own mapping: a writer
 * thread, the engine, adds and removes keys without pause (a rebuild of
 * the index every few dozen changes) while the client matches a prefix of
 * keys that stay in it all along.  Each match must find them all, however
 * the reads and the rebuilds interleave, and stop at the absent key after
 * them.  A race is caught only when the threads meet, so the protocol's
 * two halves are also checked step by step: a rebuild leaves the table
 * readers read as it was, and a reader whose table may have been cleared
 * under it (started two past its done) does not trust what it read.
 * Also: the block hashes themselves, and a client that is not attached.
 */


#include <pthread.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_shm.h"
#include "fg_shm_client.h"
#include "fg_shm_engine.h"


#define STABLE      8
#define LIVE        20              /* churning keys in the index at once */
#define CHANGES     200000


static int  writer_done;


static uint64_t
churn_key(uint32_t i)
{
    return 0x100000 + (uint64_t) i * 0x9e3779b97f4a7c15ULL % 0xffffffffULL;
}


static void *
writer(void *arg)
{
    uint32_t  i;

    for (i = 0; i < CHANGES; i++) {
        fg_shm_engine_index(arg, churn_key(i), 1);

        if (i >= LIVE) {
            fg_shm_engine_index(arg, churn_key(i - LIVE), 0);
        }
    }

    __atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);

    return NULL;
}


static void
test_hashes(void)
{
    int32_t   t[48], u[48];
    uint32_t  i;
    uint64_t  h[4], g[4];

    for (i = 0; i < 48; i++) {
        t[i] = (int32_t) (i * 7 + 1);
        u[i] = t[i];
    }

    u[20] = 999;

    ok(fg_shm_block_hashes(t, 48, 16, h, 4) == 3
       && fg_shm_block_hashes(u, 48, 16, g, 4) == 3,
       "48 tokens: 3 full blocks of 16");
    ok(h[0] == g[0] && h[1] != g[1] && h[2] != g[2],
       "a block after a different one hashes differently (chained)");
    ok(h[0] == fg_shm_block_hash(0, t, 16)
       && h[1] == fg_shm_block_hash(h[0], t + 16, 16),
       "each block's hash is seeded with the one before");
    ok(fg_shm_block_hash(h[0], t, 16) != h[0],
       "the same tokens after another prefix: another hash");
    is_int(fg_shm_block_hashes(t, 47, 16, h, 4), 2, "a partial block has "
           "no hash");
    is_int(fg_shm_block_hashes(t, 47, 0, h, 4), 0, "nor blocks of 0");
}


/* the rebuild and the reader's rule, one step at a time */
static void
test_steps(fg_shm_engine_t *e, fg_shm_client_t *c, const uint64_t *keys)
{
    uint32_t                i, slots;
    uint64_t                done, started, snap[64];
    const uint64_t         *table;
    fg_shm_index_t         *ix;
    const fg_shm_header_t  *h;

    h = fg_shm_engine_header(e);
    ix = fg_shm_index((void *) h, h);
    slots = h->index_slots;
    done = ix->done;
    table = fg_shm_index_table((void *) h, h, done);

    /* keys in and out until an addition finds the table full of
     * tombstones and rebuilds first */
    for (i = 0; i < 64; i++) {
        memcpy(snap, table, slots * sizeof(uint64_t));
        fg_shm_engine_index(e, 0x900000 + i, 1);

        if (ix->done != done) {
            break;
        }

        fg_shm_engine_index(e, 0x900000 + i, 0);
    }

    ok(ix->done == done + 1 && ix->started == done + 1,
       "tombstones filled the table: one rebuild, begun and done");
    ok(memcmp(snap, table, slots * sizeof(uint64_t)) == 0,
       "the table readers were reading is untouched by it");
    is_int(fg_shm_client_prefix_match(c, keys, STABLE), STABLE,
           "the new table has every key");
    fg_shm_engine_index(e, 0x900000 + i, 0);

    started = ix->started;
    __atomic_store_n(&ix->started, ix->done + 2, __ATOMIC_RELEASE);
    is_int(fg_shm_client_prefix_match(c, keys, STABLE), 0,
           "a rebuild of the table read (started 2 past done): the read is "
           "not trusted, and after retries nothing is matched");
    __atomic_store_n(&ix->started, started, __ATOMIC_RELEASE);
}


int
main(void)
{
    char                     name[64], err[256];
    uint32_t                 i, m, wrong, reads;
    uint64_t                 keys[STABLE + 1], rebuilds;
    pthread_t                t;
    fg_shm_engine_t         *e;
    fg_shm_client_t         *c;
    const fg_shm_header_t   *h;

    test_hashes();

    snprintf(name, sizeof(name), "/fg-test-index-%d", (int) getpid());

    /* 32 blocks: 64 slots a table */
    e = fg_test_shm_engine(name, 32, err, sizeof(err));
    c = fg_shm_client_create(name, 0, err, sizeof(err));

    for (i = 0; i <= STABLE; i++) {
        keys[i] = 0x5000 + i * 0x10001;
    }

    ok(e != NULL && c != NULL, "an engine's segment and a client");

    if (e == NULL || c == NULL) {
        return fg_tap_done();
    }

    is_int(fg_shm_client_prefix_match(c, keys, STABLE), 0,
           "not attached: no match");
    is_int(fg_shm_client_attach(c, err, sizeof(err)), FG_SHM_OK,
           "the client attaches");

    for (i = 0; i < STABLE; i++) {
        fg_shm_engine_index(e, keys[i], 1);
    }

    is_int(fg_shm_client_prefix_match(c, keys, STABLE + 1), STABLE,
           "the keys added are matched, up to the absent one");
    is_int(fg_shm_client_prefix_match(c, keys + 1, STABLE), STABLE - 1,
           "from another start too");

    fg_shm_engine_index(e, keys[3], 0);
    is_int(fg_shm_client_prefix_match(c, keys, STABLE), 3,
           "a removed key ends the prefix");
    fg_shm_engine_index(e, keys[3], 1);

    test_steps(e, c, keys);

    /* the writer churns while the reader matches */
    wrong = 0;
    reads = 0;
    pthread_create(&t, NULL, writer, e);

    while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) {
        m = fg_shm_client_prefix_match(c, keys, STABLE + 1);
        wrong += m != STABLE;
        reads++;
    }

    pthread_join(t, NULL);

    h = fg_shm_engine_header(e);
    rebuilds = fg_shm_index((void *) h, h)->done;

    ok(wrong == 0, "%u matches during %u changes and %llu rebuilds: each "
       "found the %u stable keys, and no more (%u wrong)", reads, CHANGES,
       (unsigned long long) rebuilds, STABLE, wrong);
    ok(rebuilds > CHANGES / 64, "the index was rebuilt as tombstones "
       "filled it (%llu times)", (unsigned long long) rebuilds);
    is_int(fg_shm_index((void *) h, h)->keys, STABLE + LIVE,
           "the keys it holds at the end: the stable and the live ones");
    is_int(fg_shm_client_prefix_match(c, (uint64_t[]) {
               churn_key(CHANGES - 1), churn_key(CHANGES - LIVE),
               churn_key(CHANGES - LIVE - 1) }, 3), 2,
           "the last changes are there, the removed key is not");

    fg_shm_client_destroy(c);
    fg_shm_engine_destroy(e);

    return fg_tap_done();
}
