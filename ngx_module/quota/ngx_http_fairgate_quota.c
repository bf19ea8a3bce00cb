
/*
 * fairgate: quotas at admission, and the counts they check.
 *
 * Under the zone's mutex, before the rate limits: each quota of the
 * location that applies to the request's key, user or app is checked
 * against its tenant's counts in the quota's window (what this gateway
 * counted and, with fairgate_redis, the others); one that has no room
 * refuses the request before it reaches the upstream or an engine.  A
 * request let in is counted in every window of its tenants at once; its
 * tokens (input and output) and its cost are added as they are settled:
 * output as it streams, the rest when it ends.  A request never served
 * takes its count back.
 *
 * A key's own quotas and budgets (the admin API's, read once as the key
 * entered the keys' cache: ctx->key_rules) are checked as a directive
 * naming the key would be, in place of the location's key quotas of the
 * same window.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_quota.h"


static ngx_http_fairgate_tenant_t *ngx_http_fairgate_quota_key(
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_node_t *node,
    ngx_array_t *quotas);
static ngx_int_t ngx_http_fairgate_quota_one(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_quota_t *q, ngx_http_fairgate_tenant_t *t,
    ngx_str_t *name, fg_tz_t *tz, time_t now);
static ngx_http_fairgate_qwin_t *ngx_http_fairgate_quota_window(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_tenant_t *t,
    fg_quota_per_t *per);
static ngx_uint_t ngx_http_fairgate_quota_own(ngx_http_fairgate_ctx_t *ctx,
    fg_quota_per_t *per);
static ngx_int_t ngx_http_fairgate_quota_rules(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_tenant_t *t, fg_tz_t *tz, time_t now);
static ngx_http_fairgate_quota_hit_t *ngx_http_fairgate_quota_hit(
    ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_quota_count(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, fg_tz_t *tz, time_t now);


ngx_int_t
ngx_http_fairgate_quota_admit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf)
{
    time_t                       now;
    fg_tz_t                     *tz;
    ngx_int_t                    rc;
    ngx_str_t                   *name[NGX_HTTP_FAIRGATE_QUOTA_KINDS];
    ngx_uint_t                   i, n;
    ngx_http_fairgate_quota_t   *q;
    ngx_http_fairgate_tenant_t  *t[NGX_HTTP_FAIRGATE_QUOTA_KINDS];

    if (flcf->quotas == NULL && ctx->key_nrules == 0) {
        return NGX_OK;
    }

    tz = ngx_http_fairgate_quota_tz();
    now = ngx_time();

    t[NGX_HTTP_FAIRGATE_USER] = node->user;
    t[NGX_HTTP_FAIRGATE_APP] = node->app;
    t[NGX_HTTP_FAIRGATE_KEY] = ngx_http_fairgate_quota_key(ctx, node,
                                                           flcf->quotas);
    name[NGX_HTTP_FAIRGATE_USER] = &ctx->user;
    name[NGX_HTTP_FAIRGATE_APP] = &ctx->app;
    name[NGX_HTTP_FAIRGATE_KEY] = &ctx->key_id;

    q = flcf->quotas ? flcf->quotas->elts : NULL;
    n = flcf->quotas ? flcf->quotas->nelts : 0;

    for (i = 0; i < n; i++) {

        if (t[q[i].kind] == NULL
            || !ngx_http_fairgate_quota_applies(flcf->quotas, &q[i],
                                                name[q[i].kind])
            || (q[i].kind == NGX_HTTP_FAIRGATE_KEY
                && ngx_http_fairgate_quota_own(ctx, &q[i].per)))
        {
            continue;
        }

        rc = ngx_http_fairgate_quota_one(ctx, &q[i], t[q[i].kind],
                                         name[q[i].kind], tz, now);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    rc = ngx_http_fairgate_quota_rules(ctx, t[NGX_HTTP_FAIRGATE_KEY], tz,
                                       now);
    if (rc != NGX_OK) {
        return rc;
    }

    for (i = 0; i < NGX_HTTP_FAIRGATE_QUOTA_KINDS; i++) {
        if (t[i]) {
            ngx_http_fairgate_quota_count(ctx->zone, t[i], tz, now);
        }
    }

    node->quota_at = now;

    return NGX_OK;
}


/* the key's record, held by the request, when a quota of keys exists */

