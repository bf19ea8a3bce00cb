
/*
 * fairgate: tests of the VTC paper's fairness metric on hand-made results
 * whose figures are worked out below.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg_tap.h"
#include "fg_test_file.h"
#include "fg_sim_metrics.h"


static int
load(const char *text, fg_sim_trace_t *tr, fg_sim_result_t **res)
{
    char  err[256];

    fg_sim_trace_init(tr);

    if (fg_sim_results_read(tr, res, file("r.jsonl", text), err,
                            sizeof(err))
        != 0)
    {
        diag("%s", err);
        return -1;
    }

    return 0;
}


/* the series file: a header naming columns, then one row a tick */
static void
test_series(const fg_sim_metrics_t *m, const fg_sim_trace_t *tr)
{
    int          good;
    char         err[256], line[512];
    FILE        *fp;
    size_t       rows;
    double       v[8];
    const char  *path;

    path = file("s.dat", "");

    if (fg_sim_metrics_write_series(m, tr, path, err, sizeof(err)) != 0) {
        ok(0, "the series writes: %s", err);
        return;
    }

    fp = fopen(path, "r");
    if (fp == NULL || fgets(line, sizeof(line), fp) == NULL) {
        ok(0, "the series reads back");
        return;
    }

    is_str(line, "# t service:a service:c service:b rate:a rate:c rate:b "
           "diff\n", "the series' header");

    rows = 0;
    good = 1;

    while (fgets(line, sizeof(line), fp) != NULL) {
        if (sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
            != 8
            || fabs(v[0] - m->centre[rows]) > 1e-3
            || fabs(v[1] - m->service[rows * 3]) > 1e-3
            || fabs(v[6] - m->rate[rows * 3 + 2]) > 1e-3
            || fabs(v[7] - m->diff[rows]) > 1e-3)
        {
            good = 0;
        }

        rows++;
    }

    fclose(fp);

    ok(good && rows == FG_SIM_TICKS, "one row a tick, columns as named");
}


/*
 * Client a: one request, 10 in / 20 out (cost 50), arriving at 0, served
 * evenly over [0, 100]: 0.5 cost/s.  Client b: one request, 30 / 15
 * (cost 60), arriving at 100 and rejected.  Client c: 5 / 1 (cost 7),
 * arriving at 10, timed out.
 *
 * T = 100, so tick k has the window [k, k + 60).  a's service there is
 * 0.5 * min(60, 100 - k) / 60; b's is 0, and its rate 60 / 60 = 1 for
 * k >= 41 (100 lies in the window), else 0; c's rate is 7/60 for k <= 10,
 * else 0.  a is the best served, so diff(k) = min(s_a, rate_b)
 * + min(s_a, rate_c): for k <= 10, 0.5 + 7/60 is above s_a = 0.5, so
 * c adds 7/60; from 11 to 40 nothing; from 41, b adds (100 - k) / 120.
 */
