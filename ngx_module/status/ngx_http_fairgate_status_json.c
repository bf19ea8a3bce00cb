
/*
 * fairgate: the status page as JSON: {"zones": [...], "engines": [...],
 * "redis": {...}}, sent as it is written (_status_out.c): a zone's own
 * numbers are a small jansson tree, its users and apps are dumped one at
 * a time, so that no page is ever held whole.  A zone reads as its
 * scheduler, its capacity and what it refused, its queue-wait histogram,
 * its users and apps, and FairServe's interactions; "engines" is local
 * mode's, "redis" the sync's (redis/ngx_http_fairgate_redis_status.c).
 * jansson keeps the keys in the order they are set, which is the order
 * docs/directives.md shows.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_redis.h"


static json_t *ngx_http_fairgate_status_json_root(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_status_json_zone(
    ngx_http_fairgate_status_out_t *o, ngx_http_fairgate_snap_t *snap);
static json_t *ngx_http_fairgate_status_json_listed(
    ngx_http_fairgate_snap_t *snap);
static json_t *ngx_http_fairgate_status_json_sched(
    ngx_http_fairgate_snap_t *snap);
static json_t *ngx_http_fairgate_status_json_capacity(
    ngx_http_fairgate_snap_t *snap);
static json_t *ngx_http_fairgate_status_json_wait(
    ngx_http_fairgate_shctx_t *sh);
static ngx_int_t ngx_http_fairgate_status_json_tenants(
    ngx_http_fairgate_status_out_t *o, ngx_http_fairgate_snap_t *snap,
    ngx_uint_t kind);
static json_t *ngx_http_fairgate_status_json_user(
    ngx_http_fairgate_snap_tenant_t *s);
static json_t *ngx_http_fairgate_status_json_app(
    ngx_http_fairgate_snap_tenant_t *s);
static json_t *ngx_http_fairgate_status_json_throttled(
    ngx_http_fairgate_throttled_t *tb, ngx_uint_t policy);
static json_t *ngx_http_fairgate_status_json_qoe(
    ngx_http_fairgate_qoe_stats_t *qs);
static json_t *ngx_http_fairgate_status_json_zengines(
    ngx_http_fairgate_shctx_t *sh);
static json_t *ngx_http_fairgate_status_json_interactions(
    ngx_http_fairgate_shctx_t *sh);
static ngx_int_t ngx_http_fairgate_status_engines(ngx_http_request_t *r,
    json_t *root);
static json_t *ngx_http_fairgate_status_engine(
    ngx_http_fairgate_engine_t *en);
static json_t *ngx_http_fairgate_status_engine_load(fg_shm_load_t *ld);


/*
 * The page's text around its zones, and each zone's around its users and
 * apps, is dumped by jansson with a marker string in their place; the
 * zones and their tenants are written in there, tenant by tenant.
 */

#define NGX_HTTP_FAIRGATE_MARK_ZONES  "\"\\u0001zones\""
#define NGX_HTTP_FAIRGATE_MARK_USERS  "\"\\u0001users\""
#define NGX_HTTP_FAIRGATE_MARK_APPS   "\"\\u0001apps\""


ngx_int_t
ngx_http_fairgate_status_json(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    char                            *text, *mark;
    json_t                          *root;
    ngx_int_t                        rc;
    ngx_uint_t                       i;
    ngx_http_fairgate_status_out_t   o;

    root = ngx_http_fairgate_status_json_root(r);
    if (root == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    text = json_dumps(root, JSON_INDENT(2)|JSON_PRESERVE_ORDER);
    json_decref(root);

    mark = text ? ngx_strstr(text, NGX_HTTP_FAIRGATE_MARK_ZONES) : NULL;

    if (mark == NULL) {
        free(text);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    rc = ngx_http_fairgate_status_out_start(r, &o);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        free(text);
        return rc;
    }

    rc = ngx_http_fairgate_status_out_write(&o, (u_char *) text,
                                            mark - text);

    for (i = 0; rc == NGX_OK && i < n; i++) {
        rc = ngx_http_fairgate_status_out_write(&o,
                                                (u_char *) (i ? "," : "["), 1);

        if (rc == NGX_OK) {
            rc = ngx_http_fairgate_status_json_zone(&o, &snaps[i]);
        }
    }

    if (rc == NGX_OK) {
        mark += sizeof(NGX_HTTP_FAIRGATE_MARK_ZONES) - 1;
        rc = ngx_http_fairgate_status_out_write(&o, (u_char *) (n ? "]" : "[]"),
                                                n ? 1 : 2);
    }

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_status_out_write(&o, (u_char *) mark,
                                                ngx_strlen(mark));
    }

    free(text);

    return (rc == NGX_OK) ? ngx_http_fairgate_status_out_end(&o) : NGX_ERROR;
}


