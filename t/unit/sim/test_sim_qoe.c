
/*
 * fairgate: tests of QoE in the simulator: the trace's expectations read
 * and written, each request's QoE from its simulated token times worked by
 * hand, the results' "qoe" round trip, analyze's figures, and the
 * cyclic-burst suite.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_test_sim.h"
#include "fg_sim_gen.h"
#include "fg_sim_metrics.h"


#define EPS  1e-9


static void
test_trace_fields(void)
{
    char             err[256], out[256];
    fg_sim_trace_t   tr, back;

    fg_sim_trace_init(&tr);
    ok(fg_sim_trace_read(&tr, file("t.jsonl",
           "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
           "\"output_tokens\": 1, \"ttft_target\": 0.5, "
           "\"tokens_per_s\": 3.25}\n"
           "{\"t\": 1, \"client\": \"a\", \"input_tokens\": 1, "
           "\"output_tokens\": 1}\n"), err, sizeof(err)) == 0,
       "a trace with expectations reads");
    ok(tr.reqs[0].ttft_target == 0.5 && tr.reqs[0].tokens_per_s == 3.25
       && tr.reqs[1].ttft_target == 0 && tr.reqs[1].tokens_per_s == 0,
       "ttft_target and tokens_per_s, 0 when not given");

    fg_sim_trace_init(&back);
    snprintf(out, sizeof(out), "%s", file("out.jsonl", ""));
    ok(fg_sim_trace_write(&tr, out, err, sizeof(err)) == 0
       && fg_sim_trace_read(&back, out, err, sizeof(err)) == 0
       && back.n == 2
       && memcmp(back.reqs, tr.reqs, 2 * sizeof(fg_sim_req_t)) == 0,
       "written and read back the same");

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&back);

    fg_sim_trace_init(&tr);
    ok(fg_sim_trace_read(&tr, file("bad.jsonl",
           "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
           "\"output_tokens\": 1, \"tokens_per_s\": 0}\n"), err,
           sizeof(err)) != 0
       && strstr(err, "bad.jsonl:1: \"tokens_per_s\" must be") != NULL,
       "tokens_per_s 0 is refused at its line");
    fg_sim_trace_free(&tr);

    fg_sim_trace_init(&tr);
    ok(fg_sim_trace_read(&tr, file("bad.jsonl",
           "{\"t\": 0, \"client\": \"a\", \"input_tokens\": 1, "
           "\"output_tokens\": 1, \"ttft_target\": \"1\"}\n"), err,
           sizeof(err)) != 0 && strstr(err, "\"ttft_target\"") != NULL,
       "a ttft_target that is not a number is refused");
    fg_sim_trace_free(&tr);
}


static int
run(fg_sim_conf_t *conf, const fg_sim_trace_t *tr, fg_sim_result_t *res)
{
    char  err[256];

    if (fg_sim_run(conf, tr, res, err, sizeof(err)) != 0) {
        diag("%s", err);
        return -1;
    }

    return 0;
}


static void
test_run(void)
{
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[4];

    /* alone: tokens at 1.1, 1.2, 1.3 */
    fg_test_sim_alone(&conf, &tr);

    fg_test_sim_expect(&tr, 0, 0.5, 10);
    if (run(&conf, &tr, res) == 0) {
        ok(res[0].has_qoe && fabs(res[0].qoe - 1.0) < EPS,
           "tokens before the reader wants them: QoE 1");
    }

    /* ideal 1.05, 1.15, 1.25: S_delay 0.15, S_whole 3.9 - 3.45 */
    fg_test_sim_expect(&tr, 0, 0.05, 10);
    if (run(&conf, &tr, res) == 0) {
        is_num(res[0].qoe, 1 - 0.15 / 0.45, EPS,
               "each token 0.05 s late: 2/3");
    }

    fg_test_sim_expect(&tr, 0, 0, 0);
    if (run(&conf, &tr, res) == 0) {
        ok(!res[0].has_qoe, "no expectations: no QoE");
    }

    fg_sim_trace_free(&tr);

    /*
     * test_sim_run's timeline: A at 0 (30 out), B at 0.5 (5 out), merge
     * every 10: B's tokens at 1.2, 1.4, 1.6, 1.8, 2.0.  At 10 tokens/s
     * after 1 s, B is read at 1.5, 1.6, 1.7, 1.8 and 2.0 against 1.9:
     * S_delay 0.1, S_whole 10 - 8.5.  C asks for more than the pool.
     */
    fg_test_sim_pair(&tr);
    (void) fg_sim_trace_add(&tr, 0.6, 1, 990, 20, 20);
    fg_test_sim_expect(&tr, 1, 1.0, 10);
    fg_test_sim_expect(&tr, 2, 1.0, 10);

    if (run(&conf, &tr, res) == 0) {
        ok(!res[0].has_qoe, "A without expectations has none");
        is_num(res[1].qoe, 1 - 0.1 / 1.5, EPS,
               "B's QoE from the batch's step times: 14/15");
        ok(res[2].status == FG_SIM_REJECTED && res[2].has_qoe
           && res[2].qoe == 0, "rejected: QoE 0");
    }

    /* B at 5 tokens/s: every token before its reader */
    fg_test_sim_expect(&tr, 1, 1.0, 5);
    if (run(&conf, &tr, res) == 0) {
        is_num(res[1].qoe, 1.0, EPS, "B read slower: QoE 1");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


static void
test_analyze(void)
{
    char               err[256], out[256], *json;
    size_t             i;
    fg_cost_t          cost;
    fg_sim_trace_t     tr, back;
    fg_sim_result_t    res[5], *got;
    fg_sim_metrics_t   m;
    double             qoe[] = { 1.0, 0.5, 0.96, 0.2, -1 };

    fg_test_sim_trace(&tr, "a", NULL);

    for (i = 0; i < 5; i++) {
        (void) fg_sim_trace_add(&tr, i, 0, 10, 10, 10);
        res[i].status = FG_SIM_OK;
        res[i].first_token = i + 0.5;
        res[i].finish = i + 1.0;
        res[i].has_cached = 0;
        res[i].engine = 0;
        res[i].qoe = qoe[i] < 0 ? 0 : qoe[i];
        res[i].has_qoe = qoe[i] >= 0;
    }

    /* the results file keeps each QoE, and leaves out the one not there */
    snprintf(out, sizeof(out), "%s", file("res.jsonl", ""));
    fg_sim_trace_init(&back);
    got = NULL;
    ok(fg_sim_results_write(&tr, res, out, err, sizeof(err)) == 0
       && fg_sim_results_read(&back, &got, out, err, sizeof(err)) == 0
       && got[1].has_qoe && fabs(got[1].qoe - 0.5) < 1e-6
       && got[2].has_qoe && fabs(got[2].qoe - 0.96) < 1e-6
       && !got[4].has_qoe, "\"qoe\" written and read back");
    free(got);
    fg_sim_trace_free(&back);

    /* four QoEs: sorted 0.2, 0.5, 0.96, 1; nearest ranks 1, 2 and 4 */
    fg_cost_linear(&cost, 1.0, 2.0);
    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) == 0) {
        is_int(m.qoe.requests, 4, "QoE over the requests that have one");
        is_num(m.qoe.mean, 2.66 / 4, EPS, "qoe_mean");
        is_num(m.qoe.share_095, 0.5, EPS, "qoe_share_095");
        ok(m.qoe.p10 == 0.2 && m.qoe.p50 == 0.5 && m.qoe.p90 == 1.0,
           "qoe_p10, p50, p90 by nearest rank");
        json = fg_sim_metrics_json(&m, &tr);
        ok(json != NULL && strstr(json, "\"qoe_share_095\"") != NULL,
           "analyze prints them");
        free(json);
        fg_sim_metrics_free(&m);
    }

    for (i = 0; i < 5; i++) {
        res[i].has_qoe = 0;
    }

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) == 0) {
        json = fg_sim_metrics_json(&m, &tr);
        ok(json != NULL && strstr(json, "qoe_") == NULL,
           "without QoE in the results, none printed");
        free(json);
        fg_sim_metrics_free(&m);
    }

    fg_sim_trace_free(&tr);
}


