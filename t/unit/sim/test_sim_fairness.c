
/*
 * fairgate: property tests of the policy core's fairness, run through the
 * simulator.
 *
 * The VTC paper's Theorem 4.4: if clients f and g are both backlogged
 * (have waiting requests) over [t1, t2), VTC keeps
 *
 *     |W_f(t1, t2) - W_g(t1, t2)| <= 2 * max(w_p * L_in, w_q * M)
 *
 * with W the service as the core charges it (input at admission, output
 * per token), L_in the longest input and M the tokens a batch holds (the
 * KV pool).  With weights, W / w is held within that bound over min(w).
 *
 * Over one common backlog period, the largest |W_f(t1, t2) - W_g(t1, t2)|
 * over its sub-intervals is max(D) - min(D) of D(t) = W_f(0, t) - W_g(0, t)
 * over the period; D is sampled after every event, and the event that
 * ends a period counts in it (stricter than the theorem's open end).
 *
 * Each check is also shown to fail where it should: FCFS on an overload
 * trace, weights ignored, and LCF (no counter lift) for a returning client.
 *
 * DLPM's bound (docs/policy-core.md), through the prefix caches of 1-3
 * engines: |W_f - W_g| <= 2 |W| (Q + w_p L_in + w_q M) with W as dlpm
 * charges it; lpm exceeds it on s2.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_test_sim.h"
#include "fg_sim_gen.h"
#include "fg_rand.h"
#include "fg_sim_run.h"


#define MAXC    8
#define TRIALS  120


typedef struct {
    uint32_t   n;
    double     w[MAXC];               /* service is divided by these */

    int        in[MAXC][MAXC];        /* in a common backlog period */
    double     lo[MAXC][MAXC];
    double     hi[MAXC][MAXC];
    double     since[MAXC][MAXC];

    double     worst;                 /* largest max(D) - min(D) */
    double     backlogged;            /* seconds of common backlog */

    /* every client backlogged: the longest such period's service */
    int        all_in;
    double     all_since;
    double     all_from[MAXC];
    double     all_len;
    double     all_service[MAXC];

    /* service at time marks, for windows */
    double     mark[2];
    int        marked[2];
    double     at_mark[2][MAXC];
} check_t;


static void
check_close(check_t *ck, uint32_t i, uint32_t j, double now)
{
    ck->in[i][j] = 0;
    ck->worst = fmax(ck->worst, ck->hi[i][j] - ck->lo[i][j]);
    ck->backlogged += now - ck->since[i][j];
}


static void
hook(const fg_sim_event_t *ev, void *data)
{
    check_t                *ck = data;
    int                     both, all;
    double                  d;
    uint32_t                i, j, k;
    const fg_sim_client_t  *c;

    c = ev->clients;
    all = 1;

    for (i = 0; i < ck->n; i++) {
        all = all && c[i].waiting > 0;

        for (j = i + 1; j < ck->n; j++) {
            both = c[i].waiting > 0 && c[j].waiting > 0;
            d = c[i].service / ck->w[i] - c[j].service / ck->w[j];

            if (!both && !ck->in[i][j]) {
                continue;
            }

            if (!ck->in[i][j]) {
                ck->in[i][j] = 1;
                ck->lo[i][j] = d;
                ck->hi[i][j] = d;
                ck->since[i][j] = ev->time;
                continue;
            }

            ck->lo[i][j] = fmin(ck->lo[i][j], d);
            ck->hi[i][j] = fmax(ck->hi[i][j], d);

            if (!both) {
                check_close(ck, i, j, ev->time);
            }
        }
    }

    if (all && !ck->all_in) {
        ck->all_in = 1;
        ck->all_since = ev->time;

        for (k = 0; k < ck->n; k++) {
            ck->all_from[k] = c[k].service;
        }

    } else if (!all && ck->all_in) {
        ck->all_in = 0;

        if (ev->time - ck->all_since > ck->all_len) {
            ck->all_len = ev->time - ck->all_since;

            for (k = 0; k < ck->n; k++) {
                ck->all_service[k] = c[k].service - ck->all_from[k];
            }
        }
    }

    for (k = 0; k < 2; k++) {
        if (!ck->marked[k] && ck->mark[k] > 0 && ev->time >= ck->mark[k]) {
            ck->marked[k] = 1;

            for (i = 0; i < ck->n; i++) {
                ck->at_mark[k][i] = c[i].service;
            }
        }
    }
}


