
/*
 * fairgate: the prefix cache in the batcher, over the sim backend (whose
 * tokens digest every position's token and block, so a wrong or
 * overwritten block changes them): prompts that share no block, some, all
 * but the last token, the same prompt, a chat's next turn over the last
 * answer; the backend sees only the uncached tokens, at pos = cached;
 * every output is the one the cache off gives, token for token; two
 * sequences of one prompt at once, the second adopting the first's
 * blocks a step later, and both computing the last; a preempted sequence
 * resuming from its own cached blocks; eviction under pressure, oldest
 * released first and a prefix's later blocks before its earlier ones;
 * the counters; the cache off changes nothing; no reference leaks.
 */


#include "fg_test_prefix.h"


#define VOCAB       1000


static fg_backend_conf_t
sim_conf(uint32_t kv_blocks, uint32_t block_size, uint32_t max_batch,
    uint32_t max_tokens)
{
    fg_backend_conf_t  conf;

    fg_test_backend_sim(&conf, kv_blocks, block_size, max_batch, max_tokens,
                        "linear:0.0002,0.0005", 1e9, VOCAB);

    return conf;
}


/* n prompts of len tokens (their salts from salt on), each run alone
 * without the cache: the tokens each gives then */
static void
reference(const fg_backend_conf_t *conf, int32_t *p, int n, uint32_t len,
    uint32_t salt, uint32_t max_tokens, px_out_t *ref)
{
    int       i;
    px_rig_t  r;

    for (i = 0; i < n; i++) {
        fg_test_prompt(p + i * len, len, salt + (uint32_t) i, VOCAB);
    }

    px_open(&r, &fg_backend_sim, conf, 0);

    for (i = 0; i < n; i++) {
        ref[i] = *px_alone(&r, (uint64_t) i, p + i * len, len, max_tokens);
    }

    px_close(&r);
}


static void
test_shared_prefixes(void)
{
    int                i;
    int32_t            a[48];
    px_rig_t           r;
    px_out_t           a_out;
    px_case_t          c[5];
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;
    uint64_t           query, hit;

    conf = sim_conf(256, 16, 8, 256);

    px_suite("sim", &fg_backend_sim, &conf, VOCAB);

    /* the counters over the suite's requests */
    px_open(&r, &fg_backend_sim, &conf, 1);
    px_tokens(a, 48, VOCAB, 10);
    a_out = *px_alone(&r, 0, a, 48, 20);
    is_int(fg_kv_cached_blocks(r.kv), 4, "A's 4 computed blocks are cached, "
           "its answer's too");

    px_cases(c, a, &a_out, VOCAB);
    query = 48;
    hit = 0;

    for (i = 0; i < 5; i++) {
        px_alone(&r, 1, c[i].tokens, c[i].n, 20);
        query += c[i].n;
        hit += c[i].cached;
    }

    fg_batch_stats(r.batch, &st);
    ok(st.cache_query_tokens == query && st.cache_hit_tokens == hit,
       "the counters: %llu of %llu prompt tokens reused (%llu of %llu)",
       (unsigned long long) st.cache_hit_tokens,
       (unsigned long long) st.cache_query_tokens,
       (unsigned long long) hit, (unsigned long long) query);
    ok(st.cache_blocks == fg_kv_cached_blocks(r.kv)
       && st.cache_blocks == (uint64_t) r.index_keys,
       "cache_blocks: %llu, as many as the index was told of",
       (unsigned long long) st.cache_blocks);

    px_close(&r);
}


