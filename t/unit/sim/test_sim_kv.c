
/*
 * fairgate: tests of the simulated engine's KV pool and prefix cache
 * (fg_sim_kv.h): reservations without the cache, hits of whole blocks
 * from the first, shared blocks counted once, what stays when a request
 * ends, LRU eviction (least recently released first, a request's own
 * blocks before its prefix's, a prefix from its end), held blocks never
 * evicted, and the pool's sums kept at every step.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_sim.h"
#include "fg_rand.h"
#include "fg_sim_kv.h"


#define B  FG_SIM_KV_BLOCK


/* free + reserved + cached is the pool, and cached is what the LRU holds */
static int
sums_hold(const fg_sim_kv_t *kv)
{
    uint64_t                  n;
    const fg_sim_kv_block_t  *b;

    n = 0;

    for (b = kv->lru.next; b != &kv->lru; b = b->next) {
        if (b->refs != 0 || b->blocks == 0) {
            return 0;
        }

        n += (uint64_t) b->blocks * B;
    }

    return n == kv->cached
           && kv->free + kv->reserved + kv->cached == kv->kv_tokens;
}


/* a pool of tokens over the trace's prefixes */
static void
pool(fg_sim_kv_t *kv, fg_sim_kv_layout_t *lay, const fg_sim_trace_t *tr,
    uint64_t tokens)
{
    (void) fg_sim_kv_layout_init(lay, tr);
    (void) fg_sim_kv_init(kv, tokens, lay);
}


/* request i admitted and served to the end, out tokens */
static void
served(fg_sim_kv_t *kv, const fg_sim_trace_t *tr, fg_sim_kv_lease_t *l,
    size_t i, uint32_t out)
{
    (void) fg_sim_kv_admit(kv, &tr->reqs[i], &l[i]);
    fg_sim_kv_finish(kv, &tr->reqs[i], out, &l[i]);
}


/* a request of the trace, added with its prefix */
static fg_sim_req_t *
add(fg_sim_trace_t *tr, const char *prefix, uint32_t prefix_tokens,
    uint32_t in, uint32_t out)
{
    fg_sim_req_t  *r;

    (void) fg_sim_trace_add(tr, (double) tr->n, 0, in, out, out);

    r = &tr->reqs[tr->n - 1];

    if (prefix != NULL) {
        r->prefix = (uint32_t) fg_sim_trace_str(tr, prefix);
        r->prefix_tokens = prefix_tokens;
    }

    return r;
}


static void
test_no_cache(void)
{
    fg_sim_trace_t     tr;
    fg_sim_kv_t        kv;
    fg_sim_kv_lease_t  l[2];

    fg_test_sim_trace(&tr, "a", NULL);

    add(&tr, "p", 64, 100, 50);
    add(&tr, "p", 64, 100, 60);

    (void) fg_sim_kv_init(&kv, 300, NULL);

    ok(fg_sim_kv_match(&kv, &tr.reqs[0]) == 0, "no cache: nothing matches");
    ok(fg_sim_kv_fits(&kv, &tr.reqs[0]), "150 fits 300");
    is_int(fg_sim_kv_admit(&kv, &tr.reqs[0], &l[0]), 0, "no hit");
    ok(!fg_sim_kv_fits(&kv, &tr.reqs[1]), "160 does not fit the 150 left, "
       "prefix or not");

    fg_sim_kv_finish(&kv, &tr.reqs[0], 50, &l[0]);
    ok(kv.free == 300 && kv.cached == 0 && kv.reserved == 0,
       "the whole reservation comes back, nothing is kept");

    (void) fg_sim_kv_admit(&kv, &tr.reqs[1], &l[1]);
    ok(l[1].cached == 0 && kv.hit_tokens == 0, "no hit after it either");

    fg_sim_kv_free(&kv);
    fg_sim_trace_free(&tr);
}


