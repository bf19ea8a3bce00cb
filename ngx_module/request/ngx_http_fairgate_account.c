
/*
 * fairgate: step 6 of a request, its accounting.
 *
 * Output tokens are charged to the tenant as they stream (a streamed
 * response is counted chunk by chunk), so that a long response moves its
 * tenant's counter while it runs; the prompt tokens an engine found cached
 * settle what dlpm charged at dispatch.  At the request's end, whatever it was
 * (success, upstream error, timeout, client abort while queued or
 * streaming), the pool cleanup settles it: the estimate made at admission
 * is corrected to the usage the upstream reported (capped to what the
 * request could use: ngx_http_fairgate_usage_check) or that was counted,
 * the rate windows and the interaction are settled, the tenants' counters
 * move, the capacity it held is freed and what that capacity allows is
 * dispatched, possibly for another worker.  A stream's QoE is counted
 * later, at its very end (ngx_http_fairgate_account_qoe).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_usage.h"
#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_quota.h"


static ngx_uint_t ngx_http_fairgate_settle_locked(
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_node_t *node,
    uint32_t in, uint32_t out, double now);
static void ngx_http_fairgate_served_locked(ngx_http_fairgate_shctx_t *sh,
    ngx_http_fairgate_node_t *node, uint32_t in, uint32_t out);


/* output tokens counted as they stream: charged to the tenant at once */

void
ngx_http_fairgate_charge(ngx_http_fairgate_ctx_t *ctx, uint32_t n)
{
    ngx_http_fairgate_zone_t  *zone;

    /* the first token's time, and the cost so far (_price.c) */
    ngx_http_fairgate_price_tokens(ctx, n);

    if (ctx->node == NULL || n == 0) {
        return;
    }

    zone = ctx->zone;

    ctx->charged += n;

    ngx_shmtx_lock(&zone->shpool->mutex);
    fg_sched_charge(zone->sh->sched, &ctx->node->req, n);

    /* the quotas' tokens and cost as they flow: the output so far */
    ngx_http_fairgate_quota_charge(zone, ctx->node, ctx->charged,
                                   ctx->cost);

    ngx_shmtx_unlock(&zone->shpool->mutex);
}


/*
 * The prompt tokens the engine found in its prefix cache, said once: dlpm
 * charged what the zone expected at dispatch, and settles to this.
 */

void
ngx_http_fairgate_cached(ngx_http_fairgate_ctx_t *ctx, uint32_t n)
{
    ngx_http_fairgate_zone_t  *zone;

    if (ctx->cached_set) {
        return;
    }

    ctx->cached = n;
    ctx->cached_set = 1;

    if (ctx->node == NULL) {
        return;
    }

    zone = ctx->zone;

    ngx_shmtx_lock(&zone->shpool->mutex);
    ngx_http_fairgate_engines_cached_locked(zone, ctx->node, n);
    ngx_shmtx_unlock(&zone->shpool->mutex);
}


/*
 * The upstream's usage, checked against what the gateway saw before it is
 * charged (fg_usage_cap has the caps): an upstream that reports more than
 * the request could use (a bug, or a lie: a billion completion tokens) is
 * capped, with a warning that names it.  Once a request, when its response
 * ends or when it is released.
 */

