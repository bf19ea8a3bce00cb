
/*
 * fairgate: a batcher for the prefix cache's tests, over any backend
 * (sim, cpu, the emulated cuda), the cache on or off.  Every step is
 * checked before the backend runs it: no sequence writes a block that is
 * cached or that another sequence of the step holds, and every position
 * below a chunk's is covered by the table.  The last step's chunks
 * (position, tokens) are kept, and each request's tokens and the cached
 * count its events report.  An index callback counts the hashes that
 * enter and leave the cache, as the engine's segment index sees them.
 *
 * px_suite() is the check every backend passes (test_prefix.c on sim,
 * test_prefix_cpu.c on cpu, t/cuda_emu/test_cuda_prefix.c on the
 * emulated cuda): prompts sharing no block with an earlier one, some, all
 * but the last token, the same prompt, a chat's next turn over the
 * earlier answer, and requests sharing a prefix in a pool too small for
 * them (preemptions, evictions) give token for token the greedy output
 * the cache off gives, while the backend sees only the uncached tokens.
 * So do prompts that share a prefix submitted together (px_share): one
 * computes it, the others wait a step and adopt it, unless the one is
 * lost or the block is not full in it, and others join meanwhile.
 */

#ifndef _FG_TEST_PREFIX_H_INCLUDED_
#define _FG_TEST_PREFIX_H_INCLUDED_


#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_gguf.h"
#include "fg_batch.h"
#include "fg_gguf_gen.h"
#include "fg_rand.h"


#define PX_MAX_REQ      64
#define PX_MAX_OUT      512
#define PX_MAX_SEQS     64


typedef struct {
    int32_t                  tokens[PX_MAX_OUT];
    uint32_t                 n;
    uint32_t                 finish;
    uint32_t                 n_cached;      /* the last event's */
    uint32_t                 max_cached;    /* the most an event said */
} px_out_t;


typedef struct {
    const fg_backend_ops_t  *inner;
    fg_backend_t            *backend;
    fg_kv_t                 *kv;
    fg_batch_t              *batch;

    px_out_t                 out[PX_MAX_REQ];
    uint32_t                 bad;           /* rules a step broke */
    unsigned                 fail_next:1;   /* the next step fails */
    uint32_t                 steps;
    uint64_t                 run_tokens;    /* the backend ran, in all */

    /* the last step's chunks */
    uint32_t                 n_seqs;
    uint32_t                 pos[PX_MAX_SEQS];
    uint32_t                 n_tokens[PX_MAX_SEQS];

    /* hashes in the cache, as the index callback heard them */
    int64_t                  index_keys;
    uint64_t                 index_removed;
} px_rig_t;


static px_rig_t          *px_cur;
static fg_backend_ops_t   px_ops;


/* whether a block is in sequence t's table */
static inline int
px_holds(const fg_backend_seq_t *t, int32_t block)
{
    uint32_t  i;

    for (i = 0; i < t->n_blocks; i++) {
        if (t->block_table[i] == block) {
            return 1;
        }
    }

    return 0;
}


/* the rules of one sequence's chunk in a step */
static inline void
px_check_seq(px_rig_t *r, const fg_backend_batch_t *batch, uint32_t s)
{
    int32_t                  block;
    uint32_t                 bs, i, t;
    const fg_backend_seq_t  *sq;

    bs = fg_kv_block_size(r->kv);
    sq = &batch->seqs[s];

    if ((uint64_t) sq->pos + sq->n_tokens > (uint64_t) sq->n_blocks * bs) {
        diag("step %u: sequence %u's table ends before its chunk", r->steps,
             s);
        r->bad++;
        return;
    }

    for (i = sq->pos / bs; i * bs < sq->pos + sq->n_tokens; i++) {
        block = sq->block_table[i];

        if (fg_kv_block_hash(r->kv, block) != 0) {
            diag("step %u: sequence %u writes cached block %d", r->steps, s,
                 block);
            r->bad++;
        }

        for (t = 0; t < batch->n_seqs; t++) {
            if (t != s && px_holds(&batch->seqs[t], block)) {
                diag("step %u: sequence %u writes block %d, which sequence "
                     "%u holds", r->steps, s, block, t);
                r->bad++;
            }
        }
    }
}


