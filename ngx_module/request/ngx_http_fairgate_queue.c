
/*
 * fairgate: the fair queue in front of the upstream.
 *
 * A request is admitted in the zone (its tenant, its rate windows, a node
 * holding its fg_request_t), queued in the zone's scheduler, and dispatched
 * when the upstream's capacity (requests and tokens in flight) has room for
 * the request the policy picks.  Until then the request is parked: its
 * phase handler returned NGX_AGAIN, a timer bounds the wait, and the
 * worker goes on with other work.
 *
 * Capacity is freed at the end of every request (a pool cleanup: success,
 * upstream error, timeout, client abort while queued or streaming), and the
 * freed capacity dispatches the next request by policy, which may belong to
 * another worker.  Each worker has a slot in the zone, with the list of its
 * requests and of those dispatched for it but not yet resumed; a worker
 * that dispatches another's request puts it on that list and wakes the
 * owner with a datagram on a per-worker UNIX socket in Linux's abstract
 * namespace ("fairgate-PID"), registered in the owner's event loop.  No
 * worker polls and none blocks but on the zone's mutex.
 *
 * A worker that dies leaves its slot behind: the next worker to start
 * reclaims the slots of dead processes (their requests are cancelled and
 * their capacity is freed), and so does a worker whose wake-up finds no
 * socket.  A worker that exits reclaims its own slot.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <sys/un.h>

#include "ngx_http_fairgate.h"


/* workers to wake after the zone's mutex is released */
typedef struct {
    ngx_uint_t                   n;
    ngx_uint_t                   slot[NGX_HTTP_FAIRGATE_SLOTS];
    ngx_pid_t                    pid[NGX_HTTP_FAIRGATE_SLOTS];
    uint64_t                     seen[NGX_HTTP_FAIRGATE_SLOTS / 64];
    unsigned                     self:1;
} ngx_http_fairgate_wakes_t;