/* runs the trace with conf (model set), checking W / w[i] (w NULL: W) */
static int
run_conf(const fg_sim_trace_t *tr, fg_sim_conf_t *conf, check_t *ck,
    const double *w)
{
    int                rc;
    char               err[256];
    uint32_t           i, j;
    fg_sim_result_t   *res;

    conf->hook = hook;
    conf->hook_data = ck;

    memset(ck->in, 0, sizeof(ck->in));
    ck->n = tr->nclients;
    ck->worst = 0;
    ck->backlogged = 0;
    ck->all_in = 0;
    ck->all_len = 0;
    ck->marked[0] = ck->marked[1] = 0;

    for (i = 0; i < tr->nclients; i++) {
        ck->w[i] = w ? w[i] : 1.0;
    }

    res = calloc(tr->n, sizeof(fg_sim_result_t));
    if (res == NULL) {
        diag("out of memory");
        return -1;
    }

    rc = fg_sim_run(conf, tr, res, err, sizeof(err));
    if (rc != 0) {
        diag("run: %s", err);
    }

    /* nothing waits at the end: every period closed; be sure anyway */
    for (i = 0; i < ck->n; i++) {
        for (j = i + 1; j < ck->n; j++) {
            if (ck->in[i][j]) {
                check_close(ck, i, j, ck->since[i][j]);
            }
        }
    }

    free(res);

    return rc;
}


/*
 * The engine's scheduler of the runs: fcfs, or andes, which preempts and
 * reorders what the zone admitted but never admits for it: the zone's
 * bound holds whatever the engine does with its batch, M being what the
 * engine holds, running and waiting.
 */
static uint32_t  engine_sched = FG_SIM_SCHED_FCFS;


/* runs the trace, checking W / w[i] (w NULL: W); -1 on error */
static int
run(const fg_sim_trace_t *tr, fg_policy_e policy, uint64_t kv,
    uint32_t merge, const char *engine, check_t *ck, const double *w)
{
    int            rc;
    char           err[256];
    fg_sim_conf_t  conf;

    fg_sim_conf_init(&conf);
    conf.policy = policy;
    conf.kv_tokens = kv;
    conf.merge_every = merge;
    conf.engine_sched = engine_sched;
    conf.model = fg_step_model_create(engine, err, sizeof(err));

    if (conf.model == NULL) {
        diag("%s", err);
        return -1;
    }

    rc = run_conf(tr, &conf, ck, w);

    fg_step_model_destroy(conf.model);

    return rc;
}


static double
bound(const fg_sim_trace_t *tr, uint64_t kv, int weighted)
{
    double    min_w;
    size_t    i;
    uint32_t  l_in;

    l_in = 0;
    min_w = 1.0;

    for (i = 0; i < tr->n; i++) {
        if (tr->reqs[i].input_tokens > l_in) {
            l_in = tr->reqs[i].input_tokens;
        }
    }

    for (i = 0; weighted && i < tr->nclients; i++) {
        min_w = fmin(min_w, tr->clients[i].weight);
    }

    /* linear 1/2 cost */
    return 2.0 * fmax(1.0 * l_in, 2.0 * kv) / min_w;
}


/*
 * A random trace: 2-4 clients, each with its own lengths, rate (some
 * under their share, some far over), uniform or poisson arrivals, and an
 * active span inside the run (late joiners, early leavers).
 */