static void
test_gen(void)
{
    char             err[256];
    size_t           i, slow, bad;
    double           s;
    fg_sim_trace_t   tr, bursts, again;

    fg_sim_trace_init(&tr);
    fg_sim_trace_init(&bursts);
    fg_sim_trace_init(&again);

    if (fg_sim_gen(&tr, "cyclic-burst", 7, 0, err, sizeof(err)) != 0
        || fg_sim_gen(&bursts, "bursts", 7, 0, err, sizeof(err)) != 0
        || fg_sim_gen(&again, "cyclic-burst", 7, 0, err, sizeof(err)) != 0)
    {
        ok(0, "gen: %s", err);
        return;
    }

    ok(tr.n == bursts.n && tr.n > 1000, "cyclic-burst: %zu requests, as "
       "bursts", tr.n);

    slow = 0;
    bad = 0;

    for (i = 0; i < tr.n && i < bursts.n; i++) {
        s = tr.reqs[i].tokens_per_s;
        slow += fabs(s - 1 / 0.31) < EPS;
        bad += tr.reqs[i].t != bursts.reqs[i].t
               || tr.reqs[i].input_tokens != bursts.reqs[i].input_tokens
               || tr.reqs[i].ttft_target != 1.0
               || !(fabs(s - 1 / 0.31) < EPS
                    || (s >= 1 / 0.19 - EPS && s <= 1 / 0.13 + EPS));
    }

    is_int(bad, 0, "bursts' arrivals and lengths, TTFT target 1 s, "
           "speeds 1/0.31 or 1/U(0.13, 0.19)");
    ok(fabs((double) slow / tr.n - 0.79) < 0.04,
       "%zu of %zu readers at 0.31 s a token (79%%)", slow, tr.n);
    ok(again.n == tr.n
       && memcmp(again.reqs, tr.reqs, tr.n * sizeof(fg_sim_req_t)) == 0,
       "the same seed, the same trace");

    fg_sim_trace_free(&again);
    fg_sim_trace_init(&again);
    ok(fg_sim_gen(&again, "cyclic-burst", 8, 0, err, sizeof(err)) == 0
       && (again.n != tr.n || again.reqs[0].tokens_per_s
                              != tr.reqs[0].tokens_per_s
           || again.reqs[1].tokens_per_s != tr.reqs[1].tokens_per_s
           || again.reqs[2].tokens_per_s != tr.reqs[2].tokens_per_s),
       "another seed, another trace");

    fg_sim_trace_free(&tr);
    fg_sim_trace_free(&bursts);
    fg_sim_trace_free(&again);
}


int
main(void)
{
    fg_test_dir_make("sim_qoe");

    test_trace_fields();
    test_run();
    test_analyze();
    test_gen();

    fg_test_dir_remove();

    return done_testing();
}