static void ngx_http_fairgate_dispatch_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes);
static int ngx_http_fairgate_fits(fg_request_t *req, void *data);
static void ngx_http_fairgate_wake(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes);
static ngx_int_t ngx_http_fairgate_wake_send(ngx_pid_t pid);
static void ngx_http_fairgate_reclaim_locked(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t slot, ngx_uint_t own, ngx_log_t *log);
static void ngx_http_fairgate_free_node_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);
static void ngx_http_fairgate_park(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_resume(ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_timeout_handler(ngx_event_t *ev);
static void ngx_http_fairgate_wake_handler(ngx_event_t *ev);
static void ngx_http_fairgate_ready_handler(ngx_event_t *ev);
static time_t ngx_http_fairgate_retry_after(ngx_http_fairgate_shctx_t *sh);
static ngx_int_t ngx_http_fairgate_refuse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_outcome_e outcome,
    const char *code, const char *message);
static void ngx_http_fairgate_sockaddr(struct sockaddr_un *sa,
    socklen_t *len, ngx_pid_t pid);


static ngx_connection_t  *ngx_http_fairgate_wake_conn;
static ngx_event_t        ngx_http_fairgate_ready_event;

/* upper bounds of the queue-wait histogram, ms; the last bucket is +Inf */
static ngx_msec_t  ngx_http_fairgate_bounds[NGX_HTTP_FAIRGATE_BUCKETS - 1] = {
    1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000
};


#define ngx_http_fairgate_node(req)                                           \
    ((ngx_http_fairgate_node_t *) (req))


/*
 * Admits a request whose body is parsed; ctx->phase then says what became
 * of it: ADMITTED (it goes on to the upstream now), QUEUED (parked), or
 * REFUSED (answered here: the return value is what sending returned).
 */

ngx_int_t
ngx_http_fairgate_enqueue(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    int                             rc;
    double                          now;
    ngx_int_t                       admitted, full;
    ngx_http_fairgate_node_t       *node;
    ngx_http_fairgate_zone_t       *zone;
    ngx_http_fairgate_wakes_t       wakes;
    ngx_http_fairgate_shctx_t      *sh;
    ngx_http_fairgate_tenant_t     *user, *app;
    ngx_http_fairgate_loc_conf_t   *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    zone = ctx->zone;
    sh = zone->sh;

    if (zone->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fairgate_zone \"%V\": this worker has no slot",
                      &zone->name);
        return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_ERROR,
                                        "gateway_unavailable",
                                        "The gateway cannot queue requests "
                                        "right now.");
    }

    now = ngx_http_fairgate_now();
    wakes.n = 0;
    wakes.self = 0;
    ngx_memzero(wakes.seen, sizeof(wakes.seen));

    ngx_shmtx_lock(&zone->shpool->mutex);

    user = ngx_http_fairgate_tenant_get(zone, NGX_HTTP_FAIRGATE_USER,
                                        &ctx->user, ctx->weight);
    if (user == NULL) {
        goto no_room;
    }

    /* held from here: looking up the app may expire idle tenants */
    user->refs++;

    app = NULL;

    if (ctx->app.len) {
        app = ngx_http_fairgate_tenant_get(zone, NGX_HTTP_FAIRGATE_APP,
                                           &ctx->app, 1.0);
        if (app == NULL) {
            user->refs--;
            goto no_room;
        }

        app->refs++;
    }

    node = ngx_slab_calloc_locked(zone->shpool,
                                  sizeof(ngx_http_fairgate_node_t));
    if (node == NULL) {
        user->refs--;

        if (app) {
            app->refs--;
        }

        goto no_room;
    }

    node->user = user;
    node->app = app;
    node->ctx = ctx;
    node->slot = zone->slot;
    node->reserved = ctx->reserve ? ctx->reserve
                                  : ctx->tokens_in + ctx->max_tokens;

    if (ctx->local_inflight) {
        /* local mode: the engine's capacity, as it last published it */
        sh->local_inflight = ctx->local_inflight;
        sh->local_tokens = ctx->local_tokens;
    }

    ngx_queue_insert_tail(&sh->slots[zone->slot].owned, &node->owned);

    fg_request_init(&node->req, ctx->tokens_in, ctx->max_tokens);

    /*
     * FairServe's OIT first, then the rate limits, which a request that
     * continues an open interaction passes under fairgate_oit: cutting it
     * would waste what the interaction spent.
     */

    rc = ngx_http_fairgate_interaction_admit(ctx, node, flcf, now);

    if (rc != NGX_OK
        || ngx_http_fairgate_limits_check(ctx, node,
                                          !(flcf->oit && ctx->oit_set
                                            && ctx->oit == FG_OIT_CONTINUE),
                                          now)
           != NGX_OK)
    {
        user->throttled++;
        sh->throttled++;

        if (app && ctx->hit_who[0] == 'a') {
            app->throttled++;
        }

        ngx_http_fairgate_free_node_locked(zone, node);
        ngx_shmtx_unlock(&zone->shpool->mutex);

        ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
        ctx->outcome = NGX_HTTP_FAIRGATE_THROTTLED;

        return ngx_http_fairgate_limits_reject(r, ctx);
    }

    rc = fg_sched_enqueue(sh->sched, &user->u.client, &node->req, now);

    if (rc != FG_OK) {

        /* the rpm policy's own limit */

        ctx->hit_type = "requests";
        ctx->hit_who = "user";
        ctx->hit_limit = fg_sched_conf(sh->sched)->rpm_limit;
        ctx->hit_used = fg_window_sum(&user->u.client.recent, now);
        ctx->hit_need = 1;
        ctx->hit_wait = fg_window_wait(&user->u.client.recent, now,
                                       ctx->hit_limit, 1);
        ctx->rl_requests.limit = ctx->hit_limit;
        ctx->rl_requests.remaining = 0;
        ctx->rl_requests.reset = fg_window_wait(&user->u.client.recent, now,
                                                ctx->hit_limit,
                                                ctx->hit_limit);

        user->throttled++;
        sh->throttled++;

        ngx_http_fairgate_limits_settle(node, 0, 0, now);
        ngx_http_fairgate_free_node_locked(zone, node);
        ngx_shmtx_unlock(&zone->shpool->mutex);

        ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
        ctx->outcome = NGX_HTTP_FAIRGATE_THROTTLED;

        return ngx_http_fairgate_limits_reject(r, ctx);
    }

    if (fg_sched_conf(sh->sched)->policy == FG_POLICY_RPM) {
        node->user_counted = 1;
    }

    node->queued = ngx_current_msec;
    ctx->node = node;
    ctx->start = ngx_current_msec;

    ngx_http_fairgate_dispatch_locked(zone, &wakes);

    admitted = 0;
    full = 0;

    if (node->ready_set) {
        /* dispatched at once: it goes on from here, not from the list */
        ngx_queue_remove(&node->ready);
        node->ready_set = 0;
        admitted = 1;

    } else if (user->u.client.n_waiting > flcf->queue) {
        fg_sched_cancel(sh->sched, &node->req);
        ngx_http_fairgate_limits_settle(node, 0, 0, now);

        user->queue_full++;
        sh->queue_full++;
        full = ngx_http_fairgate_retry_after(sh);

        ctx->node = NULL;
        ngx_http_fairgate_free_node_locked(zone, node);
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_http_fairgate_wake(zone, &wakes);

    if (admitted) {
        ctx->phase = NGX_HTTP_FAIRGATE_ADMITTED;
        return NGX_OK;
    }

    if (full) {
        ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
        ctx->outcome = NGX_HTTP_FAIRGATE_QUEUE_FULL;

        return ngx_http_fairgate_send_error(r, flcf->queue_status,
                                            "server_error", NULL,
                                            "queue_full",
                                            "Too many requests of this user "
                                            "are waiting already.", full);
    }

    ngx_http_fairgate_park(r, ctx);

    return NGX_OK;

no_room:

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                  "fairgate_zone \"%V\" is full", &zone->name);

    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_ERROR,
                                    "gateway_full",
                                    "The gateway has no room for more "
                                    "tenants or requests right now.");
}