static ngx_http_fairgate_tenant_t *
ngx_http_fairgate_quota_key(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_array_t *quotas)
{
    ngx_uint_t                   i, n;
    ngx_http_fairgate_quota_t   *q;
    ngx_http_fairgate_tenant_t  *key;

    if (ctx->key_id.len == 0) {
        return NULL;
    }

    if (node->key) {
        return node->key;
    }

    q = quotas ? quotas->elts : NULL;
    n = quotas ? quotas->nelts : 0;

    for (i = 0; i < n; i++) {
        if (q[i].kind == NGX_HTTP_FAIRGATE_KEY) {
            break;
        }
    }

    if (i == n && ctx->key_nrules == 0) {
        return NULL;
    }

    key = ngx_http_fairgate_tenant_get(ctx->zone, NGX_HTTP_FAIRGATE_KEY,
                                       &ctx->key_id, 1.0);
    if (key == NULL) {
        /* no room in the zone: its quotas are not checked (fail open) */
        return NULL;
    }

    key->refs++;
    node->key = key;

    return key;
}


/* whether the key has a quota of its own in the window */

static ngx_uint_t
ngx_http_fairgate_quota_own(ngx_http_fairgate_ctx_t *ctx,
    fg_quota_per_t *per)
{
    ngx_uint_t        i;
    fg_quota_rule_t  *r;

    for (i = 0; i < ctx->key_nrules; i++) {
        r = &ctx->key_rules[i];

        if (r->per.unit == per->unit && r->per.rolling == per->rolling
            && r->per.length == per->length)
        {
            return 1;
        }
    }

    return 0;
}


/*
 * The key's own quotas, each made a directive's for the key (in the
 * request's pool: what a refusal or warning says points to it)
 */

static ngx_int_t
ngx_http_fairgate_quota_rules(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_tenant_t *t, fg_tz_t *tz, time_t now)
{
    u_char                     *p;
    ngx_int_t                   rc;
    ngx_uint_t                  i;
    ngx_http_fairgate_quota_t  *q;

    if (t == NULL || ctx->key_nrules == 0) {
        return NGX_OK;
    }

    q = ngx_pcalloc(ctx->request->pool,
                    ctx->key_nrules * sizeof(ngx_http_fairgate_quota_t));
    p = ngx_pnalloc(ctx->request->pool, ctx->key_nrules * 32);

    if (q == NULL || p == NULL) {
        /* as a zone with no room: not checked */
        return NGX_OK;
    }

    for (i = 0; i < ctx->key_nrules; i++, p += 32) {
        q[i].kind = NGX_HTTP_FAIRGATE_KEY;
        q[i].name = ctx->key_id;
        q[i].per = ctx->key_rules[i].per;
        q[i].limit = ctx->key_rules[i].limit;
        q[i].window.data = p;
        q[i].window.len = fg_quota_per_name(&q[i].per, (char *) p, 32);

        rc = ngx_http_fairgate_quota_one(ctx, &q[i], t, &ctx->key_id, tz,
                                         now);
        if (rc != NGX_OK) {
            return rc;
        }
    }

    return NGX_OK;
}


/* one quota of a tenant: NGX_DECLINED, over it (ctx->quota says how) */

static ngx_int_t
ngx_http_fairgate_quota_one(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_quota_t *q, ngx_http_fairgate_tenant_t *t,
    ngx_str_t *name, fg_tz_t *tz, time_t now)
{
    int64_t                         id;
    uint32_t                        over, percent;
    fg_quota_count_t                used;
    ngx_http_fairgate_qwin_t       *w;
    ngx_http_fairgate_quota_hit_t  *hit;

    w = ngx_http_fairgate_quota_window(ctx->zone, t, &q->per);
    if (w == NULL) {
        /* the zone said it is full: this quota is not checked */
        return NGX_OK;
    }

    w->limit = q->limit;
    fg_quota_win_used(&w->win, tz, now, &used);

    over = fg_quota_over(&q->limit, &used);
    percent = fg_quota_percent(&q->limit, &used);

    if (!over
        && (q->limit.soft == 0 || percent < q->limit.soft
            || (ctx->quota && ctx->quota->percent >= percent)))
    {
        return NGX_OK;
    }

    hit = ngx_http_fairgate_quota_hit(ctx);
    if (hit == NULL) {
        return NGX_OK;
    }

    hit->quota = q;
    hit->tenant = *name;
    hit->used = used;
    hit->over = over;
    hit->percent = percent;
    hit->reset = (time_t) fg_quota_reset(&w->win, tz, now, &q->limit,
                                         over ? over : FG_QUOTA_REQUESTS
                                                     | FG_QUOTA_TOKENS
                                                     | FG_QUOTA_COST);
    hit->log = 0;

    if (over) {
        w->win.refused++;
        return NGX_DECLINED;
    }

    /* the soft threshold: said in the log once a tenant and window */
    id = fg_quota_id(&q->per, tz, now);

    if (w->win.warned != id) {
        w->win.warned = id;
        hit->log = 1;
    }

    return NGX_OK;
}