static void
test_known(void)
{
    double             sum, sq, mean, d, want_max;
    size_t             k;
    fg_sim_trace_t     tr;
    fg_cost_t          cost;
    fg_sim_result_t   *res;
    fg_sim_metrics_t   m;
    char              *json;

    if (load("{\"id\": 0, \"client\": \"a\", \"arrival\": 0, "
             "\"first_token\": 0, \"finish\": 100, \"input_tokens\": 10, "
             "\"output_tokens\": 20, \"status\": \"ok\"}\n"
             "{\"id\": 1, \"client\": \"c\", \"arrival\": 10, "
             "\"first_token\": null, \"finish\": null, \"input_tokens\": 5, "
             "\"output_tokens\": 1, \"status\": \"timeout\", \"x\": 1}\n"
             "{\"id\": 2, \"client\": \"b\", \"arrival\": 100, "
             "\"first_token\": null, \"finish\": null, "
             "\"input_tokens\": 30, \"output_tokens\": 15, "
             "\"status\": \"rejected\"}\n", &tr, &res)
        != 0)
    {
        ok(0, "the results load");
        return;
    }

    fg_cost_linear(&cost, 1, 2);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0) {
        ok(0, "the metric computes");
        return;
    }

    sum = sq = 0;
    want_max = 0;

    for (k = 0; k < FG_SIM_TICKS; k++) {
        d = k <= 10 ? 7.0 / 60 : k <= 40 ? 0 : (100.0 - k) / 120;
        sum += d;
        sq += d * d;
        want_max = fmax(want_max, d);
    }

    mean = sum / FG_SIM_TICKS;

    is_num(m.centre[0], 30, 1e-12, "the first window centres at 30 s");
    is_num(m.centre[99], 129, 1e-12, "ticks step by T / 100");
    is_num(m.service[40 * 3 + 0], 0.5, 1e-12,
           "a's service: its cost spread over first token..finish");
    is_num(m.service[70 * 3 + 0], 0.5 * 30 / 60, 1e-12,
           "a's service: only the overlap with the window");
    is_num(m.rate[41 * 3 + 2], 1.0, 1e-12,
           "b's rate counts its rejected request");
    is_num(m.rate[40 * 3 + 2], 0.0, 1e-12,
           "a window excludes its right edge");

    is_num(m.max_diff, want_max, 1e-12, "max_diff (%g)", want_max);
    is_num(m.avg_diff, mean, 1e-12, "avg_diff (%g)", mean);
    is_num(m.var_diff, sq / FG_SIM_TICKS - mean * mean, 1e-12,
           "var_diff: population variance");
    is_num(m.throughput, 30.0 / 100, 1e-12,
           "throughput: served tokens over last finish - first arrival");

    ok(m.clients[0].sent == 1 && m.clients[0].count.served == 1
       && m.clients[0].service == 50 && m.clients[1].count.timeout == 1
       && m.clients[2].count.rejected == 1
       && m.clients[2].count.served == 0,
       "per-client counts");

    json = fg_sim_metrics_json(&m, &tr);
    ok(json != NULL && strstr(json, "\"max_diff\"") != NULL
       && strstr(json, "\"served_tokens\": 30") != NULL
       && strstr(json, "\"weighted\": false") != NULL,
       "the JSON summary holds the figures and served tokens");
    free(json);

    test_series(&m, &tr);

    fg_sim_metrics_free(&m);

    /* no weights given: all are 1, and weighting changes nothing */
    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 1) != 0) {
        ok(0, "the weighted metric computes");
        return;
    }

    ok(m.weighted && fabs(m.max_diff - want_max) <= 1e-12
       && fabs(m.avg_diff - mean) <= 1e-12,
       "weights all 1: the weighted metric is the unweighted one");

    fg_sim_metrics_free(&m);
    free(res);
    fg_sim_trace_free(&tr);
}


/* a request served in an instant counts whole where it happened */
static void
test_instant(void)
{
    fg_cost_t          cost;
    fg_sim_trace_t     tr;
    fg_sim_result_t   *res;
    fg_sim_metrics_t   m;

    if (load("{\"id\": 0, \"client\": \"a\", \"arrival\": 0, "
             "\"first_token\": 90, \"finish\": 90, \"input_tokens\": 10, "
             "\"output_tokens\": 1, \"status\": \"ok\"}\n"
             "{\"id\": 1, \"client\": \"a\", \"arrival\": 50, "
             "\"first_token\": 50, \"finish\": 50, \"input_tokens\": 10, "
             "\"output_tokens\": 1, \"status\": \"ok\"}\n", &tr, &res)
        != 0)
    {
        ok(0, "the results load");
        return;
    }

    fg_cost_linear(&cost, 1, 2);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0) {
        ok(0, "the metric computes");
        return;
    }

    /* T = 50: windows [k / 2, k / 2 + 60) all hold 50; 90 from k = 61 */
    is_num(m.service[0], 12.0 / 60, 1e-12,
           "an instant request counts whole in its window");
    is_num(m.service[60], 12.0 / 60, 1e-12, "not before its instant");
    is_num(m.service[61], 24.0 / 60, 1e-12, "and both once both lie in it");
    is_num(m.throughput, 22.0 / 90, 1e-12, "throughput");

    fg_sim_metrics_free(&m);
    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * Clients a (weight 1) and b (weight 2), each sending one request at 0
 * and one at 100 (T = 100: tick k has the window [k, k + 60)), each
 * request served evenly from its arrival over 100 s.  a's are 10 in /
 * 20 out (cost 50), b's as given by b_tokens, so a's service is 0.5 in
 * every window and its rate 50 / 60 = 5/6 where the window holds an
 * arrival (k = 0 and k >= 41: 60 ticks), else 0 (k = 1..40: 40 ticks).
 */
