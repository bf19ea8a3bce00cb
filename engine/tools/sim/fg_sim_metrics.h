
/*
 * fairgate: the VTC paper's fairness metric, from a run's results.
 *
 * Exactly (section 5.1 of the paper, as its artifact computes it):
 *
 *   - T is the last arrival; times are the trace's, starting at 0.
 *   - Ticks k = 0 .. 99 have centres c_k = 30 + k * T / 100 and windows
 *     [c_k - 30, c_k + 30): 60 s windows, the first starting at 0, so the
 *     first 30 s are warm-up and never a window's centre.
 *   - service_i(k): for each request of client i served (status ok), its
 *     cost h(input, output) spread evenly over [first_token, finish],
 *     the part inside the window, divided by 60 s.  A request whose
 *     first token is its last (finish = first_token) counts whole in the
 *     window that holds that instant.
 *   - rate_i(k): the cost h(input, output) of the requests of client i
 *     that arrived in the window, served or not (rejected ones were sent),
 *     divided by 60 s.
 *   - diff(k) = sum over i of min(max_j service_j(k) - service_i(k),
 *     |rate_i(k) - service_i(k)|): a client short of the best-served one
 *     counts only as far as it asked for more than it got.
 *   - max_diff, avg_diff, var_diff: max, mean and population variance of
 *     diff over the ticks.
 *   - weighted (not in the paper): service_i(k) and rate_i(k) are divided
 *     by client i's weight (1 unless the trace or results gave one) before
 *     diff(k) is taken, so max_j is over service per unit of weight.  A
 *     weighted scheduler that serves clients in proportion to their
 *     weights then scores 0 where the unweighted metric counts every
 *     client below the heaviest one; with all weights 1 the two agree.
 *     service[] and rate[] hold the divided figures, the per-client
 *     totals (clients[].service) do not.
 *   - throughput: input + output tokens of served requests over
 *     (last finish - first arrival).
 *   - prefix caches (not in the paper): a request's cost is h(input -
 *     cached_tokens, output), the results' cached_tokens (0 when not
 *     given), in service and rate alike: input is counted as DLPM charges
 *     it, whatever the policy, so that policies compare on one measure;
 *     without cached tokens it is the paper's.  cache_hit_rate is the
 *     served requests' cached over input tokens; per engine (the results'
 *     "engine"), the requests it served and its hit rate.
 *   - per client, the mean TTFT (first_token - arrival) and end-to-end
 *     latency (finish - arrival) of its served requests, and its share of
 *     the service in the ticks' windows (sum over k of service_i(k) over
 *     the sum of every client's; per unit of weight when weighted): what
 *     it got while the trace was arriving, not after.
 *   - QoE (not in the paper): over the requests whose results carry Andes's
 *     "qoe" (those with expectations, fg_sim_trace.h), its mean, the share
 *     at >= 0.95 and its p10, p50 and p90 (nearest rank); printed only
 *     when one does.
 */

#ifndef _FG_SIM_METRICS_H_INCLUDED_
#define _FG_SIM_METRICS_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_cost.h"
#include "fg_sim_trace.h"


#define FG_SIM_TICKS    100
#define FG_SIM_WINDOW   60.0
#define FG_SIM_WARMUP   30.0


typedef struct {
    uint64_t           sent;
    fg_sim_outcomes_t  count;
    uint64_t           input_tokens;      /* of served requests */
    uint64_t           output_tokens;
    uint64_t           cached_tokens;     /* of their input */
    double             service;           /* cost of served requests */
    double             ttft_mean;         /* s, of served requests */
    double             e2e_mean;
    double             share;             /* of the windows' service */
} fg_sim_client_stats_t;


/* what one engine served (the results' "engine") */
typedef struct {
    uint64_t   served;
    uint64_t   input_tokens;
    uint64_t   cached_tokens;
} fg_sim_engine_stats_t;


