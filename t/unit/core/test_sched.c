
/*
 * fairgate: tests of the policy core, policy by policy.
 */


#define NREQ  64


#include "fg_test_sched.h"


static void
setup(fg_policy_e policy, uint32_t rpm)
{
    fg_sched_conf_t  conf;

    fg_sched_conf_init(&conf, FG_TEST_CLIENTS);
    conf.policy = policy;
    conf.rpm_limit = rpm;

    fg_test_sched_open(&conf);
}


/* the next of reqs[], in and out tokens, not queued yet */
static fg_request_t *
fresh(uint32_t in, uint32_t out)
{
    fg_request_t  *r;

    r = &reqs[nreq++];
    fg_request_init(r, in, out);
    r->cookie = nreq - 1;

    return r;
}


/* r queued for the client: r, or NULL when refused */
static fg_request_t *
queue(int client, fg_request_t *r, double now)
{
    return fg_sched_enqueue(s, &clients[client], r, now) == FG_OK ? r : NULL;
}


static fg_request_t *
add(int client, uint32_t in, uint32_t out, double now)
{
    return queue(client, fresh(in, out), now);
}


/* which client the next dispatch serves, or -1 */
static int
next_client(void)
{
    fg_request_t  *r;

    r = fg_sched_dispatch(s, NULL, NULL);

    return r ? (int) r->client->id : -1;
}


static int
no_fit(fg_request_t *r, void *data)
{
    (void) r;
    (void) data;
    return 0;
}


static int
fits_under(fg_request_t *r, void *data)
{
    return r->input_tokens + r->max_output_tokens <= *(uint32_t *) data;
}


static void
test_fcfs(void)
{
    setup(FG_POLICY_FCFS, 0);

    add(1, 10, 10, 0.0);
    add(0, 10, 10, 0.1);
    add(1, 10, 10, 0.2);
    add(2, 10, 10, 0.3);
    add(0, 10, 10, 0.4);

    /* counters must not matter to fcfs */
    clients[1].counter = 1e6;

    ok(next_client() == 1 && next_client() == 0 && next_client() == 1
       && next_client() == 2 && next_client() == 0 && next_client() == -1,
       "fcfs serves in global arrival order whatever the counters");
}


static void
test_rpm(void)
{
    int  i, accepted;

    setup(FG_POLICY_RPM, 3);

    accepted = 0;
    for (i = 0; i < 5; i++) {
        accepted += add(0, 10, 10, 100.0 + i) != NULL;
    }

    is_int(accepted, 3, "rpm 3: three of five requests in a minute pass");
    is_int(clients[0].rejected, 2, "rpm counts the two rejections");
    ok(add(1, 10, 10, 105.0) != NULL, "rpm limits per client");
    ok(add(0, 10, 10, 159.5) == NULL, "still limited 59.5 s later");
    ok(add(0, 10, 10, 160.0) != NULL, "a slot frees 60 s after the first");

    ok(next_client() == 0 && next_client() == 0 && next_client() == 0
       && next_client() == 1 && next_client() == 0,
       "rpm serves what it lets in first come first served");

    setup(FG_POLICY_VTC, 0);
    fg_sched_destroy(s, &fg_sched_heap);
    s = NULL;

    {
        fg_sched_conf_t  conf;

        fg_sched_conf_init(&conf, 4);
        conf.policy = FG_POLICY_RPM;
        ok(fg_sched_create(&conf, &fg_sched_heap) == NULL
           && fg_sched_conf_error(&conf) != NULL,
           "policy rpm without a limit is refused");
    }
}


