
/*
 * fairgate: tests of the simulated engine's --engine-sched andes
 * (fg_sim_andes.c), timelines worked by hand with the linear step model:
 * without pressure it is fcfs; under pressure a request about to stall
 * is served before one far ahead of its reader, which is preempted and
 * later recomputes its input and generated tokens at prefill's cost; the
 * cap on preemptions a decision holds.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_sim.h"
#include "fg_sched_andes.h"


#define EPS      1e-9
#define NREQ     32


typedef struct {
    double    token[NREQ][1024];       /* each request's token times */
    uint32_t  tokens[NREQ];
    double    preempt_at[NREQ * 4];
    uint32_t  npreempt;
} watch_t;


static void
hook(const fg_sim_event_t *ev, void *data)
{
    watch_t  *w = data;

    if (ev->id >= NREQ) {
        return;
    }

    if (ev->type == FG_SIM_EV_TOKEN && w->tokens[ev->id] < 1024) {
        w->token[ev->id][w->tokens[ev->id]++] = ev->time;

    } else if (ev->type == FG_SIM_EV_PREEMPT && w->npreempt < NREQ * 4) {
        w->preempt_at[w->npreempt++] = ev->time;
    }
}


static int
run(fg_sim_conf_t *conf, const fg_sim_trace_t *tr, fg_sim_result_t *res,
    watch_t *w)
{
    char  err[256];

    memset(w, 0, sizeof(watch_t));
    memset(res, 0, tr->n * sizeof(fg_sim_result_t));
    conf->hook = hook;
    conf->hook_data = w;

    if (fg_sim_run(conf, tr, res, err, sizeof(err)) != 0) {
        diag("%s", err);
        return -1;
    }

    return 0;
}


static void
add(fg_sim_trace_t *tr, double t, uint32_t in, uint32_t out, double ttft,
    double speed)
{
    size_t  i;

    i = tr->n;
    (void) fg_sim_trace_add(tr, t, 0, in, out, out);
    fg_test_sim_expect(tr, i, ttft, speed);
}


