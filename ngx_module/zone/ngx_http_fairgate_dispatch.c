
/*
 * fairgate: dispatch, the fair queue's one decision: which waiting request
 * goes next, and whether the upstream has room for it.
 *
 * Under the zone's mutex, the policy core picks the next request and its
 * engine, and it is admitted while it fits the capacity: requests and
 * tokens in flight, set by fairgate_zone (inflight=, inflight_tokens=)
 * and, in local mode, by each engine's published batch seats and KV
 * positions (ngx_http_fairgate_engines.c).  A dispatched request
 * goes on its owner's ready list; its owner is woken after the mutex is
 * released (ngx_http_fairgate_workers.c).  Dispatch runs whenever room may
 * have appeared: at a request's admission, at its end, when a worker's
 * requests are reclaimed, and when a worker starts after a reload.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone_int.h"


static void ngx_http_fairgate_wait_count(ngx_http_fairgate_shctx_t *sh,
    ngx_msec_t wait);


/* the queue-wait histogram's buckets: upper bounds, in ms and as text */
ngx_http_fairgate_bucket_t  ngx_http_fairgate_wait_buckets[] = {
    { 1, "0.001" }, { 5, "0.005" }, { 10, "0.01" }, { 25, "0.025" },
    { 50, "0.05" }, { 100, "0.1" }, { 250, "0.25" }, { 500, "0.5" },
    { 1000, "1" }, { 5000, "5" }, { 30000, "30" },
    { NGX_TIMER_INFINITE, "+Inf" }
};


/*
 * Admits requests while the policy's next one fits the capacity; each goes
 * on its owner's ready list.  Under the zone's mutex.
 */

void
ngx_http_fairgate_dispatch_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes)
{
    ngx_str_t                   to;
    ngx_uint_t                  i;
    fg_request_t               *req;
    fg_sched_engines_t          engines;
    ngx_http_fairgate_slot_t   *slot;
    ngx_http_fairgate_node_t   *node;
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;

    /* the qoe order ranks requests by how late they are now */
    fg_sched_set_clock(sh->sched, ngx_http_fairgate_now());

    for ( ;; ) {
        ngx_http_fairgate_engines_init(zone, &engines);

        req = fg_sched_dispatch_to(sh->sched, &engines);

        if (req == NULL) {
            return;
        }

        node = ngx_http_fairgate_node(req);

        node->holds = 1;
        sh->running++;
        sh->running_tokens += node->reserved;

        ngx_http_fairgate_engines_start_locked(zone, node);

        ngx_http_fairgate_wait_count(sh, ngx_current_msec - node->queued);

        if (node->req.engine < sh->n_engines
            && (node->engines & ((uint64_t) 1 << node->req.engine)))
        {
            to.data = sh->engines[node->req.engine].name;
            to.len = sh->engines[node->req.engine].len;

        } else {
            ngx_str_set(&to, "the upstream");
        }

        ngx_log_debug8(NGX_LOG_DEBUG_HTTP, ngx_cycle->log, 0,
                       "fairgate dispatch: tenant \"%*s\" to \"%V\" "
                       "after %M ms, %uD prompt tokens cached there, "
                       "%ui running, %uL tokens in flight, counter %.3f",
                       (size_t) node->user->len, node->user->name, &to,
                       ngx_current_msec - node->queued,
                       node->req.cached_tokens, sh->running,
                       sh->running_tokens, node->user->u.client.counter);

        /* from now on "queued" is when it started being served */
        node->queued = ngx_current_msec;

        slot = &sh->slots[node->slot];
        ngx_queue_insert_tail(&slot->ready, &node->ready);
        node->ready_set = 1;

        i = node->slot;

        if (i == zone->slot) {
            wakes->self = 1;
            continue;
        }

        sh->handoffs++;

        if (!(wakes->seen[i / 64] & ((uint64_t) 1 << (i % 64)))) {
            wakes->seen[i / 64] |= (uint64_t) 1 << (i % 64);
            wakes->slot[wakes->n] = i;
            wakes->pid[wakes->n] = slot->pid;
            wakes->n++;
        }
    }
}


/* a place in the queue may free in about this many seconds */

time_t
ngx_http_fairgate_retry_after(ngx_http_fairgate_shctx_t *sh)
{
    double            t;
    ngx_uint_t        cap;
    fg_sched_stats_t  st;

    fg_sched_stats(sh->sched, &st);

    cap = sh->inflight ? sh->inflight : 1;
    t = sh->service_ms * (st.waiting + 1) / cap / 1000.0;

    if (t < 1) {
        return 1;
    }

    if (t > 3600) {
        return 3600;
    }

    return (time_t) t + 1;
}


/* the queue-wait histogram, for the status page */

static void
ngx_http_fairgate_wait_count(ngx_http_fairgate_shctx_t *sh, ngx_msec_t wait)
{
    ngx_uint_t  b;

    for (b = 0; b < NGX_HTTP_FAIRGATE_BUCKETS - 1; b++) {
        if (wait <= ngx_http_fairgate_wait_buckets[b].le) {
            break;
        }
    }

    sh->wait_bucket[b]++;
    sh->wait_count++;
    sh->wait_sum += wait / 1000.0;
}
