
/*
 * fairgate: tests of the batcher over the sim backend: sequences join and
 * leave every step, chunked prefill keeps to the token budget, a request
 * samples the same tokens alone and in a batch, KV exhaustion makes
 * requests wait (and preempts) but every one completes with the tokens it
 * has alone, impossible requests are refused with a reason, and every
 * stop condition ends a sequence where it should.
 *
 * A recording backend wraps sim: it checks each step against the limits
 * and against the pool (no block in two sequences of a step, tables that
 * cover the positions) and keeps what each step ran.
 */


#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_rig.h"
#include "fg_batch.h"


#define VOCAB       1000
#define MAX_REQ     64
#define MAX_OUT     512
#define MAX_STEPS   4096


typedef struct {
    uint32_t    n_seqs;
    uint32_t    n_tokens;
    uint32_t    seq_tokens[64];
    uint32_t    seq_pos[64];
    uint8_t     seq_logits[64];
} step_rec_t;


typedef struct {
    int32_t     tokens[MAX_OUT];
    uint32_t    n;
    uint32_t    finish;
    uint32_t    events_after_finish;
    uint32_t    n_prompt;
    uint32_t    first_step;         /* the step that gave the first token */
    uint32_t    last_step;
} out_t;


static step_rec_t   steps[MAX_STEPS];
static uint32_t     n_steps;
static uint32_t     limit_batch;
static uint32_t     limit_tokens;
static uint32_t     kv_pool;
static int          bad_step;
static int          fail_next;
static out_t        outs[MAX_REQ];


static void
rec_reset(uint32_t max_batch, uint32_t max_tokens, uint32_t pool)
{
    n_steps = 0;
    limit_batch = max_batch;
    limit_tokens = max_tokens;
    kv_pool = pool;
    bad_step = 0;
    fail_next = 0;
    memset(outs, 0, sizeof(outs));
}


static int
rec_forward(fg_backend_t *b, const fg_backend_batch_t *batch, float *logits,
    char *err, size_t errlen)
{
    uint32_t     s, i, total;
    static int   owner[100000];
    step_rec_t  *r;

    if (fail_next) {
        fail_next = 0;
        snprintf(err, errlen, "injected failure");
        return -1;
    }

    total = 0;

    memset(owner, 0, kv_pool * sizeof(int));

    for (s = 0; s < batch->n_seqs; s++) {
        total += batch->seqs[s].n_tokens;

        for (i = 0; i < batch->seqs[s].n_blocks; i++) {
            if (owner[batch->seqs[s].block_table[i]] != 0) {
                diag("step %u: block %d in two sequences", n_steps,
                     batch->seqs[s].block_table[i]);
                bad_step++;
            }

            owner[batch->seqs[s].block_table[i]] = (int) s + 1;
        }
    }

    if (batch->n_seqs > limit_batch || total > limit_tokens) {
        diag("step %u: %u sequences, %u tokens", n_steps, batch->n_seqs,
             total);
        bad_step++;
    }

    if (n_steps < MAX_STEPS) {
        r = &steps[n_steps];
        r->n_seqs = batch->n_seqs;
        r->n_tokens = total;

        for (s = 0; s < batch->n_seqs && s < 64; s++) {
            r->seq_tokens[s] = batch->seqs[s].n_tokens;
            r->seq_pos[s] = batch->seqs[s].pos;
            r->seq_logits[s] = batch->seqs[s].want_logits;
        }
    }

    n_steps++;

    return fg_backend_sim.forward(b, batch, logits, err, errlen);
}


static fg_backend_ops_t  rec_ops;


