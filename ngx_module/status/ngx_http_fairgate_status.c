
/*
 * fairgate: "fairgate_status [format=json|prometheus] [ZONE ...];", a
 * read-out of the zones: scheduler, capacity, queue-wait histogram, and
 * per-tenant counters, as JSON or as Prometheus text.  Here: the directive,
 * the handler, its arguments (?limit=N, ?tenant=PREFIX), and each zone's
 * snapshot: its own counters copied out under its mutex in one go so that
 * they agree with each other, its tenants in slices (_status_walk.c); the
 * text is made of the snapshots outside the lock (_status_json.c,
 * _status_prom.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_param.h"


static ngx_int_t ngx_http_fairgate_status_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap, ngx_http_fairgate_status_args_t *args);
static ngx_int_t ngx_http_fairgate_status_args(ngx_http_request_t *r,
    ngx_http_fairgate_status_args_t *args);


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
    ngx_int_t                         rc;
    ngx_uint_t                        i, n;
    ngx_shm_zone_t                  **shm_zone;
    ngx_http_fairgate_snap_t         *snaps;
    ngx_http_fairgate_zone_t        **zonep, *z;
    ngx_http_fairgate_loc_conf_t     *flcf;
    ngx_http_fairgate_main_conf_t    *fmcf;
    ngx_http_fairgate_status_args_t   args;

    rc = ngx_http_fairgate_status_request(r);
    if (rc != NGX_OK) {
        return rc;
    }

    rc = ngx_http_fairgate_status_args(r, &args);

    if (rc == NGX_DECLINED) {
        return NGX_HTTP_BAD_REQUEST;
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
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

    for (i = 0; i < n; i++) {
        z = flcf->status->nelts ? shm_zone[i]->data : zonep[i];

        if (ngx_http_fairgate_snapshot(z, &snaps[i], &args) != NGX_OK) {
            rc = NGX_HTTP_INTERNAL_SERVER_ERROR;
            goto done;
        }
    }

    if (flcf->status_format == NGX_HTTP_FAIRGATE_STATUS_PROM) {
        ngx_str_set(&r->headers_out.content_type,
                    "text/plain; version=0.0.4");
        rc = ngx_http_fairgate_status_prom(r, snaps, n);

    } else {
        ngx_str_set(&r->headers_out.content_type, "application/json");
        rc = ngx_http_fairgate_status_json(r, snaps, n);
    }

done:

    for (i = 0; i < n; i++) {
        ngx_free(snaps[i].tenants);
    }

    return rc;
}


static ngx_int_t
ngx_http_fairgate_snapshot(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap, ngx_http_fairgate_status_args_t *args)
{
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;
    snap->zone = zone;
    snap->limit = args->limit;

    ngx_shmtx_lock(&zone->shpool->mutex);

    snap->conf = *fg_sched_conf(sh->sched);
    fg_sched_stats(sh->sched, &snap->st);
    ngx_memcpy(&snap->sh, sh, offsetof(ngx_http_fairgate_shctx_t, slots));

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return ngx_http_fairgate_status_tenants(zone, snap, args);
}


/*
 * ?limit=N (1 to NGX_HTTP_FAIRGATE_STATUS_LIMIT_MAX) and ?tenant=PREFIX;
 * NGX_DECLINED: one of them is not valid
 */

static ngx_int_t
ngx_http_fairgate_status_args(ngx_http_request_t *r,
    ngx_http_fairgate_status_args_t *args)
{
    u_char     *dst, *src;
    ngx_int_t   n;
    ngx_str_t   v;

    args->limit = NGX_HTTP_FAIRGATE_STATUS_LIMIT;
    ngx_str_null(&args->prefix);

    if (ngx_http_arg(r, (u_char *) "limit", 5, &v) == NGX_OK) {
        n = ngx_atoi(v.data, v.len);

        if (n < 1 || n > NGX_HTTP_FAIRGATE_STATUS_LIMIT_MAX) {
            return NGX_DECLINED;
        }

        args->limit = n;
    }

    if (ngx_http_arg(r, (u_char *) "tenant", 6, &v) != NGX_OK) {
        return NGX_OK;
    }

    dst = ngx_pnalloc(r->pool, v.len);
    if (dst == NULL) {
        return NGX_ERROR;
    }

    args->prefix.data = dst;
    src = v.data;
    ngx_unescape_uri(&dst, &src, v.len, NGX_UNESCAPE_URI);
    args->prefix.len = dst - args->prefix.data;

    return (args->prefix.len > NGX_HTTP_FAIRGATE_NAME_LEN) ? NGX_DECLINED
                                                            : NGX_OK;
}