static void
test_vtc_order_and_charges(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_VTC, 0);

    add(0, 100, 50, 0.0);
    add(0, 100, 50, 0.0);
    add(1, 10, 50, 0.0);
    add(1, 10, 50, 0.0);

    /* equal counters: the older head wins; then counters decide */
    is_int(next_client(), 0, "tie goes to the older request");
    is_num(clients[0].counter, 100, 1e-9, "input charged at admission");
    is_int(next_client(), 1, "then the least counter (0 < 100)");
    is_int(next_client(), 1, "still the least counter (10 < 100)");
    is_int(next_client(), 0, "then client 0 again");

    r = &reqs[2];
    fg_sched_charge(s, r, 1);
    is_num(clients[1].counter, 22, 1e-9, "one output token costs w_q = 2");
    fg_sched_charge(s, r, 4);
    is_num(clients[1].counter, 30, 1e-9, "four more cost 8");
    is_int(r->output_tokens, 5, "output tokens counted");

    fg_sched_finish(s, r);
    is_num(clients[1].counter, 30, 1e-9,
           "finishing charges nothing more (no extra step)");
    fg_sched_charge(s, r, 3);
    is_num(clients[1].counter, 30, 1e-9, "a finished request is not charged");

    ok(clients[1].service == 30 && clients[1].input_tokens == 20
       && clients[1].output_tokens == 5 && clients[1].finished == 1,
       "read-out: service and token counts");
}


static void
test_vtc_lift(void)
{
    setup(FG_POLICY_VTC, 0);

    add(0, 100, 10, 0.0);
    add(1, 300, 10, 0.0);
    add(1, 300, 10, 0.0);
    next_client();
    next_client();

    /* waiting: client 1 (counter 300); client 0 is idle at 100 */
    add(0, 5, 10, 1.0);
    is_num(clients[0].counter, 300, 1e-9,
           "returning client lifted to the least waiting counter");

    /* a new client starts at 0 and is lifted the same way */
    add(2, 5, 10, 2.0);
    is_num(clients[2].counter, 300, 1e-9, "new client lifted too");

    /* the lift is a max: a client above the floor keeps its counter */
    clients[3].counter = 1000;
    add(3, 5, 10, 3.0);
    is_num(clients[3].counter, 1000, 1e-9, "lift never lowers a counter");

    /* drain; with nobody waiting the floor is the last client to leave */
    while (next_client() >= 0) { /* void */ }

    is_num(fg_sched_min_counter(s), -1, 0, "no waiting client: no minimum");

    add(1, 5, 10, 4.0);
    ok(clients[1].counter == 1005,
       "idle system: lifted to the last client that left (%.1f)",
       clients[1].counter);

    /* the floor outlives the client: release it, then lift from memory */
    next_client();
    fg_client_release(s, &clients[1]);
    fg_client_release(s, &clients[2]);
    fg_client_init(s, &clients[2], 2, 1.0);
    add(2, 5, 10, 5.0);
    is_num(clients[2].counter, 1010, 1e-9,
           "lift uses a released last client's counter");
}


static void
test_lcf_no_lift(void)
{
    int  i, run;

    setup(FG_POLICY_LCF, 0);

    for (i = 0; i < 5; i++) {
        add(0, 100, 10, 0.0);
    }

    for (i = 0; i < 4; i++) {
        next_client();
    }

    /* client 0 has 400 and one waiting; client 1 arrives fresh at 0 */
    for (i = 0; i < 5; i++) {
        add(1, 100, 10, 1.0);
    }

    is_num(clients[1].counter, 0, 0, "lcf does not lift");

    run = 0;
    while (next_client() == 1) {
        run++;
    }

    is_int(run, 4, "lcf lets the newcomer monopolise until it catches up");
}


static void
test_blocked_head(void)
{
    uint32_t  room;

    setup(FG_POLICY_VTC, 0);

    add(0, 500, 500, 0.0);
    add(1, 10, 10, 0.1);
    clients[1].counter = 5;

    /* client 0 is least served but its request is too large */
    room = 100;
    ok(fg_sched_dispatch(s, fits_under, &room) == NULL,
       "a head that does not fit stops admission");
    ok(fg_sched_peek(s) == &reqs[0] && clients[1].n_waiting == 1,
       "and no other client is served in its place");
    ok(fg_sched_dispatch(s, no_fit, NULL) == NULL
       && fg_sched_peek(s) == &reqs[0], "nothing moves while it cannot fit");

    room = 1000;
    ok(fg_sched_dispatch(s, fits_under, &room) == &reqs[0],
       "it goes once it fits");
}