static void
emit(void *ctx, const fg_batch_event_t *ev)
{
    out_t  *o;

    (void) ctx;

    if (ev->id >= MAX_REQ) {
        return;
    }

    o = &outs[ev->id];

    if (o->finish != FG_FINISH_NONE) {
        o->events_after_finish++;
        return;
    }

    if (ev->token >= 0 && o->n < MAX_OUT) {
        if (o->n == 0) {
            o->first_step = n_steps;
        }

        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
    o->n_prompt = ev->n_prompt;
    o->last_step = n_steps;
}


static int
rig_open(fg_test_rig_t *rig, uint32_t kv_blocks, uint32_t block_size,
    uint32_t max_batch, uint32_t max_tokens, uint32_t max_seqs,
    const int32_t *eog, uint32_t n_eog)
{
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    fg_test_backend_sim(&conf, kv_blocks, block_size, max_batch, max_tokens,
                        "linear:0.0002,0.0005", 1e9, VOCAB);

    rec_ops = fg_backend_sim;
    rec_ops.forward = rec_forward;
    rec_reset(max_batch, max_tokens, kv_blocks);

    fg_test_batch_conf(&bc, max_batch, max_tokens, max_seqs, emit, NULL);
    bc.eog = eog;
    bc.n_eog = n_eog;

    return fg_test_rig_open(rig, &rec_ops, &conf, &bc);
}


static int
submit(fg_test_rig_t *rig, uint64_t id, uint32_t n_prompt, uint32_t max_tokens,
    uint32_t salt)
{
    char            err[256];
    int32_t         prompt[4096];
    fg_batch_req_t  req;

    fg_test_prompt(prompt, n_prompt, salt, VOCAB);
    fg_test_batch_req(&req, id, prompt, n_prompt, max_tokens, 0);

    return fg_batch_submit(rig->batch, &req, err, sizeof(err));
}


/* steps until nothing is held; the number of steps, or -1 */
static int
run_all(fg_test_rig_t *rig)
{
    int   i, rc;
    char  err[256];

    for (i = 0; i < MAX_STEPS; i++) {
        rc = fg_batch_step(rig->batch, err, sizeof(err));

        if (rc < 0) {
            diag("step: %s", err);
            return -1;
        }

        if (rc == 0) {
            return i;
        }
    }

    return -1;
}


static int
same_tokens(const out_t *a, const out_t *b)
{
    return a->n == b->n
           && memcmp(a->tokens, b->tokens, a->n * sizeof(int32_t)) == 0;
}


static void
test_alone_and_batched(void)
{
    int       i, steps_run, all_same, differ;
    out_t     alone[6];
    fg_test_rig_t     rig;
    uint32_t  lens[6] = { 5, 40, 17, 1, 64, 23 };
    uint32_t  maxt[6] = { 20, 8, 33, 12, 5, 40 };

    /* each request by itself */
    for (i = 0; i < 6; i++) {
        rig_open(&rig, 256, 16, 8, 64, 64, NULL, 0);
        submit(&rig, (uint64_t) i, lens[i], maxt[i], (uint32_t) i);
        run_all(&rig);
        alone[i] = outs[i];
        fg_test_rig_close(&rig);
    }

    ok(alone[0].n == 20 && alone[0].finish == FG_FINISH_LENGTH,
       "a request alone gives its max_tokens tokens, then length");

    differ = 0;

    for (i = 1; i < 6; i++) {
        differ += memcmp(alone[0].tokens, alone[i].tokens,
                         5 * sizeof(int32_t)) != 0;
    }

    is_int(differ, 5, "other prompts give other tokens");

    /* all six in one batch of 4 with a budget of 16: chunks, joins */
    rig_open(&rig, 256, 16, 4, 16, 64, NULL, 0);

    for (i = 0; i < 6; i++) {
        submit(&rig, (uint64_t) i, lens[i], maxt[i], (uint32_t) i);
    }

    steps_run = run_all(&rig);
    ok(steps_run > 0, "the batch runs to the end in %d steps", steps_run);

    all_same = 1;

    for (i = 0; i < 6; i++) {
        if (!same_tokens(&outs[i], &alone[i])
            || outs[i].finish != FG_FINISH_LENGTH)
        {
            diag("request %d: %u tokens, finish %u", i, outs[i].n,
                 outs[i].finish);
            all_same = 0;
        }
    }

    ok(all_same, "every request gives in the batch the tokens it gives "
       "alone");
    is_int(bad_step, 0, "no step over 4 sequences or 16 tokens, no block in "
           "two sequences");
    is_int(fg_kv_free_blocks(rig.kv), 256, "every block free at the end");

    fg_test_rig_close(&rig);
}


static void
test_join_leave(void)
{
    int               ok_join, ok_full;
    char              err[256];
    fg_test_rig_t             rig;
    uint32_t          i, s;
    fg_batch_stats_t  st;

    /* 3 seats; requests of 2, 4, 6 ... tokens; 6 of them */
    rig_open(&rig, 256, 16, 3, 64, 64, NULL, 0);

    for (i = 0; i < 6; i++) {
        submit(&rig, i, 4, 2 + 2 * i, i);
    }

    ok_full = 1;

    /* while some wait, every step runs 3: a leaver's seat is refilled in
     * the very next step */
    for (s = 0; s < 200; s++) {
        fg_batch_stats(rig.batch, &st);

        if (st.running + st.waiting == 0) {
            break;
        }

        if (fg_batch_step(rig.batch, err, sizeof(err)) <= 0) {
            break;
        }

        if (st.waiting > 0 && steps[n_steps - 1].n_seqs != 3) {
            diag("step %u ran %u with %u waiting", n_steps - 1,
                 steps[n_steps - 1].n_seqs, st.waiting);
            ok_full = 0;
        }
    }

    ok(ok_full, "while requests wait, every step is full");

    ok(outs[0].last_step < outs[3].first_step
       && outs[3].first_step == outs[0].last_step + 1,
       "the fourth joins in the step after the first leaves (%u, %u)",
       outs[0].last_step, outs[3].first_step);

    /* a request submitted between steps runs in the next one */
    submit(&rig, 10, 3, 5, 10);
    submit(&rig, 11, 3, 50, 11);
    fg_batch_step(rig.batch, err, sizeof(err));
    is_int(outs[10].n, 1, "a request submitted while idle gives its first "
           "token in the next step");

    fg_batch_step(rig.batch, err, sizeof(err));
    submit(&rig, 12, 3, 5, 12);
    fg_batch_step(rig.batch, err, sizeof(err));
    ok_join = outs[12].n == 1 && outs[11].n == 3;
    ok(ok_join, "one submitted while others decode joins them at once");

    run_all(&rig);
    ok(outs[10].n == 5 && outs[11].n == 50 && outs[12].n == 5,
       "and each runs to its length");

    fg_test_rig_close(&rig);
}


static void
test_chunked_prefill(void)
{
    int       chunks_ok, decode_ok;
    char      err[256];
    fg_test_rig_t     rig;
    uint32_t  s, n0;

    /* budget 32: a decoder runs, then a 100-token prompt arrives */
    rig_open(&rig, 256, 16, 4, 32, 64, NULL, 0);

    submit(&rig, 0, 8, 30, 0);
    fg_batch_step(rig.batch, err, sizeof(err));
    fg_batch_step(rig.batch, err, sizeof(err));

    submit(&rig, 1, 100, 4, 1);
    n0 = n_steps;

    for (s = 0; s < 5; s++) {
        fg_batch_step(rig.batch, err, sizeof(err));
    }

    /* steps n0 .. n0+4: the decoder's 1 token first, then a chunk of 31,
     * 31, 31 and the last 7 with the logits */
    chunks_ok = steps[n0].n_seqs == 2 && steps[n0].seq_tokens[1] == 31
                && steps[n0 + 1].seq_tokens[1] == 31
                && steps[n0 + 2].seq_tokens[1] == 31
                && steps[n0 + 3].seq_tokens[1] == 7
                && steps[n0 + 3].seq_pos[1] == 93
                && !steps[n0 + 2].seq_logits[1]
                && steps[n0 + 3].seq_logits[1];

    ok(chunks_ok, "a 100-token prompt runs in chunks of 31, 31, 31, 7 "
       "beside a decode, logits at the last");

    decode_ok = 1;

    for (s = n0; s < n0 + 4; s++) {
        decode_ok &= steps[s].seq_tokens[0] == 1 && steps[s].seq_logits[0]
                     && steps[s].n_tokens <= 32;
    }

    ok(decode_ok, "the running decode gets its token in every step of the "
       "prefill");
    is_int(outs[1].n, 2, "the long prompt's first token comes at the end "
           "of its prefill");
    is_int(bad_step, 0, "no step over the budget");

    run_all(&rig);
    fg_test_rig_close(&rig);
}


static void
test_kv_exhaustion(void)
{
    int               all_same, i;
    out_t             alone[8];
    fg_test_rig_t             rig;
    fg_batch_stats_t  st;

    /* blocks of 4 positions; each request needs 10 + 14 - 1 positions: 6
     * blocks; a pool of 12 holds two at a time */
    for (i = 0; i < 8; i++) {
        rig_open(&rig, 64, 4, 8, 64, 64, NULL, 0);
        submit(&rig, (uint64_t) i, 10, 14, (uint32_t) i + 100);
        run_all(&rig);
        alone[i] = outs[i];
        fg_test_rig_close(&rig);
    }

    rig_open(&rig, 12, 4, 8, 64, 64, NULL, 0);

    for (i = 0; i < 8; i++) {
        is_int(submit(&rig, (uint64_t) i, 10, 14, (uint32_t) i + 100),
               FG_BATCH_OK, "request %d accepted beyond the pool", i);
    }

    ok(run_all(&rig) > 0, "all run to the end");

    all_same = 1;

    for (i = 0; i < 8; i++) {
        if (outs[i].finish != FG_FINISH_LENGTH
            || !same_tokens(&outs[i], &alone[i]))
        {
            diag("request %d: %u tokens, finish %u", i, outs[i].n,
                 outs[i].finish);
            all_same = 0;
        }
    }

    ok(all_same, "each of 8 completes with its own tokens in a pool for 2");

    fg_batch_stats(rig.batch, &st);
    ok(st.preemptions > 0, "decodes that found the pool empty preempted "
       "(%llu preemptions)", (unsigned long long) st.preemptions);
    is_int(bad_step, 0, "no block ever in two sequences");
    is_int(st.kv_free, 12, "the pool is whole again");
    is_int(st.finished, 8, "8 finished");

    fg_test_rig_close(&rig);

    /* FIFO: with room for one, they finish in submission order */
    rig_open(&rig, 6, 4, 8, 64, 64, NULL, 0);

    for (i = 0; i < 4; i++) {
        submit(&rig, (uint64_t) i, 10, 14, (uint32_t) i + 100);
    }

    run_all(&rig);
    ok(outs[0].last_step < outs[1].last_step
       && outs[1].last_step < outs[2].last_step
       && outs[2].last_step < outs[3].last_step
       && outs[3].n == 14, "a pool for one finishes them in submission "
       "order (steps %u %u %u %u)", outs[0].last_step, outs[1].last_step,
       outs[2].last_step, outs[3].last_step);

    fg_test_rig_close(&rig);
}


static void
test_refusals(void)
{
    char            err[256];
    int32_t         bad[3] = { 1, VOCAB, 2 };
    int32_t         stop[20];
    fg_test_rig_t           rig;
    fg_batch_req_t  req;

    rig_open(&rig, 8, 4, 2, 16, 3, NULL, 0);

    /* 8 blocks of 4: 32 positions; 20 + 13 - 1 = 32 fits, 33 does not */
    is_int(submit(&rig, 0, 20, 13, 0), FG_BATCH_OK,
           "a request that needs the whole pool is taken");
    is_int(submit(&rig, 1, 20, 14, 0), FG_BATCH_EKV,
           "one block more than the pool is refused");

    memset(&req, 0, sizeof(req));
    fg_sample_params_init(&req.sampling);
    req.id = 2;
    req.prompt = bad;
    req.n_prompt = 1;
    req.max_tokens = 5000;
    is_int(fg_batch_submit(rig.batch, &req, err, sizeof(err)),
           FG_BATCH_ECONTEXT, "beyond the context: %s", err);

    req.max_tokens = 4;
    req.n_prompt = 0;
    is_int(fg_batch_submit(rig.batch, &req, err, sizeof(err)),
           FG_BATCH_EINVAL, "an empty prompt: %s", err);

    req.n_prompt = 3;
    is_int(fg_batch_submit(rig.batch, &req, err, sizeof(err)),
           FG_BATCH_EINVAL, "a token outside the vocabulary: %s", err);

    req.n_prompt = 1;
    req.stop = stop;
    req.n_stop = 17;
    memset(stop, 0, sizeof(stop));
    is_int(fg_batch_submit(rig.batch, &req, err, sizeof(err)),
           FG_BATCH_EINVAL, "17 stop ids: %s", err);

    req.n_stop = 0;
    req.sampling.top_p = 2.0f;
    is_int(fg_batch_submit(rig.batch, &req, err, sizeof(err)),
           FG_BATCH_EINVAL, "bad sampling: %s", err);

    is_int(submit(&rig, 0, 4, 4, 0), FG_BATCH_EEXIST,
           "an id held already is refused");
    is_int(submit(&rig, 5, 4, 4, 0), FG_BATCH_OK, "a second");
    is_int(submit(&rig, 6, 4, 4, 0), FG_BATCH_OK, "a third");
    is_int(submit(&rig, 7, 4, 4, 0), FG_BATCH_EFULL,
           "beyond max_seqs: full, try later");

    run_all(&rig);
    ok(outs[0].n == 13 && outs[5].n == 4 && outs[6].n == 4,
       "the accepted ones complete");
    is_int(submit(&rig, 7, 4, 4, 0), FG_BATCH_OK,
           "once they are done there is room again");
    run_all(&rig);

    fg_test_rig_close(&rig);
}


static void
test_stops(void)
{
    char            err[256];
    int32_t         prompt[8], stop[2], eog[1];
    uint32_t        first, i;
    out_t           ref;
    fg_test_rig_t           rig;
    fg_batch_req_t  req;

    fg_test_prompt(prompt, 8, 42, VOCAB);

    memset(&req, 0, sizeof(req));
    fg_sample_params_init(&req.sampling);
    req.prompt = prompt;
    req.n_prompt = 8;
    req.max_tokens = 30;

    rig_open(&rig, 64, 16, 4, 64, 64, NULL, 0);
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    run_all(&rig);
    ref = outs[0];
    fg_test_rig_close(&rig);

    is_int(ref.n, 30, "max_tokens 30: 30 tokens");
    is_int(ref.finish, FG_FINISH_LENGTH, "finish: length");
    is_int(ref.events_after_finish, 0, "nothing after the last event");

    /* a stop id: the sequence ends at its first occurrence, on it */
    for (first = 0; first < ref.n; first++) {
        if (ref.tokens[first] == ref.tokens[9]) {
            break;
        }
    }

    stop[0] = 999;
    stop[1] = ref.tokens[9];
    req.stop = stop;
    req.n_stop = 2;

    rig_open(&rig, 64, 16, 4, 64, 64, NULL, 0);
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    run_all(&rig);
    ok(outs[0].finish == FG_FINISH_STOP && outs[0].n == first + 1
       && outs[0].tokens[first] == ref.tokens[9],
       "a stop id ends the sequence on it (token %u)", first);
    fg_test_rig_close(&rig);

    /* EOS (the conf's eog ids), and ignore_eos */
    req.n_stop = 0;
    eog[0] = ref.tokens[4];

    for (first = 0; first < ref.n; first++) {
        if (ref.tokens[first] == eog[0]) {
            break;
        }
    }

    rig_open(&rig, 64, 16, 4, 64, 64, eog, 1);
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    req.id = 1;
    req.ignore_eos = 1;
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    run_all(&rig);
    ok(outs[0].finish == FG_FINISH_STOP && outs[0].n == first + 1,
       "EOS ends the sequence on it");
    ok(outs[1].finish == FG_FINISH_LENGTH && outs[1].n == 30
       && same_tokens(&outs[1], &ref), "ignore_eos runs on to max_tokens");
    fg_test_rig_close(&rig);

    /* no max_tokens: up to the context (4096 for sim without a model) */
    rig_open(&rig, 300, 16, 4, 512, 64, NULL, 0);
    submit(&rig, 0, 4090, 0, 3);
    run_all(&rig);
    ok(outs[0].finish == FG_FINISH_CONTEXT && outs[0].n == 6,
       "without max_tokens a sequence ends at the context's end (%u "
       "tokens, %s)", outs[0].n, fg_finish_name(outs[0].finish));

    is_int(submit(&rig, 1, 4096, 0, 3), FG_BATCH_ECONTEXT,
           "a prompt that fills the context leaves no room for a token");
    fg_test_rig_close(&rig);

    /* seeded sampling: the same tokens alone and in a batch */
    req.ignore_eos = 0;
    req.id = 0;
    req.sampling.temperature = 1.0f;
    req.sampling.seed = 77;

    rig_open(&rig, 64, 16, 4, 64, 64, NULL, 0);
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    run_all(&rig);
    ref = outs[0];
    fg_test_rig_close(&rig);

    rig_open(&rig, 64, 16, 4, 64, 64, NULL, 0);

    for (i = 1; i < 4; i++) {
        submit(&rig, i, 5 + i, 12, i);
    }

    fg_batch_step(rig.batch, err, sizeof(err));
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    req.id = 4;
    req.sampling.seed = 78;
    fg_batch_submit(rig.batch, &req, err, sizeof(err));
    run_all(&rig);
    ok(same_tokens(&outs[0], &ref), "a seeded sample repeats in a batch");
    ok(!same_tokens(&outs[4], &ref), "another seed samples other tokens");
    fg_test_rig_close(&rig);
}


static void
test_cancel_and_errors(void)
{
    char              err[256];
    fg_test_rig_t             rig;
    uint32_t          i;
    fg_batch_stats_t  st;

    rig_open(&rig, 32, 4, 2, 16, 64, NULL, 0);

    for (i = 0; i < 4; i++) {
        submit(&rig, i, 6, 20, i);
    }

    /* request 2 of owner 1 */
    fg_batch_step(rig.batch, err, sizeof(err));
    fg_batch_step(rig.batch, err, sizeof(err));

    fg_batch_stats(rig.batch, &st);
    is_int(st.running, 2, "two running");

    is_int(fg_batch_cancel(rig.batch, 0, 0, 1), 0, "cancel a running one");
    ok(outs[0].finish == FG_FINISH_CANCEL && outs[0].n == 2,
       "its last event says cancel, after its 2 tokens");
    is_int(fg_batch_cancel(rig.batch, 0, 3, 1), 0, "cancel a waiting one");
    is_int(outs[3].n, 0, "it never produced a token");
    is_int(fg_batch_cancel(rig.batch, 0, 3, 1), -1,
           "cancelling it again finds nothing");
    is_int(fg_batch_cancel(rig.batch, 7, 1, 1), -1,
           "another owner's id is not found");

    fg_batch_stats(rig.batch, &st);
    ok(st.running == 1 && st.waiting == 1 && st.kv_free == 32 - 2,
       "the cancelled one's blocks are free at once (%u free)", st.kv_free);

    is_int(fg_batch_cancel_owner(rig.batch, 0, 1), 2,
           "cancel the owner's other two");
    fg_batch_stats(rig.batch, &st);
    ok(st.running == 0 && st.waiting == 0 && st.kv_free == 32,
       "nothing held, the pool whole");

    /* a failing step ends its sequences with error, not the waiting ones */
    memset(outs, 0, sizeof(outs));
    submit(&rig, 0, 6, 20, 0);
    submit(&rig, 1, 6, 20, 1);
    submit(&rig, 2, 6, 20, 2);
    fail_next = 1;
    is_int(fg_batch_step(rig.batch, err, sizeof(err)), -1,
           "a backend failure fails the step: %s", err);
    ok(outs[0].finish == FG_FINISH_ERROR && outs[1].finish == FG_FINISH_ERROR
       && outs[2].finish == FG_FINISH_NONE,
       "the step's sequences end with error; the waiting one goes on");
    run_all(&rig);
    ok(outs[2].finish == FG_FINISH_LENGTH && outs[2].n == 20,
       "and completes");

    fg_batch_stats(rig.batch, &st);
    is_int(st.kv_free, 32, "the pool is whole");

    fg_test_rig_close(&rig);
}


/* the sim backend's logits never let sampling pick a held-back token */
/*
 * A batcher limited to a small share of its arena (a model of several in
 * one engine) still admits a join beside a running sequence: the reserve
 * left for decodes is a share of its limit, not of the arena.
 */
static void
test_join_under_limit(void)
{
    char              err[256];
    fg_test_rig_t             rig;
    fg_batch_stats_t  st;

    rig_open(&rig, 4096, 16, 8, 256, 64, NULL, 0);
    fg_kv_set_limit(rig.kv, 40);

    submit(&rig, 0, 30, 40, 1);
    fg_batch_step(rig.batch, err, sizeof(err));
    submit(&rig, 1, 30, 40, 2);
    fg_batch_step(rig.batch, err, sizeof(err));

    fg_batch_stats(rig.batch, &st);
    is_int(st.running, 2, "a second request joins a running one within a "
           "limit of 1%% of the arena");

    ok(run_all(&rig) > 0 && outs[0].n == 40 && outs[1].n == 40,
       "both end with their 40 tokens");

    fg_test_rig_close(&rig);
}


static void
test_sim_held_back(void)
{
    char                err[256];
    float              *logits;
    int32_t             tokens[4] = { 5, 6, 7, 8 }, table[1] = { 0 };
    uint32_t            i, never, low;
    fg_backend_t       *b;
    fg_backend_seq_t    seq;
    fg_backend_conf_t   conf;
    fg_backend_batch_t  batch;

    fg_test_backend_sim(&conf, 4, 16, 1, 16,
                        "linear:0.0002,0.0005", 1e9, VOCAB);

    b = fg_backend_sim.create(&conf, err, sizeof(err));
    logits = malloc(VOCAB * sizeof(float));

    if (!ok(b != NULL && logits != NULL, "the sim backend is made")) {
        diag("%s", err);
        return;
    }

    memset(&seq, 0, sizeof(seq));
    seq.tokens = tokens;
    seq.n_tokens = 4;
    seq.block_table = table;
    seq.n_blocks = 1;
    seq.want_logits = 1;
    batch.seqs = &seq;
    batch.n_seqs = 1;

    ok(fg_backend_sim.forward(b, &batch, logits, err, sizeof(err)) == 0,
       "a step");

    never = 0;
    low = 0;

    for (i = 0; i < VOCAB; i++) {
        never += (i < 3 && logits[i] < -1e29f);
        low += (i >= 3 && logits[i] >= -8.0f);
    }

    is_int(never, 3, "unk, bos and eos can never be sampled");
    is_int(low, VOCAB - 3, "every other token can, at -8 or above");

    free(logits);
    fg_backend_sim.destroy(b);
}


int
main(void)
{
    test_alone_and_batched();
    test_join_leave();
    test_chunked_prefill();
    test_kv_exhaustion();
    test_refusals();
    test_stops();
    test_cancel_and_errors();
    test_join_under_limit();
    test_sim_held_back();

    return done_testing();
}
