
/*
 * fairgate: quotas and budgets over long windows, per API key, user and
 * app, enforced at admission (fairgate_quota, fairgate_quota_timezone).
 *
 *     ngx_http_fairgate_quota_conf.c   the directives, and the quotas that
 *                                      apply to a tenant
 *     ngx_http_fairgate_quota.c        a request checked and counted at
 *                                      admission, its tokens and cost as
 *                                      they are settled
 *     ngx_http_fairgate_quota_send.c   the 429 insufficient_quota, the
 *                                      headers, the soft threshold's
 *                                      warning and its log line
 *
 * The windows' maths and counters are the policy core's (fg_quota.h); the
 * counts live in the tenants' records in the zone (a list of windows per
 * tenant, ngx_http_fairgate_qwin_t), so that every worker and every reload
 * sees them.
 */

#ifndef _NGX_HTTP_FAIRGATE_QUOTA_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_QUOTA_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_quota.h"
#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_ctx.h"


/* the tenants' kinds a quota is for: the zone's records' kinds */
#define NGX_HTTP_FAIRGATE_QUOTA_KINDS  3


/* one fairgate_quota directive */
typedef struct {
    ngx_uint_t                   kind;       /* NGX_HTTP_FAIRGATE_USER, ... */
    ngx_str_t                    name;       /* len 0: every tenant */
    fg_quota_per_t               per;
    fg_quota_limit_t             limit;
    ngx_str_t                    window;     /* as said: "day", "7d rolling" */
} ngx_http_fairgate_quota_t;


/*
 * What the quotas said of a request (ctx->quota): the quota that refused
 * it, or the one of which it used the highest share past its soft
 * threshold.
 */
struct ngx_http_fairgate_quota_hit_s {
    ngx_http_fairgate_quota_t   *quota;      /* NULL: none */
    ngx_str_t                    tenant;     /* its name, in r->pool */
    fg_quota_count_t             used;
    time_t                       reset;      /* epoch s */
    uint32_t                     over;       /* FG_QUOTA_*; 0: a warning */
    uint32_t                     percent;
    unsigned                     log:1;      /* the warning's first time in
                                                its window: to log */
};

typedef struct ngx_http_fairgate_quota_hit_s  ngx_http_fairgate_quota_hit_t;


/* _conf.c: the directives */
char *ngx_http_fairgate_quota(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_quota_timezone(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);

/* _conf.c: whether quota q applies to a tenant of q's kind named name, in
 * a location's quotas (a named one overrides its kind's default) */
ngx_uint_t ngx_http_fairgate_quota_applies(ngx_array_t *quotas,
    ngx_http_fairgate_quota_t *q, ngx_str_t *name);
const char *ngx_http_fairgate_quota_kind(ngx_uint_t kind);

/* the calendar windows' zone of the cycle's configuration */
fg_tz_t *ngx_http_fairgate_quota_tz(void);

/*
 * _quota.c, under the zone's mutex.  admit: NGX_OK, the request counted
 * in its tenants' windows; NGX_DECLINED, a quota refused it; NGX_ERROR,
 * no room in the zone.  ctx->quota then says what the quotas said.
 */
ngx_int_t ngx_http_fairgate_quota_admit(ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_loc_conf_t *flcf);

/* tokens and cost as they are settled (what the request used so far, in
 * all); a request never served takes its count back */
void ngx_http_fairgate_quota_charge(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, uint64_t tokens, uint64_t cost);
void ngx_http_fairgate_quota_unserved(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);

/* _send.c: the 429, the headers a response carries, the warning logged */
ngx_int_t ngx_http_fairgate_quota_reject(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_quota_headers(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_quota_log(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
u_char *ngx_http_fairgate_quota_text(u_char *p,
    ngx_http_fairgate_quota_hit_t *hit);

/* _send.c: $fairgate_quota */
ngx_int_t ngx_http_fairgate_quota_variable(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);


#endif /* _NGX_HTTP_FAIRGATE_QUOTA_H_INCLUDED_ */