static void
test_weighted(void)
{
    int  i, n[2];

    setup(FG_POLICY_VTC, 0);
    fg_client_set_weight(s, &clients[1], 2.0);
    ok(fg_client_set_weight(s, &clients[2], 0.0) == FG_ERROR
       && fg_client_set_weight(s, &clients[2], -1.0) == FG_ERROR,
       "weights must be positive");

    for (i = 0; i < 30; i++) {
        add(0, 100, 0, 0.0);
        add(1, 100, 0, 0.0);
    }

    n[0] = n[1] = 0;
    for (i = 0; i < 30; i++) {
        n[next_client()]++;
    }

    ok(n[0] == 10 && n[1] == 20, "weight 2 gets twice the admissions "
       "(%d:%d)", n[0], n[1]);
    is_num(clients[1].counter, 1000, 1e-9, "weighted counter is cost/weight");
    is_num(clients[1].service, 2000, 1e-9, "service read-out is unweighted");
}


static void
test_predict(void)
{
    double         before;
    fg_request_t  *r;

    setup(FG_POLICY_VTC_PREDICT, 0);

    r = add(0, 10, 100, 0.0);
    next_client();
    is_int(r->prepaid_output, 0, "no history: nothing prepaid");
    fg_sched_charge(s, r, 10);
    fg_sched_finish(s, r);
    is_num(clients[0].counter, 10 + 20, 1e-9, "first request charged as vtc");
    is_num(clients[0].predicted_output, 10, 1e-9,
           "prediction starts at the first length");

    r = add(0, 10, 100, 1.0);
    next_client();
    is_int(r->prepaid_output, 10, "the prediction is prepaid");
    is_num(clients[0].counter, 30 + 10 + 20, 1e-9,
           "admission charges input and predicted output");
    fg_sched_charge(s, r, 10);
    is_num(clients[0].counter, 60, 1e-9, "predicted tokens are not charged");
    fg_sched_charge(s, r, 10);
    is_num(clients[0].counter, 80, 1e-9, "tokens beyond it are charged");
    fg_sched_finish(s, r);
    is_num(clients[0].predicted_output, 12, 1e-9, "p = (4p + actual) / 5");

    r = add(0, 10, 100, 2.0);
    next_client();
    is_num(clients[0].counter, 80 + 10 + 24, 1e-9, "prepaid 12");
    fg_sched_charge(s, r, 5);
    fg_sched_finish(s, r);
    is_num(clients[0].counter, 80 + 10 + 10, 1e-9,
           "shorter than predicted: the difference is refunded");

    r = add(0, 10, 100, 3.0);
    r->hint_output = 50;
    next_client();
    is_int(r->prepaid_output, 50, "a per-request hint overrides history");
    fg_sched_cancel(s, r);
    is_num(clients[0].counter, 100 + 10, 1e-9,
           "cancel refunds the unused prediction");
    is_num(clients[0].predicted_output, 10.6, 1e-9,
           "cancel does not teach the predictor");

    r = add(0, 10, 8, 4.0);
    next_client();
    is_int(r->prepaid_output, 8, "history never prepays beyond max output");
    fg_sched_finish(s, r);

    r = add(0, 10, 8, 5.0);
    r->hint_output = 12;
    next_client();
    is_int(r->prepaid_output, 12, "a hint is taken as given");
    fg_sched_charge(s, r, 8);
    before = clients[0].counter;
    fg_sched_finish(s, r);
    is_num(clients[0].counter, before - 8, 1e-9,
           "and its excess over the output is refunded");
}


static void
test_oracle(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_VTC_ORACLE, 0);

    r = add(0, 10, 100, 0.0);
    r->oracle_output = 30;
    next_client();
    is_num(clients[0].counter, 10 + 60, 1e-9, "oracle prepays true output");
    fg_sched_charge(s, r, 30);
    fg_sched_finish(s, r);
    is_num(clients[0].counter, 70, 1e-9, "and charges nothing after");
}


