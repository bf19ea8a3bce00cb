
/*
 * fairgate: a request's n choices in the batcher, over the sim backend
 * (whose tokens digest every position's token and block, so a choice that
 * read another's block, or a shared block overwritten, changes them):
 *
 * - greedy, the prefix cache on or off: every choice gives the tokens of
 *   the request alone with the cache off, and the prompt is run once,
 *   plus each other choice's last, partial block;
 * - sampled with a seed: choice c gives the tokens of a request of one
 *   choice seeded with fg_batch_choice_seed(seed, c), so the choices
 *   differ, are the same again, and are the same alone or in a batch with
 *   other requests;
 * - a pool too small for the group: choices are preempted and resumed,
 *   and each still gives its tokens;
 * - cancelling the request ends every choice; nothing is held after;
 * - n over 16, or over what the engine may hold, is refused.
 */


#include "fg_test_prefix.h"


#define VOCAB       1000
#define PLEN        40          /* 2 full blocks of 16, 8 positions over */


static fg_backend_conf_t
sim_conf(uint32_t kv_blocks, uint32_t max_batch, uint32_t max_tokens)
{
    fg_backend_conf_t  conf;

    fg_test_backend_sim(&conf, kv_blocks, 16, max_batch, max_tokens,
                        "linear:0.0002,0.0005", 1e9, VOCAB);

    return conf;
}


/* a request of n choices (out[id .. id + n)), sampled at temperature
 * 1 with seed (greedy when temp is 0): FG_BATCH_OK or the refusal */
static int
submit(px_rig_t *r, uint64_t id, const int32_t *p, uint32_t n_p,
    uint32_t max_tokens, uint32_t n, float temp, uint64_t seed)
{
    char            err[256];
    uint32_t        c;
    fg_batch_req_t  req;

    fg_test_batch_req(&req, id, p, n_p, max_tokens, 1);
    req.n = n;
    req.sampling.temperature = temp;
    req.sampling.seed = seed;

    for (c = 0; c < (n ? n : 1); c++) {
        memset(&r->out[(id + c) % PX_MAX_REQ], 0, sizeof(px_out_t));
    }

    return fg_batch_submit(r->batch, &req, err, sizeof(err));
}


/* the prefix cache on, or off: the choices share the prompt alike */
static void
test_greedy_shared(int cache)
{
    int32_t            p[PLEN];
    uint32_t           c, same;
    px_rig_t           r;
    px_out_t           ref;
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 8, 256);
    px_tokens(p, PLEN, VOCAB, 31);

    px_open(&r, &fg_backend_sim, &conf, 0);
    ref = *px_alone(&r, 0, p, PLEN, 20);
    px_close(&r);

    px_open(&r, &fg_backend_sim, &conf, cache);

    ok(submit(&r, 0, p, PLEN, 20, 3, 0.0f, 1) == FG_BATCH_OK
       && px_run(&r) == 0, "cache %s: 3 greedy choices run to their end",
       cache ? "on" : "off");

    for (same = 0, c = 0; c < 3; c++) {
        same += px_same(&r.out[c], &ref) && r.out[c].finish
                                            == FG_FINISH_LENGTH;
    }

    is_int(same, 3, "each the tokens of the request alone, cache off");

    fg_batch_stats(r.batch, &st);
    is_int(st.prefill_tokens, PLEN + 2 * 8, "the prompt run once, and each "
           "other choice's partial block");
    is_int(r.out[1].n_cached, 32, "choice 1 took the 2 full blocks");
    ok(r.bad == 0, "no step wrote a shared block");
    ok(px_idle(&r), "nothing held after");

    px_close(&r);
}


static void
test_seeded(void)
{
    int32_t            p[PLEN], q[PLEN];
    uint32_t           c, same, differ;
    px_rig_t           r;
    px_out_t           one[4], all[4];
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 8, 256);
    px_tokens(p, PLEN, VOCAB, 32);
    px_tokens(q, PLEN, VOCAB, 33);

    /* each choice's stream as a request of its own */
    px_open(&r, &fg_backend_sim, &conf, 0);

    for (c = 0; c < 4; c++) {
        submit(&r, 0, p, PLEN, 24, 1, 1.0f, fg_batch_choice_seed(99, c));
        px_run(&r);
        one[c] = r.out[0];
    }

    px_close(&r);

    /* the 4 together, among two other requests */
    px_open(&r, &fg_backend_sim, &conf, 1);

    ok(submit(&r, 40, q, PLEN, 30, 1, 1.0f, 5) == FG_BATCH_OK
       && submit(&r, 0, p, PLEN, 24, 4, 1.0f, 99) == FG_BATCH_OK
       && submit(&r, 41, q, 20, 10, 2, 1.0f, 6) == FG_BATCH_OK
       && px_run(&r) == 0, "4 seeded choices in a batch with others");

    for (same = 0, c = 0; c < 4; c++) {
        all[c] = r.out[c];
        same += px_same(&all[c], &one[c]);
    }

    is_int(same, 4, "choice c: the tokens of its seed alone, in a batch");
    ok(fg_batch_choice_seed(99, 0) == 99, "choice 0's seed is the seed");

    for (differ = 0, c = 1; c < 4; c++) {
        differ += !px_same(&all[c], &all[0]);
    }

    is_int(differ, 3, "the choices differ");
    ok(px_idle(&r), "nothing held after");

    /* again: the same */
    ok(submit(&r, 0, p, PLEN, 24, 4, 1.0f, 99) == FG_BATCH_OK
       && px_run(&r) == 0, "the same request again");

    for (same = 0, c = 0; c < 4; c++) {
        same += px_same(&r.out[c], &all[c]);
    }

    is_int(same, 4, "the same choices");

    px_close(&r);
}


