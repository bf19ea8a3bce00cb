
/*
 * fairgate: the nginx module.  Directives and configuration, the handler's
 * and filters' registration, worker start and exit.  The other parts are
 * listed in ngx_http_fairgate.h.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_tenants.h"
#include "ngx_http_fairgate_quota.h"
#include "ngx_http_fairgate_redis.h"
#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_param.h"


#define NGX_HTTP_FAIRGATE_QUEUE       100
#define NGX_HTTP_FAIRGATE_TIMEOUT     60000
#define NGX_HTTP_FAIRGATE_MAX_TOKENS  512


static ngx_int_t ngx_http_fairgate_init(ngx_conf_t *cf);
static ngx_int_t ngx_http_fairgate_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_fairgate_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_fairgate_init_process(ngx_cycle_t *cycle);
static void ngx_http_fairgate_exit_process(ngx_cycle_t *cycle);
static void *ngx_http_fairgate_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_fairgate_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_fairgate_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static char *ngx_http_fairgate(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_fairgate_identity(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


/* an error status of the HTTP API: 400 to 599 */
static ngx_conf_num_bounds_t  ngx_http_fairgate_http_status_bounds = {
    ngx_conf_check_num_bounds, 400, 599
};

static ngx_conf_num_bounds_t  ngx_http_fairgate_max_tokens_bounds = {
    ngx_conf_check_num_bounds, 0, 16 * 1024 * 1024
};