static void
test_profiled_vtc(void)
{
    fg_request_t     *r;
    fg_sched_conf_t   conf;

    if (s != NULL) {
        fg_sched_destroy(s, &fg_sched_heap);
    }

    fg_sched_conf_init(&conf, 2);
    fg_cost_profiled(&conf.cost);
    s = fg_sched_create(&conf, &fg_sched_heap);
    fg_client_init(s, &clients[0], 0, 1.0);
    nreq = 0;

    r = add(0, 10, 100, 0.0);
    next_client();
    is_num(clients[0].counter, 2.1 * 10 + 11.46, 1e-9, "admission: h(x, 0)");
    fg_sched_charge(s, r, 1);
    fg_sched_charge(s, r, 1);
    fg_sched_charge(s, r, 3);
    is_num(clients[0].counter, fg_cost_eval(&conf.cost, 10, 5), 1e-9,
           "after 5 tokens the counter is h(x, 5)");
}


static void
test_cancel_and_release(void)
{
    fg_request_t      *a, *b;
    fg_sched_stats_t   st;

    setup(FG_POLICY_VTC, 0);

    a = add(0, 10, 10, 0.0);
    b = add(0, 10, 10, 0.0);
    add(1, 10, 10, 0.0);

    ok(fg_client_release(s, &clients[0]) == FG_BUSY,
       "a client with waiting requests cannot be released");

    fg_sched_cancel(s, a);
    is_int(clients[0].n_waiting, 1, "cancel removes a waiting request");
    is_int(next_client(), 0, "the next one still goes");
    ok(b->state == FG_REQ_RUNNING, "it was the second request");
    fg_sched_cancel(s, a);
    is_int(clients[0].cancelled, 1, "cancelling twice counts once");

    fg_sched_stats(s, &st);
    ok(st.clients == 4 && st.backlogged == 1 && st.waiting == 1
       && st.running == 1 && st.enqueued == 3 && st.admitted == 1
       && st.cancelled == 1, "stats add up");

    fg_sched_finish(s, b);
    ok(fg_client_release(s, &clients[0]) == FG_OK, "an idle client leaves");

    /* the released client was the last to leave: its counter stays */
    next_client();
    ok(fg_client_init(s, &clients[0], 9, 1.0) == FG_OK,
       "its place can be reused");

    fg_client_release(s, &clients[3]);
    ok(fg_client_init(s, &clients[3], 3, 1.0) == FG_OK
       && fg_client_init(s, &clients[3], 3, 1.0) == FG_ERROR,
       "no more than max_clients exist");
    ok(fg_client_init(s, &clients[3], 3, 0.0) == FG_ERROR,
       "a client needs a positive weight");

    fg_request_init(&reqs[NREQ - 1], 1, 1);
    ok(fg_sched_enqueue(s, &clients[1], &reqs[NREQ - 1], 0) == FG_OK
       && fg_sched_enqueue(s, &clients[1], &reqs[NREQ - 1], 0) == FG_ERROR,
       "a request cannot be queued twice");
}


