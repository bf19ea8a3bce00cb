
/*
 * fairgate: step 3 of a request, its admission.
 *
 * Under the zone's mutex, in one go: the request gets a node in the zone
 * holding its user and app (zone/ngx_http_fairgate_node.c); FairServe's OIT
 * and the rate limits let it in or throttle it (tenants/); the scheduler
 * queues it (the rpm policy may refuse it there); then a dispatch runs, and
 * the request is either dispatched at once, refused because its user has
 * too many requests waiting, or left to wait (ngx_http_fairgate_queue.c).
 * Workers whose requests the dispatch picked are woken once the mutex is
 * released.  With "error_log ... debug" the verdict is logged ("fairgate
 * admit: ...", "fairgate queue: ...", "fairgate refuse: ...").
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_quota.h"


/* what throttled a request */
#define NGX_HTTP_FAIRGATE_BY_REQUESTS  0
#define NGX_HTTP_FAIRGATE_BY_TOKENS    1
#define NGX_HTTP_FAIRGATE_BY_OIT       2
#define NGX_HTTP_FAIRGATE_BY_POLICY    3


/* where the request stands once admitted */
typedef enum {
    NGX_HTTP_FAIRGATE_WAITS = 0,
    NGX_HTTP_FAIRGATE_GOES,
    NGX_HTTP_FAIRGATE_FULL
} ngx_http_fairgate_place_e;


static void ngx_http_fairgate_admit_entry(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_entry_t *entry);
static ngx_int_t ngx_http_fairgate_admit_checks(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now);
static void ngx_http_fairgate_admit_throttled(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_uint_t by);
static void ngx_http_fairgate_admit_rpm_hit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_tenant_t *user, double now);
static ngx_http_fairgate_place_e ngx_http_fairgate_admit_place(
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_node_t *node,
    ngx_http_fairgate_loc_conf_t *flcf, double now, time_t *retry,
    ngx_uint_t *waiting);
static ngx_int_t ngx_http_fairgate_admit_no_room(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message);


/*
 * Admits a request whose body is parsed; ctx->phase then says what became
 * of it: ADMITTED (it goes on to the upstream now), QUEUED (parked), or
 * REFUSED (answered here: the return value is what sending returned).
 */

ngx_int_t
ngx_http_fairgate_admit(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    double                          now;
    time_t                          retry;
    ngx_uint_t                      waiting[2];
    ngx_http_fairgate_node_t       *node;
    ngx_http_fairgate_zone_t       *zone;
    ngx_http_fairgate_entry_t       entry;
    ngx_http_fairgate_wakes_t       wakes;
    ngx_http_fairgate_place_e       place;
    ngx_http_fairgate_loc_conf_t   *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    zone = ctx->zone;

    if (zone->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fairgate_zone \"%V\": this worker has no slot",
                      &zone->name);
        return ngx_http_fairgate_admit_no_room(r, ctx, "gateway_unavailable",
                                               "The gateway cannot queue "
                                               "requests right now.");
    }

    ngx_http_fairgate_admit_entry(r, ctx, &entry);

    retry = 0;
    now = ngx_http_fairgate_now();
    ngx_http_fairgate_wakes_init(&wakes);

    ngx_shmtx_lock(&zone->shpool->mutex);

    node = ngx_http_fairgate_node_new_locked(zone, &entry);

    if (node == NULL) {
        ngx_shmtx_unlock(&zone->shpool->mutex);

        /* the zone said so in the error log, once an interval */
        ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fairgate_zone \"%V\" is full", &zone->name);

        return ngx_http_fairgate_admit_no_room(r, ctx, "gateway_full",
                                               "The gateway has no room for "
                                               "more tenants or requests "
                                               "right now.");
    }

    if (ngx_http_fairgate_admit_checks(ctx, node, flcf, now) != NGX_OK) {
        ngx_http_fairgate_quota_unserved(zone, node);
        ngx_http_fairgate_node_free_locked(zone, node);
        ngx_shmtx_unlock(&zone->shpool->mutex);

        ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
        ctx->outcome = NGX_HTTP_FAIRGATE_THROTTLED;

        ngx_http_fairgate_quota_log(r, ctx);

        if (ctx->quota && ctx->quota->over) {
            ngx_log_debug2(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                           "fairgate refuse: tenant \"%V\" over the quota "
                           "per %V", &ctx->quota->tenant,
                           &ctx->quota->quota->window);

            return ngx_http_fairgate_quota_reject(r, ctx);
        }

        ngx_log_debug8(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fairgate refuse: tenant \"%V\" app \"%V\" "
                       "throttled by the %s's %s limit %ui: %uL used, "
                       "%uL more asked, retry in %.1f s",
                       &ctx->user, &ctx->app,
                       ctx->hit_who ? ctx->hit_who : "oit",
                       ctx->hit_type ? ctx->hit_type : "interactions",
                       ctx->hit_limit, ctx->hit_used, ctx->hit_need,
                       ctx->hit_wait);

        return ngx_http_fairgate_limits_reject(r, ctx);
    }

    if (fg_sched_conf(zone->sh->sched)->policy == FG_POLICY_RPM) {
        node->user_counted = 1;
    }

    node->queued = ngx_current_msec;
    ctx->node = node;
    ctx->start = ngx_current_msec;

    /* logged here, before the dispatch it may go out with */
    ngx_log_debug6(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate admit: tenant \"%V\" app \"%V\" weight %.2f, "
                   "estimate %uD tokens in, %uD out, %uD reserved: admitted",
                   &ctx->user, &ctx->app, ctx->weight, ctx->tokens_in,
                   ctx->max_tokens, node->reserved);

    ngx_http_fairgate_dispatch_locked(zone, &wakes);

    place = ngx_http_fairgate_admit_place(ctx, node, flcf, now, &retry,
                                          waiting);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_http_fairgate_wake(zone, &wakes);
    ngx_http_fairgate_quota_log(r, ctx);

    switch (place) {

    case NGX_HTTP_FAIRGATE_GOES:
        ctx->phase = NGX_HTTP_FAIRGATE_ADMITTED;
        return NGX_OK;

    case NGX_HTTP_FAIRGATE_FULL:
        return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_QUEUE_FULL,
                                        flcf->queue_status, "server_error",
                                        NULL, "queue_full",
                                        "Too many requests of this user "
                                        "are waiting already.", retry);

    default:
        ngx_log_debug5(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fairgate queue: tenant \"%V\" waits, %ui of its "
                       "requests waiting (at most %ui), %ui in the zone, "
                       "timeout %M ms",
                       &ctx->user, waiting[0], flcf->queue, waiting[1],
                       flcf->timeout);

        ngx_http_fairgate_park(r, ctx);
        return NGX_OK;
    }
}