static void
test_preempted(int cache)
{
    int32_t            p[PLEN];
    uint32_t           c, same;
    px_rig_t           r;
    px_out_t           ref;
    fg_batch_stats_t   st;
    fg_backend_conf_t  conf;

    /* each choice needs 9 blocks (40 + 99 positions), 2 of them shared:
     * 4 choices 30, the pool 20 */
    conf = sim_conf(20, 8, 256);
    px_tokens(p, PLEN, VOCAB, 34);

    px_open(&r, &fg_backend_sim, &conf, 0);
    ref = *px_alone(&r, 0, p, PLEN, 100);
    px_close(&r);

    px_open(&r, &fg_backend_sim, &conf, cache);

    ok(submit(&r, 0, p, PLEN, 100, 4, 0.0f, 1) == FG_BATCH_OK
       && px_run(&r) == 0, "cache %s: 4 choices in a pool too small for "
       "them", cache ? "on" : "off");

    fg_batch_stats(r.batch, &st);
    ok(st.preemptions > 0, "some were preempted");

    for (same = 0, c = 0; c < 4; c++) {
        same += px_same(&r.out[c], &ref);
    }

    is_int(same, 4, "each still gives the tokens of the request alone");
    ok(r.bad == 0, "no step wrote a shared block");
    ok(px_idle(&r), "nothing held after, no reference leaked");

    px_close(&r);
}


static void
test_cancel_refuse(void)
{
    char               err[256];
    int32_t            p[PLEN];
    uint32_t           c, cancelled;
    px_rig_t           r;
    fg_batch_req_t     req;
    fg_backend_conf_t  conf;

    conf = sim_conf(256, 8, 256);
    px_tokens(p, PLEN, VOCAB, 35);

    px_open(&r, &fg_backend_sim, &conf, 1);

    submit(&r, 0, p, PLEN, 100, 3, 1.0f, 1);
    fg_batch_step(r.batch, err, sizeof(err));
    fg_batch_step(r.batch, err, sizeof(err));
    fg_batch_step(r.batch, err, sizeof(err));

    ok(fg_batch_cancel(r.batch, 0, 0, 1) == 0 && fg_batch_held(r.batch) == 0,
       "cancelling the request ends every choice");

    for (cancelled = 0, c = 0; c < 3; c++) {
        cancelled += r.out[c].finish == FG_FINISH_CANCEL;
    }

    is_int(cancelled, 3, "an event of each");
    ok(fg_batch_cancel(r.batch, 0, 0, 1) == -1, "then nothing of it held");
    ok(px_idle(&r), "nothing held after");

    fg_test_batch_req(&req, 1, p, PLEN, 10, 1);
    req.n = FG_BATCH_MAX_N + 1;
    is_int(fg_batch_submit(r.batch, &req, err, sizeof(err)), FG_BATCH_EINVAL,
           "17 choices: refused");

    ok(submit(&r, 2, p, PLEN, 10, 3, 0.0f, 1) == FG_BATCH_OK
       && submit(&r, 8, p, PLEN, 10, 16, 0.0f, 1) == FG_BATCH_OK,
       "19 sequences held");

    /* 19, then 16, 16 and 13: the 64 the batcher may hold */
    for (c = 0; c < 3; c++) {
        req.id = 30 + c;
        req.n = c < 2 ? 16 : 13;
        fg_batch_submit(r.batch, &req, err, sizeof(err));
    }

    is_int(fg_batch_held(r.batch), PX_MAX_REQ, "64 held");

    req.id = 60;
    req.n = 2;
    is_int(fg_batch_submit(r.batch, &req, err, sizeof(err)), FG_BATCH_EFULL,
           "more choices than the engine may still hold: try later");
    ok(px_run(&r) == 0 && px_idle(&r), "the others run; nothing held after");

    px_close(&r);
}


int
main(void)
{
    test_greedy_shared(1);
    test_greedy_shared(0);
    test_seeded();
    test_preempted(1);
    test_preempted(0);
    test_cancel_refuse();

    return done_testing();
}
