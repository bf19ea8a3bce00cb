
/*
 * fairgate: tests of the policy core's qoe order (fg_sched_qoe.c): within
 * a client, the request with the most QoE to gain per token goes first;
 * the policy still picks the client.
 */


#include <stdlib.h>

#define NREQ  300


#include "fg_test_sched.h"


static void
setup(fg_policy_e policy)
{
    fg_sched_conf_t  conf;

    fg_sched_conf_init(&conf, FG_TEST_CLIENTS);
    conf.policy = policy;
    conf.order = FG_ORDER_QOE;
    conf.qoe_horizon = 5.0;

    fg_test_sched_open(&conf);
}


/* a request of client at now, its first token due ttft later */
static fg_request_t *
add(int client, uint32_t tokens, double now, double ttft)
{
    fg_request_t  *r;

    r = &reqs[nreq++];
    fg_request_init(r, tokens / 2, tokens - tokens / 2);
    r->cookie = nreq - 1;
    r->due = now + ttft;

    if (fg_sched_enqueue(s, &clients[client], r, now) != FG_OK) {
        return NULL;
    }

    return r;
}


/* the cookie of the request the next dispatch at now serves, or -1 */
static int
next_at(double now)
{
    fg_request_t  *r;

    fg_sched_set_clock(s, now);
    r = fg_sched_dispatch(s, NULL, NULL);

    return r ? (int) r->cookie : -1;
}


static void
test_least_late_first(void)
{
    setup(FG_POLICY_VTC);

    /* due at 1, 3 and 5; at 20 all are late, the last one least */
    add(0, 100, 0.0, 1.0);
    add(0, 100, 2.0, 1.0);
    add(0, 100, 4.0, 1.0);

    ok(next_at(20.0) == 2 && next_at(20.0) == 1 && next_at(20.0) == 0,
       "qoe order: of the late, the least late first");
}


static void
test_size_and_horizon(void)
{
    setup(FG_POLICY_VTC);

    /* 0 and 1 due within the horizon, 1 smaller; 2 due after it */
    add(0, 400, 0.0, 1.0);
    add(0, 100, 0.0, 1.5);
    add(0, 50, 0.0, 30.0);

    ok(next_at(0.0) == 1, "qoe order: due within the horizon, the smaller "
       "first (gain per token)");
    ok(next_at(0.0) == 0, "qoe order: one due beyond the horizon gains "
       "nothing yet and waits");
    ok(next_at(0.0) == 2 && next_at(0.0) == -1,
       "qoe order: it is served when it is the only one left");

    /* both due after the horizon: the one due first goes first */
    add(0, 100, 0.0, 40.0);
    add(0, 100, 1.0, 20.0);
    ok(next_at(1.0) == 4 && next_at(1.0) == 3,
       "qoe order: of those not due yet, the one due first");
}


/* vtc still picks the client: a flood gains a tenant nothing */
static void
test_vtc_picks_client(void)
{
    int  i, served[2];

    setup(FG_POLICY_VTC);

    for (i = 0; i < 200; i++) {
        add(0, 100, 10.0 + i * 0.01, 1.0);
    }

    for (i = 0; i < 20; i++) {
        add(1, 100, 0.0 + i * 0.01, 1.0);
    }

    served[0] = 0;
    served[1] = 0;

    for (i = 0; i < 20; i++) {
        fg_sched_set_clock(s, 12.0);
        served[fg_sched_dispatch(s, NULL, NULL)->client->id]++;
    }

    /* a client's fresh flood is served by its counter, not its freshness */
    ok(abs(served[0] - served[1]) <= 1,
       "qoe order under vtc: the flood's fresh requests do not crowd out "
       "the other client's late ones (%d vs %d)", served[0], served[1]);
}


/* fcfs has no client order of its own: the best of all clients */
static void
test_fcfs_across_clients(void)
{
    setup(FG_POLICY_FCFS);

    add(0, 100, 0.0, 1.0);
    add(1, 100, 3.0, 1.0);
    add(2, 100, 1.0, 1.0);

    ok(next_at(10.0) == 1 && next_at(10.0) == 2 && next_at(10.0) == 0,
       "qoe order under fcfs: the least late of any client first");
}


static void
test_conf(void)
{
    fg_sched_conf_t  conf;

    fg_sched_conf_init(&conf, 4);
    ok(conf.order == FG_ORDER_ARRIVAL, "the order is arrival by default");

    conf.order = FG_ORDER_QOE;
    conf.policy = FG_POLICY_DLPM;
    ok(fg_sched_conf_error(&conf) != NULL, "qoe order refused with dlpm");

    conf.policy = FG_POLICY_WSC;
    ok(fg_sched_conf_error(&conf) == NULL, "qoe order taken with wsc");

    conf.qoe_horizon = 0.0;
    ok(fg_sched_conf_error(&conf) != NULL, "a horizon of 0 is refused");
}


/* without a due time, a request is due at its arrival */
static void
test_no_due(void)
{
    fg_request_t  *r;

    setup(FG_POLICY_VTC);

    r = add(0, 100, 0.0, 0.0);
    r->due = 0.0;
    add(0, 100, 1.0, 0.0)->due = 0.0;

    ok(next_at(8.0) == 1 && next_at(8.0) == 0,
       "qoe order: without a due time, the arrival counts");
}


int
main(void)
{
    test_least_late_first();
    test_size_and_horizon();
    test_vtc_picks_client();
    test_fcfs_across_clients();
    test_conf();
    test_no_due();

    return fg_test_sched_done();
}
