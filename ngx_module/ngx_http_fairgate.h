
/*
 * fairgate: declarations shared by the nginx glue of the module
 * (ngx_http_fairgate_*.c).  The policy core (fg_*.h) knows nothing of nginx;
 * this is where the two meet.
 */

#ifndef _NGX_HTTP_FAIRGATE_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_sched.h"


#define NGX_HTTP_FAIRGATE_MAX_TENANTS  10000


/*
 * A tenant's record in the zone.  Tenants arrive with a later issue; the
 * zone already reserves room for max_tenants of them when it is created, so
 * that "nginx -t" rejects a zone too small for its configuration instead of
 * a full zone surprising the operator under load.
 */
typedef struct {
    ngx_rbtree_node_t            node;       /* key: hash of the tenant id */
    ngx_queue_t                  lru;
    fg_client_t                  client;
} ngx_http_fairgate_tenant_t;


/*
 * The zone's shared state, at shpool->data.  No function pointers and
 * nothing of a cycle's memory: it outlives reloads.
 */
typedef struct {
    fg_sched_t                  *sched;
    ngx_uint_t                   reloads;    /* reloads it has survived */
} ngx_http_fairgate_shctx_t;


/* a fairgate_zone of one configuration cycle, in that cycle's pool */
typedef struct {
    ngx_str_t                    name;
    ngx_str_t                    cost;       /* the cost= text, or "linear" */
    fg_sched_conf_t              conf;

    ngx_shm_zone_t              *shm_zone;
    ngx_slab_pool_t             *shpool;
    ngx_http_fairgate_shctx_t   *sh;

    /*
     * While a reload creates the zone: the previous cycle's zone of the same
     * name, and what differs from it ("" if nothing: its state is reused).
     */
    ngx_shm_zone_t              *previous;
    u_char                      *changes;

    unsigned                     reused:1;
} ngx_http_fairgate_zone_t;


/* a zone named by fairgate_status, checked once the http block is read */
typedef struct {
    ngx_shm_zone_t              *shm_zone;
    ngx_str_t                    file;
    ngx_uint_t                   line;
} ngx_http_fairgate_zone_ref_t;


typedef struct {
    ngx_array_t                  zones;      /* ngx_http_fairgate_zone_t * */
    ngx_array_t                  refs;       /* ngx_http_fairgate_zone_ref_t */
} ngx_http_fairgate_main_conf_t;


typedef struct {
    ngx_array_t                 *status;     /* ngx_shm_zone_t *; empty: all */
} ngx_http_fairgate_loc_conf_t;


char *ngx_http_fairgate_zone(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_fairgate_zone_ref(ngx_conf_t *cf, ngx_str_t *name,
    ngx_shm_zone_t **shm_zone);
ngx_int_t ngx_http_fairgate_check_refs(ngx_conf_t *cf,
    ngx_http_fairgate_main_conf_t *fmcf);
ngx_int_t ngx_http_fairgate_zones_commit(ngx_cycle_t *cycle);

char *ngx_http_fairgate_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);


extern ngx_module_t  ngx_http_fairgate_module;


#endif /* _NGX_HTTP_FAIRGATE_H_INCLUDED_ */
