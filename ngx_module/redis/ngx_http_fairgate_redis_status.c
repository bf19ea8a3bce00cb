
/*
 * fairgate: the sync's part of the status page: in the JSON, a "redis"
 * object with each zone's state and counts and what the other gateways
 * counted of each tenant; in the Prometheus text, five families of a
 * sample a zone, written by the glue's one Prometheus writer
 * (http/ngx_http_fairgate_prom.c).  Each zone is read under its mutex.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate_redis.h"


/* a tenant's global figures, copied out of the zone */
typedef struct {
    u_char                       name[NGX_HTTP_FAIRGATE_NAME_LEN + 1];
    size_t                       len;
    ngx_uint_t                   kind;
    uint64_t                     requests;
    uint64_t                     tokens;
    double                       service;
} ngx_http_fairgate_redis_snap_t;


/* a zone's figures as the Prometheus families give them */
typedef struct {
    ngx_uint_t                   up;
    uint64_t                     syncs;
    uint64_t                     failures;
    uint64_t                     errors;
    uint64_t                     failovers;
    double                       round;      /* seconds */
} ngx_http_fairgate_redis_figures_t;


#define ngx_http_fairgate_redis_family(name, type, help, field, format)       \
    { ngx_string(name), ngx_string(type), ngx_string(help),                   \
      NGX_HTTP_FAIRGATE_PROM_ZONE, ngx_null_string,                           \
      { { ngx_null_string,                                                    \
          offsetof(ngx_http_fairgate_redis_figures_t, field),                 \
          NGX_HTTP_FAIRGATE_PROM_ ## format } } }


static const char *ngx_http_fairgate_redis_state_name(ngx_uint_t state);
static json_t *ngx_http_fairgate_redis_conf_json(
    ngx_http_fairgate_redis_conf_t *rc, json_t *zones);
static json_t *ngx_http_fairgate_redis_zone_json(
    ngx_http_fairgate_zone_t *zone);
static ngx_http_fairgate_redis_snap_t *ngx_http_fairgate_redis_snapshot(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_redis_sh_t *rs,
    ngx_uint_t *n);
static ngx_int_t ngx_http_fairgate_redis_tenants_json(
    ngx_http_fairgate_redis_snap_t *snap, ngx_uint_t n, json_t *users,
    json_t *apps);


static ngx_http_fairgate_prom_family_t  ngx_http_fairgate_redis_families[] = {

    ngx_http_fairgate_redis_family("fairgate_redis_up", "gauge",
        "1 while the zone syncs with Redis, 0 while it counts locally.",
        up, UINT),

    ngx_http_fairgate_redis_family("fairgate_redis_syncs_total", "counter",
        "Sync rounds completed.",
        syncs, U64),

    ngx_http_fairgate_redis_family("fairgate_redis_failures_total", "counter",
        "Times Redis went down (unreachable, slow or refusing).",
        failures, U64),

    ngx_http_fairgate_redis_family("fairgate_redis_errors_total", "counter",
        "Failed connection attempts, replies and timeouts.",
        errors, U64),

    ngx_http_fairgate_redis_family("fairgate_redis_failovers_total",
        "counter",
        "Times the sentinels' master moved and the zone followed.",
        failovers, U64),

    ngx_http_fairgate_redis_family("fairgate_redis_round_seconds", "gauge",
        "How long the last sync round took.",
        round, FIXED3)
};


static const char *
ngx_http_fairgate_redis_state_name(ngx_uint_t state)
{
    static const char  *names[] = { "off", "connecting", "up", "down" };

    return (state < 4) ? names[state] : "unknown";
}


/*
 * The status page's "redis" object: per zone its state and counts, and
 * what the other gateways counted of each tenant (rpm, tpm: requests and
 * tokens in their windows; service: their service, unweighted).
 */

ngx_int_t
ngx_http_fairgate_redis_status_json(ngx_http_request_t *r, void *data)
{
    json_t  *root = data;

    json_t                         *redis, *zones, *z;
    ngx_uint_t                      i;
    ngx_http_fairgate_zone_t      **zone;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->redis == NULL) {
        return NGX_OK;
    }

    zones = json_array();

    redis = ngx_http_fairgate_redis_conf_json(fmcf->redis, zones);

    if (redis == NULL || json_object_set_new(root, "redis", redis) != 0) {
        return NGX_ERROR;
    }

    zone = fmcf->zones.elts;

    for (i = 0; i < fmcf->zones.nelts; i++) {
        z = ngx_http_fairgate_redis_zone_json(zone[i]);

        if (z == NULL || json_array_append_new(zones, z) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the address, or the sentinels and the master's name; the zones go in */

static json_t *
ngx_http_fairgate_redis_conf_json(ngx_http_fairgate_redis_conf_t *rc,
    json_t *zones)
{
    json_t                          *list;
    ngx_uint_t                       i;
    ngx_http_fairgate_redis_addr_t  *sa;

    if (rc->sentinels == NULL) {
        return json_pack("{s:s%, s:I, s:I, s:o}",
                         "address", (char *) rc->address.data,
                         rc->address.len,
                         "interval_ms", (json_int_t) rc->interval,
                         "timeout_ms", (json_int_t) rc->timeout,
                         "zones", zones);
    }

    list = json_array();
    sa = rc->sentinels->elts;

    for (i = 0; list && i < rc->sentinels->nelts; i++) {
        if (json_array_append_new(list,
                                  json_stringn((char *) sa[i].text.data,
                                               sa[i].text.len))
            != 0)
        {
            json_decref(list);
            list = NULL;
        }
    }

    return json_pack("{s:o, s:s%, s:I, s:I, s:o}",
                     "sentinels", list,
                     "master_name", (char *) rc->master.data, rc->master.len,
                     "interval_ms", (json_int_t) rc->interval,
                     "timeout_ms", (json_int_t) rc->timeout,
                     "zones", zones);
}


static json_t *
ngx_http_fairgate_redis_zone_json(ngx_http_fairgate_zone_t *zone)
{
    json_t                          *users, *apps;
    json_int_t                       ago;
    ngx_msec_t                       now;
    ngx_uint_t                       n;
    ngx_http_fairgate_redis_sh_t     rs;
    ngx_http_fairgate_redis_snap_t  *snap;

    now = ngx_http_fairgate_wall_msec();

    snap = ngx_http_fairgate_redis_snapshot(zone, &rs, &n);
    if (snap == NULL) {
        return NULL;
    }

    users = json_object();
    apps = json_object();

    if (ngx_http_fairgate_redis_tenants_json(snap, n, users, apps) != NGX_OK) {
        ngx_free(snap);
        json_decref(users);
        json_decref(apps);
        return NULL;
    }

    ngx_free(snap);

    ago = rs.last_sync ? (json_int_t) (now - rs.last_sync) : -1;

    return json_pack("{s:s%, s:s, s:s%, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o}",
                     "zone", (char *) zone->name.data, zone->name.len,
                     "state", ngx_http_fairgate_redis_state_name(rs.state),
                     "master", (char *) rs.master, rs.master_len,
                     "failovers", (json_int_t) rs.failovers,
                     "owner", (json_int_t) rs.owner,
                     "epoch", (json_int_t) rs.epoch,
                     "syncs", (json_int_t) rs.syncs,
                     "failures", (json_int_t) rs.failures,
                     "errors", (json_int_t) rs.errors,
                     "tenants", (json_int_t) rs.synced,
                     "round_ms", (json_int_t) rs.round_ms,
                     "quota_syncs", (json_int_t) rs.qsyncs,
                     "quota_keys", (json_int_t) rs.qkeys,
                     "quota_round_ms", (json_int_t) rs.qround_ms,
                     "last_sync_ms_ago", ago,
                     "down_for_s", (json_int_t)
                         ((rs.state == NGX_HTTP_FAIRGATE_REDIS_DOWN)
                          ? ngx_time() - rs.down_since : 0),
                     "users", users,
                     "apps", apps);
}


/*
 * The zone's sync state, and the tenants whose global figures are of this
 * connection to Redis (none while it is not up); ngx_free() the copy.
 */

static ngx_http_fairgate_redis_snap_t *
ngx_http_fairgate_redis_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_redis_sh_t *rs, ngx_uint_t *n)
{
    ngx_uint_t                       valid;
    ngx_queue_t                     *q;
    ngx_http_fairgate_shctx_t       *sh;
    ngx_http_fairgate_tenant_t      *tn;
    ngx_http_fairgate_redis_snap_t  *snap, *st;

    sh = zone->sh;
    *n = 0;

    ngx_shmtx_lock(&zone->shpool->mutex);

    *rs = sh->redis;

    snap = ngx_alloc((sh->users + sh->apps + 1)
                     * sizeof(ngx_http_fairgate_redis_snap_t), ngx_cycle->log);

    valid = (rs->state == NGX_HTTP_FAIRGATE_REDIS_UP);

    for (q = ngx_queue_head(&sh->lru);
         snap && valid && q != ngx_queue_sentinel(&sh->lru)
         && *n < sh->users + sh->apps;
         q = ngx_queue_next(q))
    {
        tn = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);

        if (tn->global.epoch != rs->epoch
            || tn->kind == NGX_HTTP_FAIRGATE_KEY)
        {
            continue;
        }

        st = &snap[(*n)++];
        ngx_memcpy(st->name, tn->name, tn->len);
        st->name[tn->len] = '\0';
        st->len = tn->len;
        st->kind = tn->kind;
        st->requests = tn->global.requests;
        st->tokens = tn->global.tokens;
        st->service = tn->global.service;
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return snap;
}


static ngx_int_t
ngx_http_fairgate_redis_tenants_json(ngx_http_fairgate_redis_snap_t *snap,
    ngx_uint_t n, json_t *users, json_t *apps)
{
    json_t                          *t;
    ngx_uint_t                       i;
    ngx_http_fairgate_redis_snap_t  *st;

    if (users == NULL || apps == NULL) {
        return NGX_ERROR;
    }

    for (i = 0; i < n; i++) {
        st = &snap[i];

        t = json_pack("{s:I, s:I, s:f}",
                      "rpm", (json_int_t) st->requests,
                      "tpm", (json_int_t) st->tokens,
                      "service", st->service);

        if (t == NULL
            || json_object_set_new((st->kind == NGX_HTTP_FAIRGATE_USER)
                                   ? users : apps, (char *) st->name, t)
               != 0)
        {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}


/* the Prometheus families, none without fairgate_redis */

ngx_int_t
ngx_http_fairgate_redis_prom(ngx_http_request_t *r,
    ngx_http_fairgate_prom_t *w)
{
    size_t                              size;
    ngx_str_t                          *names, label;
    ngx_uint_t                          i, n, nzones;
    ngx_http_fairgate_zone_t          **zone;
    ngx_http_fairgate_redis_sh_t       *rs;
    ngx_http_fairgate_main_conf_t      *fmcf;
    ngx_http_fairgate_redis_figures_t  *fig;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);
    nzones = fmcf->zones.nelts;

    if (fmcf->redis == NULL || nzones == 0) {
        return NGX_OK;
    }

    fig = ngx_palloc(r->pool,
                     nzones * (sizeof(ngx_http_fairgate_redis_figures_t)
                               + sizeof(ngx_str_t)));
    if (fig == NULL) {
        return NGX_ERROR;
    }

    names = (ngx_str_t *) (fig + nzones);

    zone = fmcf->zones.elts;

    for (i = 0; i < nzones; i++) {
        rs = &zone[i]->sh->redis;

        ngx_shmtx_lock(&zone[i]->shpool->mutex);

        fig[i].up = (rs->state == NGX_HTTP_FAIRGATE_REDIS_UP);
        fig[i].syncs = rs->syncs;
        fig[i].failures = rs->failures;
        fig[i].errors = rs->errors;
        fig[i].failovers = rs->failovers;
        fig[i].round = rs->round_ms / 1000.0;

        ngx_shmtx_unlock(&zone[i]->shpool->mutex);

        names[i] = zone[i]->name;
    }

    ngx_str_set(&label, "zone");

    n = NGX_HTTP_FAIRGATE_PROM_FAMILIES(ngx_http_fairgate_redis_families);
    size = sizeof(ngx_http_fairgate_redis_figures_t);

    return ngx_http_fairgate_prom_table(w, ngx_http_fairgate_redis_families,
                                        n, &label, names, fig, size, nzones);
}