static json_t *
ngx_http_fairgate_status_json_root(ngx_http_request_t *r)
{
    json_t  *root;

    root = json_object();

    if (root == NULL
        || json_object_set_new(root, "zones", json_string("\001zones")) != 0)
    {
        json_decref(root);
        return NULL;
    }

    /* when this was read, for rates made of two reads (the dashboard) */

    if (ngx_http_fairgate_status_engines(r, root) != NGX_OK
        || ngx_http_fairgate_redis_status_json(r, root) != NGX_OK
        || json_object_set_new(root, "time_ms",
               json_integer((json_int_t) ngx_http_fairgate_wall_msec()))
           != 0)
    {
        json_decref(root);
        return NULL;
    }

    return root;
}


static ngx_int_t
ngx_http_fairgate_status_json_zone(ngx_http_fairgate_status_out_t *o,
    ngx_http_fairgate_snap_t *snap)
{
    char       *text, *users, *apps;
    json_t     *zone;
    ngx_int_t   rc;

    zone = ngx_http_fairgate_status_json_sched(snap);
    if (zone == NULL) {
        return NGX_ERROR;
    }

    if (json_object_update_new(zone,
                               ngx_http_fairgate_status_json_capacity(snap))
        != 0
        || json_object_update_new(zone,
               ngx_http_fairgate_status_json_interactions(&snap->sh))
           != 0
        || json_object_set_new(zone, "engines",
               ngx_http_fairgate_status_json_zengines(&snap->sh))
           != 0
        || json_object_set_new(zone, "listed",
               ngx_http_fairgate_status_json_listed(snap))
           != 0
        || json_object_update_new(zone,
               ngx_http_fairgate_status_quota_keys(snap))
           != 0)
    {
        json_decref(zone);
        return NGX_ERROR;
    }

    text = json_dumps(zone, JSON_INDENT(2)|JSON_PRESERVE_ORDER);
    json_decref(zone);

    users = text ? ngx_strstr(text, NGX_HTTP_FAIRGATE_MARK_USERS) : NULL;
    apps = users ? ngx_strstr(users, NGX_HTTP_FAIRGATE_MARK_APPS) : NULL;

    if (apps == NULL) {
        free(text);
        return NGX_ERROR;
    }

    rc = ngx_http_fairgate_status_out_write(o, (u_char *) text, users - text);

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_status_json_tenants(o, snap,
                                                   NGX_HTTP_FAIRGATE_USER);
    }

    users += sizeof(NGX_HTTP_FAIRGATE_MARK_USERS) - 1;

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_status_out_write(o, (u_char *) users,
                                                apps - users);
    }

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_status_json_tenants(o, snap,
                                                   NGX_HTTP_FAIRGATE_APP);
    }

    apps += sizeof(NGX_HTTP_FAIRGATE_MARK_APPS) - 1;

    if (rc == NGX_OK) {
        rc = ngx_http_fairgate_status_out_write(o, (u_char *) apps,
                                                ngx_strlen(apps));
    }

    free(text);

    return rc;
}


/*
 * What "users" and "apps" hold of the zone (?limit=, ?tenant=): at most
 * "limit" of each, of the "walked" the zone held as it was read
 */

static json_t *
ngx_http_fairgate_status_json_listed(ngx_http_fairgate_snap_t *snap)
{
    ngx_uint_t  i, users, apps;

    users = 0;
    apps = 0;

    for (i = 0; i < snap->ntenants; i++) {
        users += (snap->tenants[i].kind == NGX_HTTP_FAIRGATE_USER);
        apps += (snap->tenants[i].kind == NGX_HTTP_FAIRGATE_APP);
    }

    return json_pack("{s:I, s:I, s:I, s:I}",
                     "limit", (json_int_t) snap->limit,
                     "walked", (json_int_t) snap->seen,
                     "users", (json_int_t) users,
                     "apps", (json_int_t) apps);
}