static void
test_off(void)
{
    int                i, at_zero;
    char               err[256];
    int32_t            a[64];
    px_rig_t           r;
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 16, 8, 256);
    fg_test_prompt(a, 64, 1, VOCAB);

    px_open(&r, &fg_backend_sim, &conf, 0);
    at_zero = 1;

    for (i = 0; i < 3; i++) {
        px_submit(&r, (uint64_t) i, a, 64, 10);
        fg_batch_step(r.batch, err, sizeof(err));
        at_zero &= r.pos[0] == 0 && r.n_tokens[0] == 64;
        px_run(&r);
        at_zero &= r.out[i].n_cached == 0;
    }

    ok(at_zero, "the cache off: the same prompt thrice is computed whole "
       "each time, none reported cached");

    fg_batch_stats(r.batch, &st);
    ok(st.cache_blocks == 0 && st.cache_hit_tokens == 0
       && st.cache_query_tokens == 0 && r.index_keys == 0,
       "the cache off: no cached block, no counter, no index entry");
    is_int(fg_kv_free_blocks(r.kv), 256, "every block free");

    px_close(&r);
}


static void
test_concurrent(void)
{
    int                same;
    int32_t            a[64];
    px_rig_t           r;
    px_out_t           ref;
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 16, 8, 256);
    fg_test_prompt(a, 64, 7, VOCAB);

    px_open(&r, &fg_backend_sim, &conf, 0);
    ref = *px_alone(&r, 0, a, 64, 10);
    px_close(&r);

    /*
     * two of the same prompt at once: the second waits a step for the
     * first's blocks and adopts 3; both compute the last (the second for
     * its last token's logits), and the first registered wins
     */
    px_open(&r, &fg_backend_sim, &conf, 1);
    px_submit(&r, 0, a, 64, 10);
    px_submit(&r, 1, a, 64, 10);
    px_run(&r);

    ok(px_same(&r.out[0], &ref) && px_same(&r.out[1], &ref),
       "two sequences of one prompt at once: both right");
    ok(r.out[0].n_cached == 0 && r.out[1].n_cached == 48, "the second "
       "adopts the first's blocks but the last (%u tokens)",
       r.out[1].n_cached);
    is_int(fg_kv_cached_blocks(r.kv), 4, "a block both computed: the first "
           "registered wins, 4 blocks cached, the other's freed");
    ok(px_idle(&r), "and no reference left");

    same = px_same(px_alone(&r, 2, a, 64, 10), &ref);
    ok(same && r.out[2].n_cached == 48, "a third finds 48 of them cached "
       "(%u)", r.out[2].n_cached);
    is_int(r.bad, 0, "no step wrote a block another held");

    px_close(&r);
}


static void
test_failed_step(void)
{
    int                ran;
    char               err[256];
    int32_t            a[64], b[64];
    px_rig_t           r;
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 16, 8, 256);
    fg_test_prompt(a, 64, 8, VOCAB);
    fg_test_prompt(b, 64, 9, VOCAB);
    memcpy(b, a, 32 * sizeof(int32_t));

    px_open(&r, &fg_backend_sim, &conf, 1);
    px_alone(&r, 0, a, 64, 4);
    px_alone(&r, 3, a + 16, 48, 4);

    /* B shares A's first 2 blocks; its step fails */
    px_submit(&r, 1, b, 64, 4);
    r.fail_next = 1;
    ok(fg_batch_step(r.batch, err, sizeof(err)) == -1
       && r.out[1].finish == FG_FINISH_ERROR, "a failed step ends B with an "
       "error");

    ran = px_alone(&r, 2, a, 64, 4) != NULL;
    ok(ran && r.out[2].n_cached == 0, "the blocks that step used are "
       "forgotten: A again finds none (%u tokens)", r.out[2].n_cached);
    ran = px_alone(&r, 4, a + 16, 48, 4) != NULL;
    ok(ran && r.out[4].n_cached == 32, "what it did not touch stays cached "
       "(%u tokens)", r.out[4].n_cached);
    ok(px_idle(&r), "idle: no reference left, the index told");

    px_close(&r);
}


