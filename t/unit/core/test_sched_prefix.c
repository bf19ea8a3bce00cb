
/*
 * fairgate: tests of the policy core's locality, case by case: lpm, dlpm
 * (deficit, refills, charges on uncached input), fg_sched_cached, the
 * routes among several engines, the window.  test_sched_locality.c has
 * the property tests over random traces.
 */


#define NREQ   64
#define NENG   4


#include "fg_test_sched.h"


/* the test's engines: what each request has cached where, room, load */
typedef struct {
    uint32_t   cached[NREQ][NENG];
    uint32_t   room[NENG];             /* fits: input_tokens <= room */
    double     load[NENG];
    int        asked_fits;
} engines_t;

static engines_t           eng;
static fg_sched_engines_t  en;


static uint32_t
eng_match(fg_request_t *r, uint32_t e, void *data)
{
    engines_t  *g = data;

    return g->cached[r->cookie][e];
}


static int
eng_fits(fg_request_t *r, uint32_t e, void *data)
{
    engines_t  *g = data;

    g->asked_fits++;

    return r->input_tokens <= g->room[e];
}


static double
eng_load(uint32_t e, void *data)
{
    engines_t  *g = data;

    return g->load[e];
}


static void
setup(fg_policy_e policy, double quantum, uint32_t window, fg_route_e route,
    uint32_t n_engines)
{
    int              i;
    fg_sched_conf_t  conf;

    fg_sched_conf_init(&conf, FG_TEST_CLIENTS);
    conf.policy = policy;
    conf.quantum = quantum;
    conf.window = window;
    conf.route = route;

    fg_test_sched_open(&conf);

    memset(&eng, 0, sizeof(eng));

    for (i = 0; i < NENG; i++) {
        eng.room[i] = 1000000;
    }

    en.n_engines = n_engines;
    en.match = eng_match;
    en.fits = eng_fits;
    en.load = eng_load;
    en.data = &eng;

}


/* a request of client with input in, cached[e] on engine e (-1 ends) */
static fg_request_t *
add(int client, uint32_t in, uint32_t cached0, uint32_t cached1)
{
    fg_request_t  *r;

    r = &reqs[nreq];
    fg_request_init(r, in, 100);
    r->cookie = nreq++;
    eng.cached[r->cookie][0] = cached0;
    eng.cached[r->cookie][1] = cached1;

    fg_sched_enqueue(s, &clients[client], r, (double) nreq);

    return r;
}


/* the request the next dispatch admits, as its index, or -1 */
static int
next(void)
{
    fg_request_t  *r;

    r = fg_sched_dispatch_to(s, &en);

    return r ? (int) r->cookie : -1;
}


static void
test_names(void)
{
    fg_route_e       route;
    fg_policy_e      p;
    fg_sched_conf_t  conf;

    ok(fg_sched_policy_parse(&p, "lpm") == 0 && p == FG_POLICY_LPM
       && fg_sched_policy_parse(&p, "dlpm") == 0 && p == FG_POLICY_DLPM,
       "parse lpm and dlpm");
    is_str(fg_sched_policy_name(FG_POLICY_DLPM), "dlpm", "name of dlpm");
    is_str(fg_sched_policy_name((fg_policy_e) 99), "unknown",
           "no name out of range");

    ok(fg_sched_route_parse(&route, "least-load") == 0
       && route == FG_ROUTE_LEAST_LOAD
       && fg_sched_route_parse(&route, "round-robin") == 0
       && route == FG_ROUTE_ROUND_ROBIN
       && fg_sched_route_parse(&route, "d2lpm") == 0
       && route == FG_ROUTE_PREFIX, "parse routes, d2lpm is prefix");
    ok(fg_sched_route_parse(&route, "random") == -1, "reject unknown route");
    is_str(fg_sched_route_name(FG_ROUTE_PREFIX), "prefix", "name of prefix");

    fg_sched_conf_init(&conf, 4);
    ok(conf.quantum == 2048 && conf.window == 128
       && conf.route == FG_ROUTE_PREFIX, "defaults: quantum 2048, window "
       "128, route prefix");

    conf.quantum = 0;
    ok(fg_sched_conf_error(&conf) != NULL, "quantum must be positive");
    conf.quantum = 1;
    conf.window = 0;
    ok(fg_sched_conf_error(&conf) != NULL, "window must be positive");
    conf.window = FG_SCHED_MAX_WINDOW + 1;
    ok(fg_sched_conf_error(&conf) != NULL, "window has a maximum");
    conf.window = 1;
    conf.route = (fg_route_e) 3;
    ok(fg_sched_conf_error(&conf) != NULL
       && fg_sched_create(&conf, &fg_sched_heap) == NULL, "unknown route");
}


