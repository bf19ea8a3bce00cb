
/*
 * fairgate: "fairgate_status [ZONE ...];", a JSON read-out of the zones'
 * schedulers, all of them when no zone is named.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate.h"


static ngx_int_t ngx_http_fairgate_status_handler(ngx_http_request_t *r);
static json_t *ngx_http_fairgate_status_zone(ngx_http_fairgate_zone_t *zone);


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
        shm_zone = ngx_array_push(flcf->status);
        if (shm_zone == NULL) {
            return NGX_CONF_ERROR;
        }

        if (ngx_http_fairgate_zone_ref(cf, &value[i], shm_zone) != NGX_OK) {
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
    char                           *text;
    size_t                          len;
    json_t                         *root, *zones, *zone;
    ngx_int_t                       rc;
    ngx_buf_t                      *b;
    ngx_uint_t                      i, n;
    ngx_chain_t                     out;
    ngx_shm_zone_t                **shm_zone;
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

    root = json_object();
    zones = json_array();

    if (root == NULL || zones == NULL
        || json_object_set_new(root, "zones", zones) != 0)
    {
        json_decref(root);
        json_decref(zones);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    for (i = 0; i < n; i++) {
        z = flcf->status->nelts ? shm_zone[i]->data : zonep[i];

        zone = ngx_http_fairgate_status_zone(z);

        if (zone == NULL || json_array_append_new(zones, zone) != 0) {
            json_decref(root);
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    text = json_dumps(root, JSON_INDENT(2)|JSON_PRESERVE_ORDER);
    json_decref(root);

    if (text == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    len = ngx_strlen(text);

    b = ngx_create_temp_buf(r->pool, len + 1);
    if (b == NULL) {
        free(text);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last = ngx_cpymem(b->last, text, len);
    *b->last++ = LF;

    free(text);

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = b->last - b->pos;
    ngx_str_set(&r->headers_out.content_type, "application/json");
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


static json_t *
ngx_http_fairgate_status_zone(ngx_http_fairgate_zone_t *zone)
{
    ngx_uint_t        reloads;
    fg_sched_conf_t   conf;
    fg_sched_stats_t  st;

    /* one consistent snapshot; the JSON is built outside the lock */

    ngx_shmtx_lock(&zone->shpool->mutex);

    conf = *fg_sched_conf(zone->sh->sched);
    fg_sched_stats(zone->sh->sched, &st);
    reloads = zone->sh->reloads;

    ngx_shmtx_unlock(&zone->shpool->mutex);

    return json_pack("{s:s%, s:s, s:{s:s%, s:f, s:f, s:f, s:f, s:f},"
                     " s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I,"
                     " s:I, s:I, s:I, s:I, s:I}",
                     "name", (char *) zone->name.data, zone->name.len,
                     "policy", fg_sched_policy_name(conf.policy),
                     "cost",
                         "name", (char *) zone->cost.data, zone->cost.len,
                         "in", conf.cost.in,
                         "out", conf.cost.out,
                         "in_out", conf.cost.in_out,
                         "out2", conf.cost.out2,
                         "base", conf.cost.base,
                     "max_tenants", (json_int_t) conf.max_clients,
                     "rpm", (json_int_t) conf.rpm_limit,
                     "reloads", (json_int_t) reloads,
                     "tenants", (json_int_t) st.clients,
                     "backlogged", (json_int_t) st.backlogged,
                     "waiting", (json_int_t) st.waiting,
                     "running", (json_int_t) st.running,
                     "enqueued", (json_int_t) st.enqueued,
                     "rejected", (json_int_t) st.rejected,
                     "admitted", (json_int_t) st.admitted,
                     "finished", (json_int_t) st.finished,
                     "cancelled", (json_int_t) st.cancelled);
}