static ngx_int_t
ngx_http_fairgate_refuse(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_outcome_e outcome, const char *code,
    const char *message)
{
    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = outcome;

    return ngx_http_fairgate_send_error(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "server_error", NULL, code, message,
                                        1);
}


/*
 * Admits requests while the policy's next one fits the capacity; each goes
 * on its owner's ready list.  Under the zone's mutex.
 */

static void
ngx_http_fairgate_dispatch_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes)
{
    ngx_uint_t                  i, b;
    ngx_msec_t                  wait;
    fg_request_t               *req;
    ngx_http_fairgate_slot_t   *slot;
    ngx_http_fairgate_node_t   *node;
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;

    for ( ;; ) {
        req = fg_sched_dispatch(sh->sched, ngx_http_fairgate_fits, sh);

        if (req == NULL) {
            return;
        }

        node = ngx_http_fairgate_node(req);

        node->holds = 1;
        sh->running++;
        sh->running_tokens += node->reserved;

        wait = ngx_current_msec - node->queued;

        for (b = 0; b < NGX_HTTP_FAIRGATE_BUCKETS - 1; b++) {
            if (wait <= ngx_http_fairgate_bounds[b]) {
                break;
            }
        }

        sh->wait_bucket[b]++;
        sh->wait_count++;
        sh->wait_sum += wait / 1000.0;

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


/*
 * Room for the request in flight: a request larger than the whole token
 * capacity still goes when nothing else is in flight, or it would block
 * the queue for good.
 */

static int
ngx_http_fairgate_fits(fg_request_t *req, void *data)
{
    ngx_http_fairgate_shctx_t *sh = data;

    ngx_http_fairgate_node_t  *node;

    node = ngx_http_fairgate_node(req);

    if (sh->inflight && sh->running >= sh->inflight) {
        return 0;
    }

    if (sh->inflight_tokens && sh->running
        && sh->running_tokens + node->reserved > sh->inflight_tokens)
    {
        return 0;
    }

    if (sh->local_inflight && sh->running >= sh->local_inflight) {
        return 0;
    }

    if (sh->local_tokens && sh->running
        && sh->running_tokens + node->reserved > sh->local_tokens)
    {
        return 0;
    }

    return 1;
}


/* after the mutex is released: tells the owners of dispatched requests */

static void
ngx_http_fairgate_wake(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_wakes_t *wakes)
{
    ngx_uint_t                  i, n, rounds;
    ngx_http_fairgate_wakes_t   more;

    if (wakes->self) {
        ngx_post_event(&ngx_http_fairgate_ready_event, &ngx_posted_events);
    }

    /* a dead owner's requests are reclaimed and the freed room dispatched */

    for (rounds = 0; wakes->n && rounds < NGX_HTTP_FAIRGATE_SLOTS; rounds++) {

        more.n = 0;
        more.self = 0;
        ngx_memzero(more.seen, sizeof(more.seen));

        n = 0;

        for (i = 0; i < wakes->n; i++) {
            if (ngx_http_fairgate_wake_send(wakes->pid[i]) != NGX_DECLINED) {
                continue;
            }

            ngx_shmtx_lock(&zone->shpool->mutex);

            if (zone->sh->slots[wakes->slot[i]].pid == wakes->pid[i]) {
                ngx_http_fairgate_reclaim_locked(zone, wakes->slot[i], 0,
                                                 ngx_cycle->log);
                ngx_http_fairgate_dispatch_locked(zone, &more);
                n++;
            }

            ngx_shmtx_unlock(&zone->shpool->mutex);
        }

        if (more.self) {
            ngx_post_event(&ngx_http_fairgate_ready_event,
                           &ngx_posted_events);
        }

        if (n == 0) {
            return;
        }

        *wakes = more;
    }
}


/* NGX_OK, or NGX_DECLINED when no process listens (the owner is gone) */

static ngx_int_t
ngx_http_fairgate_wake_send(ngx_pid_t pid)
{
    u_char              byte;
    ngx_err_t           err;
    socklen_t           len;
    struct sockaddr_un  sa;

    if (ngx_http_fairgate_wake_conn == NULL) {
        return NGX_OK;
    }

    ngx_http_fairgate_sockaddr(&sa, &len, pid);
    byte = 0;

    if (sendto(ngx_http_fairgate_wake_conn->fd, &byte, 1, 0,
               (struct sockaddr *) &sa, len)
        == 1)
    {
        return NGX_OK;
    }

    err = ngx_socket_errno;

    /* a full queue means a wake-up is pending already */

    if (err == NGX_EAGAIN || err == ENOBUFS) {
        return NGX_OK;
    }

    if (err == NGX_ECONNREFUSED || err == NGX_ENOENT) {
        return NGX_DECLINED;
    }

    ngx_log_error(NGX_LOG_ALERT, ngx_cycle->log, err,
                  "fairgate: waking worker %P failed", pid);

    return NGX_ERROR;
}


static void
ngx_http_fairgate_sockaddr(struct sockaddr_un *sa, socklen_t *len,
    ngx_pid_t pid)
{
    u_char  *p;

    ngx_memzero(sa, sizeof(struct sockaddr_un));
    sa->sun_family = AF_UNIX;

    /* the abstract namespace: a leading NUL, no file, gone with the socket */
    p = ngx_sprintf((u_char *) sa->sun_path + 1, "fairgate-%P", pid);

    *len = offsetof(struct sockaddr_un, sun_path)
           + (p - (u_char *) sa->sun_path);
}


static void
ngx_http_fairgate_park(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    ngx_connection_t              *c;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    c = r->connection;

    ctx->phase = NGX_HTTP_FAIRGATE_QUEUED;

    ctx->timer.handler = ngx_http_fairgate_timeout_handler;
    ctx->timer.data = r;
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


static void
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

    r = ev->data;
    c = r->connection;
    ctx = ngx_http_fairgate_get_ctx(r);
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

    node->user->timed_out++;
    zone->sh->timed_out++;
    retry = ngx_http_fairgate_retry_after(zone->sh);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = NGX_HTTP_FAIRGATE_TIMEOUT;
    ctx->queue_ms = ngx_current_msec - ctx->start;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

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


/* a place in the queue may free in about this many seconds */

static time_t
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


/* output tokens counted as they stream: charged to the tenant at once */

void
ngx_http_fairgate_charge(ngx_http_fairgate_ctx_t *ctx, uint32_t n)
{
    ngx_http_fairgate_zone_t  *zone;

    if (ctx->node == NULL || n == 0) {
        return;
    }

    zone = ctx->zone;

    ngx_shmtx_lock(&zone->shpool->mutex);
    fg_sched_charge(zone->sh->sched, &ctx->node->req, n);
    ngx_shmtx_unlock(&zone->shpool->mutex);

    ctx->charged += n;
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

    double                       now;
    uint32_t                     in, out, sys;
    ngx_msec_t                   held;
    ngx_uint_t                   served;
    fg_sched_t                  *s;
    ngx_http_fairgate_node_t    *node;
    ngx_http_fairgate_zone_t    *zone;
    ngx_http_fairgate_wakes_t    wakes;
    ngx_http_fairgate_shctx_t   *sh;
    ngx_http_fairgate_tenant_t  *t;

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
    s = sh->sched;

    in = ctx->usage ? ctx->usage_in : ctx->tokens_in;
    out = ctx->usage ? ctx->usage_out : ctx->tokens_out;

    /* wsc weighs the system prompt apart from the rest of the input */
    sys = ngx_min(in, ctx->system_tokens);

    now = ngx_http_fairgate_now();
    wakes.n = 0;
    wakes.self = 0;
    ngx_memzero(wakes.seen, sizeof(wakes.seen));

    ngx_shmtx_lock(&zone->shpool->mutex);

    if (node->ready_set) {
        ngx_queue_remove(&node->ready);
        node->ready_set = 0;
    }

    served = 0;

    switch (node->req.state) {

    case FG_REQ_QUEUED:
        fg_sched_cancel(s, &node->req);
        ngx_http_fairgate_limits_settle(node, 0, 0, now);
        break;

    case FG_REQ_RUNNING:

        if (ctx->phase != NGX_HTTP_FAIRGATE_ADMITTED) {
            /* dispatched, but gone before it was resumed */
            fg_sched_cancel(s, &node->req);
            ngx_http_fairgate_limits_settle(node, 0, 0, now);
            break;
        }

        served = 1;

        fg_sched_correct(s, &node->req,
                         node->req.system_tokens ? in - sys : in, out);

        if (ctx->complete && !ctx->upstream_error) {
            fg_sched_finish(s, &node->req);
            ngx_http_fairgate_interaction_end(zone, node, in + out, 1, now);

        } else {
            fg_sched_cancel(s, &node->req);
            ngx_http_fairgate_interaction_end(zone, node, in + out, 0, now);
        }

        ngx_http_fairgate_limits_settle(node, in + out, 1, now);
        break;

    default:
        break;
    }

    if (served) {
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

    if (node->holds) {
        held = ngx_current_msec - node->queued;

        sh->service_ms = sh->service_ms ? 0.9 * sh->service_ms + 0.1 * held
                                        : held;
    }

    ngx_http_fairgate_free_node_locked(zone, node);
    ngx_http_fairgate_dispatch_locked(zone, &wakes);

    ngx_shmtx_unlock(&zone->shpool->mutex);

    ngx_http_fairgate_wake(zone, &wakes);
}


/*
 * Frees a node that left the scheduler or is about to be given up with it
 * (what the scheduler still holds is cancelled): its capacity, its
 * tenants' references, its slot's lists.
 */

static void
ngx_http_fairgate_free_node_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    ngx_http_fairgate_shctx_t   *sh;
    ngx_http_fairgate_tenant_t  *t;

    sh = zone->sh;

    if (node->req.state == FG_REQ_QUEUED
        || node->req.state == FG_REQ_RUNNING)
    {
        fg_sched_cancel(sh->sched, &node->req);
    }

    /* an interaction whose request ends here unserved is cut */
    ngx_http_fairgate_interaction_end(zone, node, 0, 0,
                                      ngx_http_fairgate_now());

    if (node->holds) {
        sh->running--;
        sh->running_tokens -= node->reserved;
        node->holds = 0;
    }

    if (node->ready_set) {
        ngx_queue_remove(&node->ready);
    }

    ngx_queue_remove(&node->owned);

    /* a tenant's idle time counts from the end of its last request */

    t = node->user;
    t->refs--;
    t->last = ngx_current_msec;
    ngx_queue_remove(&t->lru);
    ngx_queue_insert_head(&sh->lru, &t->lru);

    t = node->app;

    if (t) {
        t->refs--;
        t->last = ngx_current_msec;
        ngx_queue_remove(&t->lru);
        ngx_queue_insert_head(&sh->lru, &t->lru);
    }

    ngx_slab_free_locked(zone->shpool, node);
}


/*
 * Gives up every request of a slot's worker, which is gone or ("own")
 * exiting; only then do the nodes' request contexts live in this process.
 */

static void
ngx_http_fairgate_reclaim_locked(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t slot, ngx_uint_t own, ngx_log_t *log)
{
    ngx_uint_t                 n;
    ngx_queue_t               *q;
    ngx_http_fairgate_slot_t  *sl;
    ngx_http_fairgate_node_t  *node;

    sl = &zone->sh->slots[slot];
    n = 0;

    while (!ngx_queue_empty(&sl->owned)) {
        q = ngx_queue_head(&sl->owned);
        node = ngx_queue_data(q, ngx_http_fairgate_node_t, owned);

        if (own) {
            node->ctx->node = NULL;
        }

        ngx_http_fairgate_free_node_locked(zone, node);
        n++;
    }

    if (n && !own) {
        ngx_log_error(NGX_LOG_NOTICE, log, 0,
                      "fairgate_zone \"%V\": %ui requests of exited worker "
                      "%P reclaimed", &zone->name, n, sl->pid);
    }

    zone->sh->reclaimed += n;

    sl->pid = 0;
    ngx_queue_init(&sl->owned);
    ngx_queue_init(&sl->ready);
}


/*
 * A worker starts: it opens its wake-up socket, reclaims the slots of dead
 * workers and takes a slot in each zone.
 */

ngx_int_t
ngx_http_fairgate_queue_init_process(ngx_cycle_t *cycle)
{
    ngx_err_t                        err;
    ngx_uint_t                       i, j;
    socklen_t                        len;
    ngx_socket_t                     fd;
    ngx_connection_t                *c;
    struct sockaddr_un               sa;
    ngx_http_fairgate_slot_t        *sl;
    ngx_http_fairgate_zone_t       **zone, *z;
    ngx_http_fairgate_wakes_t        wakes;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);
    if (fmcf == NULL || fmcf->zones.nelts == 0) {
        return NGX_OK;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        zone[i]->slot = NGX_HTTP_FAIRGATE_NO_SLOT;
    }

    if (ngx_process != NGX_PROCESS_WORKER
        && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    ngx_http_fairgate_ready_event.handler = ngx_http_fairgate_ready_handler;
    ngx_http_fairgate_ready_event.log = cycle->log;

    fd = socket(AF_UNIX, SOCK_DGRAM, 0);

    if (fd == (ngx_socket_t) -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_socket_errno,
                      "fairgate: socket() failed");
        return NGX_OK;
    }

    ngx_http_fairgate_sockaddr(&sa, &len, ngx_pid);

    if (bind(fd, (struct sockaddr *) &sa, len) == -1) {
        err = ngx_socket_errno;
        ngx_close_socket(fd);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                      "fairgate: bind() of the wake-up socket failed");
        return NGX_OK;
    }

    if (ngx_nonblocking(fd) == -1) {
        err = ngx_socket_errno;
        ngx_close_socket(fd);
        ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                      ngx_nonblocking_n " failed");
        return NGX_OK;
    }

    c = ngx_get_connection(fd, cycle->log);
    if (c == NULL) {
        ngx_close_socket(fd);
        return NGX_OK;
    }

    c->read->handler = ngx_http_fairgate_wake_handler;
    c->read->log = cycle->log;
    c->write->log = cycle->log;

    if (ngx_handle_read_event(c->read, 0) != NGX_OK) {
        ngx_close_connection(c);
        return NGX_OK;
    }

    ngx_http_fairgate_wake_conn = c;

    /* a worker without a wake-up socket takes no slot: it cannot park */

    for (i = 0; i < fmcf->zones.nelts; i++) {
        z = zone[i];

        wakes.n = 0;
        wakes.self = 0;
        ngx_memzero(wakes.seen, sizeof(wakes.seen));

        ngx_shmtx_lock(&z->shpool->mutex);

        for (j = 0; j < NGX_HTTP_FAIRGATE_SLOTS; j++) {
            sl = &z->sh->slots[j];

            if (sl->pid == 0) {
                continue;
            }

            if (sl->pid == ngx_pid
                || (kill(sl->pid, 0) == -1 && ngx_errno == NGX_ESRCH))
            {
                ngx_http_fairgate_reclaim_locked(z, j, 0, cycle->log);
            }
        }

        for (j = 0; j < NGX_HTTP_FAIRGATE_SLOTS; j++) {
            sl = &z->sh->slots[j];

            if (sl->pid == 0) {
                sl->pid = ngx_pid;
                z->slot = j;
                break;
            }
        }

        /* reclaimed capacity, or a reload that raised it */
        ngx_http_fairgate_dispatch_locked(z, &wakes);

        ngx_shmtx_unlock(&z->shpool->mutex);

        ngx_http_fairgate_wake(z, &wakes);

        if (z->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
            ngx_log_error(NGX_LOG_EMERG, cycle->log, 0,
                          "fairgate_zone \"%V\" has no free slot for this "
                          "worker: more than %d worker processes",
                          &z->name, NGX_HTTP_FAIRGATE_SLOTS);
        }
    }

    return NGX_OK;
}