static ngx_command_t  ngx_http_fairgate_commands[] = {

    { ngx_string("fairgate_zone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_zone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_engine"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_fairgate_engine,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_engine_pass"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_fairgate_engine_pass,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_ANY,
      ngx_http_fairgate_status,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_dashboard"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_fairgate_dashboard,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_keys"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE12,
      ngx_http_fairgate_keys,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_identity"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_identity,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_user_limit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_user_limit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_app_limit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_fairgate_app_limit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_quota"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_fairgate_quota,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_quota_timezone"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE1,
      ngx_http_fairgate_quota_timezone,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_oit"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_oit,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_app_profile"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_2MORE,
      ngx_http_fairgate_app_profile,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_throttle_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fairgate_loc_conf_t, throttle_status),
      &ngx_http_fairgate_http_status_bounds },

    { ngx_string("fairgate_queue_status"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fairgate_loc_conf_t, queue_status),
      &ngx_http_fairgate_http_status_bounds },

    { ngx_string("fairgate_max_tokens"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fairgate_loc_conf_t, max_tokens),
      &ngx_http_fairgate_max_tokens_bounds },

    { ngx_string("fairgate_api_errors"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fairgate_loc_conf_t, api_errors),
      NULL },

    { ngx_string("fairgate_qoe"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_qoe,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_pace"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_fairgate_loc_conf_t, pace),
      NULL },

    { ngx_string("fairgate_redis"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_redis,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_quota_state"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_TAKE12,
      ngx_http_fairgate_qstate,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_price"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF
                        |NGX_CONF_TAKE3|NGX_CONF_TAKE4,
      ngx_http_fairgate_price,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_prices"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_http_fairgate_prices,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    /* keys managed live, models per key (tenants/) */
    { ngx_string("fairgate_model_alias"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE2,
      ngx_http_fairgate_model_alias,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("fairgate_admin"),
      NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_fairgate_admin,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_fairgate_module_ctx = {
    ngx_http_fairgate_preconfiguration,    /* preconfiguration */
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
    ngx_http_fairgate_init_process,        /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_fairgate_exit_process,        /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


static ngx_int_t
ngx_http_fairgate_preconfiguration(ngx_conf_t *cf)
{
    return ngx_http_fairgate_add_variables(cf);
}


static ngx_int_t
ngx_http_fairgate_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt            *h;
    ngx_http_core_main_conf_t      *cmcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_fairgate_module);

    /* every fairgate_zone of the http block has been read by now */

    if (ngx_http_fairgate_check_refs(cf, fmcf) != NGX_OK) {
        return NGX_ERROR;
    }

    /*
     * The precontent phase: after nginx's own access checks (allow, deny,
     * auth_request, whose variables fairgate_identity may use), and for
     * every request, whatever "satisfy" says.
     */

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_PRECONTENT_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fairgate_handler;

    /* the pacer below the usage filter: tokens are counted as they come */

    if (ngx_http_fairgate_pace_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_fairgate_filter_init(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    /* after the filter above: nginx's error pages are rewritten first */

    return ngx_http_fairgate_errors_init(cf);
}


/* the cycle is committed: nothing after this fails a reload */

static ngx_int_t
ngx_http_fairgate_init_module(ngx_cycle_t *cycle)
{
    /* quota counts kept by fairgate_quota_state, before any worker counts */
    ngx_http_fairgate_qstate_init_module(cycle);

    return ngx_http_fairgate_zones_commit(cycle);
}


static ngx_int_t
ngx_http_fairgate_init_process(ngx_cycle_t *cycle)
{
    if (ngx_http_fairgate_workers_init_process(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_fairgate_redis_init_process(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    if (ngx_http_fairgate_keystore_init_process(cycle) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_engine_init_process(cycle);
}


static void
ngx_http_fairgate_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_fairgate_engine_exit_process(cycle);
    ngx_http_fairgate_keystore_exit_process(cycle);
    ngx_http_fairgate_redis_exit_process(cycle);
    ngx_http_fairgate_workers_exit_process(cycle);
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

    if (ngx_array_init(&fmcf->engines, cf->pool, 2,
                       sizeof(ngx_http_fairgate_engine_t *))
        != NGX_OK)
    {
        return NULL;
    }

    if (ngx_array_init(&fmcf->keys, cf->pool, 2,
                       sizeof(ngx_http_fairgate_keys_t *))
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
     *     flcf->status_format = NGX_HTTP_FAIRGATE_STATUS_JSON;
     *     flcf->dashboard = { 0, NULL };
     *     flcf->user = NULL;
     *     flcf->app = NULL;
     *     flcf->weight = NULL;
     *     flcf->app_limits = NULL;
     *     flcf->quotas = NULL;
     *     flcf->profiles = NULL;
     *     flcf->prices = NULL;
     *     flcf->model_aliases = NULL;
     *     flcf->admin = NULL;
     */

    flcf->zone = NGX_CONF_UNSET_PTR;
    flcf->queue = NGX_CONF_UNSET_UINT;
    flcf->timeout = NGX_CONF_UNSET_MSEC;
    flcf->keys = NGX_CONF_UNSET_PTR;
    flcf->user_limit.rpm = NGX_CONF_UNSET_UINT;
    flcf->user_limit.tpm = NGX_CONF_UNSET_UINT;
    flcf->throttle_status = NGX_CONF_UNSET_UINT;
    flcf->queue_status = NGX_CONF_UNSET_UINT;
    flcf->max_tokens = NGX_CONF_UNSET_UINT;
    flcf->oit = NGX_CONF_UNSET;
    flcf->api_errors = NGX_CONF_UNSET;
    flcf->qoe = NGX_CONF_UNSET;
    flcf->pace = NGX_CONF_UNSET;

    return flcf;
}


static char *
ngx_http_fairgate_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_fairgate_loc_conf_t  *prev = parent;
    ngx_http_fairgate_loc_conf_t  *conf = child;

    /*
     * An "if" block inside a status location keeps the location's content
     * handler, and so needs its zones (a dashboard's, its URI).
     */

    if (conf->status == NULL) {
        conf->status = prev->status;
        conf->status_format = prev->status_format;
    }

    if (conf->dashboard.data == NULL) {
        conf->dashboard = prev->dashboard;
    }

    if (conf->zone == NGX_CONF_UNSET_PTR) {
        conf->zone = prev->zone;
        conf->queue = prev->queue;
        conf->timeout = prev->timeout;
    }

    /* a "fairgate" of this level takes the defaults, not the parent's */

    ngx_conf_init_ptr_value(conf->zone, NULL);
    ngx_conf_init_uint_value(conf->queue, NGX_HTTP_FAIRGATE_QUEUE);
    ngx_conf_init_msec_value(conf->timeout, NGX_HTTP_FAIRGATE_TIMEOUT);

    /* the identity comes as a whole: keys, or variables */

    if (conf->keys == NGX_CONF_UNSET_PTR && conf->user == NULL) {
        conf->keys = prev->keys;
        conf->user = prev->user;
        conf->app = prev->app;
        conf->weight = prev->weight;
    }

    ngx_conf_init_ptr_value(conf->keys, NULL);

    if (conf->user_limit.rpm == NGX_CONF_UNSET_UINT) {
        conf->user_limit = prev->user_limit;
    }

    if (conf->user_limit.rpm == NGX_CONF_UNSET_UINT) {
        conf->user_limit.rpm = 0;
        conf->user_limit.tpm = 0;
    }

    if (conf->app_limits == NULL) {
        conf->app_limits = prev->app_limits;
    }

    /* fairgate_quota: a level with its own takes none of its parent's */

    if (conf->quotas == NULL) {
        conf->quotas = prev->quotas;
    }

    if (conf->model_aliases == NULL) {
        conf->model_aliases = prev->model_aliases;
    }

    /* fairgate_oit comes as a whole, like the identity */

    if (conf->oit == NGX_CONF_UNSET) {
        conf->oit = prev->oit;
        conf->oit_overload = prev->oit_overload;
        conf->oit_user_rpm = prev->oit_user_rpm;
        conf->oit_app_rpm = prev->oit_app_rpm;
        conf->oit_max_requests = prev->oit_max_requests;
    }

    if (conf->oit == NGX_CONF_UNSET) {
        conf->oit = 0;
        conf->oit_overload = NGX_HTTP_FAIRGATE_OVERLOAD;
        conf->oit_user_rpm = 0;
        conf->oit_app_rpm = 0;
        conf->oit_max_requests = NGX_HTTP_FAIRGATE_MAX_REQUESTS;
    }

    if (conf->profiles == NULL) {
        conf->profiles = prev->profiles;
    }

    ngx_conf_merge_uint_value(conf->throttle_status, prev->throttle_status,
                              NGX_HTTP_TOO_MANY_REQUESTS);
    ngx_conf_merge_uint_value(conf->queue_status, prev->queue_status,
                              NGX_HTTP_SERVICE_UNAVAILABLE);
    ngx_conf_merge_uint_value(conf->max_tokens, prev->max_tokens,
                              NGX_HTTP_FAIRGATE_MAX_TOKENS);

    /* unset stays unset: whether the location is the API's decides */
    ngx_conf_merge_value(conf->api_errors, prev->api_errors, NGX_CONF_UNSET);

    /* fairgate_qoe comes as a whole too */

    if (conf->qoe == NGX_CONF_UNSET) {
        conf->qoe = prev->qoe;
        conf->qoe_ttft = prev->qoe_ttft;
        conf->qoe_speed = prev->qoe_speed;
    }

    ngx_conf_merge_value(conf->pace, prev->pace, 0);

    if (ngx_http_fairgate_prices_merge(cf, prev, conf) != NGX_CONF_OK) {
        return NGX_CONF_ERROR;
    }

    if (conf->zone && conf->keys == NULL && conf->user == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate\" needs \"fairgate_keys\" or "
                           "\"fairgate_identity\" to tell its tenants apart");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


/* fairgate zone=NAME [queue=N] [timeout=TIME] | off; */

static char *
ngx_http_fairgate(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    ngx_int_t    n;
    ngx_str_t   *value, s;
    ngx_msec_t   ms;
    ngx_uint_t   i;

    if (flcf->zone != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2 && ngx_strcmp(value[1].data, "off") == 0) {
        flcf->zone = NULL;
        return NGX_CONF_OK;
    }

    flcf->zone = NULL;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0 && flcf->zone == NULL)
        {
            s.data = value[i].data + 5;
            s.len = value[i].len - 5;

            if (s.len == 0) {
                goto invalid;
            }

            if (ngx_http_fairgate_zone_ref(cf, &s, &flcf->zone, "fairgate")
                != NGX_OK)
            {
                return NGX_CONF_ERROR;
            }

            continue;
        }

        if (ngx_strncmp(value[i].data, "queue=", 6) == 0
            && flcf->queue == NGX_CONF_UNSET_UINT)
        {
            n = ngx_http_fairgate_param_number(value[i].data + 6,
                                               value[i].len - 6, 0,
                                               NGX_HTTP_FAIRGATE_NO_MAX);

            if (n == NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid queue \"%s\" in \"fairgate\"",
                                   value[i].data + 6);
                return NGX_CONF_ERROR;
            }

            flcf->queue = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "timeout=", 8) == 0
            && flcf->timeout == NGX_CONF_UNSET_MSEC)
        {
            ms = ngx_http_fairgate_param_msec(value[i].data + 8,
                                              value[i].len - 8, 1,
                                              NGX_HTTP_FAIRGATE_NO_MAX);

            if (ms == (ngx_msec_t) NGX_ERROR) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid timeout \"%s\" in \"fairgate\"",
                                   value[i].data + 8);
                return NGX_CONF_ERROR;
            }

            flcf->timeout = ms;
            continue;
        }

        goto invalid;
    }

    if (flcf->zone == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "missing \"zone=NAME\" in \"fairgate\"");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "invalid parameter \"%V\" in \"fairgate\"", &value[i]);
    return NGX_CONF_ERROR;
}


/*
 * fairgate_identity user=VALUE [app=VALUE] [weight=VALUE];
 *
 * For sites where an outer layer (auth_request, TLS client certificates, a
 * trusted proxy's header) has authenticated the client: the values, with
 * variables, name the tenant.  fairgate trusts them as they are.
 */

static char *
ngx_http_fairgate_identity(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    size_t                             len;
    ngx_str_t                         *value;
    ngx_uint_t                         i;
    ngx_http_complex_value_t         **cvp;
    ngx_http_compile_complex_value_t   ccv;

    if (flcf->user) {
        return "is duplicate";
    }

    if (flcf->keys != NGX_CONF_UNSET_PTR) {
        return "cannot be used with \"fairgate_keys\" in the same block";
    }

    value = cf->args->elts;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "user=", 5) == 0) {
            cvp = &flcf->user;
            len = 5;

        } else if (ngx_strncmp(value[i].data, "app=", 4) == 0) {
            cvp = &flcf->app;
            len = 4;

        } else if (ngx_strncmp(value[i].data, "weight=", 7) == 0) {
            cvp = &flcf->weight;
            len = 7;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "invalid parameter \"%V\" "
                               "in \"fairgate_identity\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        if (*cvp) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "duplicate parameter \"%V\" "
                               "in \"fairgate_identity\"", &value[i]);
            return NGX_CONF_ERROR;
        }

        *cvp = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (*cvp == NULL) {
            return NGX_CONF_ERROR;
        }

        value[i].data += len;
        value[i].len -= len;

        ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

        ccv.cf = cf;
        ccv.value = &value[i];
        ccv.complex_value = *cvp;

        if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
    }

    if (flcf->user == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "missing \"user=VALUE\" in \"fairgate_identity\"");
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}
