
/*
 * fairgate: swap preemption's suite over a backend of weights (the cpu
 * in test_swap.c, the emulated cuda in t/cuda_emu/test_cuda_swap.c), on
 * fg_test_prefix.h's rig.  A request preempted mid-answer and swapped
 * out gives, greedy, token for token what it gives alone, the backend
 * running no prefill at its resume (one token a step, at the position it
 * had reached); so do two requests in a pool for one, the younger
 * swapped out by the elder's decodes.  Swap falls back to recompute
 * where host memory is over swap_bytes or the backend has no kv_save,
 * kv_load: the same tokens, the prompt and output run again.
 */

#ifndef _FG_TEST_SWAP_H_INCLUDED_
#define _FG_TEST_SWAP_H_INCLUDED_


#include "fg_test_prefix.h"
#include "fg_batch_int.h"


#define SW_PROMPT   40
#define SW_ANSWER   30
#define SW_AT       10      /* tokens answered when preempted */


typedef struct {
    px_out_t             out;
    fg_batch_stats_t     st;
    uint64_t             after;     /* tokens the backend ran after it */
    uint32_t             pos;       /* the first step after: its chunk */
    uint32_t             n;
} sw_result_t;


/*
 * p answered SW_AT tokens, then preempted by hand (as a decode short of
 * blocks or Andes would), then run to its end.  Meanwhile the blocks it
 * freed are held (the free stack would give them back first): it resumes
 * in other blocks, whose contents only a load makes its own.
 */
static inline int
sw_preempted(const fg_backend_ops_t *ops, const fg_backend_conf_t *conf,
    int cache, uint32_t preempt, const int32_t *p, sw_result_t *res)
{
    char         err[512];
    uint64_t     before;
    px_rig_t     r;
    fg_kv_seq_t  hold;

    memset(res, 0, sizeof(sw_result_t));

    if (px_open_as(&r, ops, conf, cache, preempt, 0) != 0
        || px_submit(&r, 0, p, SW_PROMPT, SW_ANSWER) != FG_BATCH_OK)
    {
        return -1;
    }

    while (r.out[0].n < SW_AT) {
        if (fg_batch_step(r.batch, err, sizeof(err)) <= 0) {
            return -1;
        }
    }

    fg_batch_preempt_seq(r.batch, r.batch->running.head);
    before = r.run_tokens;

    fg_kv_seq_init(&hold);

    if (fg_kv_grow(r.kv, &hold, 4 * fg_kv_block_size(r.kv)) != 0
        || fg_batch_step(r.batch, err, sizeof(err)) != 1)
    {
        return -1;
    }

    fg_kv_seq_free(r.kv, &hold);

    res->pos = r.pos[0];
    res->n = r.n_tokens[0];

    if (px_run(&r) != 0 || r.bad != 0 || !px_idle(&r)) {
        return -1;
    }

    res->out = r.out[0];
    res->after = r.run_tokens - before;
    fg_batch_stats(r.batch, &res->st);

    px_close(&r);

    return 0;
}


static inline void
sw_mid_answer(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, const int32_t *p, const px_out_t *ref)
{
    int                cache, rc;
    sw_result_t        res;
    fg_backend_ops_t   none;

    /* the cache on: the blocks freed stay cached, the loaded ones are
     * private copies of theirs */
    for (cache = 0; cache < 2; cache++) {
        rc = sw_preempted(ops, conf, cache, FG_PREEMPT_SWAP, p, &res);

        ok(rc == 0 && px_same(&res.out, ref), "%s, cache %s: swapped out "
           "after %u tokens and in, the %u tokens it gives alone", be,
           cache ? "on" : "off", SW_AT, ref->n);
        ok(res.pos == SW_PROMPT + SW_AT - 1 && res.n == 1
           && res.after == SW_ANSWER - SW_AT, "%s, cache %s: no prefill at "
           "its resume: a decode at %u, %llu tokens run after (%u)", be,
           cache ? "on" : "off", res.pos, (unsigned long long) res.after,
           SW_ANSWER - SW_AT);
        ok(res.st.preemptions == 1 && res.st.swap_outs == 1
           && res.st.swap_ins == 1 && res.st.swap_held == 0, "%s, cache %s: "
           "one swap out, one in, no host memory left", be,
           cache ? "on" : "off");
    }

    /* recompute prefills the prompt and the answer but its last token */
    rc = sw_preempted(ops, conf, 0, FG_PREEMPT_RECOMPUTE, p, &res);

    ok(rc == 0 && px_same(&res.out, ref) && res.st.swap_outs == 0
       && res.after == SW_PROMPT + SW_AT + SW_ANSWER - SW_AT - 1,
       "%s, recompute: the same tokens, %llu run after the preemption", be,
       (unsigned long long) res.after);

    none = *ops;
    none.kv_save = NULL;
    none.kv_load = NULL;

    rc = sw_preempted(&none, conf, 0, FG_PREEMPT_SWAP, p, &res);

    ok(rc == 0 && px_same(&res.out, ref) && res.st.preemptions == 1
       && res.st.swap_outs == 0
       && res.after == SW_PROMPT + SW_ANSWER - 1, "%s, swap on a backend "
       "without kv_save: recomputes, the same tokens (%llu run after)", be,
       (unsigned long long) res.after);
}


