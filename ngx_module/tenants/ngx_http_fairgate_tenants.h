
/*
 * fairgate: who the tenants are and what each may do.
 *
 *     ngx_http_fairgate_keys.c          the API keys file (fairgate_keys)
 *     ngx_http_fairgate_limits.c        rate limits per user and app, and
 *                                       the x-ratelimit-* headers
 *     ngx_http_fairgate_interaction.c   FairServe's interactions and OIT
 *                                       (fairgate_oit)
 *     ngx_http_fairgate_profile.c       wsc's app profiles
 *                                       (fairgate_app_profile)
 *     ngx_http_fairgate_models.c        the models a key may use, and
 *                                       fairgate_model_alias
 *     fairgate_keyhash.c                build/fairgate-keyhash: a key and
 *                                       its line of the keys file
 *
 * The tenants' records themselves are the zone's (zone/).
 */

#ifndef _NGX_HTTP_FAIRGATE_TENANTS_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_TENANTS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_ctx.h"


/* keys a worker remembers (their digests found), and their longest */
#define NGX_HTTP_FAIRGATE_KEY_CACHE     1024
#define NGX_HTTP_FAIRGATE_KEY_CACHED    120

/* the longest X-Fairgate-Interaction value */
#define NGX_HTTP_FAIRGATE_INTERACTION_LEN  128


/* a key's id: its digest's first 8 bytes in hex, safe to log and show */
#define NGX_HTTP_FAIRGATE_KEY_ID_LEN  16


/* one line of a keys file */
typedef struct {
    u_char                       digest[32]; /* SHA-256 of the key */
    u_char                       id[NGX_HTTP_FAIRGATE_KEY_ID_LEN];
    ngx_str_t                    user;
    ngx_str_t                    app;
    double                       weight;
    double                       priority;   /* wsc's E, 1 by default */
    ngx_http_fairgate_limit_t    limit;      /* 0: the user default */
    ngx_str_t                    models;     /* "a,b"; empty: any model */
} ngx_http_fairgate_key_t;


/* a key a worker has seen, so that its SHA-256 is worked out once */
typedef struct {
    ngx_http_fairgate_key_t     *key;
    size_t                       len;
    u_char                       data[NGX_HTTP_FAIRGATE_KEY_CACHED];
} ngx_http_fairgate_key_cache_t;


/* a keys file: its lines, and an open-addressing table by digest */
struct ngx_http_fairgate_keys_s {
    ngx_str_t                    file;
    ngx_array_t                  keys;       /* ngx_http_fairgate_key_t */
    ngx_http_fairgate_key_t    **table;
    ngx_uint_t                   mask;

    /* per worker, made at its first request */
    ngx_http_fairgate_key_cache_t  *cache;
};


/* what the module registers: the directives fairgate_keys (_keys.c),
 * fairgate_user_limit and fairgate_app_limit (_limits.c), fairgate_oit
 * (_interaction.c), fairgate_app_profile (_profile.c) */
char *ngx_http_fairgate_keys(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_fairgate_user_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_app_limit(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_oit(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
char *ngx_http_fairgate_app_profile(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _keys.c */
ngx_http_fairgate_key_t *ngx_http_fairgate_key_find(
    ngx_http_fairgate_keys_t *keys, ngx_str_t *key);

/* _limits.c */
ngx_int_t ngx_http_fairgate_limits_check(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_uint_t enforce, double now);
void ngx_http_fairgate_limits_settle(ngx_http_fairgate_node_t *node,
    uint32_t tokens, ngx_uint_t served, double now);
ngx_int_t ngx_http_fairgate_limits_reject(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_limits_headers(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);

/* _limits.c: an app's entry in a location's array of them (limits,
 * profiles), found by name or added */
void *ngx_http_fairgate_app_find(ngx_array_t *entries, ngx_str_t *name);
void *ngx_http_fairgate_app_add(ngx_conf_t *cf, ngx_array_t **entries,
    size_t size, ngx_str_t *name, const char *invalid,
    const char *duplicate);

/* _interaction.c */
ngx_int_t ngx_http_fairgate_interaction_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char **bad);
ngx_int_t ngx_http_fairgate_interaction_admit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf,
    double now);
void ngx_http_fairgate_interaction_end(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint64_t tokens, ngx_uint_t served,
    double now);
ngx_uint_t ngx_http_fairgate_overloaded(ngx_http_fairgate_shctx_t *sh,
    double threshold);

/* _models.c: fairgate_model_alias; whether a key's list (empty: any)
 * holds the model; the target of the model's alias, NULL: none */
char *ngx_http_fairgate_model_alias(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_uint_t ngx_http_fairgate_model_allowed(ngx_str_t *models,
    ngx_str_t *model);
ngx_str_t *ngx_http_fairgate_model_target(ngx_http_fairgate_loc_conf_t *flcf,
    ngx_str_t *model);

/* _profile.c */
fg_app_t *ngx_http_fairgate_profile_get(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *app, ngx_http_fairgate_profile_t *conf);


#endif /* _NGX_HTTP_FAIRGATE_TENANTS_H_INCLUDED_ */
