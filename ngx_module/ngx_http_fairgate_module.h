
/*
 * fairgate: the module's configuration, which every part reads.
 *
 * ngx_http_fairgate_module.c registers the directives (each parsed in the
 * file of the part it configures), the precontent handler that takes a
 * request through its steps (request/), the response filters, the
 * variables, and each worker's start and exit.  The configuration they
 * fill is declared here; each part's header says what the part does with
 * it (request/ngx_http_fairgate_request.h, local/_local.h, zone/_zone.h,
 * tenants/_tenants.h, ...); the state shared at run time is the zone's
 * (zone/ngx_http_fairgate_zone.h), a request's own is its context
 * (context/ngx_http_fairgate_ctx.h).  Every part of the glue includes this
 * header and no other part's from above it: the layers are in
 * docs/architecture.md.
 */

#ifndef _NGX_HTTP_FAIRGATE_MODULE_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_MODULE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_sched.h"
#include "fg_quota.h"


/* the longest user or app name */
#define NGX_HTTP_FAIRGATE_NAME_LEN      255

/* a fairgate_engine's name, its NUL included, as zones keep it */
#define NGX_HTTP_FAIRGATE_ENGINE_NAME   64

/* fairgate_oit's defaults: overload at 90% of the capacity, and the
 * requests an interaction may make before it is checked like a new one */
#define NGX_HTTP_FAIRGATE_OVERLOAD      0.9
#define NGX_HTTP_FAIRGATE_MAX_REQUESTS  64

#define NGX_HTTP_FAIRGATE_STATUS_JSON   0
#define NGX_HTTP_FAIRGATE_STATUS_PROM   1


/* the parts' own configuration, declared where it is used */
typedef struct ngx_http_fairgate_keys_s        ngx_http_fairgate_keys_t;
typedef struct ngx_http_fairgate_engine_s      ngx_http_fairgate_engine_t;
typedef struct ngx_http_fairgate_redis_conf_s  ngx_http_fairgate_redis_conf_t;
typedef struct ngx_http_fairgate_qstate_conf_s  ngx_http_fairgate_qstate_conf_t;
typedef struct ngx_http_fairgate_prices_s      ngx_http_fairgate_prices_t;


/* a zone named by fairgate_status or fairgate, checked once http is read */
typedef struct {
    ngx_shm_zone_t              *shm_zone;
    ngx_str_t                    file;
    ngx_uint_t                   line;
    char                        *directive;
} ngx_http_fairgate_zone_ref_t;


/* a rate limit: requests and tokens per minute; 0: none */
typedef struct {
    ngx_uint_t                   rpm;
    ngx_uint_t                   tpm;
} ngx_http_fairgate_limit_t;


typedef struct {
    ngx_str_t                    name;
    ngx_http_fairgate_limit_t    limit;
} ngx_http_fairgate_app_limit_t;


/* fairgate_app_profile: an app's expected lengths, seeded into the zone */
typedef struct {
    ngx_str_t                    name;
    fg_app_t                     app;        /* stages, learn */
    ngx_uint_t                   oit_rpm;    /* NGX_CONF_UNSET_UINT: the
                                                fairgate_oit default */
    uint32_t                     crc;        /* of the directive's words */
} ngx_http_fairgate_profile_t;


typedef struct {
    ngx_array_t                  zones;      /* ngx_http_fairgate_zone_t * */
    ngx_array_t                  engines;    /* ngx_http_fairgate_engine_t *
                                              */
    ngx_array_t                  refs;       /* ngx_http_fairgate_zone_ref_t */
    ngx_array_t                  keys;       /* ngx_http_fairgate_keys_t * */
    ngx_http_fairgate_redis_conf_t  *redis;  /* NULL: none */
    ngx_http_fairgate_qstate_conf_t *qstate; /* NULL: none */

    /* fairgate_quota_timezone: calendar windows' zone; NULL: UTC */
    fg_tz_t                     *quota_tz;
} ngx_http_fairgate_main_conf_t;


typedef struct {
    /* fairgate_status */
    ngx_array_t                 *status;     /* ngx_shm_zone_t *; empty: all */
    ngx_uint_t                   status_format;

    /* fairgate_dashboard: the status JSON's URI; data NULL: none */
    ngx_str_t                    dashboard;

    /* fairgate */
    ngx_shm_zone_t              *zone;       /* NULL: off */
    ngx_uint_t                   queue;      /* waiting requests a tenant */
    ngx_msec_t                   timeout;

    ngx_http_fairgate_keys_t    *keys;
    ngx_http_complex_value_t    *user;
    ngx_http_complex_value_t    *app;
    ngx_http_complex_value_t    *weight;

    ngx_http_fairgate_limit_t    user_limit;
    ngx_array_t                 *app_limits; /* ngx_http_fairgate_app_limit_t */

    /* fairgate_quota: ngx_http_fairgate_quota_t (quota/); NULL: none */
    ngx_array_t                 *quotas;

    ngx_uint_t                   throttle_status;
    ngx_uint_t                   queue_status;
    ngx_uint_t                   max_tokens;

    /* fairgate_oit, fairgate_app_profile */
    ngx_flag_t                   oit;
    double                       oit_overload; /* share of capacity */
    ngx_uint_t                   oit_user_rpm;
    ngx_uint_t                   oit_app_rpm;
    ngx_uint_t                   oit_max_requests;
    ngx_array_t                 *profiles;   /* ngx_http_fairgate_profile_t */

    /* fairgate_engine_pass: the engine, NULL: chosen by "model" */
    ngx_flag_t                   engine_pass;
    ngx_http_fairgate_engine_t  *engine;

    /* fairgate_api_errors; NGX_CONF_UNSET: on where zone or engine_pass */
    ngx_flag_t                   api_errors;

    /* fairgate_qoe: the expectations of a request that names none;
     * qoe NGX_CONF_UNSET: no directive at this level */
    ngx_flag_t                   qoe;
    ngx_msec_t                   qoe_ttft;   /* 0: none */
    double                       qoe_speed;  /* tokens a second, 0: none */

    /* fairgate_pace */
    ngx_flag_t                   pace;

    /* fairgate_price, fairgate_prices: NULL: none (request/_price.c) */
    ngx_http_fairgate_prices_t  *prices;

    /* fairgate_model_alias: ngx_keyval_t, public name -> target */
    ngx_array_t                 *model_aliases;

    /* fairgate_admin: the admin keys' SHA-256s, 32 bytes each */
    ngx_array_t                 *admin;
} ngx_http_fairgate_loc_conf_t;


extern ngx_module_t  ngx_http_fairgate_module;

/* a cycle's main configuration of the module: NULL without http {} */
#define ngx_http_fairgate_cycle_conf(cycle)                                  \
    ngx_http_cycle_get_module_main_conf(cycle, ngx_http_fairgate_module)


#endif /* _NGX_HTTP_FAIRGATE_MODULE_H_INCLUDED_ */
