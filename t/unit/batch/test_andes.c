
/*
 * fairgate: Andes's QoE scheduler (--sched andes) over the sim backend,
 * on a clock the test drives (DT a step), so that every run is the same.
 * Checked: the estimate (nothing to gain far ahead of the reader, the
 * most when it is about to stall); the cap on preemptions per decision,
 * alone and in the batcher (ten running, ten urgent arriving);
 * under KV pressure, a running sequence far ahead of its reader is
 * preempted for one about to stall, where fcfs would preempt the
 * youngest, and a waiting request about to miss its TTFT target comes in
 * before those far ahead finish; output resumed after an andes preemption
 * is the output alone, token for token (greedy); without pressure, fcfs
 * and andes run the same steps; under a stream of urgent arrivals an old
 * slow reader's request never keeps its reader waiting.
 */


#include "fg_tap.h"
#include "fg_test_backend.h"
#include "fg_test_batch.h"
#include "fg_test_rig.h"
#include "fg_batch.h"
#include "fg_sched_andes.h"


#define VOCAB       1000
#define MAX_REQ     32
#define MAX_OUT     256
#define MAX_STEPS   20000
#define DT          0.05
#define BLOCK       16


typedef struct {
    int32_t     tokens[MAX_OUT];
    uint32_t    step[MAX_OUT];      /* the step that gave each token */
    uint32_t    n;
    uint32_t    finish;
} out_t;


typedef struct {
    uint32_t    n_seqs;
    uint32_t    n_tokens;
} step_rec_t;


static double        now_s;
static uint32_t      n_steps;
static out_t         outs[MAX_REQ];
static step_rec_t    recs[MAX_STEPS];
static fg_backend_ops_t  rec_ops;


static double
clock_fn(void *ctx)
{
    (void) ctx;

    return now_s;
}


static int
rec_forward(fg_backend_t *b, const fg_backend_batch_t *batch, float *logits,
    char *err, size_t errlen)
{
    uint32_t  i, total;

    total = 0;

    for (i = 0; i < batch->n_seqs; i++) {
        total += batch->seqs[i].n_tokens;
    }

    if (n_steps < MAX_STEPS) {
        recs[n_steps].n_seqs = batch->n_seqs;
        recs[n_steps].n_tokens = total;
    }

    return fg_backend_sim.forward(b, batch, logits, err, errlen);
}


static void
emit(void *ctx, const fg_batch_event_t *ev)
{
    out_t  *o;

    (void) ctx;

    if (ev->id >= MAX_REQ) {
        return;
    }

    o = &outs[ev->id];

    if (ev->token >= 0 && o->n < MAX_OUT) {
        o->step[o->n] = n_steps;
        o->tokens[o->n++] = ev->token;
    }

    o->finish = ev->finish;
}


static int
rig_open(fg_test_rig_t *rig, uint32_t kv_blocks, uint32_t max_batch,
    uint32_t sched, uint32_t max_preempt)
{
    fg_batch_conf_t    bc;
    fg_backend_conf_t  conf;

    fg_test_backend_sim(&conf, kv_blocks, BLOCK, max_batch, 256,
                        "linear:0.0002,0.0005", 1e9, VOCAB);

    rec_ops = fg_backend_sim;
    rec_ops.forward = rec_forward;

    fg_test_batch_conf(&bc, max_batch, 256, MAX_REQ, emit, NULL);
    bc.sched = sched;
    bc.andes_max_preempt = max_preempt;
    bc.clock = clock_fn;

    if (fg_test_rig_open(rig, &rec_ops, &conf, &bc) != 0) {
        return -1;
    }

    now_s = 100.0;
    n_steps = 0;
    memset(outs, 0, sizeof(outs));

    return 0;
}