static int
load_two(const char *b_tokens, fg_sim_trace_t *tr, fg_sim_result_t **res)
{
    char  text[2048];

    snprintf(text, sizeof(text),
             "{\"id\": 0, \"client\": \"a\", \"arrival\": 0, "
             "\"first_token\": 0, \"finish\": 100, \"input_tokens\": 10, "
             "\"output_tokens\": 20, \"status\": \"ok\"}\n"
             "{\"id\": 1, \"client\": \"b\", \"arrival\": 0, "
             "\"first_token\": 0, \"finish\": 100, %s, "
             "\"status\": \"ok\", \"weight\": 2}\n"
             "{\"id\": 2, \"client\": \"a\", \"arrival\": 100, "
             "\"first_token\": 100, \"finish\": 200, \"input_tokens\": 10, "
             "\"output_tokens\": 20, \"status\": \"ok\"}\n"
             "{\"id\": 3, \"client\": \"b\", \"arrival\": 100, "
             "\"first_token\": 100, \"finish\": 200, %s, "
             "\"status\": \"ok\", \"weight\": 2}\n", b_tokens, b_tokens);

    return load(text, tr, res);
}


/*
 * b's requests cost 100 (20 / 40), so b gets 1.0 to a's 0.5 in every
 * window: exactly 1:2, its weights.
 *
 * Unweighted, b is the best served and a counts min(1 - 0.5,
 * |rate_a - 0.5|): 1/3 at the 60 ticks where rate_a = 5/6, 1/2 at the
 * 40 where it is 0; max 1/2, mean (20 + 20) / 100 = 0.4, variance
 * (60/9 + 40/4) / 100 - 0.4^2 = 1/150.  Weighted, b's service is
 * 1.0 / 2 = a's: nobody is short of the best, every diff is 0.
 */
static void
test_weighted_proportional(void)
{
    int                good;
    char               err[256], line[512], *json;
    FILE              *fp;
    size_t             k;
    fg_cost_t          cost;
    fg_sim_trace_t     tr;
    fg_sim_result_t   *res;
    fg_sim_metrics_t   m;
    const char        *path;

    if (load_two("\"input_tokens\": 20, \"output_tokens\": 40", &tr, &res)
        != 0)
    {
        ok(0, "the weighted results load");
        return;
    }

    is_num(tr.clients[1].weight, 2, 0, "b's weight read from the results");
    is_num(tr.clients[0].weight, 1, 0, "a's weight defaults to 1");

    fg_cost_linear(&cost, 1, 2);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0) {
        ok(0, "the metric computes");
        goto done;
    }

    good = 1;

    for (k = 0; k < FG_SIM_TICKS; k++) {
        if (fabs(m.service[k * 2] - 0.5) > 1e-12
            || fabs(m.service[k * 2 + 1] - 1.0) > 1e-12)
        {
            good = 0;
        }
    }

    ok(good, "1:2: a gets 0.5 and b 1.0 in every window");

    is_num(m.diff[0], 1.0 / 3, 1e-12, "unweighted diff, k = 0: 1/3");
    is_num(m.diff[40], 0.5, 1e-12, "unweighted diff, k = 40: 1/2");
    is_num(m.diff[41], 1.0 / 3, 1e-12, "unweighted diff, k = 41: 1/3");
    is_num(m.max_diff, 0.5, 1e-12, "unweighted max_diff > 0: 1/2");
    is_num(m.avg_diff, 0.4, 1e-12, "unweighted avg_diff: 0.4");
    is_num(m.var_diff, 1.0 / 150, 1e-12, "unweighted var_diff: 1/150");

    fg_sim_metrics_free(&m);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 1) != 0) {
        ok(0, "the weighted metric computes");
        goto done;
    }

    is_num(m.service[50 * 2 + 1], 0.5, 1e-12,
           "weighted: b's service is per unit of weight");
    is_num(m.rate[0 * 2 + 1], 100.0 / 60 / 2, 1e-12,
           "weighted: so is b's rate");
    is_num(m.max_diff, 0, 1e-12, "weighted max_diff ~ 0");
    is_num(m.avg_diff, 0, 1e-12, "weighted avg_diff ~ 0");

    json = fg_sim_metrics_json(&m, &tr);
    ok(json != NULL && strstr(json, "\"weighted\": true") != NULL
       && strstr(json, "\"weight\": 2") != NULL,
       "the JSON says weighted, and gives the weights");
    free(json);

    path = file("w.dat", "");

    if (fg_sim_metrics_write_series(&m, &tr, path, err, sizeof(err)) != 0) {
        ok(0, "the weighted series writes: %s", err);
        goto done_m;
    }

    fp = fopen(path, "r");
    good = fp != NULL && fgets(line, sizeof(line), fp) != NULL;
    ok(good && strstr(line, "# t service:a service:b rate:a rate:b diff "
                      "(weighted: ") == line,
       "the weighted series' header says so: %s", good ? line : "");

    good = fp != NULL && fgets(line, sizeof(line), fp) != NULL;
    ok(good && strstr(line, "30.000 0.500 0.500 ") == line,
       "the weighted series gives b's divided service");

    if (fp != NULL) {
        fclose(fp);
    }