static void
random_trace(fg_sim_trace_t *tr, fg_rand_t *rng, uint64_t kv,
    int weighted)
{
    char      name[16];
    double    t, end, rate, start, dur, gap;
    uint32_t  c, n, l_in, l_out, in, out;

    static const double  weights[] = { 0.5, 1, 2, 3 };

    fg_sim_trace_init(tr);

    n = fg_rand_range(rng, 2, 4);
    dur = fg_rand_range(rng, 40, 120);

    for (c = 0; c < n; c++) {
        snprintf(name, sizeof(name), "c%u", c);
        (void) fg_sim_trace_client(tr, name);

        if (weighted) {
            tr->clients[c].weight = weights[fg_rand_range(rng, 0, 3)];
            tr->clients[c].has_weight = 1;
        }

        l_in = fg_rand_range(rng, 1, kv / 3);
        l_out = fg_rand_range(rng, 1, kv / 3);

        /*
         * The engine makes 500 output tokens/s (0.002 s a request and
         * step): a load of 0.1 .. 2 of it, spread over the clients.
         */
        rate = (0.1 + 1.9 * fg_rand_double(rng)) * 500.0
               / (n * (l_out + 1) / 2.0);

        start = fg_rand_double(rng) < 0.5
                ? 0 : fg_rand_double(rng) * dur / 2;
        end = fg_rand_double(rng) < 0.5
              ? dur : start + (dur - start) * fg_rand_double(rng);

        gap = fg_rand_double(rng) < 0.5 ? 1.0 / rate : -1.0;
        t = start + fg_rand_double(rng) / rate;

        while (t < end) {
            in = fg_rand_range(rng, 1, l_in);
            out = fg_rand_range(rng, 1, l_out);
            (void) fg_sim_trace_add(tr, t, c, in, out, out);

            t += gap > 0 ? gap
                 : -log(1.0 - fg_rand_double(rng)) / rate;
        }
    }

    (void) fg_sim_trace_sort(tr);
}


static void
test_random(int weighted)
{
    int             failed;
    double          b, ratio, worst_ratio, backlogged;
    double          w[MAXC];
    uint64_t        kv, trial;
    uint32_t        merge, c;
    check_t         ck;
    fg_rand_t       rng;
    fg_sim_trace_t  tr;

    failed = 0;
    worst_ratio = 0;
    backlogged = 0;

    for (trial = 0; trial < TRIALS; trial++) {
        fg_rand_stream(&rng, 20240601 + weighted, trial);

        kv = fg_rand_range(&rng, 200, 3000);
        merge = fg_rand_range(&rng, 1, 20);

        random_trace(&tr, &rng, kv, weighted);

        if (tr.n == 0) {
            fg_sim_trace_free(&tr);
            continue;
        }

        for (c = 0; c < tr.nclients; c++) {
            w[c] = tr.clients[c].weight;
        }

        if (run(&tr, FG_POLICY_VTC, kv, merge, "linear:0.0001,0.002", &ck,
                weighted ? w : NULL)
            != 0)
        {
            failed++;
            fg_sim_trace_free(&tr);
            continue;
        }

        /* under andes the engine holds a pool's worth waiting beside the
         * pool it runs (fg_sim_andes.c), all of it admitted by the zone
         * and charged as it runs: M is twice the pool */
        b = bound(&tr, engine_sched == FG_SIM_SCHED_ANDES ? 2 * kv : kv,
                  weighted);
        ratio = ck.worst / b;
        backlogged += ck.backlogged;

        if (ratio > 1.0) {
            failed++;
            diag("trial %llu: %u clients, kv %llu, merge %u: worst %g > "
                 "bound %g", (unsigned long long) trial, tr.nclients,
                 (unsigned long long) kv, merge, ck.worst, b);
        }

        worst_ratio = fmax(worst_ratio, ratio);
        fg_sim_trace_free(&tr);
    }

    ok(failed == 0, "%svtc%s: %d random traces, every pair of backlogged "
       "clients within the bound (worst at %.2f of it)",
       weighted ? "weighted " : "",
       engine_sched == FG_SIM_SCHED_ANDES ? ", the engine by andes" : "",
       TRIALS, worst_ratio);

    /* the property must have had something to bite on */
    ok(backlogged > TRIALS * 10.0, "%srandom traces: %.0f s of common "
       "backlog in all", weighted ? "weighted " : "", backlogged);
}


/* the check that must catch what is unfair (W / w, w NULL: W) over b */
static void
must_fail(const fg_sim_trace_t *tr, fg_policy_e policy, uint64_t kv,
    const double *w, double b, const char *what)
{
    check_t  ck;

    if (run(tr, policy, kv, 10, "linear:0.0002,0.002", &ck, w) == 0) {
        ok(ck.worst > b, "%s fails, as it must (%.0f > %.0f)", what,
           ck.worst, b);
    }
}