static int
submit(fg_test_rig_t *rig, uint64_t id, uint32_t n_prompt, uint32_t max_tokens,
    float ttft, float speed)
{
    char            err[256];
    int32_t         prompt[1024];
    fg_batch_req_t  req;

    fg_test_prompt(prompt, n_prompt, (uint32_t) id, VOCAB);
    fg_test_batch_req(&req, id, prompt, n_prompt, max_tokens, 0);
    req.ttft = ttft;
    req.speed = speed;

    return fg_batch_submit(rig->batch, &req, err, sizeof(err));
}


static uint32_t  over_cap;         /* decisions that preempted more */
static uint32_t  most;             /* the most preempted by one */


/* n steps (fewer when nothing is held), the clock DT a step; checks each
 * decision's preemptions against the cap, 0.3 of those running */
static void
run(fg_test_rig_t *rig, uint32_t n)
{
    char              err[256];
    uint32_t          i, cap, k;
    fg_batch_stats_t  st;

    for (i = 0; i < n && fg_batch_held(rig->batch); i++) {
        fg_batch_stats(rig->batch, &st);
        cap = (uint32_t) (0.3 * st.running);
        cap = cap ? cap : 1;
        k = (uint32_t) st.andes_preemptions;

        fg_batch_step(rig->batch, err, sizeof(err));
        n_steps++;
        now_s += DT;

        fg_batch_stats(rig->batch, &st);
        k = (uint32_t) st.andes_preemptions - k;
        over_cap += k > cap;
        most = k > most ? k : most;
    }
}


/* the longest run of steps without a token, once it had its first */
static uint32_t
max_gap(const out_t *o)
{
    uint32_t  i, gap;

    gap = 0;

    for (i = 1; i < o->n; i++) {
        if (o->step[i] - o->step[i - 1] > gap) {
            gap = o->step[i] - o->step[i - 1];
        }
    }

    return gap;
}


/* ---- the estimate and the decision alone ---- */

static void
test_gain(void)
{
    fg_andes_conf_t  cf;
    fg_andes_cand_t  c;

    memset(&cf, 0, sizeof(cf));
    cf.now = 10.0;
    cf.horizon = 2.0;
    cf.step_s = 0.05;

    memset(&c, 0, sizeof(c));
    c.speed = 5.0;
    c.ready = 10.05;
    c.first = 9.0;
    c.dry = 13.0;
    ok(fg_andes_gain(&cf, &c) == 0.0, "a reader with 3 s of tokens to "
       "read: nothing to gain within 2 s");

    /* its first token was due at 9: 22.5 token-seconds of reading are
     * expected by the horizon's end, 10 of them within it */
    c.dry = 10.0;
    ok(fg_andes_gain(&cf, &c) > 0.4 && fg_andes_gain(&cf, &c) < 10.0 / 22.5,
       "a reader about to stall: nearly v H^2 / 2 = 10 of the 22.5 "
       "token-seconds expected by then to gain (%g)",
       fg_andes_gain(&cf, &c));

    c.dry = 11.0;
    ok(fg_andes_gain(&cf, &c) < fg_andes_gain(&cf, &(fg_andes_cand_t) {
           .speed = 5.0, .ready = 10.05, .dry = 10.0, .first = 9.0 }),
       "one with a second of tokens ahead gains less");

    c.dry = 10.0;
    c.first = 0.0;
    ok(fg_andes_gain(&cf, &c) < 0.1, "the same stall of a stream due 10 s "
       "before: a smaller share of what it expected (%g)",
       fg_andes_gain(&cf, &c));
    c.first = 9.0;

    c.dry = 10.0;
    c.ready = 12.5;
    ok(fg_andes_gain(&cf, &c) == 0.0, "served only after the horizon: "
       "nothing to gain");
}