/* test_sim_qoe's timeline: room for all, so no decision is taken */
static void
test_no_pressure(void)
{
    size_t           i;
    int              same;
    watch_t          w;
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  fcfs[3], andes[3];

    fg_test_sim_conf(&conf, "linear:0.01,0.1", 1000);

    fg_test_sim_trace(&tr, "a", NULL);
    add(&tr, 0.0, 10, 30, 1.0, 1.0);
    add(&tr, 0.5, 10, 5, 1.0, 10.0);
    add(&tr, 0.6, 10, 20, 0.5, 2.0);

    if (run(&conf, &tr, fcfs, &w) == 0) {
        conf.engine_sched = FG_SIM_SCHED_ANDES;

        if (run(&conf, &tr, andes, &w) == 0) {
            same = 1;

            for (i = 0; i < 3; i++) {
                same &= andes[i].first_token == fcfs[i].first_token
                        && andes[i].finish == fcfs[i].finish
                        && andes[i].qoe == fcfs[i].qoe
                        && andes[i].has_preemptions
                        && andes[i].preemptions == 0
                        && !fcfs[i].has_preemptions;
            }

            ok(same, "without pressure andes is fcfs, no preemption");
        }
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


/* the results file keeps each request's preemptions */
static void
roundtrip(const fg_sim_trace_t *tr, const fg_sim_result_t *res)
{
    char              err[256], out[256];
    fg_sim_trace_t    back;
    fg_sim_result_t  *got;

    snprintf(out, sizeof(out), "%s", file("res.jsonl", ""));
    fg_sim_trace_init(&back);
    got = NULL;

    ok(fg_sim_results_write(tr, res, out, err, sizeof(err)) == 0
       && fg_sim_results_read(&back, &got, out, err, sizeof(err)) == 0
       && got[0].has_preemptions && got[0].preemptions == 1
       && got[1].has_preemptions && got[1].preemptions == 0,
       "\"preemptions\" written and read back");

    free(got);
    fg_sim_trace_free(&back);
}


/* the preemption tests' setting: linear:0.001,0.1, 960 tokens (60
 * blocks), a merge every step, the scheduler sched; client a's trace */
static void
setting(fg_sim_conf_t *conf, fg_sim_trace_t *tr, uint32_t sched)
{
    fg_test_sim_conf(conf, "linear:0.001,0.1", 960);
    conf->merge_every = 1;
    conf->engine_sched = sched;
    fg_test_sim_trace(tr, "a", NULL);
}


/*
 * linear:0.001,0.1, 960 tokens (60 blocks), a merge every step.  A at 0
 * (160 in, 640 out, 50 blocks) for a reader of 1 token/s: its tokens at
 * 0.16 + 0.1 (k - 1).  C at 1.0 (96 in, 160 out, 16 blocks), read at 10
 * tokens/s, does not fit beside it.
 *
 * fcfs: C waits for A's end at 64.06; its first token at 64.156.
 * andes, at 1.06: A has 10 tokens, its reader wants the next at 11, far
 * beyond the horizon; C's at 2: A is preempted, C runs, its tokens at
 * 1.156 + 0.1 (k - 1) to 17.056.  A's recompute would delay C's reader,
 * 0.944 s behind its tokens, by more than it gains A (0.17 s x 10.56 >
 * 1.674): A waits for C's end, then prefills 160 + 10 tokens, 0.17 s, for
 * its 11th token at 17.226, and ends at 17.226 + 62.9.
 */
static void
test_preempt(void)
{
    watch_t          w;
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[2];

    setting(&conf, &tr, FG_SIM_SCHED_FCFS);
    add(&tr, 0.0, 160, 640, 1.0, 1.0);
    add(&tr, 1.0, 96, 160, 1.0, 10.0);

    if (run(&conf, &tr, res, &w) == 0) {
        is_num(res[0].finish, 64.06, EPS, "fcfs: A ends at 64.06");
        is_num(res[1].first_token, 64.156, EPS, "fcfs: C waits for it");
    }

    conf.engine_sched = FG_SIM_SCHED_ANDES;

    if (run(&conf, &tr, res, &w) == 0) {
        is_num(res[1].first_token, 1.156, EPS,
               "andes: C's first token at once, 1.156");
        is_num(res[1].finish, 17.056, EPS, "C streams alone to 17.056");
        ok(res[0].preemptions == 1 && res[1].preemptions == 0
           && w.npreempt == 1 && fabs(w.preempt_at[0] - 1.06) < EPS,
           "A, far ahead of its reader, preempted once at 1.06");
        ok(w.tokens[0] == 640 && res[0].status == FG_SIM_OK,
           "A yields its 640 tokens, no more, no less");
        is_num(res[0].first_token, 0.16, EPS,
               "A's first token stays its first");
        is_num(w.token[0][9], 1.06, EPS, "A's 10th token before it");
        is_num(w.token[0][10], 17.056 + 0.17, EPS,
               "its 11th after recomputing 170 tokens: 0.17 s");
        is_num(res[0].finish, 17.226 + 62.9, EPS, "A ends at 80.126");
        ok(res[0].qoe < 1.0 && res[1].qoe == 1.0,
           "A's reader stalls, C's never");
        roundtrip(&tr, res);
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


/*
 * Of two running, the one about to stall stays: A (50 blocks) read at 1
 * token/s, B (4 blocks) at 10, both at 0; their tokens each 0.2 s from
 * 0.176.  C at 1.0 (16 blocks) does not fit: at 1.176 B's reader wants
 * its 7th token at 1.6, A's at 7; A goes.
 */
static void
test_who(void)
{
    watch_t          w;
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[3];

    setting(&conf, &tr, FG_SIM_SCHED_ANDES);
    add(&tr, 0.0, 160, 640, 1.0, 1.0);
    add(&tr, 0.0, 16, 48, 1.0, 10.0);
    add(&tr, 1.0, 96, 160, 1.0, 10.0);

    if (run(&conf, &tr, res, &w) == 0) {
        ok(res[0].preemptions >= 1 && res[1].preemptions == 0
           && res[2].preemptions == 0,
           "the reader far ahead is preempted, the one about to stall not");
        ok(w.npreempt >= 1 && fabs(w.preempt_at[0] - 1.176) < EPS,
           "at the first decision after C came, 1.176");
        ok(w.tokens[0] == 640 && w.tokens[1] == 48 && w.tokens[2] == 160,
           "every request yields its tokens");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


/*
 * The cap: ten running readers at 1 token/s fill the pool (6 blocks
 * each); ten at 10 tokens/s come at 1.0 and would take all of it.  Each
 * decision preempts at most 0.3 of those running: 3.
 */
static void
test_cap(void)
{
    size_t           i, j, most, same;
    uint32_t         all;
    watch_t          w;
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[20];

    setting(&conf, &tr, FG_SIM_SCHED_ANDES);

    for (i = 0; i < 10; i++) {
        add(&tr, 0.0, 16, 80, 1.0, 1.0);
    }

    for (i = 0; i < 10; i++) {
        add(&tr, 1.0, 16, 80, 1.0, 10.0);
    }

    if (run(&conf, &tr, res, &w) == 0) {
        most = 0;

        for (i = 0; i < w.npreempt; i = j) {
            for (j = i; j < w.npreempt
                        && w.preempt_at[j] == w.preempt_at[i]; j++)
            {
                /* void */
            }

            same = j - i;
            most = same > most ? same : most;
        }

        ok(w.npreempt > 0 && most == (size_t) (FG_ANDES_CAP * 10),
           "3 of 10 preempted at a decision, no more (%zu)", most);

        all = 0;

        for (i = 0; i < 20; i++) {
            all += w.tokens[i] == 80 && res[i].status == FG_SIM_OK;
        }

        ok(all == 20, "all twenty end with their 80 tokens");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


int
main(void)
{
    test_no_pressure();
    test_preempt();
    test_who();
    test_cap();

    return done_testing();
}