/* the zone's name, its policy and cost, and the scheduler's counts */

static json_t *
ngx_http_fairgate_status_json_sched(ngx_http_fairgate_snap_t *snap)
{
    fg_sched_conf_t           *conf;
    fg_sched_stats_t          *st;
    ngx_http_fairgate_zone_t  *z;

    z = snap->zone;
    conf = &snap->conf;
    st = &snap->st;

    return json_pack("{s:s%, s:s, s:s, s:f, s:I,"
                     " s:{s:s%, s:f, s:f, s:f, s:f, s:f},"
                     " s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I}",
                     "name", (char *) z->name.data, z->name.len,
                     "policy", fg_sched_policy_name(conf->policy),
                     "route", fg_sched_route_name(conf->route),
                     "quantum", conf->quantum,
                     "window", (json_int_t) conf->window,
                     "cost",
                         "name", (char *) z->cost.data, z->cost.len,
                         "in", conf->cost.in,
                         "out", conf->cost.out,
                         "in_out", conf->cost.in_out,
                         "out2", conf->cost.out2,
                         "base", conf->cost.base,
                     "max_tenants", (json_int_t) conf->max_clients,
                     "rpm", (json_int_t) conf->rpm_limit,
                     "reloads", (json_int_t) snap->sh.reloads,
                     "tenants", (json_int_t) st->clients,
                     "backlogged", (json_int_t) st->backlogged,
                     "waiting", (json_int_t) st->waiting,
                     "running", (json_int_t) st->running,
                     "enqueued", (json_int_t) st->enqueued,
                     "rejected", (json_int_t) st->rejected,
                     "admitted", (json_int_t) st->admitted,
                     "finished", (json_int_t) st->finished,
                     "cancelled", (json_int_t) st->cancelled);
}


/*
 * The upstream's capacity and what is in use, the requests the module
 * refused or handed over, the tokens settled, the queue-wait histogram,
 * and the users and apps.
 */

static json_t *
ngx_http_fairgate_status_json_capacity(ngx_http_fairgate_snap_t *snap)
{
    json_t                     *wait, *users, *apps;
    ngx_http_fairgate_shctx_t  *sh;

    sh = &snap->sh;

    wait = ngx_http_fairgate_status_json_wait(sh);
    users = json_string("\001users");
    apps = json_string("\001apps");

    if (wait == NULL || users == NULL || apps == NULL) {
        json_decref(wait);
        json_decref(users);
        json_decref(apps);
        return NULL;
    }

    return json_pack("{s:{s:I, s:I, s:I, s:I},"
                     " s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:o, s:o, s:o, s:o}",
                     "inflight",
                         "limit", (json_int_t) sh->inflight,
                         "tokens_limit", (json_int_t) sh->inflight_tokens,
                         "running", (json_int_t) sh->running,
                         "tokens", (json_int_t) sh->running_tokens,
                     "throttled", (json_int_t) sh->throttled,
                     "throttled_by",
                         ngx_http_fairgate_status_json_throttled(
                             &sh->throttled_by, 1),
                     "queue_full", (json_int_t) sh->queue_full,
                     "timed_out", (json_int_t) sh->timed_out,
                     "reclaimed", (json_int_t) sh->reclaimed,
                     "handoffs", (json_int_t) sh->handoffs,
                     "expired", (json_int_t) sh->expired,
                     "tokens_in", (json_int_t) sh->tokens_in,
                     "tokens_out", (json_int_t) sh->tokens_out,
                     "cached_tokens", (json_int_t) sh->cached_tokens,
                     "queue_wait", wait,
                     "qoe", ngx_http_fairgate_status_json_qoe(&sh->qoe),
                     "users", users,
                     "apps", apps);
}


/* cumulative buckets, with their upper bounds as Prometheus writes them */