/*
 * The service figures of FairServe's Table 3, over a group of users.  A
 * request failed unless ok (rejected, timeout, error or skipped).
 *
 *   - service % requests: requests_ok / requests;
 *   - service % interactions: interactions_completed (every request ok) /
 *     interactions; the rest are aborted, and what was served to them
 *     (input + output tokens of their ok requests) is tokens_wasted;
 *   - served users % requests: users_ok_requests (none of their requests
 *     failed) / users;
 *   - served users % interactions: users_ok_interactions (none of their
 *     interactions aborted) / users_with_interactions;
 *   - users_served, users_completing: users one of whose requests was
 *     ok, one of whose interactions completed (the paper's "users who
 *     received a final response" read loosely; in a trace where every
 *     request belongs to an interaction the strict by-requests and
 *     by-interactions figures are the same, these are not).
 *
 * Users are the trace's "user", else its client.
 */
typedef struct {
    uint64_t   requests;
    uint64_t   requests_ok;
    uint64_t   interactions;
    uint64_t   interactions_completed;
    uint64_t   interactions_aborted;
    uint64_t   tokens_wasted;
    uint64_t   users;
    uint64_t   users_served;
    uint64_t   users_ok_requests;
    uint64_t   users_with_interactions;
    uint64_t   users_ok_interactions;
    uint64_t   users_completing;
} fg_sim_group_stats_t;


/*
 * The abusive users: the fairserve suite's (fg_sim_gen.c) are each app's
 * user 0, named "APP-u0"; a user whose name ends so is abusive, any other
 * normal.
 */
#define FG_SIM_ABUSIVE_SUFFIX  "-u0"


/* Andes's QoE over the results that carry one */
typedef struct {
    uint64_t   requests;
    double     mean;
    double     share_095;                 /* of them at QoE >= 0.95 */
    double     p10;
    double     p50;
    double     p90;

    /* --engine-sched andes: requests that say, and their preemptions */
    uint64_t   preempt_requests;
    uint64_t   preemptions;
} fg_sim_qoe_stats_t;


typedef struct {
    double                  max_diff;
    double                  avg_diff;
    double                  var_diff;
    double                  throughput;   /* tokens per second */
    unsigned                weighted:1;

    /* served requests' input and cached tokens; cached / input */
    uint64_t                input_tokens;
    uint64_t                cached_tokens;
    double                  cache_hit_rate;

    /* by the trace's string index of the engine's name; NULL: none said */
    fg_sim_engine_stats_t  *engines;

    double                  first_arrival;
    double                  last_arrival;
    double                  last_finish;

    /*
     * Table 3's figures: every user, the normal and the abusive ones.
     * Interactions (the trace's "interaction"): aborted when any of its
     * requests failed (rejected, timeout, error or skipped), completed
     * when all were served; tokens_wasted is what was served to aborted
     * ones.  Users are the trace's "user", else its client; served when
     * one request was.  The JSON's top-level figures of them are all's.
     */
    fg_sim_group_stats_t    all;
    fg_sim_group_stats_t    normal;
    fg_sim_group_stats_t    abusive;

    fg_sim_qoe_stats_t      qoe;

    uint32_t                nclients;
    fg_sim_client_stats_t  *clients;

    /* per tick k: centre[k], diff[k]; per client i: [k * nclients + i] */
    double                  centre[FG_SIM_TICKS];
    double                  diff[FG_SIM_TICKS];
    double                 *service;
    double                 *rate;
} fg_sim_metrics_t;


/* 0, or -1 when out of memory; weighted: divide by the clients' weights */
int fg_sim_metrics_compute(fg_sim_metrics_t *m, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const fg_cost_t *cost, int weighted);
void fg_sim_metrics_free(fg_sim_metrics_t *m);

/* one JSON object, malloc()ed: the figures and per-client totals */
char *fg_sim_metrics_json(const fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr);

/*
 * Columns for gnuplot, one row per tick: centre, each client's service
 * rate, each client's request rate, diff; a "#" line names them, and ends
 * in "(weighted: ...)" when the rates are per unit of weight.
 */
int fg_sim_metrics_write_series(const fg_sim_metrics_t *m,
    const fg_sim_trace_t *tr, const char *path, char *err, size_t size);


#endif /* _FG_SIM_METRICS_H_INCLUDED_ */