static void
test_overload(void)
{
    char            err[256];
    double          b;
    check_t         ck;
    fg_sim_trace_t  tr;

    fg_sim_trace_init(&tr);

    if (fg_sim_gen(&tr, "overload", 1, 0, err, sizeof(err)) != 0) {
        ok(0, "overload: %s", err);
        return;
    }

    b = bound(&tr, 10000, 0);

    if (run(&tr, FG_POLICY_VTC, 10000, 10, "linear:0.0002,0.002", &ck, NULL)
        == 0)
    {
        ok(ck.worst <= b && ck.backlogged > 300,
           "overload, vtc: within the bound (%.0f of %.0f, over %.0f s)",
           ck.worst, b, ck.backlogged);
    }

    /* the same check must catch an unfair scheduler */
    must_fail(&tr, FG_POLICY_FCFS, 10000, NULL, b, "overload, fcfs: the check");

    fg_sim_trace_free(&tr);
}


static void
test_weighted(void)
{
    int             good;
    char            err[256];
    double          b, w[4] = { 1, 2, 3, 4 };
    uint32_t        i;
    check_t         ck;
    fg_sim_trace_t  tr;

    fg_sim_trace_init(&tr);

    if (fg_sim_gen(&tr, "overload-weighted", 1, 0, err, sizeof(err)) != 0)
    {
        ok(0, "overload-weighted: %s", err);
        return;
    }

    /* a small pool makes the bound small next to what each is served */
    b = bound(&tr, 2000, 1);

    if (run(&tr, FG_POLICY_VTC, 2000, 10, "linear:0.0002,0.002", &ck, w)
        == 0)
    {
        ok(ck.worst <= b, "overload-weighted, vtc: W / w within the bound "
           "(%.0f of %.0f)", ck.worst, b);

        good = ck.all_len > 300 && ck.all_service[0] > 2 * b;

        for (i = 1; i < 4; i++) {
            good = good
                   && fabs(ck.all_service[i] / ck.all_service[0] - w[i])
                      < 0.1 * w[i];
            diag("client%u / client0: %.3f (weight %g)", i,
                 ck.all_service[i] / ck.all_service[0], w[i]);
        }

        ok(good, "overload-weighted, vtc: service 1:2:3:4 within 10%% "
           "while all four are backlogged (%.0f s)", ck.all_len);
    }

    /* weights ignored by the scheduler must fail the weighted check */
    for (i = 0; i < tr.nclients; i++) {
        tr.clients[i].weight = 1;
    }

    must_fail(&tr, FG_POLICY_VTC, 2000, w, b,
              "weights ignored: the weighted check");

    fg_sim_trace_free(&tr);
}


/*
 * The lift.  The on_off suites do not exercise it on their own: in
 * on_off_less client 0 asks for less than its share and is served on
 * arrival whatever the policy, in on_off_overload it never empties its
 * queue.  Here client 0 sends 0.5 req/s for a minute (under its share),
 * is silent for two, and comes back at 3 req/s (far over) while client 1
 * sends 3 req/s throughout.  With the lift, client 0 comes back level
 * with client 1 and they share the next minute; LCF keeps the credit
 * client 0 built while away and takes nearly all of it.
 */
static void
lift_trace(fg_sim_trace_t *tr)
{
    double  t;

    fg_test_sim_trace(tr, "returning", "steady", NULL);

    for (t = 0.1; t < 400; t += 1.0 / 3) {
        (void) fg_sim_trace_add(tr, t, 1, 256, 256, 256);
    }

    for (t = 0.2; t < 60; t += 2) {
        (void) fg_sim_trace_add(tr, t, 0, 256, 256, 256);
    }

    for (t = 180; t < 400; t += 1.0 / 3) {
        (void) fg_sim_trace_add(tr, t, 0, 256, 256, 256);
    }

    (void) fg_sim_trace_sort(tr);
}


