
/*
 * fairgate: latency and Andes's QoE, from a run's results.
 *
 * Per client and over all requests:
 *
 *   - counts by status;
 *   - TTFT (first_token - arrival) and end-to-end latency (finish -
 *     arrival) of served requests: mean, p50, p90, p99, nearest rank (the
 *     smallest value with at least p of the values at or below it);
 *   - TDS, the token delivery speed of Andes: (output_tokens - 1) /
 *     (finish - first_token), the mean over served requests that streamed
 *     more than one token over a positive time;
 *   - QoE, Andes's (its equations 1-3, fg_qoe.h), per request, with a
 *     reading speed s and a TTFT target d: the request's "tokens_per_s"
 *     and "ttft_target" when it has them (fg_sim_req_expect()), else the
 *     conf's (by default Andes's max(input / 5000, 1) s).
 *     Token i (from 0) is ideally read at arrival + d + i / s; the reader
 *     reads it at c_0 = max(delivered_0, ideal_0), then c_i = max(
 *     delivered_i, c_{i-1} + 1 / s);
 *
 *         S_delay = sum_i (c_i - ideal_i),  S_whole = sum_i (c_n-1 -
 *         ideal_i),  QoE = 1 - S_delay / S_whole (1 when S_whole is 0).
 *
 *     delivered_i are the results' token_times when they have any, else
 *     output_tokens instants spread evenly over [first_token, finish]
 *     (all at finish for an answer that was not streamed).  A request
 *     not served scores 0, as Andes scores one that never gets a token;
 *     mean QoE and the share of requests at QoE >= 0.95 are over every
 *     request sent.
 */

#ifndef _FG_SIM_LATENCY_H_INCLUDED_
#define _FG_SIM_LATENCY_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_cost.h"
#include "fg_sim_trace.h"


#define FG_SIM_QOE_GOOD  0.95


typedef struct {
    double      reading_speed;       /* tokens/s (4.8, Andes's figure 4) */
    double      ttft_target;         /* s; <= 0: max(input / prefill, 1) */
    double      prefill_rate;        /* tokens/s of that default (5000) */
    double      bin;                 /* series bins, s; <= 0: span / 100 */
    fg_cost_t   cost;                /* service in the series (linear) */
} fg_sim_latency_conf_t;


typedef struct {
    uint64_t           sent;         /* requests, skipped ones too */
    fg_sim_outcomes_t  count;

    double             ttft_mean;
    double             ttft_p50;
    double             ttft_p90;
    double             ttft_p99;
    double             e2e_mean;
    double             e2e_p50;
    double             e2e_p90;
    double             e2e_p99;
    double             tds_mean;     /* tokens/s; 0 when none qualifies */
    double             qoe_mean;
    double             qoe_good;     /* share of requests >= 0.95 */
} fg_sim_latency_stats_t;


typedef struct {
    fg_sim_latency_stats_t   all;
    fg_sim_latency_stats_t  *clients;
    uint32_t                 nclients;

    /* per request, in results order; ttft and e2e are -1 unless served */
    double                  *ttft;
    double                  *e2e;
    double                  *qoe;
    size_t                   n;
} fg_sim_latency_t;


void fg_sim_latency_conf_init(fg_sim_latency_conf_t *conf);

/* QoE of one request whose n tokens came at delivered[] (in order) */
double fg_sim_qoe(double arrival, const double *delivered, size_t n,
    double ttft_target, double reading_speed);

/* nearest rank of sorted[0 .. n - 1], p in [0, 1]; 0 when n is 0 */
double fg_sim_percentile(const double *sorted, size_t n, double p);

/* qsort()'s comparison of doubles, ascending */
int fg_sim_cmp_double(const void *a, const void *b);

/* times may be NULL; 0, or -1 when out of memory */
int fg_sim_latency_compute(fg_sim_latency_t *lat, const fg_sim_trace_t *tr,
    const fg_sim_result_t *results, const fg_sim_token_times_t *times,
    const fg_sim_latency_conf_t *conf);
void fg_sim_latency_free(fg_sim_latency_t *lat);

/* one JSON object, malloc()ed: "all" and "clients" */
/*
 * sent and the counts by outcome, between head's members and tail's, in
 * that order: an object of the figures' JSON; takes head and tail, and
 * gives NULL when any of it is NULL or fails
 */
struct json_t *fg_sim_outcomes_json(struct json_t *head, uint64_t sent,
    const fg_sim_outcomes_t *o, struct json_t *tail);

char *fg_sim_latency_json(const fg_sim_latency_t *lat,
    const fg_sim_trace_t *tr, const fg_sim_latency_conf_t *conf);

/*
 * Files for gnuplot in dir (which must exist):
 *
 *   clients.txt   client names, one a line, in the order of the blocks
 *   service.dat   bin centre, then each client's service rate (cost units
 *                 per second, a served request's cost spread evenly over
 *                 [first_token, finish] as in the VTC metric, its cached
 *                 input free)
 *   response.dat  a block a client (gnuplot's "index"): arrival, TTFT,
 *                 end-to-end latency, QoE of each served request
 *   cdf.dat       a block a client: fraction, TTFT, end-to-end latency,
 *                 each column sorted on its own
 */
int fg_sim_latency_write_series(const fg_sim_latency_t *lat,
    const fg_sim_trace_t *tr, const fg_sim_result_t *results,
    const fg_sim_latency_conf_t *conf, const char *dir, char *err,
    size_t size);


#endif /* _FG_SIM_LATENCY_H_INCLUDED_ */
