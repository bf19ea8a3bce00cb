
/*
 * fairgate: "fairgate_status [format=json|prometheus] [ZONE ...];", a
 * read-out of the zones: scheduler, capacity, queue-wait histogram, and
 * per-tenant counters, as JSON or as Prometheus text.
 *
 * Each zone is copied out under its mutex in one go, so its numbers agree
 * with each other; the text is made outside the lock.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_redis.h"


typedef struct {
    u_char                       name[NGX_HTTP_FAIRGATE_NAME_LEN + 1];
    size_t                       len;
    ngx_uint_t                   kind;
    double                       weight;
    double                       counter;
    double                       service;
    uint64_t                     waiting;
    uint64_t                     running;
    uint64_t                     enqueued;
    uint64_t                     admitted;
    uint64_t                     finished;
    uint64_t                     cancelled;
    uint64_t                     requests;
    uint64_t                     throttled;
    uint64_t                     queue_full;
    uint64_t                     timed_out;
    uint64_t                     tokens_in;
    uint64_t                     tokens_out;
    uint64_t                     rpm;
    uint64_t                     tpm;
} ngx_http_fairgate_snap_tenant_t;


typedef struct {
    ngx_http_fairgate_zone_t         *zone;
    fg_sched_conf_t                   conf;
    fg_sched_stats_t                  st;
    ngx_http_fairgate_shctx_t         sh;        /* its counters */
    ngx_http_fairgate_snap_tenant_t  *tenants;
    ngx_uint_t                        ntenants;
} ngx_http_fairgate_snap_t;


static ngx_int_t ngx_http_fairgate_status_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap);
static json_t *ngx_http_fairgate_status_json(ngx_http_fairgate_snap_t *snap);
static ngx_int_t ngx_http_fairgate_status_engines(ngx_http_request_t *r,
    json_t *root);
static ngx_buf_t *ngx_http_fairgate_status_json_text(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n);
static ngx_buf_t *ngx_http_fairgate_status_prom(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n);
static u_char *ngx_http_fairgate_prom_label(u_char *p, u_char *s,
    size_t len);


/* upper bounds of the queue-wait histogram, seconds, as queue.c counts */
static const char  *ngx_http_fairgate_les[NGX_HTTP_FAIRGATE_BUCKETS] = {
    "0.001", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1",
    "5", "30", "+Inf"
};


