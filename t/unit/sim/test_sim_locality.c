
/*
 * fairgate: tests of the simulation's locality on timelines worked out by
 * hand with the linear step model: the prefix cache (prefill of the
 * uncached part only, blocks shared once so that more requests run, the
 * results' cached tokens), lpm and dlpm preferring a cached prefix where
 * fcfs serves the oldest, several engines running at once, and the routes
 * (round-robin, least-load, prefix) naming the engine of each request.
 */


#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_sim_run.h"
#include "fg_test_sim.h"


#define EPS  1e-9


static int
run(fg_sim_conf_t *conf, const fg_sim_trace_t *tr, fg_sim_result_t *res)
{
    int   rc;
    char  err[256];

    memset(res, 0, tr->n * sizeof(fg_sim_result_t));

    rc = fg_sim_run(conf, tr, res, err, sizeof(err));
    if (rc != 0) {
        diag("run: %s", err);
    }

    return rc;
}


/* a request of client c at t: in, out, and a prefix when p is not NULL */
static void
add(fg_sim_trace_t *tr, double t, const char *client, uint32_t in,
    uint32_t out, const char *p, uint32_t prefix_tokens)
{
    fg_sim_req_t  *r;

    (void) fg_sim_trace_add(tr, t,
                            (uint32_t) fg_sim_trace_client(tr, client), in,
                            out, out);
    r = &tr->reqs[tr->n - 1];

    if (p != NULL) {
        r->prefix = (uint32_t) fg_sim_trace_str(tr, p);
        r->prefix_tokens = prefix_tokens;
    }
}