static int
fits_under_100(fg_request_t *r, void *data)
{
    (void) data;
    return r->input_tokens <= 100;
}


static void
test_lpm(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_PREFIX, 1);

    add(0, 100, 10, 0);
    add(1, 100, 80, 0);
    add(2, 100, 50, 0);
    add(0, 100, 90, 0);

    r = fg_sched_dispatch_to(s, &en);
    ok(r == &reqs[3] && r->cached_tokens == 90 && r->engine == 0,
       "lpm: the longest match, though second in its client's queue");
    is_num(clients[0].service, 10, 1e-9, "lpm: charges the uncached input");
    ok(next() == 1 && next() == 2 && next() == 0 && next() == -1,
       "lpm: then by match, longest first");

    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_PREFIX, 1);
    add(1, 100, 30, 0);
    add(0, 100, 30, 0);
    add(0, 100, 30, 0);
    ok(next() == 0 && next() == 1 && next() == 2, "lpm: ties go to the oldest");

    /* without engines' matches: arrival order, and peek agrees */
    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_PREFIX, 1);
    add(2, 10, 0, 0);
    add(1, 500, 0, 0);
    add(0, 10, 0, 0);
    ok(fg_sched_peek(s) == &reqs[0], "lpm: peek is the oldest");
    ok(fg_sched_dispatch(s, NULL, NULL) == &reqs[0]
       && fg_sched_dispatch(s, fits_under_100, NULL) == &reqs[2],
       "lpm: fg_sched_dispatch is the oldest that fits, without a match");
}


static void
test_fits(void)
{
    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_PREFIX, 1);
    add(0, 500, 400, 0);
    add(1, 50, 10, 0);
    eng.room[0] = 100;

    is_int(next(), 1, "lpm: a candidate that fits no engine is skipped");
    is_int(next(), -1, "lpm: nothing fits: NULL");
    eng.room[0] = 1000;
    is_int(next(), 0, "lpm: it goes once it fits");

    setup(FG_POLICY_DLPM, 1000, 128, FG_ROUTE_PREFIX, 1);
    add(0, 500, 0, 0);
    add(1, 50, 0, 0);
    ok(fg_sched_dispatch(s, fits_under_100, NULL) == &reqs[1],
       "dlpm: fg_sched_dispatch skips what does not fit (CANADD)");
    ok(fg_sched_dispatch(s, fits_under_100, NULL) == NULL
       && fg_sched_peek(s) == &reqs[0], "dlpm: and returns NULL when "
       "nothing fits, the request still waiting");

    /* vtc keeps its blocked head whatever the engines */
    setup(FG_POLICY_VTC, 100, 128, FG_ROUTE_PREFIX, 3);
    add(0, 500, 0, 0);
    add(1, 50, 0, 0);
    eng.room[0] = eng.room[1] = eng.room[2] = 100;
    ok(next() == -1 && fg_sched_peek(s) == &reqs[0],
       "vtc, 3 engines: a head that fits none blocks the others");
    eng.room[2] = 500;
    ok(fg_sched_dispatch_to(s, &en) == &reqs[0] && reqs[0].engine == 2,
       "vtc, 3 engines: it goes to the one it fits");

    en.n_engines = 0;
    add(1, 10, 0, 0);
    ok(next() == -1, "no engine: nothing goes");
    en.n_engines = FG_SCHED_MAX_ENGINES + 1;
    ok(next() == -1, "too many engines: nothing goes");
}