/*
 * Two requests of 40 + 24 tokens (4 blocks) in a pool of 7: both join,
 * the elder's decodes swap the younger out, which resumes when the elder
 * is done (the prefix cache on: its freed blocks stay cached meanwhile).
 * With room for fewer bytes than its blocks, it recomputes (the cache
 * off, which would give its blocks back here).
 */
static inline void
sw_pressure(const char *be, const fg_backend_ops_t *ops,
    fg_backend_conf_t conf, const int32_t *p, const int32_t *q)
{
    int                same;
    px_rig_t           r;
    px_out_t           ref[2];
    uint32_t           i;
    fg_batch_stats_t   st;
    uint64_t           limits[2];

    px_open(&r, ops, &conf, 0);
    ref[0] = *px_alone(&r, 0, p, SW_PROMPT, 24);
    ref[1] = *px_alone(&r, 1, q, SW_PROMPT, 24);
    limits[0] = 0;
    limits[1] = fg_batch_info(r.batch)->kv_bytes_per_block;
    px_close(&r);

    conf.kv_blocks = 7;

    for (i = 0; i < 2; i++) {
        px_open_as(&r, ops, &conf, i == 0, FG_PREEMPT_SWAP, limits[i]);
        px_submit(&r, 0, p, SW_PROMPT, 24);
        px_submit(&r, 1, q, SW_PROMPT, 24);

        same = px_run(&r) == 0 && px_same(&r.out[0], &ref[0])
               && px_same(&r.out[1], &ref[1]) && r.bad == 0 && px_idle(&r);
        fg_batch_stats(r.batch, &st);

        if (i == 0) {
            ok(same && st.preemptions >= 1
               && st.swap_outs == st.preemptions
               && st.swap_ins == st.swap_outs
               && r.run_tokens == 2 * (SW_PROMPT + 24 - 1),
               "%s, a pool for one: the younger swapped out %llu times, "
               "each its tokens alone, nothing run twice (%llu tokens)",
               be, (unsigned long long) st.swap_outs,
               (unsigned long long) r.run_tokens);

        } else {
            ok(same && st.preemptions >= 1 && st.swap_outs == 0
               && r.run_tokens > 2 * (SW_PROMPT + 24 - 1),
               "%s, a pool for one, swap_bytes for one block: recomputes "
               "(%llu preemptions, %llu tokens run), the same tokens", be,
               (unsigned long long) st.preemptions,
               (unsigned long long) r.run_tokens);
        }

        px_close(&r);
    }
}


static inline void
sw_suite(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, uint32_t vocab)
{
    int32_t   p[SW_PROMPT], q[SW_PROMPT];
    px_rig_t  r;
    px_out_t  ref;

    px_tokens(p, SW_PROMPT, vocab, 30);
    px_tokens(q, SW_PROMPT, vocab, 31);

    if (px_open(&r, ops, conf, 0) != 0) {
        ok(0, "%s: a rig", be);
        return;
    }

    ref = *px_alone(&r, 0, p, SW_PROMPT, SW_ANSWER);
    px_close(&r);

    sw_mid_answer(be, ops, conf, p, &ref);
    sw_pressure(be, ops, *conf, p, q);
}


#endif /* _FG_TEST_SWAP_H_INCLUDED_ */