done_m:

    fg_sim_metrics_free(&m);

done:

    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * b's requests cost 50 like a's: 1:1 service, though b weighs 2.
 *
 * Unweighted, nobody is short of the best: every diff is 0.  Weighted,
 * b's service is 0.5 / 2 = 1/4 and its rate 5/12 or 0: b counts
 * min(1/2 - 1/4, |5/12 - 1/4|) = 1/6 at 60 ticks and min(1/4, 1/4) = 1/4
 * at 40; max 1/4, mean (10 + 10) / 100 = 0.2, variance
 * (60/36 + 40/16) / 100 - 0.2^2 = 1/600.
 */
static void
test_weighted_equal(void)
{
    fg_cost_t          cost;
    fg_sim_trace_t     tr;
    fg_sim_result_t   *res;
    fg_sim_metrics_t   m;

    if (load_two("\"input_tokens\": 10, \"output_tokens\": 20", &tr, &res)
        != 0)
    {
        ok(0, "the weighted results load");
        return;
    }

    fg_cost_linear(&cost, 1, 2);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0) {
        ok(0, "the metric computes");
        goto done;
    }

    is_num(m.max_diff, 0, 1e-12, "1:1, unweighted: max_diff 0");

    fg_sim_metrics_free(&m);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 1) != 0) {
        ok(0, "the weighted metric computes");
        goto done;
    }

    is_num(m.diff[0], 1.0 / 6, 1e-12, "1:1, weighted diff, k = 0: 1/6");
    is_num(m.diff[1], 0.25, 1e-12, "1:1, weighted diff, k = 1: 1/4");
    is_num(m.diff[99], 1.0 / 6, 1e-12, "1:1, weighted diff, k = 99: 1/6");
    is_num(m.max_diff, 0.25, 1e-12, "1:1, weighted max_diff: 1/4");
    is_num(m.avg_diff, 0.2, 1e-12, "1:1, weighted avg_diff: 0.2");
    is_num(m.var_diff, 1.0 / 600, 1e-12, "1:1, weighted var_diff: 1/600");

    fg_sim_metrics_free(&m);

done:

    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * Table 3's figures.  Users b-u1, c-u2 (normal), a-u0 (abusive, its name
 * ends in -u0) and d (no interactions).  b's b2 ends in an error, c's c1
 * in a skipped stage, a's a1 is rejected: all three aborted, wasting
 * 15 + 30 + 0 tokens; b1, c2 and a2 complete.  7 of 10 requests ok; only
 * d had no request fail; no user with interactions had none aborted.
 */