char *
ngx_http_fairgate_status(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_str_t                 *value;
    ngx_uint_t                 i;
    ngx_shm_zone_t           **shm_zone;
    ngx_http_core_loc_conf_t  *clcf;

    if (flcf->status) {
        return "is duplicate";
    }

    value = cf->args->elts;

    flcf->status = ngx_array_create(cf->pool, cf->args->nelts,
                                    sizeof(ngx_shm_zone_t *));
    if (flcf->status == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "format=", 7) == 0) {

            if (ngx_strcmp(value[i].data + 7, "json") == 0) {
                flcf->status_format = NGX_HTTP_FAIRGATE_STATUS_JSON;

            } else if (ngx_strcmp(value[i].data + 7, "prometheus") == 0) {
                flcf->status_format = NGX_HTTP_FAIRGATE_STATUS_PROM;

            } else {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid format \"%s\" in "
                                   "\"fairgate_status\", expected \"json\" "
                                   "or \"prometheus\"", value[i].data + 7);
                return NGX_CONF_ERROR;
            }

            continue;
        }

        shm_zone = ngx_array_push(flcf->status);
        if (shm_zone == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_fairgate_zone_ref(cf, &value[i], shm_zone,
                                       "fairgate_status")
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fairgate_status_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fairgate_status_handler(ngx_http_request_t *r)
{
    ngx_int_t                       rc;
    ngx_buf_t                      *b;
    ngx_uint_t                      i, n;
    ngx_chain_t                     out;
    ngx_shm_zone_t                **shm_zone;
    ngx_http_fairgate_snap_t       *snaps;
    ngx_http_fairgate_zone_t      **zonep, *z;
    ngx_http_fairgate_loc_conf_t   *flcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    shm_zone = flcf->status->elts;
    zonep = fmcf->zones.elts;
    n = flcf->status->nelts ? flcf->status->nelts : fmcf->zones.nelts;

    snaps = ngx_pcalloc(r->pool, (n + 1) * sizeof(ngx_http_fairgate_snap_t));
    if (snaps == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b = NULL;

    for (i = 0; i < n; i++) {
        z = flcf->status->nelts ? shm_zone[i]->data : zonep[i];

        if (ngx_http_fairgate_snapshot(z, &snaps[i]) != NGX_OK) {
            goto done;
        }
    }

    if (flcf->status_format == NGX_HTTP_FAIRGATE_STATUS_PROM) {
        b = ngx_http_fairgate_status_prom(r, snaps, n);
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4");

    } else {
        b = ngx_http_fairgate_status_json_text(r, snaps, n);
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }

done:

    for (i = 0; i < n; i++) {
        ngx_free(snaps[i].tenants);
    }

    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    r->headers_out.content_type_len = r->headers_out.content_type.len;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


static ngx_int_t
ngx_http_fairgate_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap)
{
    double                            now;
    ngx_uint_t                        n;
    ngx_queue_t                      *q;
    fg_client_t                      *c;
    ngx_http_fairgate_shctx_t        *sh;
    ngx_http_fairgate_tenant_t       *t;
    ngx_http_fairgate_snap_tenant_t  *st;

    sh = zone->sh;
    snap->zone = zone;
    now = ngx_http_fairgate_now();

    ngx_shmtx_lock(&zone->shpool->mutex);

    n = sh->users + sh->apps;

    snap->tenants = ngx_alloc((n + 1) * sizeof(ngx_http_fairgate_snap_tenant_t),
                              ngx_cycle->log);
    if (snap->tenants == NULL) {
        ngx_shmtx_unlock(&zone->shpool->mutex);
        return NGX_ERROR;
    }

    snap->conf = *fg_sched_conf(sh->sched);
    fg_sched_stats(sh->sched, &snap->st);
    ngx_memcpy(&snap->sh, sh, offsetof(ngx_http_fairgate_shctx_t, slots));

    /* most recently used first */

    for (q = ngx_queue_head(&sh->lru);
         q != ngx_queue_sentinel(&sh->lru) && snap->ntenants < n;
         q = ngx_queue_next(q))
    {
        t = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);
        st = &snap->tenants[snap->ntenants++];

        ngx_memzero(st, sizeof(ngx_http_fairgate_snap_tenant_t));

        ngx_memcpy(st->name, t->name, t->len);
        st->len = t->len;
        st->kind = t->kind;
        st->requests = t->requests;
        st->throttled = t->throttled;
        st->queue_full = t->queue_full;
        st->timed_out = t->timed_out;
        st->tokens_in = t->tokens_in;
        st->tokens_out = t->tokens_out;
        st->rpm = fg_window_sum(ngx_http_fairgate_tenant_requests(t), now);
        st->tpm = fg_window_sum(&t->tokens, now);

        if (t->kind == NGX_HTTP_FAIRGATE_USER) {
            c = &t->u.client;
            st->weight = c->weight;
            st->counter = c->counter;
            st->service = c->service;
            st->waiting = c->n_waiting;
            st->running = c->n_running;
            st->enqueued = c->enqueued;
            st->admitted = c->admitted;
            st->finished = c->finished;
            st->cancelled = c->cancelled;
        }
    }

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return NGX_OK;
}


static ngx_buf_t *
ngx_http_fairgate_status_json_text(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    char        *text;
    size_t       len;
    json_t      *root, *zones, *zone;
    ngx_buf_t   *b;
    ngx_uint_t   i;

    root = json_object();
    zones = json_array();

    if (root == NULL || zones == NULL
        || json_object_set_new(root, "zones", zones) != 0)
    {
        json_decref(root);
        json_decref(zones);
        return NULL;
    }

    for (i = 0; i < n; i++) {
        zone = ngx_http_fairgate_status_json(&snaps[i]);

        if (zone == NULL || json_array_append_new(zones, zone) != 0) {
            json_decref(root);
            return NULL;
        }
    }

    if (ngx_http_fairgate_status_engines(r, root) != NGX_OK) {
        json_decref(root);
        return NULL;
    }

    if (ngx_http_fairgate_redis_status_json(r, root) != NGX_OK) {
        json_decref(root);
        return NULL;
    }

    text = json_dumps(root, JSON_INDENT(2)|JSON_PRESERVE_ORDER);
    json_decref(root);

    if (text == NULL) {
        return NULL;
    }

    len = ngx_strlen(text);

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        free(text);
        return NULL;
    }

    b->last = ngx_cpymem(b->last, text, len);
    *b->last++ = LF;

    free(text);

    return b;
}