void
ngx_http_fairgate_usage_check(ngx_http_fairgate_ctx_t *ctx)
{
    uint64_t              max_in, max_out;
    ngx_str_t            *peer;
    fg_usage_t            u;
    fg_usage_seen_t       seen;
    ngx_http_upstream_t  *ups;

    static ngx_str_t  unknown = ngx_string("(unknown)");

    if (!ctx->usage || ctx->local || ctx->usage_checked) {
        return;
    }

    ctx->usage_checked = 1;

    u.in = ctx->usage_in;
    u.out = ctx->usage_out;

    seen.body_bytes = ctx->body_bytes;
    seen.bytes_out = ctx->bytes_out;
    seen.max_out = ctx->max_out;
    seen.max_out_set = ctx->max_out_set;

    if (fg_usage_cap(&u, &seen, &max_in, &max_out) == 0) {
        return;
    }

    ups = ctx->request->upstream;
    peer = (ups && ups->peer.name) ? ups->peer.name : &unknown;

    ngx_log_error(NGX_LOG_WARN, ctx->request->connection->log, 0,
                  "fairgate: the upstream %V reported usage of %uD prompt "
                  "and %uD completion tokens, more than tenant \"%V\"'s "
                  "request could use (%uL prompt: its body's %uz bytes "
                  "and %d; %uL completion: %s): capped",
                  peer, ctx->usage_in, ctx->usage_out, &ctx->user, max_in,
                  ctx->body_bytes, FG_USAGE_ADDED, max_out,
                  ctx->max_out_set ? "its max tokens times its choices"
                                   : "the response's bytes");

    ctx->usage_in = u.in;
    ctx->usage_out = u.out;
    ctx->usage_capped = 1;
}


/*
 * The usage checked as the counters take it, then the cost at it
 * (_price.c): what the usage log and $fairgate_cost say, also when they
 * are written before the request is released (a client gone mid-stream).
 */

ngx_int_t
ngx_http_fairgate_price_settle(ngx_http_fairgate_ctx_t *ctx)
{
    ngx_http_fairgate_usage_check(ctx);

    return ngx_http_fairgate_price_update(ctx);
}


/*
 * The request's pool cleanup: every request that was admitted ends here,
 * however it ended.  Settles its tokens, frees its capacity and dispatches
 * what the freed capacity allows.
 */

void
ngx_http_fairgate_release(void *data)
{
    ngx_http_fairgate_ctx_t  *ctx = data;

    double                       now, counter;
    uint32_t                     in, out;
    ngx_msec_t                   held;
    ngx_http_fairgate_node_t    *node;
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_wakes_t    wakes;
    ngx_http_fairgate_shctx_t   *sh;

    if (ctx->timer.timer_set) {
        ngx_del_timer(&ctx->timer);
    }

    node = ctx->node;

    if (node == NULL) {
        return;
    }

    ctx->node = NULL;

    zone = ctx->zone;
    sh = zone->sh;

    ngx_http_fairgate_usage_check(ctx);
    (void) ngx_http_fairgate_price_update(ctx);

    ngx_http_fairgate_tokens(ctx, &in, NULL, &out);

    now = ngx_http_fairgate_now();
    ngx_http_fairgate_wakes_init(&wakes);

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (node->ready_set) {
        ngx_queue_remove(&node->ready);
        node->ready_set = 0;
    }

    if (ngx_http_fairgate_settle_locked(ctx, node, in, out, now)) {
        ngx_http_fairgate_served_locked(sh, node, in, out);
    }

    counter = node->user->u.client.counter;

    if (node->holds) {
        held = ngx_current_msec - node->queued;

        sh->service_ms = sh->service_ms ? 0.9 * sh->service_ms + 0.1 * held
                                        : held;
    }

    ngx_http_fairgate_node_free_locked(zone, node);
    ngx_http_fairgate_dispatch_locked(zone, &wakes);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_log_debug8(NGX_LOG_DEBUG_HTTP, ctx->request->connection->log, 0,
                   "fairgate account: tenant \"%V\" settled at %uD tokens "
                   "in, %uD out (%s), %uD charged as they streamed, %uD "
                   "cached, the user's counter %.3f, %ui running",
                   &ctx->user, in, out,
                   ctx->usage ? "usage" : "estimate", ctx->charged,
                   ctx->cached, counter, sh->running);

    ngx_http_fairgate_wake(zone, &wakes);
}


/*
 * The scheduler, the interaction and the rate windows told how the request
 * ended: 1 if it was served (dispatched and resumed), 0 if it never was.
 */