static void
test_cap(void)
{
    uint32_t          i, k, marked, kept;
    fg_andes_conf_t   cf;
    fg_andes_cand_t   c[20], *order[20];

    memset(&cf, 0, sizeof(cf));
    cf.now = 10.0;
    cf.horizon = 2.0;
    cf.step_s = 0.05;
    cf.cap = 0.3;
    cf.pool = 100;
    cf.seats = 20;

    memset(c, 0, sizeof(c));

    /* 10 running far ahead fill the pool, 10 waiting about to stall */
    for (i = 0; i < 20; i++) {
        c[i].running = i < 10;
        c[i].dry = i < 10 ? 30.0 : 10.0;
        c[i].speed = 5.0;
        c[i].ready = 10.1;
        c[i].blocks = 10;
        c[i].order = i;
    }

    k = fg_andes_decide(&cf, c, 20, order);
    marked = 0;
    kept = 0;

    for (i = 0; i < 20; i++) {
        marked += c[i].preempt;
        kept += c[i].keep && c[i].running;
    }

    is_int(k, 3, "all 10 running lose, 0.3 of them are preempted");
    is_int(marked, 3, "three marked");
    is_int(kept, 7, "the other seven stay");
    ok(!order[0]->running && order[0]->value > 0.0,
       "the best is one waiting about to stall");

    for (i = 10; i < 20; i++) {
        c[i].dry = 40.0;
    }

    k = fg_andes_decide(&cf, c, 20, order);
    is_int(k, 0, "nobody waiting gains: nothing preempted");
}


/* ---- the batcher ---- */

/*
 * A (older, a slow reader far ahead of it) and B (a fast reader, at the
 * edge) fill the pool with C behind them (urgent, short TTFT): fcfs
 * preempts the youngest as decodes run out of blocks; andes preempts A.
 */
static uint32_t
scenario(fg_test_rig_t *rig)
{
    fg_batch_stats_t  st;

    submit(rig, 1, 200, 100, 5.0f, 0.5f);       /* A: 13 -> 19 blocks */
    submit(rig, 2, 200, 100, 0.2f, 20.0f);      /* B: one a step */
    run(rig, 30);
    submit(rig, 3, 150, 40, 0.1f, 20.0f);       /* C: 10 blocks */
    run(rig, MAX_STEPS);

    fg_batch_stats(rig->batch, &st);

    return (uint32_t) st.andes_decisions;
}


static void
test_pressure(void)
{
    fg_test_rig_t             rig;
    out_t             alone[4], fc[4];
    uint32_t          id, decisions;

    /* each alone, in a pool that holds it: the reference */
    for (id = 1; id <= 3; id++) {
        if (rig_open(&rig, 200, 8, FG_SCHED_FCFS, 0) != 0) {
            return;
        }

        submit(&rig, id, id == 3 ? 150 : 200, id == 3 ? 40 : 100, 1.0f,
               5.0f);
        run(&rig, MAX_STEPS);
        alone[id] = outs[id];
        fg_test_rig_close(&rig);
    }

    if (rig_open(&rig, 36, 8, FG_SCHED_FCFS, 0) != 0) {
        return;
    }

    scenario(&rig);
    memcpy(fc, outs, sizeof(fc));
    fg_test_rig_close(&rig);

    if (rig_open(&rig, 36, 8, FG_SCHED_ANDES, 0) != 0) {
        return;
    }

    decisions = scenario(&rig);

    ok(decisions > 0, "andes decided under pressure (%u steps)", decisions);

    for (id = 1; id <= 3; id++) {
        ok(outs[id].n == alone[id].n
           && memcmp(outs[id].tokens, alone[id].tokens,
                     alone[id].n * sizeof(int32_t)) == 0,
           "request %u: %u tokens, the same as alone, token for token",
           id, outs[id].n);
    }

    ok(max_gap(&outs[1]) > 1, "andes preempted A, far ahead of its reader "
       "(a gap of %u steps)", max_gap(&outs[1]));
    ok(max_gap(&outs[2]) <= 2, "and kept B, about to stall, going (gap %u; "
       "under fcfs %u)", max_gap(&outs[2]), max_gap(&fc[2]));
    ok(outs[3].step[0] < fc[3].step[0], "C, about to miss its TTFT, has "
       "its first token at step %u, under fcfs at %u", outs[3].step[0],
       fc[3].step[0]);

    fg_test_rig_close(&rig);
}