static void
test_correct(void)
{
    fg_request_t     *r;
    fg_sched_conf_t   conf;

    setup(FG_POLICY_VTC, 0);
    fg_client_set_weight(s, &clients[0], 2.0);

    r = add(0, 10, 100, 0.0);
    next_client();
    fg_sched_charge(s, r, 5);
    is_num(clients[0].service, 10 + 10, 1e-9, "estimate: 10 in, 5 out");

    fg_sched_correct(s, r, 12, 8);
    is_num(clients[0].service, 12 + 16, 1e-9,
           "corrected up to the true 12 in, 8 out");
    is_num(clients[0].counter, 14, 1e-9, "the counter is weighted");
    ok(clients[0].input_tokens == 12 && clients[0].output_tokens == 8,
       "the client's token counts follow");

    fg_sched_correct(s, r, 4, 3);
    is_num(clients[0].service, 4 + 6, 1e-9, "and down to 4 in, 3 out");

    fg_sched_charge(s, r, 2);
    is_num(clients[0].service, 4 + 10, 1e-9, "charging goes on from there");
    fg_sched_finish(s, r);
    is_num(clients[0].predicted_output, 5, 1e-9,
           "the predictor learns the corrected length");

    fg_sched_correct(s, r, 100, 100);
    is_num(clients[0].service, 14, 1e-9, "a finished request is left alone");

    /* a waiting client moves in the heap when its counter changes */
    setup(FG_POLICY_VTC, 0);
    r = add(0, 10, 10, 0.0);
    add(0, 10, 10, 0.0);
    add(1, 10, 10, 0.0);
    is_int(next_client(), 0, "0 first");
    fg_sched_correct(s, r, 0, 0);
    is_int(next_client(), 0, "refunded below 1: 0 again");
    is_int(next_client(), 1, "then 1");

    /* prepaid output stays prepaid; h is not linear */
    if (s != NULL) {
        fg_sched_destroy(s, &fg_sched_heap);
    }

    fg_sched_conf_init(&conf, 2);
    conf.policy = FG_POLICY_VTC_ORACLE;
    fg_cost_profiled(&conf.cost);
    s = fg_sched_create(&conf, &fg_sched_heap);
    fg_client_init(s, &clients[0], 0, 1.0);
    nreq = 0;

    r = add(0, 10, 100, 0.0);
    r->oracle_output = 30;
    next_client();
    fg_sched_charge(s, r, 10);
    fg_sched_correct(s, r, 20, 20);
    is_num(clients[0].service, fg_cost_eval(&conf.cost, 20, 30), 1e-9,
           "below the prepaid output: h(in', prepaid)");
    fg_sched_correct(s, r, 20, 40);
    is_num(clients[0].service, fg_cost_eval(&conf.cost, 20, 40), 1e-9,
           "beyond it: h(in', out')");
    fg_sched_correct(s, r, 20, 25);
    fg_sched_finish(s, r);
    is_num(clients[0].service, fg_cost_eval(&conf.cost, 20, 25), 1e-9,
           "finish refunds the prepaid output not produced");
}


static void
test_names(void)
{
    fg_policy_e  p;

    ok(fg_sched_policy_parse(&p, "vtc-predict") == 0
       && p == FG_POLICY_VTC_PREDICT, "parse vtc-predict");
    ok(fg_sched_policy_parse(&p, "wfq") == -1, "reject unknown policy");
    is_str(fg_sched_policy_name(FG_POLICY_LCF), "lcf", "name of lcf");
}


/* a wsc request of an app, at a stage, maybe continuing an interaction */
static fg_request_t *
add_wsc(int client, fg_app_t *app, uint32_t in, uint32_t sys, uint32_t out,
    unsigned continues, double now)
{
    fg_request_t  *r;

    r = fresh(in, out);
    r->app = app;
    r->system_tokens = sys;
    r->interaction = continues ? 100 + client : 0;
    r->continues = continues;

    return queue(client, r, now);
}


/* serves one request to its end; the client served, or -1 */
static int
serve_one(void)
{
    fg_request_t  *r;

    r = fg_sched_dispatch(s, NULL, NULL);
    if (r == NULL) {
        return -1;
    }

    fg_sched_charge(s, r, r->max_output_tokens);
    fg_sched_finish(s, r);

    return (int) r->client->id;
}


