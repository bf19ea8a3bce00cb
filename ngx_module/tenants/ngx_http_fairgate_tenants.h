
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
#include "fg_keys_table.h"
#include "fg_quota_json.h"


/* the admin API's JSON values (jansson's) */
typedef struct json_t  json_t;


/* the longest X-Fairgate-Interaction value */
#define NGX_HTTP_FAIRGATE_INTERACTION_LEN  128


/* a key's id: its digest's first 8 bytes in hex, safe to log and show */
#define NGX_HTTP_FAIRGATE_KEY_ID_LEN  16


/* one line of a keys file */
typedef struct {
    u_char                       digest[32]; /* SHA-256 of the key; first:
                                                the table reads it there */
    u_char                       id[NGX_HTTP_FAIRGATE_KEY_ID_LEN];
    ngx_str_t                    user;
    ngx_str_t                    app;
    double                       weight;
    double                       priority;   /* wsc's E, 1 by default */
    ngx_http_fairgate_limit_t    limit;      /* 0: the user default */
    ngx_str_t                    models;     /* "a,b"; empty: any model */
    ngx_str_t                    quota;      /* Redis keys: the admin API's */
    ngx_str_t                    budget;     /* JSON as given; empty: none */
} ngx_http_fairgate_key_t;


/*
 * a keys file's key's own quotas and budgets (quota= and budget= on its
 * line), kept aside by the key's index: the keys without them cost nothing
 */
typedef struct {
    ngx_uint_t                   index;      /* in the keys' array */
    ngx_uint_t                   nrules;
    fg_quota_rule_t             *rules;
} ngx_http_fairgate_key_rules_t;


/* keys kept in Redis: what the shared zone holds of them (_keycache.c) */
#define NGX_HTTP_FAIRGATE_KEYCACHE_POS_LEN  48

typedef struct {
    ngx_rbtree_t                 rbtree;
    ngx_rbtree_node_t            sentinel;
    ngx_queue_t                  lru;        /* most recently used first */
    ngx_uint_t                   count;
    ngx_uint_t                   evicted;
    ngx_uint_t                   changes;    /* applied: drops, resets */
    /* the last change read of the stream; synced 0: not known yet */
    u_char                       position[NGX_HTTP_FAIRGATE_KEYCACHE_POS_LEN];
    size_t                       position_len;
    ngx_uint_t                   synced;
} ngx_http_fairgate_keycache_sh_t;

typedef struct {
    ngx_http_fairgate_keycache_sh_t  *sh;
    ngx_slab_pool_t                  *shpool;
} ngx_http_fairgate_keycache_t;


/*
 * A key looked up in Redis for a request (_keystore.c): when Redis
 * answers, done (its handler the caller's, its data this) is posted with
 * rc: NGX_OK, key filled; NGX_DECLINED, no such key or revoked; NGX_BUSY,
 * Redis not reachable or late.
 */
typedef struct {
    ngx_http_fairgate_key_t      key;
    fg_quota_rule_t             *rules;      /* its quota and budget, read
                                                once, as the cache keeps
                                                them (not in key: a keys
                                                file's keys have none) */
    ngx_uint_t                   nrules;
    ngx_int_t                    rc;
    ngx_event_t                  done;
    ngx_http_request_t          *request;
    void                        *pending;    /* _keystore.c's */
} ngx_http_fairgate_key_lookup_t;


/*
 * a keys file: its lines, and an open-addressing table by digest
 * (openai/fg_keys_table.h); or the keys kept in Redis (shm_zone set)
 */
struct ngx_http_fairgate_keys_s {
    ngx_str_t                    file;
    ngx_array_t                  keys;       /* ngx_http_fairgate_key_t */
    fg_keys_table_t              table;
    ngx_array_t                  rules;      /* _key_rules_t, by index;
                                                no elts: no key has any */

    /* per worker, made at its first request: the keys it found */
    fg_keys_cache_t              cache;
    unsigned                     cache_tried:1;

    /* fairgate_keys redis: the keys known, and where they are kept */
    ngx_shm_zone_t                  *shm_zone;
    ngx_http_fairgate_redis_conf_t  *redis;
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

/* _keys.c; a key's SHA-256 (md: 32 bytes) */
ngx_http_fairgate_key_t *ngx_http_fairgate_key_find(
    ngx_http_fairgate_keys_t *keys, ngx_str_t *key);
ngx_int_t ngx_http_fairgate_key_digest(ngx_str_t *key, u_char *md);
/* a keys file's key's own quotas and budgets: *n 0, none */
void ngx_http_fairgate_key_rules(ngx_http_fairgate_keys_t *keys,
    ngx_http_fairgate_key_t *k, fg_quota_rule_t **rules, ngx_uint_t *n);

/* _keystore.c: "fairgate_keys redis [cache=SIZE]"; a key looked up (the
 * cache, else Redis: NGX_AGAIN, lk->done posted later); the worker that
 * follows the stream of changes */
char *ngx_http_fairgate_keys_redis(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *flcf, ngx_str_t *value, ngx_uint_t n);
ngx_int_t ngx_http_fairgate_keystore_find(ngx_http_request_t *r,
    ngx_http_fairgate_keys_t *keys, u_char *digest,
    ngx_http_fairgate_key_lookup_t *lk);
ngx_int_t ngx_http_fairgate_keystore_record(ngx_pool_t *pool, void *reply,
    ngx_http_fairgate_key_t *key, ngx_uint_t *revoked);
ngx_int_t ngx_http_fairgate_keystore_init_process(ngx_cycle_t *cycle);
void ngx_http_fairgate_keystore_exit_process(ngx_cycle_t *cycle);

/* _admin.c: fairgate_admin; _admin_json.c: a key's settings from JSON
 * (field, value pairs pushed to args; NGX_DECLINED: *field bad, msg
 * why), a key's hash and a list of them (hiredis replies) as JSON */
char *ngx_http_fairgate_admin(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_admin_parse(ngx_pool_t *pool, json_t *body,
    ngx_uint_t create, ngx_array_t *args, const char **field, u_char *msg);
json_t *ngx_http_fairgate_admin_key_json(void *reply);
json_t *ngx_http_fairgate_admin_list_json(void *reply);

/* _keycache.c; a digest from its 64 hex digits (dst: 32 bytes) */
ngx_int_t ngx_http_fairgate_key_unhex(u_char *dst, u_char *src, size_t len);
ngx_int_t ngx_http_fairgate_keycache_add(ngx_conf_t *cf,
    ngx_http_fairgate_keys_t *keys, size_t size);
ngx_int_t ngx_http_fairgate_keycache_get(ngx_http_fairgate_keycache_t *kc,
    u_char *digest, ngx_pool_t *pool, ngx_http_fairgate_key_lookup_t *lk,
    ngx_uint_t *changes);
void ngx_http_fairgate_keycache_put(ngx_http_fairgate_keycache_t *kc,
    ngx_http_fairgate_key_lookup_t *lk, ngx_uint_t revoked,
    ngx_uint_t changes);
void ngx_http_fairgate_keycache_drop(ngx_http_fairgate_keycache_t *kc,
    u_char *digest);
void ngx_http_fairgate_keycache_reset(ngx_http_fairgate_keycache_t *kc,
    ngx_str_t *position);
size_t ngx_http_fairgate_keycache_position(ngx_http_fairgate_keycache_t *kc,
    u_char *buf);
void ngx_http_fairgate_keycache_advance(ngx_http_fairgate_keycache_t *kc,
    ngx_str_t *position);

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