static json_t *
ngx_http_fairgate_status_json_wait(ngx_http_fairgate_shctx_t *sh)
{
    json_t      *buckets;
    uint64_t     cum;
    ngx_uint_t   i;

    buckets = json_array();
    if (buckets == NULL) {
        return NULL;
    }

    cum = 0;

    for (i = 0; i < NGX_HTTP_FAIRGATE_BUCKETS; i++) {
        cum += sh->wait_bucket[i];

        if (json_array_append_new(buckets,
                json_pack("{s:s, s:I}",
                          "le", ngx_http_fairgate_wait_buckets[i].text,
                          "count", (json_int_t) cum))
            != 0)
        {
            json_decref(buckets);
            return NULL;
        }
    }

    return json_pack("{s:o, s:I, s:f}",
                     "buckets", buckets,
                     "count", (json_int_t) sh->wait_count,
                     "sum", sh->wait_sum);
}


/* a zone's users or apps, a JSON array written one tenant at a time */

static ngx_int_t
ngx_http_fairgate_status_json_tenants(ngx_http_fairgate_status_out_t *o,
    ngx_http_fairgate_snap_t *snap, ngx_uint_t kind)
{
    json_t                           *t;
    ngx_int_t                         rc;
    ngx_uint_t                        i, n;
    ngx_http_fairgate_snap_tenant_t  *s;

    n = 0;
    rc = ngx_http_fairgate_status_out_write(o, (u_char *) "[", 1);

    for (i = 0; rc == NGX_OK && i < snap->ntenants; i++) {
        s = &snap->tenants[i];

        if (s->kind != kind) {
            continue;
        }

        if (n++) {
            rc = ngx_http_fairgate_status_out_write(o, (u_char *) ",\n", 2);
        }

        t = (kind == NGX_HTTP_FAIRGATE_USER)
            ? ngx_http_fairgate_status_json_user(s)
            : ngx_http_fairgate_status_json_app(s);

        /* fairgate_quota's windows, where it has some */
        if (t && s->nquota) {
            json_object_set_new(t, "quotas",
                                ngx_http_fairgate_status_quota_json(s));
        }

        if (rc == NGX_OK) {
            rc = ngx_http_fairgate_status_out_json(o, t);
        }

        json_decref(t);
    }

    if (rc != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_status_out_write(o, (u_char *) "]", 1);
}


static json_t *
ngx_http_fairgate_status_json_user(ngx_http_fairgate_snap_tenant_t *s)
{
    return json_pack("{s:s%, s:f, s:f, s:f, s:f, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:I}, s:o,"
                     " s:o}",
                     "name", (char *) s->name, s->len,
                     "weight", s->weight,
                     "counter", s->counter,
                     "service", s->service,
                     "deficit", s->deficit,
                     "waiting", (json_int_t) s->waiting,
                     "running", (json_int_t) s->running,
                     "enqueued", (json_int_t) s->enqueued,
                     "admitted", (json_int_t) s->admitted,
                     "finished", (json_int_t) s->finished,
                     "cancelled", (json_int_t) s->cancelled,
                     "throttled", (json_int_t) s->throttled,
                     "queue_full", (json_int_t) s->queue_full,
                     "timed_out", (json_int_t) s->timed_out,
                     "requests", (json_int_t) s->requests,
                     "tokens_in", (json_int_t) s->tokens_in,
                     "tokens_out", (json_int_t) s->tokens_out,
                     "cached_tokens", (json_int_t) s->cached_tokens,
                     "rpm", (json_int_t) s->rpm,
                     "tpm", (json_int_t) s->tpm,
                     "limit",
                         "rpm", (json_int_t) s->limit_rpm,
                         "tpm", (json_int_t) s->limit_tpm,
                     "throttled_by",
                         ngx_http_fairgate_status_json_throttled(
                             &s->throttled_by, 1),
                     "qoe", ngx_http_fairgate_status_json_qoe(&s->qoe));
}


static json_t *
ngx_http_fairgate_status_json_app(ngx_http_fairgate_snap_tenant_t *s)
{
    return json_pack("{s:s%, s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:{s:I, s:I}, s:o, s:o}",
                     "name", (char *) s->name, s->len,
                     "requests", (json_int_t) s->requests,
                     "throttled", (json_int_t) s->throttled,
                     "tokens_in", (json_int_t) s->tokens_in,
                     "tokens_out", (json_int_t) s->tokens_out,
                     "rpm", (json_int_t) s->rpm,
                     "tpm", (json_int_t) s->tpm,
                     "limit",
                         "rpm", (json_int_t) s->limit_rpm,
                         "tpm", (json_int_t) s->limit_tpm,
                     "throttled_by",
                         ngx_http_fairgate_status_json_throttled(
                             &s->throttled_by, 0),
                     "qoe", ngx_http_fairgate_status_json_qoe(&s->qoe));
}


/*
 * The Andes QoE of the streams served: how many, their mean, the share
 * at 0.95 or above, and p10, p50, p90 read from the histogram
 * (zone/ngx_http_fairgate_qoe_stats.c); all but the count null if none.
 */

static json_t *
ngx_http_fairgate_status_json_qoe(ngx_http_fairgate_qoe_stats_t *qs)
{
    uint64_t  count, good;

    count = ngx_http_fairgate_qoe_stats_count(qs, 0);
    good = ngx_http_fairgate_qoe_stats_count(qs, NGX_HTTP_FAIRGATE_QOE_GOOD);

    if (count == 0) {
        return json_pack("{s:I, s:n, s:n, s:n, s:n, s:n}",
                         "count", (json_int_t) 0,
                         "mean", "share_095", "p10", "p50", "p90");
    }

    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}",
                     "count", (json_int_t) count,
                     "mean", qs->sum / count,
                     "share_095", (double) good / count,
                     "p10", ngx_http_fairgate_qoe_stats_quantile(qs, 0.1),
                     "p50", ngx_http_fairgate_qoe_stats_quantile(qs, 0.5),
                     "p90", ngx_http_fairgate_qoe_stats_quantile(qs, 0.9));
}