void
ngx_http_fairgate_queue_exit_process(ngx_cycle_t *cycle)
{
    ngx_uint_t                       i;
    ngx_http_fairgate_zone_t       **zone, *z;
    ngx_http_fairgate_wakes_t        wakes;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(cycle,
                                               ngx_http_fairgate_module);

    if (fmcf != NULL && ngx_http_fairgate_wake_conn != NULL) {

        zone = fmcf->zones.elts;

        for (i = 0; i < fmcf->zones.nelts; i++) {
            z = zone[i];

            if (z->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
                continue;
            }

            wakes.n = 0;
            wakes.self = 0;
            ngx_memzero(wakes.seen, sizeof(wakes.seen));

            ngx_shmtx_lock(&z->shpool->mutex);

            ngx_http_fairgate_reclaim_locked(z, z->slot, 1, cycle->log);
            z->slot = NGX_HTTP_FAIRGATE_NO_SLOT;

            ngx_http_fairgate_dispatch_locked(z, &wakes);

            ngx_shmtx_unlock(&z->shpool->mutex);

            wakes.self = 0;
            ngx_http_fairgate_wake(z, &wakes);
        }
    }

    if (ngx_http_fairgate_wake_conn) {
        ngx_close_connection(ngx_http_fairgate_wake_conn);
        ngx_http_fairgate_wake_conn = NULL;
    }
}