static void
test_hits_and_sharing(void)
{
    fg_sim_trace_t      tr;
    fg_sim_kv_t         kv;
    fg_sim_kv_lease_t   l[4];
    fg_sim_kv_layout_t  lay;

    fg_test_sim_trace(&tr, "a", NULL);

    /* 70 tokens of prefix: 4 whole blocks (64), 6 tokens its own */
    add(&tr, "sys", 70, 100, 20);           /* 0 */
    add(&tr, "sys", 70, 90, 10);            /* 1 */
    add(&tr, "sys", 40, 60, 10);            /* 2: the same, shorter */
    add(&tr, NULL, 0, 100, 20);             /* 3: no prefix */
    add(&tr, "sys", 64, 64, 5);             /* 4: the prompt is the prefix */

    pool(&kv, &lay, &tr, 1000);

    ok(lay.total == 4, "the layout holds the longest use of the id (4 "
       "blocks), got %zu", lay.total);

    ok(fg_sim_kv_match(&kv, &tr.reqs[0]) == 0, "a cold cache matches "
       "nothing");
    (void) fg_sim_kv_admit(&kv, &tr.reqs[0], &l[0]);
    ok(kv.reserved == 120 && kv.free == 880 && l[0].held == 120 - 64
       && l[0].blocks == 4 && l[0].cached == 0,
       "the first request reserves input + output, 4 blocks of it shared");

    is_int(fg_sim_kv_match(&kv, &tr.reqs[1]), 64, "a request of the same "
           "prefix finds its 4 whole blocks while the first runs");
    (void) fg_sim_kv_admit(&kv, &tr.reqs[1], &l[1]);
    ok(l[1].cached == 64 && kv.reserved == 120 + 100 - 64,
       "and the shared blocks count once in the pool (%llu reserved)",
       (unsigned long long) kv.reserved);

    is_int(fg_sim_kv_match(&kv, &tr.reqs[2]), 32, "a shorter use of the "
           "id matches its own 2 whole blocks");
    is_int(fg_sim_kv_match(&kv, &tr.reqs[3]), 0, "no prefix, no match");
    is_int(fg_sim_kv_match(&kv, &tr.reqs[4]), 48, "a prompt that is all "
           "prefix leaves its last block to compute");
    ok(sums_hold(&kv), "the pool's sums hold");

    fg_sim_kv_finish(&kv, &tr.reqs[0], 20, &l[0]);
    ok(kv.reserved == 100 - 64 + 64 && kv.cached == 3 * B
       && l[0].own.blocks == 3,
       "when the first ends its prefix stays held by the second; its own "
       "full blocks, (100 + 20 - 64) / 16 = 3, stay cached");

    fg_sim_kv_finish(&kv, &tr.reqs[1], 10, &l[1]);
    ok(kv.reserved == 0 && kv.cached == (3 + 2 + 4) * B && sums_hold(&kv),
       "when the second ends, its 2 own blocks and the 4 of the prefix "
       "are cached, unreferenced");
    ok(kv.hit_tokens == 64 && kv.query_tokens == 190,
       "hits and queries read out (64 of 190)");

    fg_sim_kv_free(&kv);
    fg_sim_kv_layout_free(&lay);
    fg_sim_trace_free(&tr);
}


static void
test_eviction(void)
{
    fg_sim_trace_t      tr;
    fg_sim_kv_t         kv;
    fg_sim_kv_lease_t   l[6];
    fg_sim_kv_layout_t  lay;

    fg_test_sim_trace(&tr, "a", NULL);

    /* a pool of 12 blocks; the first three requests 4 blocks each */
    add(&tr, "x", 32, 48, 16);              /* 0: x0 x1, own 2 blocks */
    add(&tr, "y", 32, 48, 16);              /* 1 */
    add(&tr, NULL, 0, 60, 4);               /* 2: 4 own, all kept */
    add(&tr, "x", 32, 48, 16);              /* 3 */
    add(&tr, NULL, 0, 100, 12);             /* 4: 7 blocks */
    add(&tr, "y", 32, 48, 16);              /* 5 */

    pool(&kv, &lay, &tr, 12 * B);

    /* x ends first, then y, then the plain one */
    served(&kv, &tr, l, 0, 16);
    served(&kv, &tr, l, 1, 16);
    served(&kv, &tr, l, 2, 4);

    ok(kv.cached == 12 * B && kv.free == 0 && kv.evictions == 0
       && sums_hold(&kv),
       "three finished requests fill the pool with cached blocks");

    /* 7 blocks: x's 4 (its own 2, then x1, x0), y's own 2, then y1 */
    ok(fg_sim_kv_fits(&kv, &tr.reqs[4]), "7 blocks fit by evicting");
    (void) fg_sim_kv_admit(&kv, &tr.reqs[4], &l[4]);
    ok(kv.evictions == 7 && sums_hold(&kv), "7 blocks evicted");
    is_int(fg_sim_kv_match(&kv, &tr.reqs[3]), 0, "x, the least recent, "
           "is gone");
    ok(l[1].own.blocks == 0, "y's own blocks went before its prefix's");
    is_int(fg_sim_kv_match(&kv, &tr.reqs[5]), 16, "y lost its last "
           "block only: a prefix shortens from its end");
    ok(l[2].own.blocks == 4, "the most recent request's blocks stay");

    /* y's first block is held by 5 while it runs: never evicted */
    fg_sim_kv_finish(&kv, &tr.reqs[4], 12, &l[4]);
    (void) fg_sim_kv_admit(&kv, &tr.reqs[5], &l[5]);
    ok(l[5].cached == 16, "y's request hits its first block");
    ok(kv.evictions == 10 && l[2].own.blocks == 1,
       "and evicts 3 more for the rest: the oldest blocks left, the plain "
       "request's");
    ok(kv.reserved == 4 * B && sums_hold(&kv),
       "it holds 4 blocks, its cached first one among them");

    fg_sim_kv_free(&kv);
    fg_sim_kv_layout_free(&lay);
    fg_sim_trace_free(&tr);
}