static json_t *
ngx_http_fairgate_status_json(ngx_http_fairgate_snap_t *snap)
{
    json_t                           *zone, *users, *apps, *wait, *buckets,
                                     *t;
    uint64_t                          cum;
    ngx_uint_t                        i;
    fg_sched_conf_t                  *conf;
    fg_sched_stats_t                 *st;
    ngx_http_fairgate_shctx_t        *sh;
    ngx_http_fairgate_snap_tenant_t  *s;

    conf = &snap->conf;
    st = &snap->st;
    sh = &snap->sh;

    buckets = json_array();
    if (buckets == NULL) {
        return NULL;
    }

    cum = 0;

    for (i = 0; i < NGX_HTTP_FAIRGATE_BUCKETS; i++) {
        cum += sh->wait_bucket[i];

        if (json_array_append_new(buckets,
                json_pack("{s:s, s:I}", "le", ngx_http_fairgate_les[i],
                          "count", (json_int_t) cum))
            != 0)
        {
            json_decref(buckets);
            return NULL;
        }
    }

    wait = json_pack("{s:o, s:I, s:f}",
                     "buckets", buckets,
                     "count", (json_int_t) sh->wait_count,
                     "sum", sh->wait_sum);

    users = json_array();
    apps = json_array();

    if (wait == NULL || users == NULL || apps == NULL) {
        json_decref(wait);
        json_decref(users);
        json_decref(apps);
        return NULL;
    }

    for (i = 0; i < snap->ntenants; i++) {
        s = &snap->tenants[i];

        if (s->kind == NGX_HTTP_FAIRGATE_USER) {
            t = json_pack("{s:s%, s:f, s:f, s:f, s:I, s:I,"
                          " s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                          " s:I, s:I, s:I, s:I}",
                          "name", (char *) s->name, s->len,
                          "weight", s->weight,
                          "counter", s->counter,
                          "service", s->service,
                          "waiting", (json_int_t) s->waiting,
                          "running", (json_int_t) s->running,
                          "enqueued", (json_int_t) s->enqueued,
                          "admitted", (json_int_t) s->admitted,
                          "finished", (json_int_t) s->finished,
                          "cancelled", (json_int_t) s->cancelled,
                          "throttled", (json_int_t) s->throttled,
                          "queue_full", (json_int_t) s->queue_full,
                          "timed_out", (json_int_t) s->timed_out,
                          "tokens_in", (json_int_t) s->tokens_in,
                          "tokens_out", (json_int_t) s->tokens_out,
                          "rpm", (json_int_t) s->rpm,
                          "tpm", (json_int_t) s->tpm);

            if (t == NULL || json_array_append_new(users, t) != 0) {
                goto failed;
            }

            continue;
        }

        t = json_pack("{s:s%, s:I, s:I, s:I, s:I, s:I, s:I}",
                      "name", (char *) s->name, s->len,
                      "requests", (json_int_t) s->requests,
                      "throttled", (json_int_t) s->throttled,
                      "tokens_in", (json_int_t) s->tokens_in,
                      "tokens_out", (json_int_t) s->tokens_out,
                      "rpm", (json_int_t) s->rpm,
                      "tpm", (json_int_t) s->tpm);

        if (t == NULL || json_array_append_new(apps, t) != 0) {
            goto failed;
        }
    }

    zone = json_pack("{s:s%, s:s, s:{s:s%, s:f, s:f, s:f, s:f, s:f},"
                     " s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I}",
                     "name", (char *) snap->zone->name.data,
                     snap->zone->name.len,
                     "policy", fg_sched_policy_name(conf->policy),
                     "cost",
                         "name", (char *) snap->zone->cost.data,
                         snap->zone->cost.len,
                         "in", conf->cost.in,
                         "out", conf->cost.out,
                         "in_out", conf->cost.in_out,
                         "out2", conf->cost.out2,
                         "base", conf->cost.base,
                     "max_tenants", (json_int_t) conf->max_clients,
                     "rpm", (json_int_t) conf->rpm_limit,
                     "reloads", (json_int_t) sh->reloads,
                     "tenants", (json_int_t) st->clients,
                     "backlogged", (json_int_t) st->backlogged,
                     "waiting", (json_int_t) st->waiting,
                     "running", (json_int_t) st->running,
                     "enqueued", (json_int_t) st->enqueued,
                     "rejected", (json_int_t) st->rejected,
                     "admitted", (json_int_t) st->admitted,
                     "finished", (json_int_t) st->finished,
                     "cancelled", (json_int_t) st->cancelled);

    if (zone == NULL) {
        goto failed;
    }

    if (json_object_update_new(zone,
            json_pack("{s:{s:I, s:I, s:I, s:I},"
                      " s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
                      " s:o, s:o, s:o}",
                      "inflight",
                          "limit", (json_int_t) sh->inflight,
                          "tokens_limit", (json_int_t) sh->inflight_tokens,
                          "running", (json_int_t) sh->running,
                          "tokens", (json_int_t) sh->running_tokens,
                      "throttled", (json_int_t) sh->throttled,
                      "queue_full", (json_int_t) sh->queue_full,
                      "timed_out", (json_int_t) sh->timed_out,
                      "reclaimed", (json_int_t) sh->reclaimed,
                      "handoffs", (json_int_t) sh->handoffs,
                      "expired", (json_int_t) sh->expired,
                      "tokens_in", (json_int_t) sh->tokens_in,
                      "tokens_out", (json_int_t) sh->tokens_out,
                      "queue_wait", wait,
                      "users", users,
                      "apps", apps))
        != 0)
    {
        json_decref(zone);
        return NULL;
    }

    /* FairServe: interactions (fg_oit), overload, users served */

    if (json_object_update_new(zone,
            json_pack("{s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I,"
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
                      "users_served", (json_int_t) sh->users_served))
        != 0)
    {
        json_decref(zone);
        return NULL;
    }

    return zone;