static void
test_lift(void)
{
    double          b, w0, w1, share;
    check_t         ck;
    fg_sim_trace_t  tr;

    lift_trace(&tr);
    b = bound(&tr, 4000, 0);

    ck.mark[0] = 180;
    ck.mark[1] = 240;

    if (run(&tr, FG_POLICY_VTC, 4000, 10, "linear:0.0002,0.002", &ck, NULL)
        == 0)
    {
        w0 = ck.at_mark[1][0] - ck.at_mark[0][0];
        w1 = ck.at_mark[1][1] - ck.at_mark[0][1];
        share = w0 / (w0 + w1);

        ok(share > 0.4 && share < 0.6 && fabs(w0 - w1) <= b,
           "vtc: a returning client gets its fair share of the next "
           "minute (%.2f; |W0 - W1| = %.0f, bound %.0f)", share,
           fabs(w0 - w1), b);
        ok(ck.worst <= b, "vtc: the bound holds throughout (%.0f)",
           ck.worst);
    }

    if (run(&tr, FG_POLICY_LCF, 4000, 10, "linear:0.0002,0.002", &ck, NULL)
        == 0)
    {
        w0 = ck.at_mark[1][0] - ck.at_mark[0][0];
        w1 = ck.at_mark[1][1] - ck.at_mark[0][1];
        share = w0 / (w0 + w1);

        ok(share > 0.9 && w0 - w1 > b, "lcf: without the lift it "
           "monopolises the minute (%.2f; W0 - W1 = %.0f > %.0f)", share,
           w0 - w1, b);
    }

    fg_sim_trace_free(&tr);
}


/*
 * A random trace of shared prefixes: 2-3 clients; four groups every
 * client uses and two of each client's own, each group's prefix of 16 to
 * kv / 4 tokens; a request is a group's prefix and up to kv / 8 tokens of
 * its own, with up to kv / 8 out; a load of 0.5 .. 3 of what one engine
 * makes.
 */
static void
prefix_trace(fg_sim_trace_t *tr, fg_rand_t *rng, uint64_t kv)
{
    char           name[16];
    double         t, dur, rate;
    uint32_t       c, n, g, k, len[4 + 2 * 3], id[4 + 2 * 3];
    fg_sim_req_t  *r;

    fg_sim_trace_init(tr);

    n = fg_rand_range(rng, 2, 3);
    dur = fg_rand_range(rng, 30, 90);

    for (g = 0; g < 4 + 2 * n; g++) {
        snprintf(name, sizeof(name), "g%u", g);
        id[g] = (uint32_t) fg_sim_trace_str(tr, name);
        len[g] = fg_rand_range(rng, 16, kv / 4);
    }

    for (c = 0; c < n; c++) {
        snprintf(name, sizeof(name), "c%u", c);
        (void) fg_sim_trace_client(tr, name);

        /* 500 output tokens/s an engine, kv / 16 out on average */
        rate = (0.5 + 2.5 * fg_rand_double(rng)) * 500.0 / (n * kv / 16.0);

        for (t = fg_rand_double(rng) / rate; t < dur;
             t += -log(1.0 - fg_rand_double(rng)) / rate)
        {
            k = fg_rand_range(rng, 0, 5);
            g = k < 4 ? k : 4 + 2 * c + (k - 4);

            (void) fg_sim_trace_add(tr, t, c,
                                    len[g] + fg_rand_range(rng, 1, kv / 8),
                                    fg_rand_range(rng, 1, kv / 8),
                                    0);
            r = &tr->reqs[tr->n - 1];
            r->max_output_tokens = r->output_tokens;
            r->prefix = id[g];
            r->prefix_tokens = len[g];
        }
    }

    (void) fg_sim_trace_sort(tr);
}


/*
 * DLPM's bound through the simulator's prefix caches, 1-3 engines by
 * every route: two clients backlogged together keep |W_f - W_g| <= 2 |W|
 * (Q + U), U = w_p L_in + w_q M (docs/policy-core.md: a batch's output is
 * charged after a deficit ran out), W as dlpm charges it (the loop's
 * tallies: the uncached input, then each output token).
 */