/*
 * The request as the zone takes it: its tenants and tokens, in local mode
 * its KV room, candidate engines and block hashes (local/), and how the
 * zone tells this worker that it was dispatched.
 */

static void
ngx_http_fairgate_admit_entry(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_entry_t *entry)
{
    ngx_http_fairgate_api_t  *api;

    ngx_memzero(entry, sizeof(ngx_http_fairgate_entry_t));

    entry->user = &ctx->user;
    entry->app = &ctx->app;
    entry->weight = ctx->weight;
    entry->tokens_in = ctx->tokens_in;
    entry->max_tokens = ctx->max_tokens;

    api = ctx->api;

    if (api) {
        entry->reserve = api->reserve;
        entry->engines = api->candidates;
        entry->n_engines = api->n_candidates;
        entry->hashes = api->hashes;
        entry->n_hashes = api->n_hashes;
        entry->block_size = api->block_size;
    }

    ctx->resume.handler = ngx_http_fairgate_resume_handler;
    ctx->resume.data = ctx;
    ctx->resume.log = r->connection->log;

    entry->resume = &ctx->resume;
    entry->ref = &ctx->node;
}


/*
 * The quotas first (fairgate_quota: a tenant over one is refused, however
 * idle the gateway), FairServe's OIT, then the rate limits, which a
 * request that continues an open interaction passes under fairgate_oit
 * (cutting it would waste what the interaction spent), then the scheduler,
 * where the rpm policy has its own limit.  NGX_DECLINED: refused by a
 * quota (ctx->quota says which) or throttled (ctx->hit_* say by which
 * limit).
 */

static ngx_int_t
ngx_http_fairgate_admit_checks(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now)
{
    ngx_int_t                    rc;
    ngx_uint_t                   enforce;
    ngx_http_fairgate_shctx_t   *sh;
    ngx_http_fairgate_tenant_t  *user;

    sh = ctx->zone->sh;
    user = node->user;

    if (ngx_http_fairgate_quota_admit(ctx, node, flcf) != NGX_OK) {
        return NGX_DECLINED;
    }

    rc = ngx_http_fairgate_interaction_admit(ctx, node, flcf, now);

    if (rc != NGX_OK) {
        ngx_http_fairgate_admit_throttled(ctx, node,
                                          NGX_HTTP_FAIRGATE_BY_OIT);
        return NGX_DECLINED;
    }

    enforce = !(flcf->oit && ctx->oit_set && ctx->oit == FG_OIT_CONTINUE);

    if (ngx_http_fairgate_limits_check(ctx, node, enforce, now) != NGX_OK) {
        ngx_http_fairgate_admit_throttled(ctx, node,
                                          ctx->hit_type[0] == 'r'
                                          ? NGX_HTTP_FAIRGATE_BY_REQUESTS
                                          : NGX_HTTP_FAIRGATE_BY_TOKENS);
        return NGX_DECLINED;
    }

    /* the qoe order's: when its first token is due (0: on arrival) */
    node->req.due = ctx->qoe_ttft ? now + ctx->qoe_ttft / 1000.0 : 0.0;

    if (fg_sched_enqueue(sh->sched, &user->u.client, &node->req, now)
        != FG_OK)
    {
        ngx_http_fairgate_admit_rpm_hit(ctx, user, now);
        ngx_http_fairgate_admit_throttled(ctx, node,
                                          NGX_HTTP_FAIRGATE_BY_POLICY);

        ngx_http_fairgate_limits_settle(node, 0, 0, now);

        return NGX_DECLINED;
    }

    return NGX_OK;
}


