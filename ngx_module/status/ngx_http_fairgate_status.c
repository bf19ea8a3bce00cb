
/*
 * fairgate: "fairgate_status [format=json|prometheus] [ZONE ...];", a
 * read-out of the zones: scheduler, capacity, queue-wait histogram, and
 * per-tenant counters, as JSON or as Prometheus text.  Here: the directive,
 * the handler, and each zone's snapshot, copied out under its mutex in one
 * go so that its numbers agree with each other; the text is made of the
 * snapshots outside the lock (_status_json.c, _status_prom.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_param.h"


static ngx_int_t ngx_http_fairgate_status_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap);


static ngx_conf_enum_t  ngx_http_fairgate_formats[] = {
    { ngx_string("json"), NGX_HTTP_FAIRGATE_STATUS_JSON },
    { ngx_string("prometheus"), NGX_HTTP_FAIRGATE_STATUS_PROM },
    { ngx_null_string, 0 }
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

    if (flcf->dashboard.data) {
        return "cannot be in a location of \"fairgate_dashboard\"";
    }

    value = cf->args->elts;

    flcf->status = ngx_array_create(cf->pool, cf->args->nelts,
                                    sizeof(ngx_shm_zone_t *));
    if (flcf->status == NULL) {
        return NGX_CONF_ERROR;
    }

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "format=", 7) == 0) {

            flcf->status_format = ngx_http_fairgate_param_enum(
                                      value[i].data + 7, value[i].len - 7,
                                      ngx_http_fairgate_formats);

            if (flcf->status_format == (ngx_uint_t) NGX_ERROR) {
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


ngx_int_t
ngx_http_fairgate_status_request(ngx_http_request_t *r)
{
    if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    return ngx_http_discard_request_body(r);
}


static ngx_int_t
ngx_http_fairgate_status_handler(ngx_http_request_t *r)
{
    ngx_int_t                       rc;
    ngx_uint_t                      i, n;
    ngx_chain_t                    *out;
    ngx_shm_zone_t                **shm_zone;
    ngx_http_fairgate_snap_t       *snaps;
    ngx_http_fairgate_zone_t      **zonep, *z;
    ngx_http_fairgate_loc_conf_t   *flcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    rc = ngx_http_fairgate_status_request(r);
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

    out = NULL;

    for (i = 0; i < n; i++) {
        z = flcf->status->nelts ? shm_zone[i]->data : zonep[i];

        if (ngx_http_fairgate_snapshot(z, &snaps[i]) != NGX_OK) {
            goto done;
        }
    }

    if (flcf->status_format == NGX_HTTP_FAIRGATE_STATUS_PROM) {
        out = ngx_http_fairgate_status_prom(r, snaps, n);
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4");

    } else {
        out = ngx_http_fairgate_status_json(r, snaps, n);
        ngx_str_set(&r->headers_out.content_type, "application/json");
    }

done:

    for (i = 0; i < n; i++) {
        ngx_free(snaps[i].tenants);
    }

    if (out == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_fairgate_send_body(r, NGX_HTTP_OK, out);
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

        st->len = ngx_http_fairgate_utf8_safe(st->name, t->name, t->len)
                  - st->name;
        st->kind = t->kind;
        st->requests = t->requests;
        st->throttled = t->throttled;
        st->queue_full = t->queue_full;
        st->timed_out = t->timed_out;
        st->tokens_in = t->tokens_in;
        st->tokens_out = t->tokens_out;
        st->rpm = fg_window_sum(ngx_http_fairgate_tenant_requests(t), now);
        st->tpm = fg_window_sum(&t->tokens, now);
        st->limit_rpm = t->limit_rpm;
        st->limit_tpm = t->limit_tpm;
        st->throttled_by = t->throttled_by;
        st->qoe = t->qoe;

        if (t->kind == NGX_HTTP_FAIRGATE_USER) {
            c = &t->u.client;
            st->weight = c->weight;
            st->counter = c->counter;
            st->service = c->service;
            st->deficit = fg_client_deficit(zone->sh->sched, c);
            st->cached_tokens = c->cached_tokens;
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