static void
test_dlpm_random(void)
{
    int                    failed;
    char                   err[256];
    double                 b, ratio, worst_ratio, backlogged;
    uint64_t               kv, trial, hits;
    uint32_t               e, l_in;
    size_t                 i;
    check_t                ck;
    fg_rand_t              rng;
    fg_sim_conf_t          conf;
    fg_sim_trace_t         tr;
    fg_sim_cache_stats_t   cs[3];

    failed = 0;
    worst_ratio = 0;
    backlogged = 0;
    hits = 0;

    for (trial = 0; trial < 60; trial++) {
        fg_rand_stream(&rng, 20261124, trial);

        kv = fg_rand_range(&rng, 400, 3000);
        prefix_trace(&tr, &rng, kv);

        fg_sim_conf_init(&conf);
        conf.policy = FG_POLICY_DLPM;
        conf.prefix_cache = 1;
        conf.kv_tokens = kv;
        conf.merge_every = fg_rand_range(&rng, 1, 10);
        conf.engines = fg_rand_range(&rng, 1, 3);
        conf.route = (fg_route_e) fg_rand_range(&rng, 0, 2);
        conf.quantum = exp(log(16.0) + fg_rand_double(&rng) * log(256.0));
        conf.window = fg_rand_range(&rng, 1, 128);
        conf.cache_stats = cs;
        conf.model = fg_step_model_create("linear:0.0001,0.002", err,
                                          sizeof(err));

        if (conf.model == NULL
            || run_conf(&tr, &conf, &ck, NULL) != 0)
        {
            failed++;
            fg_step_model_destroy(conf.model);
            fg_sim_trace_free(&tr);
            continue;
        }

        for (i = 0, l_in = 0; i < tr.n; i++) {
            l_in = tr.reqs[i].input_tokens > l_in ? tr.reqs[i].input_tokens
                                                  : l_in;
        }

        for (e = 0; e < conf.engines; e++) {
            hits += cs[e].hit_tokens;
        }

        /* linear 1/2 cost */
        b = 2.0 * conf.engines * (conf.quantum + l_in + 2.0 * kv);
        ratio = ck.worst / b;
        worst_ratio = fmax(worst_ratio, ratio);
        backlogged += ck.backlogged;

        if (ratio > 1.0) {
            failed++;
            diag("trial %llu: worst %.0f over the bound %.0f (%u engines, "
                 "quantum %.0f)", (unsigned long long) trial, ck.worst, b,
                 conf.engines, conf.quantum);
        }

        fg_step_model_destroy(conf.model);
        fg_sim_trace_free(&tr);
    }

    ok(failed == 0 && backlogged > 0 && hits > 0,
       "dlpm, 60 random traces of shared prefixes on 1-3 engines: within "
       "2 |W| (Q + U) (worst %.2f of it; %.0f s backlogged together, %llu "
       "tokens cached)", worst_ratio, backlogged, (unsigned long long) hits);
}


/*
 * s2 through the simulator: the attacker's prompts of 8,192 cached tokens
 * match longest, so lpm serves it alone and breaks dlpm's bound; dlpm
 * keeps it.
 */
static void
test_lpm_s2(void)
{
    int             i;
    char            err[256];
    double          b;
    check_t         ck;
    fg_sim_conf_t   conf;
    fg_sim_trace_t  tr;
    fg_policy_e     policies[2] = { FG_POLICY_LPM, FG_POLICY_DLPM };

    fg_sim_trace_init(&tr);

    if (fg_sim_gen(&tr, "s2", 1, 0, err, sizeof(err)) != 0) {
        ok(0, "s2: %s", err);
        return;
    }

    /* L_in 8,320, M 10,000, Q 2,048, linear 1/2 */
    b = 2.0 * (2048 + 8320 + 2.0 * 10000);

    for (i = 0; i < 2; i++) {
        fg_sim_conf_init(&conf);
        conf.policy = policies[i];
        conf.prefix_cache = 1;
        conf.model = fg_step_model_create("linear:0.0002,0.01", err,
                                          sizeof(err));

        if (run_conf(&tr, &conf, &ck, NULL) == 0) {
            ok(i == 0 ? ck.worst > b : ck.worst <= b,
               "s2: %s's worst difference %.0f, %.2f of dlpm's bound",
               fg_sched_policy_name(policies[i]), ck.worst, ck.worst / b);
        }

        fg_step_model_destroy(conf.model);
    }

    fg_sim_trace_free(&tr);
}


int
main(void)
{
    test_random(0);
    test_random(1);

    /* fairness and QoE together: andes in the engine, vtc at the zone */
    engine_sched = FG_SIM_SCHED_ANDES;
    test_random(0);
    engine_sched = FG_SIM_SCHED_FCFS;

    test_overload();
    test_weighted();
    test_lift();
    test_dlpm_random();
    test_lpm_s2();

    return done_testing();
}
