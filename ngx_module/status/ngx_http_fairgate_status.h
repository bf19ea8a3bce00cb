
/*
 * fairgate: what the status page's files share.  Each zone's own counters
 * are copied out under its mutex in one go (ngx_http_fairgate_status.c),
 * so they agree with each other; its tenants in bounded slices
 * (_status_walk.c); the text is made of the copy outside the lock, as
 * JSON (_status_json.c) or as Prometheus text (_status_prom.c).
 */

#ifndef _NGX_HTTP_FAIRGATE_STATUS_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_STATUS_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_ctx.h"
#include "ngx_http_fairgate_prom.h"

#include <jansson.h>


/* fairgate_quota: a tenant's windows as the page shows them, the first */
#define NGX_HTTP_FAIRGATE_STATUS_QUOTAS  4

typedef struct {
    fg_quota_per_t               per;
    fg_quota_count_t             used;       /* this gateway's and others' */
    fg_quota_limit_t             limit;      /* as last checked; 0: none */
    int64_t                      start;      /* epoch s */
    int64_t                      end;
    uint32_t                     refused;
} ngx_http_fairgate_snap_quota_t;


/*
 * a user or an app; an app has no scheduler's figures (left 0).  Its name
 * as valid UTF-8, a bad byte as U+FFFD (ngx_http_fairgate_utf8_safe()).
 */
typedef struct {
    u_char                       name[3 * NGX_HTTP_FAIRGATE_NAME_LEN + 1];
    size_t                       len;
    ngx_uint_t                   kind;
    ngx_msec_t                   last;       /* its last request */
    double                       weight;
    double                       counter;
    double                       service;
    double                       deficit;    /* dlpm's */
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
    uint64_t                     cached_tokens;
    uint64_t                     rpm;
    uint64_t                     tpm;
    uint64_t                     limit_rpm;
    uint64_t                     limit_tpm;
    ngx_http_fairgate_throttled_t  throttled_by;
    ngx_http_fairgate_qoe_stats_t  qoe;
    ngx_http_fairgate_snap_quota_t  quota[NGX_HTTP_FAIRGATE_STATUS_QUOTAS];
    ngx_uint_t                   nquota;
} ngx_http_fairgate_snap_tenant_t;


typedef struct {
    ngx_http_fairgate_zone_t         *zone;
    fg_sched_conf_t                   conf;
    fg_sched_stats_t                  st;
    ngx_http_fairgate_shctx_t         sh;        /* its counters */
    ngx_http_fairgate_snap_tenant_t  *tenants;   /* users, apps, then
                                                    keys, most recently
                                                    used first */
    ngx_uint_t                        ntenants;
    ngx_uint_t                        seen;      /* tenants walked */
    ngx_uint_t                        limit;     /* of each kind */
} ngx_http_fairgate_snap_t;


/*
 * What a page lists of each zone's tenants (?limit=N&tenant=PREFIX): the
 * N most recently used users and as many apps, whose name starts with
 * PREFIX; by default the 1,000 most recent, and 10,000 at the most, so
 * that a page stays a few megabytes whatever the zone holds.
 */
#define NGX_HTTP_FAIRGATE_STATUS_LIMIT      1000
#define NGX_HTTP_FAIRGATE_STATUS_LIMIT_MAX  10000

typedef struct {
    ngx_uint_t                        limit;
    ngx_str_t                         prefix;
} ngx_http_fairgate_status_args_t;


/*
 * _dashboard_page.c, generated from dashboard.html: the page before and
 * after the status URI, and the Content-Security-Policy that lets its
 * inline script and style run and nothing else.
 */
extern ngx_str_t  ngx_http_fairgate_dashboard_head;
extern ngx_str_t  ngx_http_fairgate_dashboard_tail;
extern ngx_str_t  ngx_http_fairgate_dashboard_csp;


/* what the module registers: fairgate_status (_status.c),
 * fairgate_dashboard (_dashboard.c), the $fairgate_* variables
 * (_variables.c) */
char *ngx_http_fairgate_status(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_dashboard(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
ngx_int_t ngx_http_fairgate_add_variables(ngx_conf_t *cf);

/* _usage_log.c: the usage log's line ($fairgate_usage_json), and the
 * figures it shares with the variables: ms since the request's start,
 * ms to its first output token (-1: none), this gateway's name */
ngx_int_t ngx_http_fairgate_usage_json(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
uint64_t ngx_http_fairgate_latency_ms(ngx_http_request_t *r);
int64_t ngx_http_fairgate_ttft_ms(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_str_t *ngx_http_fairgate_gateway(ngx_http_request_t *r);

/* _status.c: a page's request, GET or HEAD, its body discarded */
ngx_int_t ngx_http_fairgate_status_request(ngx_http_request_t *r);

/* _status_walk.c: the zone's tenants the args select, into snap->tenants
 * (ngx_alloc()ed), read in slices of the zone's mutex */
ngx_int_t ngx_http_fairgate_status_tenants(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap, ngx_http_fairgate_status_args_t *args);

/* _status_quota.c: a tenant's quota windows copied, under the zone's
 * mutex; and as JSON */
void ngx_http_fairgate_status_quota_copy(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_snap_tenant_t *st);
json_t *ngx_http_fairgate_status_quota_json(
    ngx_http_fairgate_snap_tenant_t *st);

/* _status_quota.c: {"keys": [...]}, the keys listed with their quota
 * windows, or {} when there are none */
json_t *ngx_http_fairgate_status_quota_keys(ngx_http_fairgate_snap_t *snap);
/* _status_quota.c: the tenants' windows' counts and limits, Prometheus's */
ngx_int_t ngx_http_fairgate_status_quota_prom(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n);

/* _status_out.c: a body sent as it is written, buffer by buffer */
typedef struct {
    ngx_http_request_t               *r;
    ngx_chain_t                      *out;       /* written, not sent */
    ngx_chain_t                     **last;
    ngx_chain_t                      *busy;      /* sent, not yet out */
    ngx_buf_t                        *buf;       /* being written */
    off_t                             bytes;
} ngx_http_fairgate_status_out_t;

ngx_int_t ngx_http_fairgate_status_out_start(ngx_http_request_t *r,
    ngx_http_fairgate_status_out_t *o);
ngx_int_t ngx_http_fairgate_status_out_write(ngx_http_fairgate_status_out_t *o,
    u_char *data, size_t len);
ngx_int_t ngx_http_fairgate_status_out_json(ngx_http_fairgate_status_out_t *o,
    json_t *json);
ngx_int_t ngx_http_fairgate_status_out_end(ngx_http_fairgate_status_out_t *o);
ngx_int_t ngx_http_fairgate_status_out_chain(ngx_http_fairgate_status_out_t *o,
    ngx_chain_t *cl, ngx_uint_t last);

/* _status_json.c, _status_prom.c: the page, sent (what the handler
 * returns) */
ngx_int_t ngx_http_fairgate_status_json(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n);
ngx_int_t ngx_http_fairgate_status_prom(ngx_http_request_t *r,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n);


#endif /* _NGX_HTTP_FAIRGATE_STATUS_H_INCLUDED_ */
