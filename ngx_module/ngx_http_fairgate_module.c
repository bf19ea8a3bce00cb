
/*
 * fairgate: the nginx module.  Directives and configuration; the shared zone
 * lives in ngx_http_fairgate_zone.c, the status page in
 * ngx_http_fairgate_status.c.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate.h"


static ngx_int_t ngx_http_fairgate_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_fairgate_init_module(ngx_cycle_t *cycle);
static void *ngx_http_fairgate_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_fairgate_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_fairgate_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);


static ngx_command_t  ngx_http_fairgate_commands[] = {

    { ngx_string("fairgate_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_ANY,
      ngx_http_fairgate_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fairgate_module_ctx = {
    NULL,                                  /* preconfiguration */
    ngx_http_fairgate_init,                /* postconfiguration */

    ngx_http_fairgate_create_main_conf,    /* create main configuration */
    NULL,                                  /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_fairgate_create_loc_conf,     /* create location configuration */
    ngx_http_fairgate_merge_loc_conf       /* merge location configuration */
};


ngx_module_t  ngx_http_fairgate_module = {
    NGX_MODULE_V1,
    &ngx_http_fairgate_module_ctx,         /* module context */
    ngx_http_fairgate_commands,            /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_fairgate_init_module,         /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_fairgate_init(ngx_conf_t *cf)
{
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    /* every fairgate_zone of the http block has been read by now */

    return ngx_http_fairgate_check_refs(cf, fmcf);
}


/* the cycle is committed: nothing after this fails a reload */

static ngx_int_t
ngx_http_fairgate_init_module(ngx_cycle_t *cycle)
{
    return ngx_http_fairgate_zones_commit(cycle);
}


static void *
ngx_http_fairgate_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_main_conf_t));
    if (fmcf == NULL) {
        return NULL;
    }

    if (ngx_array_init(&fmcf->zones, cf->pool, 4,
                       sizeof(ngx_http_fairgate_zone_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&fmcf->refs, cf->pool, 4,
                       sizeof(ngx_http_fairgate_zone_ref_t))
        != NGX_OK)
    {
        return NULL;
    }

    return fmcf;
}


static void *
ngx_http_fairgate_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_loc_conf_t));
    if (flcf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     flcf->status = NULL;
     */

    return flcf;
}


static char *
ngx_http_fairgate_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fairgate_loc_conf_t  *prev = parent;
    ngx_http_fairgate_loc_conf_t  *conf = child;

    /*
     * An "if" block inside a status location keeps the location's content
     * handler, and so needs its zones.
     */

    if (conf->status == NULL) {
        conf->status = prev->status;
    }

    return NGX_CONF_OK;
}