static void
test_preempt_resume(void)
{
    int                i, all_same, resumed;
    int32_t            p[8][10];
    px_rig_t           r;
    px_out_t           alone[8];
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    /* blocks of 4; each request 10 + 14 - 1 positions, 6 blocks; a pool
     * of 12 holds two: decodes preempt the youngest */
    conf = sim_conf(64, 4, 8, 64);
    reference(&conf, p[0], 8, 10, 100, 14, alone);

    conf.kv_blocks = 12;
    px_open(&r, &fg_backend_sim, &conf, 1);

    for (i = 0; i < 8; i++) {
        px_submit(&r, (uint64_t) i, p[i], 10, 14);
    }

    ok(px_run(&r) == 0, "8 requests in a pool for 2 run to the end");

    all_same = 1;
    resumed = 0;

    for (i = 0; i < 8; i++) {
        all_same &= px_same(&r.out[i], &alone[i])
                    && r.out[i].finish == FG_FINISH_LENGTH;
        resumed += r.out[i].max_cached > 0;
    }

    fg_batch_stats(r.batch, &st);

    ok(all_same, "each completes with the tokens it has alone");
    ok(st.preemptions > 0 && resumed > 0, "%llu preemptions; %d preempted "
       "requests (no prompt shared) resumed from their own cached blocks",
       (unsigned long long) st.preemptions, resumed);
    is_int(r.bad, 0, "no step wrote a cached block or one another held");
    ok(px_idle(&r), "idle: no reference left");

    px_close(&r);
}


static void
test_eviction(void)
{
    int                i, all_same, same;
    int32_t            p[10][20];
    px_rig_t           r;
    px_out_t           ref[10];
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    conf = sim_conf(64, 4, 8, 64);
    reference(&conf, p[0], 10, 20, 200, 4, ref);

    /* 16 blocks; each request caches 5 (23 positions computed) */
    conf.kv_blocks = 16;
    px_open(&r, &fg_backend_sim, &conf, 1);
    all_same = 1;

    for (i = 0; i < 10; i++) {
        all_same &= px_same(px_alone(&r, (uint64_t) i, p[i], 20, 4),
                            &ref[i]);
    }

    fg_batch_stats(r.batch, &st);

    ok(all_same, "10 prompts through a pool of 16 blocks: each right");
    ok(st.cache_evictions > 0 && st.cache_blocks <= 16
       && r.index_removed == st.cache_evictions,
       "%llu evictions, each told to the index; %llu blocks cached",
       (unsigned long long) st.cache_evictions,
       (unsigned long long) st.cache_blocks);

    same = px_same(px_alone(&r, 10, p[9], 20, 4), &ref[9]);
    ok(same && r.out[10].n_cached == 16,
       "the last prompt again: its 4 blocks are still cached (%u tokens)",
       r.out[10].n_cached);
    same = px_same(px_alone(&r, 11, p[0], 20, 4), &ref[0]);
    ok(same && r.out[11].n_cached == 0,
       "the first again: its blocks, the least recently released, were "
       "evicted (%u tokens cached)", r.out[11].n_cached);
    ok(px_idle(&r), "idle: no reference left");

    px_close(&r);

    /* 8 blocks: X caches 5 and leaves 3 free; Y takes the 3 and 2 of X's,
     * its last ones (released first) */
    conf.kv_blocks = 8;
    px_open(&r, &fg_backend_sim, &conf, 1);

    px_alone(&r, 0, p[0], 20, 4);
    px_alone(&r, 1, p[1], 20, 1);

    same = px_same(px_alone(&r, 2, p[0], 20, 4), &ref[0]);
    ok(same && r.out[2].n_cached == 12,
       "a prefix's later blocks are evicted before its earlier ones: 3 of "
       "4 blocks left (%u tokens cached)", r.out[2].n_cached);
    ok(px_idle(&r), "idle: no reference left");
    is_int(r.bad, 0, "no step wrote a cached block or one another held");

    px_close(&r);
}


int
main(void)
{
    test_shared_prefixes();
    test_off();
    test_concurrent();
    test_failed_step();
    test_preempt_resume();
    test_eviction();

    return fg_tap_done();
}