/* held blocks are never evicted: a request that would need them waits */
static void
test_held(void)
{
    fg_sim_trace_t      tr;
    fg_sim_kv_t         kv;
    fg_sim_kv_lease_t   l[3];
    fg_sim_kv_layout_t  lay;

    fg_test_sim_trace(&tr, "a", NULL);

    add(&tr, "p", 64, 80, 16);              /* 0: 6 blocks, 4 shared */
    add(&tr, NULL, 0, 48, 16);              /* 1: 4 blocks */
    add(&tr, "p", 64, 80, 16);              /* 2 */

    pool(&kv, &lay, &tr, 10 * B);

    served(&kv, &tr, l, 0, 16);
    (void) fg_sim_kv_admit(&kv, &tr.reqs[1], &l[1]);

    /* 4 reserved by 1, 6 cached (p's 4 and 0's own 2): 2 needs 2 new */
    ok(fg_sim_kv_fits(&kv, &tr.reqs[2]), "a request of p fits: its 4 "
       "cached blocks are held, not made");
    (void) fg_sim_kv_admit(&kv, &tr.reqs[2], &l[2]);
    ok(l[2].cached == 64 && kv.evictions == 2 && sums_hold(&kv),
       "it evicts the 2 own blocks of the request before, not its prefix");

    ok(kv.free == 0 && kv.cached == 0,
       "the pool is full of held blocks now");
    ok(!fg_sim_kv_fits(&kv, &tr.reqs[1]),
       "and nothing more fits: held blocks are never evicted");

    fg_sim_kv_free(&kv);
    fg_sim_kv_layout_free(&lay);
    fg_sim_trace_free(&tr);
}


/* random admissions and ends: the sums hold, never more than the pool */
static void
test_random(void)
{
    int                 bad;
    char                name[8];
    size_t              i, j, nrun, *run;
    fg_rand_t           rng;
    fg_sim_trace_t      tr;
    fg_sim_kv_t         kv;
    fg_sim_req_t       *r;
    fg_sim_kv_lease_t  *l;
    fg_sim_kv_layout_t  lay;

    fg_test_sim_trace(&tr, "a", NULL);
    fg_rand_stream(&rng, 16, 0);

    for (i = 0; i < 2000; i++) {
        snprintf(name, sizeof(name), "p%u",
                 (unsigned) fg_rand_range(&rng, 0, 5));
        r = add(&tr, name, 0, (uint32_t) fg_rand_range(&rng, 1, 300),
                (uint32_t) fg_rand_range(&rng, 1, 100));
        r->prefix_tokens = (uint32_t) fg_rand_range(&rng, 1,
                                                    r->input_tokens);
    }

    pool(&kv, &lay, &tr, 1500);

    l = calloc(tr.n, sizeof(fg_sim_kv_lease_t));
    run = calloc(tr.n, sizeof(size_t));
    nrun = 0;
    bad = 0;

    for (i = 0; i < tr.n; i++) {
        r = &tr.reqs[i];

        /* end random running requests until it fits */
        while (!fg_sim_kv_fits(&kv, r)) {
            j = (size_t) fg_rand_range(&rng, 0, nrun - 1);
            fg_sim_kv_finish(&kv, &tr.reqs[run[j]],
                             tr.reqs[run[j]].output_tokens, &l[run[j]]);
            run[j] = run[--nrun];
        }

        if (fg_sim_kv_admit(&kv, r, &l[i]) != l[i].cached
            || l[i].cached >= r->input_tokens || !sums_hold(&kv))
        {
            bad++;
        }

        run[nrun++] = i;
    }

    ok(bad == 0, "2000 random requests: the sums hold and hits stay "
       "below the input at every step (%d bad)", bad);
    ok(kv.hit_tokens > 0 && kv.evictions > 0, "with hits (%llu) and "
       "evictions (%llu)", (unsigned long long) kv.hit_tokens,
       (unsigned long long) kv.evictions);

    free(l);
    free(run);
    fg_sim_kv_free(&kv);
    fg_sim_kv_layout_free(&lay);
    fg_sim_trace_free(&tr);
}


int
main(void)
{
    test_no_cache();
    test_hits_and_sharing();
    test_eviction();
    test_held();
    test_random();

    return done_testing();
}
