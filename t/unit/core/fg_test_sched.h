
/*
 * fairgate: the scheduler a policy core test drives, its four clients
 * (weight 1) and its requests (NREQ of them, defined by the test before
 * it includes this).
 */

#ifndef _FG_TEST_SCHED_H_INCLUDED_
#define _FG_TEST_SCHED_H_INCLUDED_


#include "fg_tap.h"
#include "fg_sched.h"


#define FG_TEST_CLIENTS  4


static fg_sched_t     *s;
static fg_client_t     clients[FG_TEST_CLIENTS];
static fg_request_t    reqs[NREQ];
static int             nreq;


/* a fresh scheduler of conf (its clients FG_TEST_CLIENTS), no request */
static inline void
fg_test_sched_open(const fg_sched_conf_t *conf)
{
    int  i;

    if (s != NULL) {
        fg_sched_destroy(s, &fg_sched_heap);
    }

    s = fg_sched_create(conf, &fg_sched_heap);

    for (i = 0; i < FG_TEST_CLIENTS; i++) {
        fg_client_init(s, &clients[i], i, 1.0);
    }

    nreq = 0;
}


/* the test's end: the scheduler freed, the plan */
static inline int
fg_test_sched_done(void)
{
    fg_sched_destroy(s, &fg_sched_heap);

    return done_testing();
}


#endif /* _FG_TEST_SCHED_H_INCLUDED_ */
