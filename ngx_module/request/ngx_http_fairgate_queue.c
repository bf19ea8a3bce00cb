
/*
 * fairgate: step 4 of a request, its wait in the fair queue.
 *
 * A request admitted but not dispatched at once is parked: its phase
 * handler returned NGX_AGAIN, a timer bounds the wait (fairgate's
 * timeout=), and the worker goes on with other work.  It is resumed when
 * a dispatch picks it (zone/ngx_http_fairgate_dispatch.c), by this worker
 * or by another that woke it: the zone calls the resume event the request
 * gave at admission (zone/ngx_http_fairgate_workers.c); a client
 * that goes away while waiting gives its place up (the request's end
 * releases it, ngx_http_fairgate_account.c); at the timeout it is answered
 * with queue_timeout.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_quota.h"


static void ngx_http_fairgate_timeout_handler(ngx_event_t *ev);


/* waits for a dispatch, at most the location's timeout */

void
ngx_http_fairgate_park(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    ngx_connection_t              *c;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    c = r->connection;

    ctx->phase = NGX_HTTP_FAIRGATE_QUEUED;

    ctx->timer.handler = ngx_http_fairgate_timeout_handler;
    ctx->timer.data = ctx;
    ctx->timer.log = c->log;

    ngx_add_timer(&ctx->timer, flcf->timeout);

    /* a client that goes away while waiting gives its place up */

    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;

    /* it may have gone while the body was read: its event fired then */

    if (c->read->pending_eof || c->read->eof) {
        ngx_post_event(c->read, &ngx_posted_events);
    }
}


/* the zone dispatched it: its node's resume event (_admit.c set it) */

void
ngx_http_fairgate_resume_handler(ngx_event_t *ev)
{
    ngx_http_fairgate_resume(ev->data);
}


/* dispatched: the request goes on through the phases, to the upstream */

void
ngx_http_fairgate_resume(ngx_http_fairgate_ctx_t *ctx)
{
    ngx_connection_t    *c;
    ngx_http_request_t  *r;

    r = ctx->request;
    c = r->connection;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    ctx->phase = NGX_HTTP_FAIRGATE_ADMITTED;
    ctx->queue_ms = ngx_current_msec - ctx->start;

    ngx_http_set_log_request(c->log, r);

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "fairgate queue: tenant \"%V\" dispatched after %M ms",
                   &ctx->user, ctx->queue_ms);

    r->read_event_handler = ngx_http_block_reading;
    r->write_event_handler = ngx_http_core_run_phases;

    ngx_http_core_run_phases(r);
    ngx_http_run_posted_requests(c);
}


static void
ngx_http_fairgate_timeout_handler(ngx_event_t *ev)
{
    u_char                        *p, msg[128];
    double                         now;
    time_t                         retry;
    ngx_int_t                      rc;
    ngx_connection_t              *c;
    ngx_http_request_t            *r;
    ngx_http_fairgate_ctx_t       *ctx;
    ngx_http_fairgate_node_t      *node;
    ngx_http_fairgate_zone_t      *zone;
    ngx_http_fairgate_loc_conf_t  *flcf;

    ctx = ev->data;
    r = ctx->request;
    c = r->connection;
    zone = ctx->zone;
    node = ctx->node;

    ngx_http_set_log_request(c->log, r);

    if (node == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_SERVICE_UNAVAILABLE);
        ngx_http_run_posted_requests(c);
        return;
    }

    now = ngx_http_fairgate_now();

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (node->ready_set) {

        /* dispatched by another worker, its wake-up not yet read */

        ngx_queue_remove(&node->ready);
        node->ready_set = 0;
        ngx_shmtx_unlock(&zone->shpool->mutex);

        ngx_http_fairgate_resume(ctx);
        return;
    }

    fg_sched_cancel(zone->sh->sched, &node->req);
    ngx_http_fairgate_limits_settle(node, 0, 0, now);
    ngx_http_fairgate_quota_unserved(zone, node);

    node->user->timed_out++;
    zone->sh->timed_out++;
    retry = ngx_http_fairgate_retry_after(zone->sh);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = NGX_HTTP_FAIRGATE_TIMEOUT;
    ctx->queue_ms = ngx_current_msec - ctx->start;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    ngx_log_debug3(NGX_LOG_DEBUG_HTTP, c->log, 0,
                   "fairgate refuse: tenant \"%V\" status %ui "
                   "queue_timeout: waited %M ms in the queue",
                   &ctx->user, flcf->queue_status, ctx->queue_ms);

    p = ngx_snprintf(msg, sizeof(msg) - 1,
                     "The request waited %M ms in the queue, "
                     "the most this gateway allows.", ctx->queue_ms);
    *p = '\0';

    r->read_event_handler = ngx_http_block_reading;

    rc = ngx_http_fairgate_send_error(r, flcf->queue_status, "server_error",
                                      NULL, "queue_timeout", (char *) msg,
                                      retry);

    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}