static inline int
px_forward(fg_backend_t *b, const fg_backend_batch_t *batch, float *logits,
    char *err, size_t errlen)
{
    uint32_t   s;
    px_rig_t  *r;

    r = px_cur;
    r->n_seqs = batch->n_seqs;

    if (r->fail_next) {
        r->fail_next = 0;
        snprintf(err, errlen, "injected failure");
        return -1;
    }

    for (s = 0; s < batch->n_seqs; s++) {
        px_check_seq(r, batch, s);
        r->run_tokens += batch->seqs[s].n_tokens;

        if (s < PX_MAX_SEQS) {
            r->pos[s] = batch->seqs[s].pos;
            r->n_tokens[s] = batch->seqs[s].n_tokens;
        }
    }

    r->steps++;

    return r->inner->forward(b, batch, logits, err, errlen);
}


static inline void
px_emit(void *ctx, const fg_batch_event_t *ev)
{
    px_out_t  *o;

    /* choice c of request id: out[id + c] (ids of several choices are
     * spaced so) */
    o = &((px_rig_t *) ctx)->out[(ev->id + ev->choice) % PX_MAX_REQ];

    if (ev->token >= 0 && o->n < PX_MAX_OUT) {
        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
    o->n_cached = ev->n_cached;
    o->max_cached = ev->n_cached > o->max_cached ? ev->n_cached
                                                 : o->max_cached;
}


static inline void
px_index(void *ctx, uint64_t hash, int held)
{
    px_rig_t  *r;

    (void) hash;

    r = ctx;
    r->index_keys += held ? 1 : -1;
    r->index_removed += !held;
}


/*
 * A rig over inner's backend made from conf (its kv_blocks, block_size,
 * max_batch and max_tokens are the batcher's too), preempting as preempt
 * says (fg_batch_conf_t's preempt, swap_bytes): 0, or -1 with a diag.
 */
static inline int
px_open_as(px_rig_t *r, const fg_backend_ops_t *inner,
    const fg_backend_conf_t *conf, int prefix_cache, uint32_t preempt,
    uint64_t swap_bytes)
{
    char             err[512];
    fg_batch_conf_t  bc;

    memset(r, 0, sizeof(px_rig_t));
    r->inner = inner;
    px_ops = *inner;
    px_ops.forward = px_forward;
    px_cur = r;

    r->backend = inner->create(conf, err, sizeof(err));

    if (r->backend == NULL) {
        diag("%s backend: %s", inner->name, err);
        return -1;
    }

    r->kv = fg_kv_create(conf->kv_blocks, conf->block_size, err,
                         sizeof(err));

    fg_test_batch_conf(&bc, conf->max_batch, conf->max_tokens, PX_MAX_REQ,
                       px_emit, r);
    bc.prefix_cache = prefix_cache ? 1 : 0;
    bc.preempt = preempt;
    bc.swap_bytes = swap_bytes;

    r->batch = r->kv ? fg_batch_create(&bc, &px_ops, r->backend, r->kv, err,
                                       sizeof(err))
                     : NULL;

    if (r->batch == NULL) {
        diag("batch: %s", err);
        return -1;
    }

    fg_kv_set_index(r->kv, px_index, r);

    return 0;
}


/* the same, preempting by recompute */
static inline int
px_open(px_rig_t *r, const fg_backend_ops_t *inner,
    const fg_backend_conf_t *conf, int prefix_cache)
{
    return px_open_as(r, inner, conf, prefix_cache, FG_PREEMPT_RECOMPUTE, 0);
}


static inline void
px_close(px_rig_t *r)
{
    fg_batch_destroy(r->batch);
    fg_kv_destroy(r->kv);

    if (r->backend) {
        r->inner->destroy(r->backend);
    }

    memset(r, 0, sizeof(px_rig_t));
}


/* a greedy request of these tokens: FG_BATCH_OK or the refusal */
static inline int
px_submit(px_rig_t *r, uint64_t id, const int32_t *tokens, uint32_t n,
    uint32_t max_tokens)
{
    char            err[256];
    fg_batch_req_t  req;

    fg_test_batch_req(&req, id, tokens, n, max_tokens, 1);

    memset(&r->out[id % PX_MAX_REQ], 0, sizeof(px_out_t));

    return fg_batch_submit(r->batch, &req, err, sizeof(err));
}


/* steps until nothing is held: 0, or -1 (a failed step, or no end) */
static inline int
px_run(px_rig_t *r)
{
    int       rc;
    char      err[512];
    uint32_t  i;

    for (i = 0; i < 100000; i++) {
        rc = fg_batch_step(r->batch, err, sizeof(err));

        if (rc < 0) {
            diag("step: %s", err);
            return -1;
        }

        if (rc == 0) {
            return 0;
        }
    }

    return -1;
}


/* the request alone: submitted, run to its end; its output */
static inline const px_out_t *
px_alone(px_rig_t *r, uint64_t id, const int32_t *tokens, uint32_t n,
    uint32_t max_tokens)
{
    if (px_submit(r, id, tokens, n, max_tokens) != FG_BATCH_OK
        || px_run(r) != 0)
    {
        return NULL;
    }

    return &r->out[id % PX_MAX_REQ];
}


/*
 * Nothing held: every block without a reference, free or evictable, and
 * the index callback told of every hash the cache holds.
 */
static inline int
px_idle(px_rig_t *r)
{
    uint32_t  b, held;

    held = 0;

    for (b = 0; b < fg_kv_n_blocks(r->kv); b++) {
        held += fg_kv_refs(r->kv, (int32_t) b) != 0;
    }

    if (held || fg_kv_free_blocks(r->kv) != fg_kv_n_blocks(r->kv)
        || r->index_keys != (int64_t) fg_kv_cached_blocks(r->kv))
    {
        diag("%u blocks held, %u of %u free or evictable, %lld hashes told "
             "for %u cached", held, fg_kv_free_blocks(r->kv),
             fg_kv_n_blocks(r->kv), (long long) r->index_keys,
             fg_kv_cached_blocks(r->kv));
        return 0;
    }

    return 1;
}


static inline int
px_same(const px_out_t *a, const px_out_t *b)
{
    return a != NULL && b != NULL && a->n == b->n
           && memcmp(a->tokens, b->tokens, a->n * sizeof(int32_t)) == 0;
}


/* n tokens of 1 .. vocab - 1 from a seed */
static inline void
px_tokens(int32_t *p, uint32_t n, uint32_t vocab, uint64_t seed)
{
    uint32_t   i;
    fg_rand_t  rng;

    fg_rand_seed(&rng, seed);

    for (i = 0; i < n; i++) {
        p[i] = (int32_t) (1 + fg_rand_next(&rng) % (vocab - 1));
    }
}


typedef struct {
    const char  *what;
    int32_t      tokens[128];
    uint32_t     n;
    uint32_t     cached;            /* expected, after A ran */
} px_case_t;


/*
 * After A (48 tokens, 3 blocks of 16, answered with 20: 67 positions
 * computed, 4 blocks), prompts that share parts of it.
 */
static inline void
px_cases(px_case_t *c, const int32_t *a, const px_out_t *a_out,
    uint32_t vocab)
{
    c[0].what = "no block shared";
    px_tokens(c[0].tokens, 30, vocab, 11);
    c[0].n = 30;
    c[0].cached = 0;

    /* A's first 20 tokens: block 0 whole, block 1 differs */
    c[1].what = "one block shared";
    memcpy(c[1].tokens, a, 20 * sizeof(int32_t));
    px_tokens(c[1].tokens + 20, 20, vocab, 12);
    c[1].n = 40;
    c[1].cached = 16;

    c[2].what = "all but the last token";
    memcpy(c[2].tokens, a, 48 * sizeof(int32_t));
    c[2].tokens[48] = 1;
    c[2].n = 49;
    c[2].cached = 48;

    /* its last block is computed again, privately, for the logits */
    c[3].what = "the same prompt";
    memcpy(c[3].tokens, a, 48 * sizeof(int32_t));
    c[3].n = 48;
    c[3].cached = 32;

    c[4].what = "the next turn over the answer";
    memcpy(c[4].tokens, a, 48 * sizeof(int32_t));
    memcpy(c[4].tokens + 48, a_out->tokens, 20 * sizeof(int32_t));
    px_tokens(c[4].tokens + 68, 5, vocab, 13);
    c[4].n = 73;
    c[4].cached = 64;
}


/* one case after A on a rig with the cache: its chunk, tokens, count */
static inline void
px_case(px_rig_t *r, const char *be, const px_case_t *c, const px_out_t *ref)
{
    char  err[512];

    px_submit(r, 1, c->tokens, c->n, 20);
    fg_batch_step(r->batch, err, sizeof(err));

    ok(r->n_seqs == 1 && r->pos[0] == c->cached
       && r->n_tokens[0] == c->n - c->cached,
       "%s, %s: the backend runs %u tokens at position %u (ran %u at %u)",
       be, c->what, c->n - c->cached, c->cached, r->n_tokens[0], r->pos[0]);

    px_run(r);

    ok(px_same(&r->out[1], ref), "%s, %s: greedy, the same %u tokens as "
       "with the cache off", be, c->what, ref->n);
    is_int(r->out[1].n_cached, c->cached, "%s, %s: %u prompt tokens "
           "reported cached", be, c->what, c->cached);
}


/* four requests of a shared prefix in a pool for about two */
static inline void
px_pressure(const char *be, const fg_backend_ops_t *ops,
    fg_backend_conf_t conf, const int32_t *a)
{
    int        i, all_same;
    int32_t    p[4][40];
    px_rig_t   r;
    px_out_t   ref[4];

    for (i = 0; i < 4; i++) {
        memcpy(p[i], a, 24 * sizeof(int32_t));
        p[i][24] = i + 1;
        memcpy(p[i] + 25, a + 30, 15 * sizeof(int32_t));
    }

    px_open(&r, ops, &conf, 0);

    for (i = 0; i < 4; i++) {
        ref[i] = *px_alone(&r, (uint64_t) i, p[i], 40, 24);
    }

    px_close(&r);

    /* each needs 40 + 24 - 1 positions, 4 blocks; 7 blocks hold one, and
     * a shared prefix lets a second start */
    conf.kv_blocks = 7;
    px_open(&r, ops, &conf, 1);

    for (i = 0; i < 4; i++) {
        px_submit(&r, (uint64_t) i, p[i], 40, 24);
    }

    all_same = px_run(&r) == 0;

    for (i = 0; i < 4; i++) {
        all_same &= px_same(&r.out[i], &ref[i]);
    }

    ok(all_same, "%s: 4 requests sharing 16 tokens in a pool of 7 blocks "
       "(%llu evictions): each has the tokens it has alone",
       be, (unsigned long long) fg_kv_evictions(r.kv));
    ok(r.bad == 0 && px_idle(&r), "%s: no shared block written, no "
       "reference left", be);

    px_close(&r);
}


/* px_share's prompts and their greedy outputs alone, the cache off */
typedef struct {
    int32_t                  p[70];     /* 4 full blocks and 6 tokens */
    int32_t                  e[30];     /* sharing no block with p */
    px_out_t                 p_ref;
    px_out_t                 p40_ref;   /* p's first 40: 2 blocks and 8 */
    px_out_t                 e_ref;
} px_share_t;


/*
 * The same prompt twice at once, and a third sharing nothing: the second
 * waits a step for the first's blocks, then adopts them, and the third
 * joins with the first, not held up behind the second.
 */
static inline void
px_together(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, const px_share_t *sh)
{
    char      err[512];
    px_rig_t  r;

    px_open(&r, ops, conf, 1);
    px_submit(&r, 0, sh->p, 70, 10);
    px_submit(&r, 1, sh->p, 70, 10);
    px_submit(&r, 2, sh->e, 30, 10);
    fg_batch_step(r.batch, err, sizeof(err));

    ok(r.n_seqs == 2 && r.n_tokens[0] == 70 && r.pos[1] == 0
       && r.n_tokens[1] == 30, "%s, one prompt twice at once: the first "
       "step runs the first whole and the third, not the second (%u "
       "sequences)", be, r.n_seqs);

    ok(px_run(&r) == 0 && px_same(&r.out[0], &sh->p_ref)
       && px_same(&r.out[1], &sh->p_ref) && px_same(&r.out[2], &sh->e_ref),
       "%s, one prompt twice at once: each gives the tokens it gives alone "
       "with the cache off", be);
    ok(r.out[0].n_cached == 0 && r.out[1].n_cached == 64
       && r.out[2].n_cached == 0, "%s, one prompt twice at once: the "
       "second finds its 4 full blocks cached (%u tokens)", be,
       r.out[1].n_cached);

    /* prompts of 70, 70 - 64 and 30 tokens, 9 decodes each: the prefix's
     * 64 tokens ran once */
    ok(r.run_tokens == 70 + 6 + 30 + 3 * 9, "%s, one prompt twice at once: "
       "the backend ran %llu tokens (%u)", be,
       (unsigned long long) r.run_tokens, 70 + 6 + 30 + 3 * 9);
    ok(r.bad == 0 && px_idle(&r), "%s, one prompt twice at once: no "
       "shared block written, no reference left", be);

    px_close(&r);
}


/*
 * The sequence a deferred one waits for is lost: cancelled after the step
 * that ran its prompt (its blocks stay cached), or in a step that fails
 * (they are forgotten).  The deferred one, in neither, joins and ends.
 */
static inline void
px_lost(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, const px_share_t *sh)
{
    int       rc;
    char      err[512];
    px_rig_t  r;

    px_open(&r, ops, conf, 1);
    px_submit(&r, 0, sh->p, 70, 10);
    px_submit(&r, 1, sh->p, 70, 10);
    fg_batch_step(r.batch, err, sizeof(err));
    fg_batch_cancel(r.batch, 0, 0, 1);
    rc = px_run(&r);

    ok(rc == 0 && r.out[0].finish == FG_FINISH_CANCEL
       && px_same(&r.out[1], &sh->p_ref) && r.out[1].n_cached == 64,
       "%s, the computer cancelled: the deferred one adopts its blocks "
       "(%u tokens) and gives the same tokens", be, r.out[1].n_cached);
    ok(r.bad == 0 && px_idle(&r), "%s, the computer cancelled: no "
       "reference left", be);

    px_close(&r);

    px_open(&r, ops, conf, 1);
    px_submit(&r, 0, sh->p, 70, 10);
    px_submit(&r, 1, sh->p, 70, 10);
    r.fail_next = 1;
    rc = fg_batch_step(r.batch, err, sizeof(err));

    ok(rc == -1 && r.n_seqs == 1 && r.out[0].finish == FG_FINISH_ERROR,
       "%s, the computer's step fails: it ends with an error, alone in "
       "the step", be);
    rc = px_run(&r);
    ok(rc == 0 && px_same(&r.out[1], &sh->p_ref)
       && r.out[1].n_cached == 0 && r.out[1].finish == FG_FINISH_LENGTH,
       "%s, the computer's step fails: the deferred one computes the "
       "prefix itself (%u tokens cached) and gives the same tokens", be,
       r.out[1].n_cached);
    ok(r.bad == 0 && px_idle(&r), "%s, the computer's step fails: no "
       "reference left", be);

    px_close(&r);
}


/*
 * Only full blocks count: with p's first 2 blocks cached, p's first 40
 * tokens and p join together in either order, though the one computes
 * block 2 that the other holds partly (its last, partial block).
 */
static inline void
px_partial(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, const px_share_t *sh)
{
    int       i, together, same;
    char      err[512];
    uint32_t  n[2];
    px_rig_t  r;

    together = 1;
    same = 1;

    for (i = 0; i < 2; i++) {
        n[i] = 40;
        n[1 - i] = 70;

        px_open(&r, ops, conf, 1);
        px_alone(&r, 0, sh->p, 33, 1);
        px_submit(&r, 1, sh->p, n[0], 10);
        px_submit(&r, 2, sh->p, n[1], 10);
        fg_batch_step(r.batch, err, sizeof(err));

        together &= r.n_seqs == 2 && r.pos[0] == 32 && r.pos[1] == 32;

        same &= px_run(&r) == 0 && r.bad == 0 && px_idle(&r)
                && px_same(&r.out[1], n[0] == 40 ? &sh->p40_ref : &sh->p_ref)
                && px_same(&r.out[2], n[1] == 40 ? &sh->p40_ref : &sh->p_ref);

        px_close(&r);
    }

    ok(together, "%s, a block that is another's partial last: both join "
       "in one step, at the 32 cached tokens", be);
    ok(same, "%s, a block that is another's partial last: the tokens of "
       "the cache off, no reference left", be);
}


/* in-batch sharing: a join waits for the blocks another is computing */
static inline void
px_share(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, uint32_t vocab)
{
    px_rig_t    r;
    px_share_t  sh;

    px_tokens(sh.p, 70, vocab, 20);
    px_tokens(sh.e, 30, vocab, 21);

    px_open(&r, ops, conf, 0);
    sh.p_ref = *px_alone(&r, 0, sh.p, 70, 10);
    sh.p40_ref = *px_alone(&r, 0, sh.p, 40, 10);
    sh.e_ref = *px_alone(&r, 0, sh.e, 30, 10);
    px_close(&r);

    px_together(be, ops, conf, &sh);
    px_lost(be, ops, conf, &sh);
    px_partial(be, ops, conf, &sh);
}


/* the suite: conf's pool large, its block_size 16, its budget >= 128 */
static inline void
px_suite(const char *be, const fg_backend_ops_t *ops,
    const fg_backend_conf_t *conf, uint32_t vocab)
{
    int        i;
    int32_t    a[48];
    px_rig_t   r;
    px_out_t   a_ref, ref[5];
    px_case_t  c[5];

    px_tokens(a, 48, vocab, 10);

    if (px_open(&r, ops, conf, 0) != 0) {
        ok(0, "%s: a rig", be);
        return;
    }

    a_ref = *px_alone(&r, 0, a, 48, 20);
    px_cases(c, a, &a_ref, vocab);

    for (i = 0; i < 5; i++) {
        ref[i] = *px_alone(&r, 1, c[i].tokens, c[i].n, 20);
    }

    px_close(&r);

    px_open(&r, ops, conf, 1);
    ok(px_same(px_alone(&r, 0, a, 48, 20), &a_ref), "%s: A alone, the "
       "cache on: the same tokens", be);

    for (i = 0; i < 5; i++) {
        px_case(&r, be, &c[i], &ref[i]);
    }

    ok(r.bad == 0 && px_idle(&r), "%s: no cached block written, no "
       "reference left", be);

    px_close(&r);

    px_pressure(be, ops, *conf, a);
    px_share(be, ops, conf, vocab);
}


/*
 * The suite's rig for a backend of weights (cpu, cuda): a pool of 64
 * blocks of 16, 8 sequences and 128 tokens a step; and a small GQA model
 * of type at path (64 wide, 2 blocks, 4 heads over 2 KV heads, 300
 * tokens), 0, or -1 with the test failed.
 */
static inline fg_backend_conf_t
px_conf(const char *path)
{
    fg_backend_conf_t  conf;

    fg_test_backend_conf(&conf, path, 64, 16, 8, 128, 0);

    return conf;
}


static inline int
px_model(uint32_t type, uint64_t seed, const char *path)
{
    char                err[512];
    fg_gguf_gen_conf_t  c;

    fg_test_gguf_shape(&c, type, 64, 2, 128, 4, 2);
    c.n_vocab = 300;
    c.seed = seed;

    if (fg_gguf_gen_file(&c, path, err, sizeof(err)) != 0) {
        ok(0, "generate %s: %s", path, err);
        return -1;
    }

    return 0;
}


#endif /* _FG_TEST_PREFIX_H_INCLUDED_ */
