
/*
 * fairgate: the Andes QoE of the streams served, per tenant and per zone
 * (issue 17): their sum and a histogram of fixed buckets, kept in the
 * zone under its mutex, so that they survive a reload like the other
 * counters.
 *
 * The buckets' upper bounds are fixed, so that every gateway's and every
 * reload's histograms add up (Prometheus's cumulative buckets): 0.1, 0.25
 * and 0.5 tell a bad stream from a poor one, 0.75 ... 0.99 the good ones
 * apart, which is where Andes and FCFS differ; the last, +Inf, holds the
 * streams from 0.99 (QoE is at most 1).  A bucket holds the QoE below its
 * bound and at or above the one before, so that the streams at 0.95 or
 * above (Andes's share) are exactly those of the buckets from
 * NGX_HTTP_FAIRGATE_QOE_GOOD on; Prometheus's "le" reads "at most", which
 * differs only for a QoE of exactly a bound.  The counts are 32 bits (4e9
 * streams a tenant) to keep a tenant in its slab chunk.
 *
 * A quantile is read from them as Prometheus's histogram_quantile() does:
 * the bucket that holds the rank, and a straight line between its bounds
 * (0 below the first, 1 for the last), so that it is exact at the bounds
 * and within a bucket's width in between.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone.h"


ngx_http_fairgate_qoe_bucket_t
    ngx_http_fairgate_qoe_buckets[NGX_HTTP_FAIRGATE_QOE_BUCKETS] =
{
    { 0.1, "0.1" }, { 0.25, "0.25" }, { 0.5, "0.5" }, { 0.75, "0.75" },
    { 0.9, "0.9" }, { 0.95, "0.95" }, { 0.99, "0.99" }, { 1.0, "+Inf" }
};


/* a stream's QoE, 0..1; under the zone's mutex */

void
ngx_http_fairgate_qoe_stats_add(ngx_http_fairgate_qoe_stats_t *qs,
    double qoe)
{
    ngx_uint_t  b;

    for (b = 0; b < NGX_HTTP_FAIRGATE_QOE_BUCKETS - 1; b++) {
        if (qoe < ngx_http_fairgate_qoe_buckets[b].le) {
            break;
        }
    }

    qs->bucket[b]++;
    qs->sum += qoe;
}


/* the streams in the buckets from "from" on: 0, all of them */

uint64_t
ngx_http_fairgate_qoe_stats_count(const ngx_http_fairgate_qoe_stats_t *qs,
    ngx_uint_t from)
{
    uint64_t  n;

    for (n = 0; from < NGX_HTTP_FAIRGATE_QOE_BUCKETS; from++) {
        n += qs->bucket[from];
    }

    return n;
}


/* the p-quantile (0..1) of the QoE counted, by the buckets; 0 if none */

double
ngx_http_fairgate_qoe_stats_quantile(const ngx_http_fairgate_qoe_stats_t *qs,
    double p)
{
    double      rank, lo, hi, below;
    uint64_t    count;
    ngx_uint_t  b;

    count = ngx_http_fairgate_qoe_stats_count(qs, 0);

    if (count == 0) {
        return 0;
    }

    rank = p * count;
    below = 0;

    for (b = 0; b < NGX_HTTP_FAIRGATE_QOE_BUCKETS - 1; b++) {
        if (qs->bucket[b] && below + qs->bucket[b] >= rank) {
            break;
        }

        below += qs->bucket[b];
    }

    lo = b ? ngx_http_fairgate_qoe_buckets[b - 1].le : 0;
    hi = ngx_http_fairgate_qoe_buckets[b].le;

    if (qs->bucket[b] == 0) {
        return hi;
    }

    return lo + (hi - lo) * (rank - below) / qs->bucket[b];
}