/*
 * What throttled the requests, adding up to "throttled": a rate limit's
 * requests or tokens, OIT, and (a user's, the zone's) the rpm policy.
 */

static json_t *
ngx_http_fairgate_status_json_throttled(ngx_http_fairgate_throttled_t *tb,
    ngx_uint_t policy)
{
    if (!policy) {
        return json_pack("{s:I, s:I, s:I}",
                         "requests", (json_int_t) tb->requests,
                         "tokens", (json_int_t) tb->tokens,
                         "oit", (json_int_t) tb->oit);
    }

    return json_pack("{s:I, s:I, s:I, s:I}",
                     "requests", (json_int_t) tb->requests,
                     "tokens", (json_int_t) tb->tokens,
                     "oit", (json_int_t) tb->oit,
                     "policy", (json_int_t) tb->policy);
}


/*
 * Local mode: the engines the zone feeds, what runs on each, and the
 * prompt tokens it was sent, found cached as routed, and said it reused.
 */

static json_t *
ngx_http_fairgate_status_json_zengines(ngx_http_fairgate_shctx_t *sh)
{
    json_t                       *list;
    ngx_uint_t                    i;
    ngx_http_fairgate_zengine_t  *ze;

    list = json_array();
    if (list == NULL) {
        return NULL;
    }

    for (i = 0; i < sh->n_engines; i++) {
        ze = &sh->engines[i];

        if (json_array_append_new(list,
                json_pack("{s:s%, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                          "name", (char *) ze->name, ze->len,
                          "seats", (json_int_t) ze->seats,
                          "tokens_limit", (json_int_t) ze->tokens,
                          "running", (json_int_t) ze->running,
                          "tokens", (json_int_t) ze->running_tokens,
                          "dispatched", (json_int_t) ze->dispatched,
                          "prompt_tokens", (json_int_t) ze->prompt_tokens,
                          "matched_tokens", (json_int_t) ze->matched_tokens,
                          "cached_tokens", (json_int_t) ze->cached_tokens))
            != 0)
        {
            json_decref(list);
            return NULL;
        }
    }

    return list;
}


/* FairServe: interactions (fg_oit), overload, users served */