static void
ngx_http_fairgate_wake_handler(ngx_event_t *ev)
{
    u_char             buf[64];
    ssize_t            n;
    ngx_connection_t  *c;

    c = ev->data;

    /* the datagrams only wake; the ready lists say what to do */

    for ( ;; ) {
        n = recv(c->fd, buf, sizeof(buf), 0);

        if (n == -1) {
            break;
        }
    }

    ev->ready = 0;

    if (ngx_handle_read_event(ev, 0) != NGX_OK) {
        ngx_log_error(NGX_LOG_ALERT, ev->log, 0,
                      "fairgate: wake-up socket event failed");
    }

    ngx_http_fairgate_ready_handler(&ngx_http_fairgate_ready_event);
}


/* resumes this worker's requests dispatched for it, one at a time */

static void
ngx_http_fairgate_ready_handler(ngx_event_t *ev)
{
    ngx_uint_t                       i;
    ngx_queue_t                     *q;
    ngx_http_fairgate_ctx_t         *ctx;
    ngx_http_fairgate_node_t        *node;
    ngx_http_fairgate_slot_t        *sl;
    ngx_http_fairgate_zone_t       **zone, *z;
    ngx_http_fairgate_main_conf_t   *fmcf;

    fmcf = ngx_http_cycle_get_module_main_conf(ngx_cycle,
                                               ngx_http_fairgate_module);
    if (fmcf == NULL) {
        return;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        z = zone[i];

        if (z->slot == NGX_HTTP_FAIRGATE_NO_SLOT) {
            continue;
        }

        sl = &z->sh->slots[z->slot];

        for ( ;; ) {
            ngx_shmtx_lock(&z->shpool->mutex);

            if (ngx_queue_empty(&sl->ready)) {
                ngx_shmtx_unlock(&z->shpool->mutex);
                break;
            }

            q = ngx_queue_head(&sl->ready);
            ngx_queue_remove(q);

            node = ngx_queue_data(q, ngx_http_fairgate_node_t, ready);
            node->ready_set = 0;
            ctx = node->ctx;

            ngx_shmtx_unlock(&z->shpool->mutex);

            ngx_http_fairgate_resume(ctx);
        }
    }
}
