
/*
 * fairgate: the load generator's run: a trace replayed against one URL.
 *
 * One thread, one libcurl multi handle: each request is an easy handle
 * added when its time comes (trace t times the time scale, from the
 * start), the loop sleeping in curl_multi_poll() until the next arrival,
 * a socket event or libcurl's own timer, whichever is first; the last
 * millisecond before an arrival is slept with clock_nanosleep(), as the
 * poll counts in milliseconds.  Connections are kept alive and reused,
 * at most max_connections at once (more requests wait in libcurl's queue,
 * and their arrival says so).
 *
 * arrival is when the request started going out: the time the handle was
 * added plus libcurl's pre-transfer time (connection set up, request about
 * to be written).  first_token is the first chunk with content (a stream)
 * or the first byte of the body; finish the last byte.
 *
 * Dependent stages (fg_sim_stages.h), unless open_loop_stages: a request
 * of an interaction goes out at the later of its scheduled time and the
 * outcome of the last of its interaction's lower stages; when one of
 * those failed it is not sent but skipped (status skipped, sent when it
 * was due).
 *
 * Outcome (fg_load_results.h): 2xx and a complete answer, ok; 429, and
 * 503 with the gateway's code "queue_full", rejected; 503 "queue_timeout",
 * a request timeout or the end of the run, timeout; anything else, error.
 *
 * Only the given URL is ever asked: no redirects followed, proxies from
 * the environment ignored, http and https only.
 */

#ifndef _FG_LOAD_RUN_H_INCLUDED_
#define _FG_LOAD_RUN_H_INCLUDED_


#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "fg_load_req.h"
#include "fg_load_results.h"
#include "fg_sim_trace.h"


typedef struct {
    const char           *url;
    fg_load_req_conf_t    req;
    double                time_scale;        /* trace seconds to run's */
    double                max_seconds;       /* stop the run then */
    double                request_timeout;   /* s; <= 0: none */
    long                  max_connections;
    fg_qoe_expect_t       qoe;               /* the default; 0: none */
    unsigned              token_times:1;
    unsigned              progress:1;        /* the line on stderr */
    unsigned              open_loop_stages:1;
    volatile sig_atomic_t *stop;             /* set: stop as at the end */
} fg_load_conf_t;


typedef struct {
    size_t             sent;
    size_t             unsent;
    fg_sim_outcomes_t  count;        /* skipped: an earlier stage failed */
    size_t             cut;          /* in flight when the run was stopped */
    double             elapsed;
    double             lag_max;      /* |arrival - due|, seconds */
    double             lag_mean;
    double             lag_p99;
} fg_load_summary_t;


void fg_load_conf_init(fg_load_conf_t *conf);

/* res: tr->n zeroed entries; 0, or -1 with the reason in err */
int fg_load_run(const fg_load_conf_t *conf, const fg_sim_trace_t *tr,
    fg_load_result_t *res, fg_load_summary_t *sum, char *err, size_t size);


#endif /* _FG_LOAD_RUN_H_INCLUDED_ */