static json_t *
ngx_http_fairgate_status_json_interactions(ngx_http_fairgate_shctx_t *sh)
{
    return json_pack("{s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:f, s:I}, s:b, s:I, s:I}",
                     "interactions",
                         "capacity", (json_int_t) sh->oit.capacity,
                         "open", (json_int_t) sh->oit.open,
                         "opened", (json_int_t) sh->oit.opened,
                         "completed", (json_int_t) sh->oit.completed,
                         "aborted", (json_int_t) sh->oit.aborted,
                         "expired", (json_int_t) sh->oit.expired,
                         "continued", (json_int_t) sh->oit.continued,
                         "untracked", (json_int_t) sh->oit.untracked,
                         "throttled", (json_int_t) sh->oit.throttled,
                         "idle_timeout", sh->oit.idle_timeout,
                         "tokens_wasted", (json_int_t) sh->oit.tokens_wasted,
                     "overloaded", (int) sh->overloaded,
                     "users_seen", (json_int_t) sh->users_seen,
                     "users_served", (json_int_t) sh->users_served);
}


/*
 * Local mode: each fairgate_engine as this worker sees it, and the load
 * the engine publishes (its KV blocks free, its counters).
 */

static ngx_int_t
ngx_http_fairgate_status_engines(ngx_http_request_t *r, json_t *root)
{
    json_t                         *engines, *e, *load;
    ngx_uint_t                      i;
    fg_shm_load_t                   ld;
    ngx_http_fairgate_engine_t    **ep, *en;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->engines.nelts == 0) {
        return NGX_OK;
    }

    engines = json_array();

    if (engines == NULL || json_object_set_new(root, "engines", engines)) {
        return NGX_ERROR;
    }

    ep = fmcf->engines.elts;

    for (i = 0; i < fmcf->engines.nelts; i++) {
        en = ep[i];

        e = ngx_http_fairgate_status_engine(en);

        if (e == NULL || json_array_append_new(engines, e) != 0) {
            return NGX_ERROR;
        }

        if (en->client == NULL
            || fg_shm_client_status(en->client, &ld) != FG_SHM_OK)
        {
            continue;
        }

        load = ngx_http_fairgate_status_engine_load(&ld);

        if (load == NULL || json_object_set_new(e, "load", load) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* an engine: what it serves, whether this worker is attached, its requests */

static json_t *
ngx_http_fairgate_status_engine(ngx_http_fairgate_engine_t *en)
{
    u_char  gen[NGX_INT64_LEN + 1];

    /* the generation is 64 random bits: hex, as the fingerprint */
    ngx_sprintf(gen, "%016xL%Z", en->generation);

    return json_pack("{s:s%, s:s%, s:s%, s:b, s:s, s:I, s:I}",
                     "name", en->name.data, en->name.len,
                     "model", en->id.data, en->id.len,
                     "shm", en->shm.data, en->shm.len,
                     "attached", en->client
                                 && fg_shm_client_attached(en->client),
                     "generation", (char *) gen,
                     "lost", (json_int_t) en->lost,
                     "open", (json_int_t) en->open);
}


/*
 * the load it publishes: KV, batch, counters (its preemptions among them,
 * fcfs's and Andes's), and its prefix cache's
 */

static json_t *
ngx_http_fairgate_status_engine_load(fg_shm_load_t *ld)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:{s:I, s:I, s:I, s:f, s:I}}",
                     "kv_blocks", (json_int_t) ld->kv_blocks,
                     "kv_free", (json_int_t) ld->kv_free,
                     "block_size", (json_int_t) ld->block_size,
                     "running", (json_int_t) ld->running,
                     "waiting", (json_int_t) ld->waiting,
                     "max_batch", (json_int_t) ld->max_batch,
                     "overload", (int) ld->overload,
                     "submitted", (json_int_t) ld->submitted,
                     "generated", (json_int_t) ld->generated,
                     "prefill_tokens", (json_int_t) ld->prefill_tokens,
                     "preemptions", (json_int_t) ld->preemptions,
                     "finished", (json_int_t) ld->finished,
                     "cancelled", (json_int_t) ld->cancelled,
                     "refused", (json_int_t) ld->refused,
                     "failed", (json_int_t) ld->failed,
                     "prefix_cache",
                         "blocks", (json_int_t) ld->cache_blocks,
                         "hit_tokens", (json_int_t) ld->cache_hit_tokens,
                         "query_tokens", (json_int_t) ld->cache_query_tokens,
                         "hit_rate", ld->cache_query_tokens
                                     ? (double) ld->cache_hit_tokens
                                       / ld->cache_query_tokens
                                     : 0.0,
                         "evictions", (json_int_t) ld->cache_evictions);
}