/*
 * A throttled request counted for its user, the zone, and its app when the
 * app's limit refused it, by what refused it (the status page's
 * "throttled_by").
 */

static void
ngx_http_fairgate_admit_throttled(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_uint_t by)
{
    ngx_uint_t                      i;
    ngx_http_fairgate_throttled_t  *tb[3];

    tb[0] = &node->user->throttled_by;
    tb[1] = &ctx->zone->sh->throttled_by;
    tb[2] = NULL;

    node->user->throttled++;
    ctx->zone->sh->throttled++;

    if (node->app && by != NGX_HTTP_FAIRGATE_BY_POLICY
        && ctx->hit_who[0] == 'a')
    {
        node->app->throttled++;
        tb[2] = &node->app->throttled_by;
    }

    for (i = 0; i < 3 && tb[i]; i++) {

        switch (by) {

        case NGX_HTTP_FAIRGATE_BY_REQUESTS:
            tb[i]->requests++;
            break;

        case NGX_HTTP_FAIRGATE_BY_TOKENS:
            tb[i]->tokens++;
            break;

        case NGX_HTTP_FAIRGATE_BY_OIT:
            tb[i]->oit++;
            break;

        default: /* NGX_HTTP_FAIRGATE_BY_POLICY */
            tb[i]->policy++;
        }
    }
}


/* the rpm policy's own limit, as the 429 and its headers tell it */

static void
ngx_http_fairgate_admit_rpm_hit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_tenant_t *user, double now)
{
    fg_window_t  *recent;

    recent = &user->u.client.recent;

    ctx->hit_type = "requests";
    ctx->hit_who = "user";
    ctx->hit_limit = fg_sched_conf(ctx->zone->sh->sched)->rpm_limit;
    ctx->hit_used = fg_window_sum(recent, now);
    ctx->hit_need = 1;
    ctx->hit_wait = fg_window_wait(recent, now, ctx->hit_limit, 1);

    ctx->rl_requests.limit = ctx->hit_limit;
    ctx->rl_requests.remaining = 0;
    ctx->rl_requests.reset = fg_window_wait(recent, now, ctx->hit_limit,
                                            ctx->hit_limit);
}


/*
 * After the dispatch: the request went at once, or its user has more
 * requests waiting than the location allows (it is taken back out, and
 * *retry says when a place may free), or it waits.
 */

static ngx_http_fairgate_place_e
ngx_http_fairgate_admit_place(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now, time_t *retry, ngx_uint_t *waiting)
{
    ngx_http_fairgate_zone_t   *zone;
    ngx_http_fairgate_shctx_t  *sh;

    zone = ctx->zone;
    sh = zone->sh;

    /* where it stands, for the debug log: its user's and the zone's (the
     * zone's counters copied only when that log is written) */
    waiting[0] = node->user->u.client.n_waiting;
    waiting[1] = 0;

#if (NGX_DEBUG)
    if (ctx->request->connection->log->log_level & NGX_LOG_DEBUG_HTTP) {
        fg_sched_stats_t  st;

        fg_sched_stats(sh->sched, &st);
        waiting[1] = st.waiting;
    }
#endif

    if (node->ready_set) {
        /* dispatched at once: it goes on from here, not from the list */
        ngx_queue_remove(&node->ready);
        node->ready_set = 0;
        return NGX_HTTP_FAIRGATE_GOES;
    }

    if (node->user->u.client.n_waiting <= flcf->queue) {
        return NGX_HTTP_FAIRGATE_WAITS;
    }

    fg_sched_cancel(sh->sched, &node->req);
    ngx_http_fairgate_limits_settle(node, 0, 0, now);
    ngx_http_fairgate_quota_unserved(zone, node);

    node->user->queue_full++;
    sh->queue_full++;
    *retry = ngx_http_fairgate_retry_after(sh);

    ctx->node = NULL;
    ngx_http_fairgate_node_free_locked(zone, node);

    return NGX_HTTP_FAIRGATE_FULL;
}


static ngx_int_t
ngx_http_fairgate_admit_no_room(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *code, const char *message)
{
    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_ERROR,
                                    NGX_HTTP_SERVICE_UNAVAILABLE,
                                    "server_error", NULL, code, message, 1);
}