static ngx_uint_t
ngx_http_fairgate_settle_locked(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, uint32_t in, uint32_t out, double now)
{
    uint32_t      sys;
    fg_sched_t   *s;

    s = ctx->zone->sh->sched;

    switch (node->req.state) {

    case FG_REQ_QUEUED:
        fg_sched_cancel(s, &node->req);
        ngx_http_fairgate_limits_settle(node, 0, 0, now);
        ngx_http_fairgate_quota_unserved(ctx->zone, node);
        return 0;

    case FG_REQ_RUNNING:

        if (ctx->phase != NGX_HTTP_FAIRGATE_ADMITTED) {
            /* dispatched, but gone before it was resumed */
            fg_sched_cancel(s, &node->req);
            ngx_http_fairgate_limits_settle(node, 0, 0, now);
            ngx_http_fairgate_quota_unserved(ctx->zone, node);
            return 0;
        }

        /* wsc weighs the system prompt apart from the rest of the input */
        sys = ngx_min(in, ctx->system_tokens);

        fg_sched_correct(s, &node->req,
                         node->req.system_tokens ? in - sys : in, out);

        if (ctx->complete && !ctx->upstream_error) {
            fg_sched_finish(s, &node->req);
            ngx_http_fairgate_interaction_end(ctx->zone, node, in + out, 1,
                                              now);

        } else {
            fg_sched_cancel(s, &node->req);
            ngx_http_fairgate_interaction_end(ctx->zone, node, in + out, 0,
                                              now);
        }

        ngx_http_fairgate_limits_settle(node, in + out, 1, now);
        ngx_http_fairgate_quota_charge(ctx->zone, node, (uint64_t) in + out,
                                   ctx->cost);
        return 1;

    default:
        return 0;
    }
}


/* the counters of the zone, the user and the app of a served request */

static void
ngx_http_fairgate_served_locked(ngx_http_fairgate_shctx_t *sh,
    ngx_http_fairgate_node_t *node, uint32_t in, uint32_t out)
{
    ngx_http_fairgate_tenant_t  *t;

    sh->tokens_in += in;
    sh->tokens_out += out;

    t = node->user;

    if (t->requests == 0) {
        sh->users_served++;
    }

    t->requests++;
    t->tokens_in += in;
    t->tokens_out += out;

    t = node->app;

    if (t) {
        t->requests++;
        t->tokens_in += in;
        t->tokens_out += out;
    }
}


/*
 * A stream's QoE, the user's, the app's and the zone's, when the request
 * is freed (the pacer's pool cleanup): its last tokens may go out after
 * its capacity was freed (ngx_http_fairgate_release runs as soon as the
 * upstream is done, and the pacer may still hold tokens), so it is the
 * value $fairgate_qoe logged.  The node is gone by then, so the tenants
 * are found again by name: one expired since is not counted, the zone is.
 */

void
ngx_http_fairgate_account_qoe(ngx_http_fairgate_ctx_t *ctx, double qoe)
{
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_tenant_t  *t;

    zone = ctx->zone;

    /* a stream of a zone's that was let through (a refusal is no stream) */
    if (zone == NULL || ctx->phase != NGX_HTTP_FAIRGATE_ADMITTED) {
        return;
    }

    ngx_shmtx_lock(&zone->shpool->mutex);

    ngx_http_fairgate_qoe_stats_add(&zone->sh->qoe, qoe);

    t = ngx_http_fairgate_tenant_find(zone, NGX_HTTP_FAIRGATE_USER,
                                      ctx->user.data, ctx->user.len);
    if (t) {
        ngx_http_fairgate_qoe_stats_add(&t->qoe, qoe);
    }

    if (ctx->app.len) {
        t = ngx_http_fairgate_tenant_find(zone, NGX_HTTP_FAIRGATE_APP,
                                          ctx->app.data, ctx->app.len);
        if (t) {
            ngx_http_fairgate_qoe_stats_add(&t->qoe, qoe);
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);
}