static const char  table3[] =
    "{\"id\": 0, \"client\": \"b-u1\", \"arrival\": 0, "
    "\"first_token\": 0.5, \"finish\": 1, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"ok\""
    ", \"user\": \"b-u1\", \"interaction\": \"b1\", \"stage\": 0}\n"
    "{\"id\": 1, \"client\": \"b-u1\", \"arrival\": 1, "
    "\"first_token\": 1.5, \"finish\": 2, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"ok\""
    ", \"user\": \"b-u1\", \"interaction\": \"b1\", \"stage\": 1}\n"
    "{\"id\": 2, \"client\": \"b-u1\", \"arrival\": 2, "
    "\"first_token\": 2.5, \"finish\": 3, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"ok\""
    ", \"user\": \"b-u1\", \"interaction\": \"b2\", \"stage\": 0}\n"
    "{\"id\": 3, \"client\": \"b-u1\", \"arrival\": 3, "
    "\"first_token\": null, \"finish\": null, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"error\""
    ", \"user\": \"b-u1\", \"interaction\": \"b2\", \"stage\": 1}\n"
    "{\"id\": 4, \"client\": \"c-u2\", \"arrival\": 4, "
    "\"first_token\": 4.5, \"finish\": 5, "
    "\"input_tokens\": 20, \"output_tokens\": 10, \"status\": \"ok\""
    ", \"user\": \"c-u2\", \"interaction\": \"c1\", \"stage\": 0}\n"
    "{\"id\": 5, \"client\": \"c-u2\", \"arrival\": 5, "
    "\"first_token\": null, \"finish\": null, "
    "\"input_tokens\": 20, \"output_tokens\": 10, \"status\": \"skipped\""
    ", \"user\": \"c-u2\", \"interaction\": \"c1\", \"stage\": 1}\n"
    "{\"id\": 6, \"client\": \"c-u2\", \"arrival\": 6, "
    "\"first_token\": 6.5, \"finish\": 7, "
    "\"input_tokens\": 20, \"output_tokens\": 10, \"status\": \"ok\""
    ", \"user\": \"c-u2\", \"interaction\": \"c2\", \"stage\": 0}\n"
    "{\"id\": 7, \"client\": \"a-u0\", \"arrival\": 7, "
    "\"first_token\": null, \"finish\": null, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"rejected\""
    ", \"user\": \"a-u0\", \"interaction\": \"a1\", \"stage\": 0}\n"
    "{\"id\": 8, \"client\": \"a-u0\", \"arrival\": 8, "
    "\"first_token\": 8.5, \"finish\": 9, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"ok\""
    ", \"user\": \"a-u0\", \"interaction\": \"a2\", \"stage\": 0}\n"
    "{\"id\": 9, \"client\": \"d\", \"arrival\": 9, "
    "\"first_token\": 9.5, \"finish\": 10, "
    "\"input_tokens\": 10, \"output_tokens\": 5, \"status\": \"ok\"}\n";


static void
test_table3(void)
{
    fg_cost_t          cost;
    fg_sim_trace_t     tr;
    fg_sim_metrics_t   m;
    fg_sim_result_t   *res;

    fg_cost_linear(&cost, 1.0, 2.0);

    if (load(table3, &tr, &res) != 0
        || fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0)
    {
        ok(0, "table 3's results load");
        return;
    }

    is_int(m.all.interactions, 6, "6 interactions");
    is_int(m.all.interactions_aborted, 3,
           "errors and skipped stages abort too");
    is_int(m.all.interactions_completed, 3, "3 completed");
    is_int(m.all.tokens_wasted, 45, "tokens wasted: what aborted ones got");
    is_int(m.all.requests_ok, 7, "7 of 10 requests ok");
    is_int(m.all.users, 4, "4 users");
    is_int(m.all.users_ok_requests, 1, "served users by requests: d only");
    is_int(m.all.users_with_interactions, 3, "3 users with interactions");
    is_int(m.all.users_ok_interactions, 0,
           "served users by interactions: none");
    is_int(m.all.users_served, 4, "every user had a request ok");
    is_int(m.all.users_completing, 3, "3 completed an interaction");
    is_int(m.clients[0].count.errors + m.clients[1].count.skipped, 1 + 1,
           "b's error and c's skip tallied apart");

    is_int(m.normal.requests, 8, "normal: 8 requests");
    is_int(m.normal.requests_ok, 6, "normal: 6 ok");
    is_int(m.normal.interactions, 4, "normal: 4 interactions");
    is_int(m.normal.interactions_aborted, 2, "normal: 2 aborted");
    is_int(m.normal.tokens_wasted, 45, "normal: 45 tokens wasted");
    is_int(m.normal.users, 3, "normal: 3 users");
    is_int(m.normal.users_ok_requests, 1, "normal: d served by requests");

    is_int(m.abusive.requests, 2, "abusive: 2 requests");
    is_int(m.abusive.requests_ok, 1, "abusive: 1 ok");
    is_int(m.abusive.interactions_completed, 1, "abusive: 1 completed");
    is_int(m.abusive.interactions_aborted, 1, "abusive: 1 aborted");
    is_int(m.abusive.tokens_wasted, 0, "abusive: nothing wasted");
    is_int(m.abusive.users, 1, "abusive: a-u0");
    is_int(m.abusive.users_ok_requests + m.abusive.users_ok_interactions, 0,
           "abusive: not served by requests nor by interactions");

    fg_sim_metrics_free(&m);
    free(res);
    fg_sim_trace_free(&tr);
}