failed:

    json_decref(wait);
    json_decref(users);
    json_decref(apps);

    return NULL;
}


/* the Prometheus text format, version 0.0.4 */

#define ngx_http_fairgate_prom_family(name, type, help)                       \
    p = ngx_sprintf(p, "# HELP " name " " help "\n# TYPE " name " " type "\n")

#define ngx_http_fairgate_prom_zone(p, sn)                                    \
    ngx_http_fairgate_prom_label(p, (sn)->zone->name.data,                    \
                                 (sn)->zone->name.len)


static ngx_buf_t *
ngx_http_fairgate_status_prom(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    u_char                           *p;
    size_t                            size;
    uint64_t                          cum, v;
    ngx_buf_t                        *b;
    ngx_uint_t                        i, j, k, e;
    ngx_http_fairgate_snap_t         *sn;
    ngx_http_fairgate_snap_tenant_t  *t;

    static const char  *zevents[] = {
        "enqueued", "admitted", "finished", "cancelled", "rejected",
        "throttled", "queue_full", "timed_out", "reclaimed", "handoffs"
    };

    static const char  *ievents[] = {
        "opened", "completed", "aborted", "expired", "continued",
        "untracked", "throttled"
    };

    static const char  *uevents[] = {
        "enqueued", "admitted", "finished", "cancelled", "throttled",
        "queue_full", "timed_out"
    };

    /*
     * The zone families take some 60 lines a zone, a tenant 13; a line is
     * its name, labels (escaped: twice as long at most) and a number.
     */

    size = 4096;

    for (i = 0; i < n; i++) {
        sn = &snaps[i];
        size += 60 * (128 + 2 * sn->zone->name.len);

        for (j = 0; j < sn->ntenants; j++) {
            size += 13 * (128 + 2 * sn->zone->name.len
                          + 2 * sn->tenants[j].len);
        }
    }

    size += ngx_http_fairgate_redis_prom_size(r);

    b = ngx_create_temp_buf(r->pool, size);
    if (b == NULL) {
        return NULL;
    }

    p = b->last;

    ngx_http_fairgate_prom_family("fairgate_requests_total", "counter",
                                  "Requests of a zone by what became of them.");

    for (i = 0; i < n; i++) {
        sn = &snaps[i];

        for (k = 0; k < sizeof(zevents) / sizeof(zevents[0]); k++) {
            switch (k) {
            case 0: v = sn->st.enqueued; break;
            case 1: v = sn->st.admitted; break;
            case 2: v = sn->st.finished; break;
            case 3: v = sn->st.cancelled; break;
            case 4: v = sn->st.rejected; break;
            case 5: v = sn->sh.throttled; break;
            case 6: v = sn->sh.queue_full; break;
            case 7: v = sn->sh.timed_out; break;
            case 8: v = sn->sh.reclaimed; break;
            default: v = sn->sh.handoffs; break;
            }

            p = ngx_sprintf(p, "fairgate_requests_total{zone=\"");
            p = ngx_http_fairgate_prom_zone(p, sn);
            p = ngx_sprintf(p, "\",event=\"%s\"} %uL\n", zevents[k], v);
        }
    }

    ngx_http_fairgate_prom_family("fairgate_tokens_total", "counter",
                                  "Tokens of finished requests, settled.");

    for (i = 0; i < n; i++) {
        sn = &snaps[i];

        p = ngx_sprintf(p, "fairgate_tokens_total{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, sn);
        p = ngx_sprintf(p, "\",direction=\"in\"} %uL\n", sn->sh.tokens_in);
        p = ngx_sprintf(p, "fairgate_tokens_total{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, sn);
        p = ngx_sprintf(p, "\",direction=\"out\"} %uL\n", sn->sh.tokens_out);
    }

    ngx_http_fairgate_prom_family("fairgate_waiting", "gauge",
                                  "Requests waiting in the queue.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_waiting{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %uL\n", snaps[i].st.waiting);
    }

    ngx_http_fairgate_prom_family("fairgate_running", "gauge",
                                  "Requests in flight to the upstream.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_running{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %ui\n", snaps[i].sh.running);
    }

    ngx_http_fairgate_prom_family("fairgate_running_tokens", "gauge",
                                  "Tokens reserved by requests in flight.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_running_tokens{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %uL\n", snaps[i].sh.running_tokens);
    }

    ngx_http_fairgate_prom_family("fairgate_tenants", "gauge",
                                  "Users and apps the zone holds.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_tenants{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\",kind=\"user\"} %ui\n", snaps[i].sh.users);
        p = ngx_sprintf(p, "fairgate_tenants{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\",kind=\"app\"} %ui\n", snaps[i].sh.apps);
    }

    ngx_http_fairgate_prom_family("fairgate_interactions_total", "counter",
                                  "Agent interactions by what became of "
                                  "their requests.");

    for (i = 0; i < n; i++) {
        sn = &snaps[i];

        for (k = 0; k < sizeof(ievents) / sizeof(ievents[0]); k++) {
            switch (k) {
            case 0: v = sn->sh.oit.opened; break;
            case 1: v = sn->sh.oit.completed; break;
            case 2: v = sn->sh.oit.aborted; break;
            case 3: v = sn->sh.oit.expired; break;
            case 4: v = sn->sh.oit.continued; break;
            case 5: v = sn->sh.oit.untracked; break;
            default: v = sn->sh.oit.throttled; break;
            }

            p = ngx_sprintf(p, "fairgate_interactions_total{zone=\"");
            p = ngx_http_fairgate_prom_zone(p, sn);
            p = ngx_sprintf(p, "\",event=\"%s\"} %uL\n", ievents[k], v);
        }
    }

    ngx_http_fairgate_prom_family("fairgate_interactions_open", "gauge",
                                  "Agent interactions under way.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_interactions_open{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %uD\n", snaps[i].sh.oit.open);
    }

    ngx_http_fairgate_prom_family("fairgate_tokens_wasted_total", "counter",
                                  "Tokens spent on interactions later cut.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_tokens_wasted_total{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %uL\n", snaps[i].sh.oit.tokens_wasted);
    }

    ngx_http_fairgate_prom_family("fairgate_overloaded", "gauge",
                                  "1 if OIT last found the zone overloaded.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_overloaded{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\"} %ui\n", snaps[i].sh.overloaded);
    }

    ngx_http_fairgate_prom_family("fairgate_users_total", "counter",
                                  "Users seen, and those served at least "
                                  "once, since the zone was made.");

    for (i = 0; i < n; i++) {
        p = ngx_sprintf(p, "fairgate_users_total{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\",event=\"seen\"} %uL\n", snaps[i].sh.users_seen);
        p = ngx_sprintf(p, "fairgate_users_total{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, &snaps[i]);
        p = ngx_sprintf(p, "\",event=\"served\"} %uL\n",
                        snaps[i].sh.users_served);
    }

    ngx_http_fairgate_prom_family("fairgate_queue_wait_seconds", "histogram",
                                  "Time from arrival to dispatch.");

    for (i = 0; i < n; i++) {
        sn = &snaps[i];
        cum = 0;

        for (k = 0; k < NGX_HTTP_FAIRGATE_BUCKETS; k++) {
            cum += sn->sh.wait_bucket[k];
            p = ngx_sprintf(p, "fairgate_queue_wait_seconds_bucket{zone=\"");
            p = ngx_http_fairgate_prom_zone(p, sn);
            p = ngx_sprintf(p, "\",le=\"%s\"} %uL\n",
                            ngx_http_fairgate_les[k], cum);
        }

        p = ngx_sprintf(p, "fairgate_queue_wait_seconds_sum{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, sn);
        p = ngx_sprintf(p, "\"} %.6f\n", sn->sh.wait_sum);
        p = ngx_sprintf(p, "fairgate_queue_wait_seconds_count{zone=\"");
        p = ngx_http_fairgate_prom_zone(p, sn);
        p = ngx_sprintf(p, "\"} %uL\n", sn->sh.wait_count);
    }

    /* per user; one family at a time, as the format wants */

    for (k = 0; k < 6; k++) {

        switch (k) {
        case 0:
            ngx_http_fairgate_prom_family("fairgate_user_service_total",
                "counter", "Cost of the service a user received, unweighted.");
            break;
        case 1:
            ngx_http_fairgate_prom_family("fairgate_user_counter", "gauge",
                "A user's virtual counter: weighted service, lifted.");
            break;
        case 2:
            ngx_http_fairgate_prom_family("fairgate_user_waiting", "gauge",
                "A user's requests waiting in the queue.");
            break;
        case 3:
            ngx_http_fairgate_prom_family("fairgate_user_running", "gauge",
                "A user's requests in flight.");
            break;
        case 4:
            ngx_http_fairgate_prom_family("fairgate_user_requests_total",
                "counter", "A user's requests by what became of them.");
            break;
        default:
            ngx_http_fairgate_prom_family("fairgate_user_tokens_total",
                "counter", "A user's tokens, settled.");
        }

        for (i = 0; i < n; i++) {
            sn = &snaps[i];

            for (j = 0; j < sn->ntenants; j++) {
                t = &sn->tenants[j];

                if (t->kind != NGX_HTTP_FAIRGATE_USER) {
                    continue;
                }

                if (k == 4) {
                    for (e = 0; e < 7; e++) {
                        p = ngx_sprintf(p, "fairgate_user_requests_total"
                                        "{zone=\"");
                        p = ngx_http_fairgate_prom_zone(p, sn);
                        p = ngx_sprintf(p, "\",user=\"");
                        p = ngx_http_fairgate_prom_label(p, t->name, t->len);
                        p = ngx_sprintf(p, "\",event=\"%s\"} %uL\n",
                                        uevents[e],
                                        e == 0 ? t->enqueued
                                        : e == 1 ? t->admitted
                                        : e == 2 ? t->finished
                                        : e == 3 ? t->cancelled
                                        : e == 4 ? t->throttled
                                        : e == 5 ? t->queue_full
                                        : t->timed_out);
                    }

                    continue;
                }

                if (k == 5) {
                    p = ngx_sprintf(p, "fairgate_user_tokens_total{zone=\"");
                    p = ngx_http_fairgate_prom_zone(p, sn);
                    p = ngx_sprintf(p, "\",user=\"");
                    p = ngx_http_fairgate_prom_label(p, t->name, t->len);
                    p = ngx_sprintf(p, "\",direction=\"in\"} %uL\n",
                                    t->tokens_in);
                    p = ngx_sprintf(p, "fairgate_user_tokens_total{zone=\"");
                    p = ngx_http_fairgate_prom_zone(p, sn);
                    p = ngx_sprintf(p, "\",user=\"");
                    p = ngx_http_fairgate_prom_label(p, t->name, t->len);
                    p = ngx_sprintf(p, "\",direction=\"out\"} %uL\n",
                                    t->tokens_out);
                    continue;
                }

                p = ngx_sprintf(p, "%s{zone=\"",
                                k == 0 ? "fairgate_user_service_total"
                                : k == 1 ? "fairgate_user_counter"
                                : k == 2 ? "fairgate_user_waiting"
                                : "fairgate_user_running");
                p = ngx_http_fairgate_prom_zone(p, sn);
                p = ngx_sprintf(p, "\",user=\"");
                p = ngx_http_fairgate_prom_label(p, t->name, t->len);

                if (k < 2) {
                    p = ngx_sprintf(p, "\"} %.3f\n",
                                    k == 0 ? t->service : t->counter);

                } else {
                    p = ngx_sprintf(p, "\"} %uL\n",
                                    k == 2 ? t->waiting : t->running);
                }
            }
        }
    }

    /* per app */

    for (k = 0; k < 2; k++) {

        if (k == 0) {
            ngx_http_fairgate_prom_family("fairgate_app_requests_total",
                "counter", "An app's requests served and throttled.");

        } else {
            ngx_http_fairgate_prom_family("fairgate_app_tokens_total",
                "counter", "An app's tokens, settled.");
        }

        for (i = 0; i < n; i++) {
            sn = &snaps[i];

            for (j = 0; j < sn->ntenants; j++) {
                t = &sn->tenants[j];

                if (t->kind != NGX_HTTP_FAIRGATE_APP) {
                    continue;
                }

                for (e = 0; e < 2; e++) {
                    p = ngx_sprintf(p, "%s{zone=\"",
                                    k == 0 ? "fairgate_app_requests_total"
                                           : "fairgate_app_tokens_total");
                    p = ngx_http_fairgate_prom_zone(p, sn);
                    p = ngx_sprintf(p, "\",app=\"");
                    p = ngx_http_fairgate_prom_label(p, t->name, t->len);

                    if (k == 0) {
                        p = ngx_sprintf(p, "\",event=\"%s\"} %uL\n",
                                        e == 0 ? "served" : "throttled",
                                        e == 0 ? t->requests : t->throttled);

                    } else {
                        p = ngx_sprintf(p, "\",direction=\"%s\"} %uL\n",
                                        e == 0 ? "in" : "out",
                                        e == 0 ? t->tokens_in
                                               : t->tokens_out);
                    }
                }
            }
        }
    }

    p = ngx_http_fairgate_redis_prom(r, p);

    b->last = p;

    return b;
}


/* a label value: backslash, double quote and newline escaped */

static u_char *
ngx_http_fairgate_prom_label(u_char *p, u_char *s, size_t len)
{
    u_char  *last;

    for (last = s + len; s < last; s++) {
        switch (*s) {

        case '\\':
        case '"':
            *p++ = '\\';
            *p++ = *s;
            break;

        case LF:
            *p++ = '\\';
            *p++ = 'n';
            break;

        default:
            *p++ = *s;
        }
    }

    return p;
}


/*
 * Local mode: each fairgate_engine as this worker sees it, and the load
 * the engine publishes (its KV blocks free, its counters).
 */

static ngx_int_t
ngx_http_fairgate_status_engines(ngx_http_request_t *r, json_t *root)
{
    u_char                          gen[NGX_INT64_LEN + 1];
    json_t                         *engines, *e, *load;
    ngx_uint_t                      i, open;
    fg_shm_load_t                   ld;
    ngx_rbtree_node_t              *node;
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

        open = 0;

        if (en->rbtree.root) {
            for (node = en->rbtree.root == en->rbtree.sentinel
                        ? NULL
                        : ngx_rbtree_min(en->rbtree.root, en->rbtree.sentinel);
                 node;
                 node = ngx_rbtree_next(&en->rbtree, node))
            {
                open++;
            }
        }

        /* the generation is 64 random bits: hex, as the fingerprint */
        ngx_sprintf(gen, "%016xL%Z", en->generation);

        e = json_pack("{s:s%, s:s%, s:s%, s:b, s:s, s:I, s:I}",
                      "name", en->name.data, en->name.len,
                      "model", en->id.data, en->id.len,
                      "shm", en->shm.data, en->shm.len,
                      "attached", en->client
                                  && fg_shm_client_attached(en->client),
                      "generation", (char *) gen,
                      "lost", (json_int_t) en->lost,
                      "open", (json_int_t) open);

        if (e == NULL || json_array_append_new(engines, e) != 0) {
            return NGX_ERROR;
        }

        if (en->client == NULL
            || fg_shm_client_status(en->client, &ld) != FG_SHM_OK)
        {
            continue;
        }

        load = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I,"
                         " s:I, s:I, s:I, s:I, s:I}",
                         "kv_blocks", (json_int_t) ld.kv_blocks,
                         "kv_free", (json_int_t) ld.kv_free,
                         "block_size", (json_int_t) ld.block_size,
                         "running", (json_int_t) ld.running,
                         "waiting", (json_int_t) ld.waiting,
                         "max_batch", (json_int_t) ld.max_batch,
                         "overload", (int) ld.overload,
                         "submitted", (json_int_t) ld.submitted,
                         "generated", (json_int_t) ld.generated,
                         "prefill_tokens", (json_int_t) ld.prefill_tokens,
                         "finished", (json_int_t) ld.finished,
                         "cancelled", (json_int_t) ld.cancelled,
                         "refused", (json_int_t) ld.refused,
                         "failed", (json_int_t) ld.failed);

        if (load == NULL || json_object_set_new(e, "load", load) != 0) {
            return NGX_ERROR;
        }
    }

    return NGX_OK;
}