static void
test_window(void)
{
    setup(FG_POLICY_LPM, 100, 2, FG_ROUTE_PREFIX, 1);
    add(0, 100, 0, 0);
    add(1, 100, 5, 0);
    add(2, 100, 50, 0);
    ok(next() == 1 && next() == 2 && next() == 0,
       "window 2: the youngest client's longest match waits its turn");

    setup(FG_POLICY_LPM, 100, 3, FG_ROUTE_PREFIX, 1);
    add(0, 100, 0, 0);
    add(1, 100, 10, 0);
    add(2, 100, 50, 0);
    is_int(next(), 2, "window 3: every client is seen");

    /* round by round: c0's first, c1's first, c0's second */
    setup(FG_POLICY_LPM, 100, 3, FG_ROUTE_PREFIX, 1);
    add(0, 100, 0, 0);
    add(0, 100, 20, 0);
    add(0, 100, 70, 0);
    add(1, 100, 10, 0);
    is_int(next(), 1, "window 3: a client's second request is seen before "
           "its third, after the other client's first");

    setup(FG_POLICY_LPM, 100, 4, FG_ROUTE_PREFIX, 1);
    add(0, 100, 0, 0);
    add(0, 100, 20, 0);
    add(0, 100, 70, 0);
    add(1, 100, 10, 0);
    is_int(next(), 2, "window 4: its third too");
}


static void
test_dlpm_deficit(void)
{
    int  i, order[12], good;

    setup(FG_POLICY_DLPM, 100, 128, FG_ROUTE_PREFIX, 1);

    ok(clients[0].deficit == 0 && fg_client_deficit(s, &clients[0]) == 0,
       "dlpm: a new client starts at 0");

    for (i = 0; i < 11; i++) {
        add(0, 100, 90, 0);
    }

    add(1, 100, 0, 0);

    /* first decision: nobody positive, one refill round: both at 100 */
    is_int(next(), 0, "dlpm: the longest match first");
    is_num(fg_client_deficit(s, &clients[0]), 90, 1e-9,
           "dlpm: refilled to Q, charged only the 10 uncached tokens");
    is_num(fg_client_deficit(s, &clients[1]), 100, 1e-9,
           "dlpm: the other client got the same refill");
    is_num(clients[0].service, 10, 1e-9, "dlpm: service read-out likewise");

    good = 1;
    for (i = 0; i < 9; i++) {
        order[i] = next();
        good = good && order[i] == i + 1;
    }

    ok(good, "dlpm: the cached client goes on while its deficit is > 0");
    is_num(fg_client_deficit(s, &clients[0]), 0, 1e-9, "dlpm: now at 0");
    is_int(next(), 11, "dlpm: a client at 0 is skipped for one above");
    is_num(fg_client_deficit(s, &clients[1]), 0, 1e-9,
           "dlpm: which pays its whole input");
    is_int(next(), 10, "dlpm: nobody positive: refill, longest match again");
    is_num(fg_client_deficit(s, &clients[0]), 90, 1e-9, "dlpm: at 100 - 10");

    /* output: the step's cost, w_q = 2 a token, weighted */
    fg_client_set_weight(s, &clients[0], 2.0);
    fg_sched_charge(s, &reqs[10], 5);
    is_num(fg_client_deficit(s, &clients[0]), 85, 1e-9,
           "dlpm: 5 output tokens cost 10, / weight 2");
    fg_client_add_remote(s, &clients[0], 20);
    is_num(fg_client_deficit(s, &clients[0]), 75, 1e-9,
           "dlpm: remote service lowers the deficit too");
}


/* an admitted request of client, in tokens, then out generated */
static void
spend(int client, uint32_t in, uint32_t out)
{
    fg_request_t  *r;

    r = add(client, in, 0, 0);
    ok(fg_sched_dispatch_to(s, &en) == r, "spend: admitted");
    fg_sched_charge(s, r, out);
    fg_sched_finish(s, r);
}