/*
 * Ten slow readers far ahead fill the pool; ten urgent requests come at
 * once: andes preempts, never more than 0.3 of those running a step.
 */
static void
test_cap_batch(void)
{
    fg_test_rig_t             rig;
    uint32_t          id;
    fg_batch_stats_t  st;

    if (rig_open(&rig, 64, 20, FG_SCHED_ANDES, 0) != 0) {
        return;
    }

    over_cap = 0;
    most = 0;

    for (id = 0; id < 10; id++) {
        submit(&rig, id, 70, 40, 1.0f, 0.5f);
    }

    run(&rig, 12);

    for (id = 10; id < 20; id++) {
        submit(&rig, id, 40, 20, 0.1f, 20.0f);
    }

    run(&rig, MAX_STEPS);
    fg_batch_stats(rig.batch, &st);

    ok(st.andes_preemptions >= 3 && most >= 2, "andes preempted %llu "
       "times, at most %u in one decision",
       (unsigned long long) st.andes_preemptions, most);
    is_int(over_cap, 0, "no decision preempted more than 0.3 of those "
           "running");
    fg_test_rig_close(&rig);
}


/* the same load, under both, with a pool that holds it all */
static void
test_no_pressure(void)
{
    fg_test_rig_t       rig;
    uint32_t    id, n[2], s;
    step_rec_t  fc[512];
    uint64_t    decisions;
    fg_batch_stats_t  st;

    for (s = 0; s < 2; s++) {
        if (rig_open(&rig, 400, 4, s ? FG_SCHED_ANDES : FG_SCHED_FCFS, 0)
            != 0)
        {
            return;
        }

        for (id = 1; id <= 8; id++) {
            submit(&rig, id, 20 + id * 17, 10 + id * 3, 0.1f * id,
                   1.0f + id);

            run(&rig, 3);
        }

        run(&rig, MAX_STEPS);
        n[s] = n_steps;

        if (s == 0) {
            memcpy(fc, recs, sizeof(fc));
        }

        fg_batch_stats(rig.batch, &st);
        decisions = st.andes_decisions;
        fg_test_rig_close(&rig);
    }

    ok(n[0] == n[1] && n[0] < 512
       && memcmp(fc, recs, n[0] * sizeof(step_rec_t)) == 0,
       "no pressure: andes runs fcfs's %u steps, the same sequences and "
       "tokens in each (%u steps)", n[0], n[1]);
    is_int(decisions, 0, "and never decided");
}


/*
 * An old request of a slow reader (0.2 tokens/s, TTFT 1 s: token i wanted
 * at 1 + 5 i s, step 20 + 100 i) and urgent ones arriving all along: far
 * ahead of its reader it may wait, preempted (once at most: pinned
 * after), but it is resumed when its reader needs it, and never keeps it
 * waiting.
 */
static void
test_no_starving(void)
{
    fg_test_rig_t     rig;
    uint32_t  i, done, late;

    if (rig_open(&rig, 30, 8, FG_SCHED_ANDES, 1) != 0) {
        return;
    }

    submit(&rig, 0, 120, 60, 1.0f, 0.2f);
    run(&rig, 5);

    for (i = 1; i < MAX_REQ; i++) {
        submit(&rig, i, 120, 30, 0.1f, 20.0f);
        run(&rig, 4);
    }

    run(&rig, MAX_STEPS);

    done = 0;

    for (i = 0; i < MAX_REQ; i++) {
        done += outs[i].finish == FG_FINISH_LENGTH;
    }

    late = 0;

    for (i = 0; i < outs[0].n; i++) {
        late += outs[0].step[i] > 20 + 100 * i;
    }

    is_int(done, MAX_REQ, "every request ends");
    ok(outs[0].n == 60 && late == 0, "the old slow reader's 60 tokens each "
       "come before its reader wants them (%u late)", late);
    fg_test_rig_close(&rig);
}


int
main(void)
{
    test_gain();
    test_cap();
    test_pressure();
    test_cap_batch();
    test_no_pressure();
    test_no_starving();

    return fg_tap_done();
}