static void
test_wsc_app_weights(void)
{
    int       i, c, served[2];
    uint64_t  tokens[2];
    fg_app_t  big, small;

    setup(FG_POLICY_WSC, 0);

    /* w = 1*1000 + 2*50 + 1*100 = 1200 and 1*100 + 2*5 + 1*10 = 120 */
    fg_app_init(&big, 1, 0);
    fg_app_init(&small, 2, 0);
    fg_app_set_stage(&big, 0, 1000, 50, 100);
    fg_app_set_stage(&small, 0, 100, 5, 10);

    is_num(fg_app_weight(s, &big, 0), 1200, 1e-9, "wsc: w_aj of big");
    is_num(fg_app_weight(s, &small, 3), 120, 1e-9,
           "wsc: a stage beyond the profile takes the last one's");
    is_num(fg_app_weight(s, NULL, 0), 1, 1e-9, "wsc: no app weighs 1");

    for (i = 0; i < 20; i++) {
        add_wsc(0, &big, 1000, 50, 100, 0, i);
        add_wsc(1, &small, 100, 5, 10, 0, i);
    }

    served[0] = served[1] = 0;
    tokens[0] = tokens[1] = 0;

    for (i = 0; i < 20; i++) {
        c = serve_one();
        served[c]++;
        tokens[c] += c == 0 ? 1150 : 115;
    }

    is_int(served[0], 10, "wsc: requests alternate at their apps' weights");
    is_int(served[1], 10, "wsc: so the small app gets as many");
    is_num((double) tokens[0] / tokens[1], 10, 1e-9,
           "wsc: token shares follow the app weights (10:1)");
    is_num(clients[0].counter, 10, 1e-9,
           "wsc: a request as its profile costs 1");
    is_num(clients[0].service, 10, 1e-9, "wsc: service unweighted read-out");

    /* E = 2 charges twice as much: half the requests */
    setup(FG_POLICY_WSC, 0);
    ok(fg_client_set_priority(s, &clients[0], 2.0) == FG_OK, "set E");
    ok(fg_client_set_priority(s, &clients[0], 0.0) == FG_ERROR,
       "E must be positive");

    for (i = 0; i < 20; i++) {
        add_wsc(0, &big, 1000, 50, 100, 0, i);
        add_wsc(1, &big, 1000, 50, 100, 0, i);
    }

    served[0] = served[1] = 0;

    for (i = 0; i < 30; i++) {
        served[serve_one()]++;
    }

    is_int(served[0], 10, "wsc: E = 2 gets a third of the requests");
    is_int(served[1], 20, "wsc: E = 1 the other two thirds");
}


static void
test_wsc_selection(void)
{
    fg_app_t       app;
    fg_request_t  *r;

    setup(FG_POLICY_WSC, 0);
    fg_app_init(&app, 1, 0);
    fg_app_set_stage(&app, 0, 100, 0, 100);

    /* client 1 is ahead in service, client 0 behind */
    add_wsc(1, &app, 100, 0, 100, 0, 0);
    is_int(serve_one(), 1, "wsc: the only waiting one");

    add_wsc(0, &app, 100, 0, 100, 0, 1);
    add_wsc(2, &app, 100, 0, 100, 0, 2);
    add_wsc(1, &app, 100, 0, 100, 1, 3);

    is_int(serve_one(), 1,
           "wsc: a continuation first, though its user is most served");
    is_int(serve_one(), 0, "wsc: then the oldest of the least served");
    is_int(serve_one(), 2, "wsc: then the next");
    is_int(serve_one(), -1, "wsc: nothing left");

    /* two continuations: the least-served user's first */
    add_wsc(3, &app, 100, 0, 100, 0, 4);
    add_wsc(1, &app, 100, 0, 100, 1, 5);
    add_wsc(0, &app, 100, 0, 100, 1, 6);
    add_wsc(1, &app, 100, 0, 100, 0, 7);

    is_num(clients[0].counter, clients[1].counter, 1e-9,
           "wsc: users 0 and 1 level");
    is_int(serve_one(), 1, "wsc: level continuations: oldest first");
    is_int(serve_one(), 0, "wsc: then the less served user's one");
    is_int(serve_one(), 3, "wsc: no continuation: least served (lifted)");
    is_int(serve_one(), 1, "wsc: then user 1's plain request");

    /* a cancelled continuation leaves the second heap */
    r = add_wsc(2, &app, 100, 0, 100, 1, 8);
    add_wsc(0, &app, 100, 0, 100, 0, 9);
    fg_sched_cancel(s, r);
    is_int(clients[2].n_cont, 0, "wsc: cancel drops the continuation");
    is_int(serve_one(), 0, "wsc: the plain request after the cancel");
    is_int(serve_one(), -1, "wsc: empty again");

    /* other policies ignore the flag */
    setup(FG_POLICY_VTC, 0);
    add(0, 10, 10, 0);
    r = &reqs[nreq++];
    fg_request_init(r, 10, 10);
    r->continues = 1;
    fg_sched_enqueue(s, &clients[1], r, 1);
    is_int(next_client(), 0, "vtc: continues is no priority");
    is_int(next_client(), 1, "vtc: then the other");
}