static void
test_cache_timing(void)
{
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[2];

    /* prefill 0.01 s a token, decode 0.1 s a running request */
    fg_test_sim_conf(&conf, "linear:0.01,0.1", 1000);

    /* A at 0 and B at 5, each 100 in (64 of them the prefix p), 2 out */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "a", 100, 2, "p", 64);
    add(&tr, 5.0, "a", 100, 2, "p", 64);

    if (run(&conf, &tr, res) == 0) {
        ok(fabs(res[1].first_token - 6.0) < EPS && !res[1].has_cached
           && res[1].engine == 0,
           "no cache: B's whole prompt is prefilled (first token at 6.0); "
           "the results say nothing of a cache or an engine");
    }

    /* A: 1.0 s of prefill; B finds 64 cached: 36 x 0.01 s, first at 5.36 */
    conf.prefix_cache = 1;

    if (run(&conf, &tr, res) == 0) {
        ok(fabs(res[0].first_token - 1.0) < EPS
           && fabs(res[0].finish - 1.1) < EPS
           && fabs(res[1].first_token - 5.36) < EPS
           && fabs(res[1].finish - 5.46) < EPS,
           "with the cache: B's prefill is of its 36 uncached tokens "
           "(first token at %.3f)", res[1].first_token);
        ok(res[0].has_cached && res[0].cached_tokens == 0
           && res[1].has_cached && res[1].cached_tokens == 64,
           "the results' cached tokens: 0, then the 4 blocks of the prefix");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


static void
test_shared_once(void)
{
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[2];

    fg_test_sim_conf(&conf, "linear:0.01,0.1", 0);
    conf.merge_every = 1;
    conf.policy = FG_POLICY_FCFS;

    /* two of 200 in (160 the prefix, 10 blocks) and 10 out: 210 each */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "a", 200, 10, "p", 160);
    add(&tr, 0.0, "b", 200, 10, "p", 160);

    conf.kv_tokens = 260;

    if (run(&conf, &tr, res) == 0) {
        ok(res[1].first_token >= res[0].finish - EPS,
           "no cache: 2 x 210 do not fit 260, B waits for A");
    }

    /* A holds 210, B only its own 50: the 10 shared blocks count once */
    conf.prefix_cache = 1;

    if (run(&conf, &tr, res) == 0) {
        ok(fabs(res[0].first_token - 2.4) < EPS
           && fabs(res[1].first_token - 2.4) < EPS
           && res[1].cached_tokens == 160,
           "with the cache both run at once in 260 tokens: one merge, "
           "200 + 40 prefilled (first tokens at %.3f, %.3f)",
           res[0].first_token, res[1].first_token);
    }

    conf.kv_tokens = 259;

    if (run(&conf, &tr, res) == 0) {
        ok(res[1].first_token >= res[0].finish - EPS,
           "but not in 259");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


/*
 * W warms prefix p; at 10, X (prefix q, cold) then Y (prefix p) arrive
 * from two clients, and only one of them fits the pool at a time: fcfs
 * runs the older X first, lpm and dlpm the cached Y.
 */
static void
test_policies(void)
{
    int              i;
    fg_sim_conf_t    conf;
    fg_sim_trace_t   tr;
    fg_sim_result_t  res[3];
    fg_policy_e      policies[3] = {
        FG_POLICY_FCFS, FG_POLICY_LPM, FG_POLICY_DLPM
    };

    fg_test_sim_conf(&conf, "linear:0.01,0.1", 250);
    conf.merge_every = 1;
    conf.prefix_cache = 1;

    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "w", 200, 1, "p", 160);
    add(&tr, 10.0, "x", 200, 10, "q", 160);
    add(&tr, 10.0, "y", 200, 10, "p", 160);

    for (i = 0; i < 3; i++) {
        conf.policy = policies[i];

        if (run(&conf, &tr, res) != 0) {
            continue;
        }

        if (i == 0) {
            ok(res[1].first_token < res[2].first_token
               && res[2].first_token >= res[1].finish - EPS
               && res[2].cached_tokens == 32,
               "fcfs: the older X first, whose room evicted W's own blocks "
               "and p from its end: Y after it finds 2 blocks (%u)",
               res[2].cached_tokens);

        } else {
            ok(res[2].first_token < res[1].first_token
               && fabs(res[2].first_token - 10.4) < EPS
               && res[1].first_token >= res[2].finish - EPS,
               "%s: the cached Y first (40 tokens of prefill, at %.3f), "
               "X after it", fg_sched_policy_name(policies[i]),
               res[2].first_token);
        }
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


/* engines' names "0", "1" ... as the command gives them */
static void
names(fg_sim_trace_t *tr, uint32_t *n, uint32_t count)
{
    char      name[8];
    uint32_t  e;

    for (e = 0; e < count; e++) {
        snprintf(name, sizeof(name), "%u", e);
        n[e] = (uint32_t) fg_sim_trace_str(tr, name);
    }
}


static const char *
engine(const fg_sim_trace_t *tr, const fg_sim_result_t *res)
{
    const char  *s;

    s = fg_sim_trace_str_get(tr, res->engine);

    return s != NULL ? s : "none";
}


static void
test_engines(void)
{
    size_t            i;
    uint32_t          n[3];
    fg_sim_conf_t     conf;
    fg_sim_trace_t    tr;
    fg_sim_result_t   res[4];

    fg_test_sim_conf(&conf, "linear:0.01,0.1", 1000);
    conf.policy = FG_POLICY_FCFS;

    /* two of 10 in and 3 out at 0: merged on one engine, 0.2 s a step */
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "a", 10, 3, NULL, 0);
    add(&tr, 0.0, "b", 10, 3, NULL, 0);
    names(&tr, n, 3);
    conf.engine_names = n;

    if (run(&conf, &tr, res) == 0) {
        ok(fabs(res[1].first_token - 0.2) < EPS
           && fabs(res[1].finish - 0.6) < EPS
           && strcmp(engine(&tr, &res[1]), "0") == 0,
           "one engine: both in one batch, done at 0.6");
    }

    /* two engines: each alone, done at 0.3 as one request alone is */
    conf.engines = 2;
    conf.route = FG_ROUTE_ROUND_ROBIN;

    if (run(&conf, &tr, res) == 0) {
        ok(fabs(res[0].finish - 0.3) < EPS && fabs(res[1].finish - 0.3) < EPS
           && strcmp(engine(&tr, &res[0]), "0") == 0
           && strcmp(engine(&tr, &res[1]), "1") == 0,
           "two engines run at once: each request on its own, done at 0.3");
    }

    fg_sim_trace_free(&tr);

    /* round-robin over three: 0, 1, 2, 0 */
    fg_sim_trace_init(&tr);

    for (i = 0; i < 4; i++) {
        add(&tr, 0.0, "a", 10 + 100 * (i == 1), 3, NULL, 0);
    }

    names(&tr, n, 3);
    conf.engines = 3;

    if (run(&conf, &tr, res) == 0) {
        ok(strcmp(engine(&tr, &res[0]), "0") == 0
           && strcmp(engine(&tr, &res[1]), "1") == 0
           && strcmp(engine(&tr, &res[2]), "2") == 0
           && strcmp(engine(&tr, &res[3]), "0") == 0,
           "round-robin: engines 0, 1, 2, 0");
    }

    /* least load (tokens held): 0, 1, 2, then 0 or 2, not 1 (110 held) */
    conf.route = FG_ROUTE_LEAST_LOAD;

    if (run(&conf, &tr, res) == 0) {
        ok(strcmp(engine(&tr, &res[0]), "0") == 0
           && strcmp(engine(&tr, &res[1]), "1") == 0
           && strcmp(engine(&tr, &res[2]), "2") == 0
           && strcmp(engine(&tr, &res[3]), "0") == 0,
           "least-load: 0, 1, 2 (empty first), then 0 of the lightest "
           "(13, 113, 13 held)");
    }

    fg_sim_trace_free(&tr);

    conf.engines = 0;
    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "a", 10, 3, NULL, 0);
    ok(fg_sim_run(&conf, &tr, res, (char[128]) { 0 }, 128) != 0,
       "no engines is refused");
    fg_sim_trace_free(&tr);

    fg_step_model_destroy(conf.model);
}


/*
 * The prefix route: p and q at 0 go to 0 and 1 (no match: the least
 * load); at 10, q and p again follow their cached prefixes, while
 * round-robin would not.
 */
static void
test_prefix_route(void)
{
    uint32_t               n[2];
    fg_sim_conf_t          conf;
    fg_sim_trace_t         tr;
    fg_sim_result_t        res[4];
    fg_sim_cache_stats_t   cs[2];

    fg_test_sim_conf(&conf, "linear:0.01,0.1", 1000);
    conf.policy = FG_POLICY_FCFS;
    conf.engine_names = n;

    fg_sim_trace_init(&tr);
    add(&tr, 0.0, "a", 100, 3, "p", 64);
    add(&tr, 0.0, "a", 100, 3, "q", 64);
    add(&tr, 10.0, "a", 100, 3, "q", 64);
    add(&tr, 10.0, "a", 100, 3, "p", 64);
    names(&tr, n, 2);

    conf.engines = 2;
    conf.route = FG_ROUTE_PREFIX;
    conf.prefix_cache = 1;
    conf.cache_stats = cs;

    if (run(&conf, &tr, res) == 0) {
        ok(strcmp(engine(&tr, &res[0]), "0") == 0
           && strcmp(engine(&tr, &res[1]), "1") == 0
           && strcmp(engine(&tr, &res[2]), "1") == 0
           && strcmp(engine(&tr, &res[3]), "0") == 0
           && res[2].cached_tokens == 64 && res[3].cached_tokens == 64,
           "prefix: each request to the engine that holds its prefix");
        ok(cs[0].hit_tokens == 64 && cs[1].hit_tokens == 64
           && cs[0].query_tokens == 200 && cs[0].evictions == 0,
           "each engine's cache read-out: 64 of 200 hit, nothing evicted");
    }

    conf.route = FG_ROUTE_ROUND_ROBIN;

    if (run(&conf, &tr, res) == 0) {
        ok(res[2].cached_tokens == 0 && res[3].cached_tokens == 0,
           "round-robin sends them to the other engines: no hit");
    }

    fg_sim_trace_free(&tr);
    fg_step_model_destroy(conf.model);
}


int
main(void)
{
    test_cache_timing();
    test_shared_once();
    test_policies();
    test_engines();
    test_prefix_route();

    return done_testing();
}