static ngx_http_fairgate_quota_hit_t *
ngx_http_fairgate_quota_hit(ngx_http_fairgate_ctx_t *ctx)
{
    if (ctx->quota == NULL) {
        ctx->quota = ngx_pcalloc(ctx->request->pool,
                                 sizeof(ngx_http_fairgate_quota_hit_t));
    }

    return ctx->quota;
}


/* a tenant's window of a definition, found or made in the zone's slab */

static ngx_http_fairgate_qwin_t *
ngx_http_fairgate_quota_window(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, fg_quota_per_t *per)
{
    ngx_http_fairgate_qwin_t  *w;

    for (w = ngx_http_fairgate_tenant_quota(zone, t); w; w = w->next) {
        if (w->win.per.unit == per->unit
            && w->win.per.rolling == per->rolling
            && w->win.per.length == per->length)
        {
            return w;
        }
    }

    /* the tenant holds a reference: making room never frees it */
    w = ngx_http_fairgate_room_alloc(zone,
                                     offsetof(ngx_http_fairgate_qwin_t, win)
                                     + fg_quota_win_size(per));
    if (w == NULL) {
        return NULL;
    }

    fg_quota_win_init(&w->win, per);
    w->until = 0;
    ngx_memzero(&w->limit, sizeof(fg_quota_limit_t));

    ngx_http_fairgate_tenant_quota_add(zone, t, w);

    return w;
}


/* a request let in, counted in each of its tenant's windows, which keep
 * the tenant in the zone until they end */

static void
ngx_http_fairgate_quota_count(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, fg_tz_t *tz, time_t now)
{
    int64_t                    start, end;
    ngx_http_fairgate_qwin_t  *w;

    for (w = ngx_http_fairgate_tenant_quota(zone, t); w; w = w->next) {
        fg_quota_win_add(&w->win, tz, now, 1, 0, 0);

        fg_quota_bounds(&w->win.per, tz, now, &start, &end);

        w->until = w->win.per.rolling ? now + (time_t) w->win.per.length
                                      : (time_t) end;
    }
}


void
ngx_http_fairgate_quota_charge(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint64_t tokens, uint64_t cost)
{
    time_t                       now;
    fg_tz_t                     *tz;
    uint64_t                     at, ac, bt, bc;
    ngx_uint_t                   i;
    ngx_http_fairgate_qwin_t    *w;
    ngx_http_fairgate_tenant_t  *t[NGX_HTTP_FAIRGATE_QUOTA_KINDS];

    if (node == NULL || node->quota_at == 0) {
        return;
    }

    /*
     * What it used in all, of which some was counted before: added, or
     * taken back when the usage the request ends with says less than was
     * counted as it streamed
     */
    at = (tokens > node->quota_tokens) ? tokens - node->quota_tokens : 0;
    ac = (cost > node->quota_cost) ? cost - node->quota_cost : 0;
    bt = (tokens < node->quota_tokens) ? node->quota_tokens - tokens : 0;
    bc = (cost < node->quota_cost) ? node->quota_cost - cost : 0;

    if (at == 0 && ac == 0 && bt == 0 && bc == 0) {
        return;
    }

    tz = ngx_http_fairgate_quota_tz();
    now = ngx_time();

    t[0] = node->user;
    t[1] = node->app;
    t[2] = node->key;

    for (i = 0; i < NGX_HTTP_FAIRGATE_QUOTA_KINDS; i++) {
        for (w = t[i] ? ngx_http_fairgate_tenant_quota(zone, t[i]) : NULL;
             w;
             w = w->next)
        {
            fg_quota_win_add(&w->win, tz, now, 0, at, ac);
            fg_quota_win_take(&w->win, tz, now, now, 0, bt, bc);
        }
    }

    node->quota_tokens = tokens;
    node->quota_cost = cost;
}


void
ngx_http_fairgate_quota_unserved(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node)
{
    time_t                       now;
    fg_tz_t                     *tz;
    ngx_uint_t                   i;
    ngx_http_fairgate_qwin_t    *w;
    ngx_http_fairgate_tenant_t  *t[NGX_HTTP_FAIRGATE_QUOTA_KINDS];

    if (node == NULL || node->quota_at == 0) {
        return;
    }

    tz = ngx_http_fairgate_quota_tz();
    now = ngx_time();

    t[0] = node->user;
    t[1] = node->app;
    t[2] = node->key;

    for (i = 0; i < NGX_HTTP_FAIRGATE_QUOTA_KINDS; i++) {
        for (w = t[i] ? ngx_http_fairgate_tenant_quota(zone, t[i]) : NULL;
             w;
             w = w->next)
        {
            fg_quota_win_take(&w->win, tz, now, node->quota_at, 1,
                              node->quota_tokens, node->quota_cost);
        }
    }

    node->quota_at = 0;
    node->quota_tokens = 0;
    node->quota_cost = 0;
}