static void
test_dlpm_refill(void)
{
    setup(FG_POLICY_DLPM, 100, 128, FG_ROUTE_PREFIX, 1);

    /* after one round at 100 each: -550, -120, -1000 */
    spend(0, 10, 320);
    spend(1, 10, 105);
    spend(2, 10, 545);
    ok(fg_client_deficit(s, &clients[0]) == -550
       && fg_client_deficit(s, &clients[1]) == -120
       && fg_client_deficit(s, &clients[2]) == -1000,
       "dlpm: deficits -550, -120, -1000");

    add(0, 10, 0, 0);
    add(1, 10, 0, 0);

    /* client 1 needs 2 rounds, client 0 six: two pass at once */
    is_int(next(), 4, "dlpm: the client that needs fewest rounds goes");
    is_num(fg_client_deficit(s, &clients[1]), 70, 1e-9,
           "dlpm: -120 + 2 * 100 - 10");
    is_num(fg_client_deficit(s, &clients[0]), -350, 1e-9,
           "dlpm: the other backlogged client gained both rounds");
    is_num(fg_client_deficit(s, &clients[2]), -800, 1e-9,
           "dlpm: so did the idle one (read lazily)");
    is_num(clients[2].deficit, -1000, 1e-9,
           "dlpm: whose field waits for its next charge");

    is_int(next(), 3, "dlpm: then four rounds more for client 0");
    is_num(fg_client_deficit(s, &clients[0]), 40, 1e-9,
           "dlpm: -550 + 6 * 100 - 10");
    is_num(fg_client_deficit(s, &clients[1]), 70, 1e-9,
           "dlpm: a positive deficit gains nothing");
    is_num(fg_client_deficit(s, &clients[2]), -400, 1e-9,
           "dlpm: the idle one gained every round it was at or below 0");

    /* it comes back: only the rounds it needs, then no more */
    add(2, 10, 0, 0);
    is_int(next(), 5, "dlpm: it admits after 5 more rounds");
    is_num(fg_client_deficit(s, &clients[2]), 90, 1e-9,
           "dlpm: -1000 + 11 * 100 - 10");
    is_num(fg_client_deficit(s, &clients[1]), 70, 1e-9,
           "dlpm: still 70");
}


static void
test_cached(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_DLPM, 1000, 128, FG_ROUTE_PREFIX, 1);
    r = add(0, 100, 90, 0);
    next();
    is_num(fg_client_deficit(s, &clients[0]), 990, 1e-9, "dlpm: charged 10");

    fg_sched_cached(s, r, 40);
    ok(fg_client_deficit(s, &clients[0]) == 940 && clients[0].service == 60
       && r->cached_tokens == 40 && clients[0].cached_tokens == 40,
       "fg_sched_cached: fewer cached than matched: charged 60 in all");

    fg_sched_cached(s, r, 100);
    ok(fg_client_deficit(s, &clients[0]) == 1000 && clients[0].service == 0,
       "fg_sched_cached: all cached: the admission charge is refunded");

    fg_sched_charge(s, r, 5);
    fg_sched_cached(s, r, 90);
    is_num(clients[0].service, 10 + 10, 1e-9,
           "fg_sched_cached: output charges stay");

    fg_sched_correct(s, r, 120, 5);
    is_num(clients[0].service, 120 + 10 - 90, 1e-9,
           "fg_sched_correct: input corrected, cached still free");
    is_num(fg_client_deficit(s, &clients[0]), 1000 - 40, 1e-9,
           "fg_sched_correct: the deficit follows");

    fg_sched_finish(s, r);
    fg_sched_cached(s, r, 0);
    is_num(clients[0].service, 40, 1e-9, "a finished request is left alone");

    /* vtc charges the whole input: cached tokens are only recorded */
    setup(FG_POLICY_VTC, 1000, 128, FG_ROUTE_PREFIX, 1);
    r = add(0, 100, 90, 0);
    next();
    ok(r->cached_tokens == 90 && clients[0].service == 100,
       "vtc: the match is recorded, the whole input charged");
    fg_sched_cached(s, r, 50);
    ok(r->cached_tokens == 50 && clients[0].cached_tokens == 50
       && clients[0].service == 100, "vtc: fg_sched_cached only records");
}