/*
 * Prefix caches: a's request 100 in (60 cached) / 10 out, served on
 * engine "0" over [1, 11]; b's 100 / 10, none cached, on "1" over [2, 4];
 * a's second 50 / 5 rejected.  Linear 1, 2: a's service is (100 - 60) +
 * 20 = 60, b's 100 + 20 = 120; the hit rate 60 of 200 input tokens.
 */
static void
test_cached(void)
{
    char              *json;
    double             sa;
    size_t             k;
    fg_cost_t          cost;
    fg_sim_trace_t     tr;
    fg_sim_result_t   *res;
    fg_sim_metrics_t   m;

    if (load("{\"id\": 0, \"client\": \"a\", \"arrival\": 0, "
             "\"first_token\": 1, \"finish\": 11, \"input_tokens\": 100, "
             "\"output_tokens\": 10, \"status\": \"ok\", "
             "\"cached_tokens\": 60, \"engine\": \"0\"}\n"
             "{\"id\": 1, \"client\": \"b\", \"arrival\": 1, "
             "\"first_token\": 2, \"finish\": 4, \"input_tokens\": 100, "
             "\"output_tokens\": 10, \"status\": \"ok\", "
             "\"cached_tokens\": 0, \"engine\": \"1\"}\n"
             "{\"id\": 2, \"client\": \"a\", \"arrival\": 2, "
             "\"first_token\": null, \"finish\": null, "
             "\"input_tokens\": 50, \"output_tokens\": 5, "
             "\"status\": \"rejected\"}\n", &tr, &res)
        != 0)
    {
        ok(0, "cached results load");
        return;
    }

    fg_cost_linear(&cost, 1.0, 2.0);

    if (fg_sim_metrics_compute(&m, &tr, res, &cost, 0) != 0) {
        ok(0, "metrics compute");
        return;
    }

    is_num(m.clients[0].service, 60.0, 1e-9, "a's service counts only "
           "its uncached input");
    is_num(m.clients[1].service, 120.0, 1e-9, "b's all of it");
    is_num(m.rate[0], (60.0 + 60.0) / FG_SIM_WINDOW, 1e-9,
           "a's rate: the served request as charged, the rejected one "
           "whole");
    ok(m.input_tokens == 200 && m.cached_tokens == 60
       && fabs(m.cache_hit_rate - 0.3) < 1e-12,
       "the hit rate: 60 of 200 served input tokens");
    ok(m.clients[0].cached_tokens == 60 && m.clients[1].cached_tokens == 0,
       "cached tokens per client");
    is_num(m.clients[0].ttft_mean, 1.0, 1e-9, "a's mean TTFT");
    is_num(m.clients[1].e2e_mean, 3.0, 1e-9, "b's mean end-to-end latency");

    /*
     * T = 2: window k is [k / 50, 60 + k / 50), which holds b's [2, 4]
     * whole and a's [1, 11] from max(1, k / 50) on.
     */
    for (k = 0, sa = 0.0; k < FG_SIM_TICKS; k++) {
        sa += 60.0 * (11.0 - fmax(1.0, k / 50.0)) / 10.0;
    }

    is_num(m.clients[0].share, sa / (sa + 120.0 * FG_SIM_TICKS), 1e-9,
           "a's share of the windows' service");

    json = fg_sim_metrics_json(&m, &tr);
    ok(json != NULL
       && strstr(json, "\"cache_hit_rate\": 0.3") != NULL
       && strstr(json, "\"0\": {\n      \"served\": 1,\n      "
                       "\"input_tokens\": 100,\n      "
                       "\"cached_tokens\": 60,\n      "
                       "\"cache_hit_rate\": 0.6") != NULL
       && strstr(json, "\"ttft_mean\": 1.0") != NULL,
       "the report gives the hit rate, per engine and latency per client");
    if (json != NULL && strstr(json, "\"engines\"") == NULL) {
        diag("%s", json);
    }

    free(json);
    fg_sim_metrics_free(&m);
    free(res);
    fg_sim_trace_free(&tr);
}


int
main(void)
{
    fg_test_dir_make("metrics");

    test_known();
    test_instant();
    test_weighted_proportional();
    test_weighted_equal();
    test_table3();
    test_cached();

    fg_test_dir_remove();

    return done_testing();
}