static void
test_wsc_learn(void)
{
    int       i;
    fg_app_t  app;

    setup(FG_POLICY_WSC, 0);
    fg_app_init(&app, 1, 1);

    is_num(fg_app_weight(s, &app, 0), 1, 1e-9, "wsc: unlearnt app weighs 1");

    add_wsc(0, &app, 100, 10, 50, 0, 0);
    serve_one();
    is_num(fg_app_weight(s, &app, 0), 170, 1e-9,
           "wsc: the first finished request sets the profile");

    for (i = 0; i < 30; i++) {
        add_wsc(0, &app, 200, 10, 50, 0, i + 1);
        serve_one();
    }

    is_num(fg_app_weight(s, &app, 0), 270, 0.5,
           "wsc: the moving average follows the traffic");
    /*
     * The first, unprofiled, cost 170; the rest about 1 each, a bit more
     * while the average still lags below 270.
     */
    ok(clients[0].service > 170 + 30 && clients[0].service < 170 + 30 * 1.6,
       "wsc: charges use the weight at admission (%.2f)",
       clients[0].service);
    ok(fg_app_set_stage(&app, FG_APP_STAGES, 1, 1, 1) == FG_ERROR,
       "wsc: stage out of range");
    is_str(fg_sched_policy_name(FG_POLICY_WSC), "wsc", "name of wsc");
}


/* fairgate_redis: service from other gateways moves the counter and order */
static void
test_add_remote(void)
{
    setup(FG_POLICY_VTC, 0);
    fg_client_set_weight(s, &clients[1], 2.0);

    add(0, 100, 10, 0.0);
    add(1, 100, 10, 0.0);
    add(0, 100, 10, 0.0);
    add(1, 100, 10, 0.0);

    /* both at 0: client 0 arrived first */
    fg_client_add_remote(s, &clients[0], 50);
    is_num(clients[0].counter, 50, 1e-9, "remote service adds to the counter");
    is_num(clients[0].service, 0, 0, "but not to the local read-out");

    fg_client_add_remote(s, &clients[1], 40);
    is_num(clients[1].counter, 20, 1e-9, "divided by the weight");

    ok(next_client() == 1, "the heap follows: the least counter goes first");

    fg_client_add_remote(s, &clients[1], -500);
    fg_client_add_remote(s, &clients[1], 0);
    ok(clients[1].counter > 20, "nothing negative or zero is taken (%.1f)",
       clients[1].counter);

    /* a returning client is lifted to counters that include remote ones */
    while (next_client() >= 0) { /* void */ }
    add(2, 10, 10, 1.0);
    fg_client_add_remote(s, &clients[2], 1000);
    add(3, 10, 10, 1.0);
    ok(clients[2].counter >= 1000, "a waiting client's remote service");
    is_num(clients[3].counter, clients[2].counter, 1e-9,
           "the lift sees remote service (a new client starts level)");
}


int
main(void)
{
    test_fcfs();
    test_rpm();
    test_vtc_order_and_charges();
    test_vtc_lift();
    test_lcf_no_lift();
    test_blocked_head();
    test_weighted();
    test_predict();
    test_oracle();
    test_profiled_vtc();
    test_cancel_and_release();
    test_correct();
    test_names();
    test_wsc_app_weights();
    test_wsc_selection();
    test_wsc_learn();
    test_add_remote();

    return fg_test_sched_done();
}