static void
test_routes(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_VTC, 100, 128, FG_ROUTE_PREFIX, 3);
    r = add(0, 100, 10, 50);
    eng.cached[0][2] = 50;
    eng.load[0] = 0;
    eng.load[1] = 2;
    eng.load[2] = 1;
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 2
       && r->cached_tokens == 50,
       "prefix: the most cached, ties the least load");

    r = add(0, 100, 10, 50);
    eng.cached[1][2] = 50;
    eng.load[2] = 2;
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 1,
       "prefix: ties of load the lowest index");

    r = add(0, 100, 10, 50);
    eng.cached[2][2] = 60;
    eng.room[2] = 99;
    eng.asked_fits = 0;
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 1,
       "prefix: among those it fits");
    is_int(eng.asked_fits, 3, "prefix: each engine asked once at most");

    r = add(0, 100, 0, 0);
    en.match = NULL;
    eng.load[0] = 3;
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 1
       && r->cached_tokens == 0, "prefix without a match: the least load");

    setup(FG_POLICY_VTC, 100, 128, FG_ROUTE_LEAST_LOAD, 3);
    eng.load[0] = 3;
    eng.load[1] = 1;
    eng.load[2] = 1;
    r = add(0, 100, 90, 20);
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 1
       && r->cached_tokens == 20,
       "least-load: the least load, ties the lowest index, match recorded");
    r = add(0, 100, 0, 0);
    eng.room[1] = 50;
    ok(fg_sched_dispatch_to(s, &en) == r && r->engine == 2,
       "least-load: among those it fits");

    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_ROUND_ROBIN, 3);
    add(0, 100, 0, 0);
    add(0, 100, 0, 0);
    add(0, 100, 0, 0);
    add(0, 100, 0, 0);
    add(0, 100, 0, 0);
    ok(next() == 0 && reqs[0].engine == 0 && next() == 1 && reqs[1].engine == 1
       && next() == 2 && reqs[2].engine == 2, "round-robin: 0, 1, 2");
    eng.room[0] = 10;
    ok(next() == 3 && reqs[3].engine == 1 && next() == 4
       && reqs[4].engine == 2, "round-robin: the next it fits");

    /* lpm, two engines: the candidate's value is on its route's engine */
    setup(FG_POLICY_LPM, 100, 128, FG_ROUTE_PREFIX, 2);
    add(0, 100, 30, 0);
    add(1, 100, 0, 60);
    add(2, 100, 50, 40);
    eng.room[1] = 10;
    r = fg_sched_dispatch_to(s, &en);
    ok(r == &reqs[2] && r->engine == 0 && r->cached_tokens == 50,
       "lpm, 2 engines: the longest match among engines each fits");
}


static void
test_peek_dlpm(void)
{
    setup(FG_POLICY_DLPM, 100, 128, FG_ROUTE_PREFIX, 1);

    spend(0, 150, 0);
    add(1, 10, 0, 0);
    add(0, 10, 0, 0);

    /* client 0 is at -50: only client 1 may admit (peek refills nothing) */
    ok(fg_sched_peek(s) == &reqs[1], "dlpm: peek skips clients at or "
       "below 0");
    is_int(next(), 1, "dlpm: as the dispatch does");
    ok(fg_sched_peek(s) == &reqs[2] && fg_client_deficit(s, &clients[0]) < 0,
       "dlpm: peek sees the refill a dispatch would make, without it");
    fg_sched_admit(s, &reqs[2]);
    is_num(fg_client_deficit(s, &clients[0]), 40, 1e-9,
           "dlpm: fg_sched_admit makes it: -50 + 100 - 10");
}


int
main(void)
{
    test_names();
    test_lpm();
    test_fits();
    test_window();
    test_dlpm_deficit();
    test_dlpm_refill();
    test_cached();
    test_routes();
    test_peek_dlpm();

    return fg_test_sched_done();
}
