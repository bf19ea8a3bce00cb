
/*
 * fairgate: the usage log's line, $fairgate_usage_json: one JSON object a
 * request, for nginx's access_log (log_format billing escape=none
 * '$fairgate_usage_json';), so that it goes wherever nginx's logs go.
 *
 * Its tokens are those the zone's counters are settled with (the usage
 * checked as ngx_http_fairgate_release takes it), its cost the one
 * computed at them (request/_price.c), and a request that was not served
 * ("billed": false: refused, or never dispatched) has none: a user's sums
 * over the log are the counters (docs/billing.md).  Every string is JSON
 * escaped, and made valid UTF-8 first (a bad byte as U+FFFD), whatever
 * names the keys file or the headers give.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_price.h"
#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_redis.h"


/* the strings of a line, JSON escaped and quoted, or null */
typedef struct {
    ngx_str_t                    request_id;
    ngx_str_t                    gateway;
    ngx_str_t                    key_id;
    ngx_str_t                    user;
    ngx_str_t                    app;
    ngx_str_t                    model;
    ngx_str_t                    engine;
    ngx_str_t                    usage;
    ngx_str_t                    outcome;
} ngx_http_fairgate_usage_strs_t;


/* the longest line but its strings */
#define NGX_HTTP_FAIRGATE_USAGE_FIXED  640


static ngx_int_t ngx_http_fairgate_usage_strs(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_usage_strs_t *s);
static ngx_int_t ngx_http_fairgate_variable_str(ngx_http_request_t *r,
    ngx_str_t *name, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_json_str(ngx_http_request_t *r,
    ngx_str_t *src, ngx_str_t *dst);


/* nginx's, and $fairgate_outcome (_variables.c), read by their names */
static ngx_str_t  ngx_http_fairgate_request_id = ngx_string("request_id");
static ngx_str_t  ngx_http_fairgate_outcome = ngx_string("fairgate_outcome");


/* the request's start, wall clock, ms */

static uint64_t
ngx_http_fairgate_started(ngx_http_request_t *r)
{
    return (uint64_t) r->start_sec * 1000 + r->start_msec;
}


/* ms from the request's start to now, as $request_time measures it */

uint64_t
ngx_http_fairgate_latency_ms(ngx_http_request_t *r)
{
    uint64_t     now;
    ngx_time_t  *tp;

    tp = ngx_timeofday();
    now = (uint64_t) tp->sec * 1000 + tp->msec;

    return ngx_max(now, ngx_http_fairgate_started(r))
           - ngx_http_fairgate_started(r);
}


/* ms from the request's start to its first output token; -1: none */

int64_t
ngx_http_fairgate_ttft_ms(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    uint64_t  start;

    if (ctx->first_token == 0) {
        return -1;
    }

    start = ngx_http_fairgate_started(r);

    return (int64_t) (ngx_max(ctx->first_token, start) - start);
}


/* this gateway's name: fairgate_redis's id=, else the host's name */

ngx_str_t *
ngx_http_fairgate_gateway(ngx_http_request_t *r)
{
    ngx_http_fairgate_main_conf_t  *fmcf;

    fmcf = ngx_http_get_module_main_conf(r, ngx_http_fairgate_module);

    if (fmcf->redis && fmcf->redis->id.len) {
        return &fmcf->redis->id;
    }

    return (ngx_str_t *) &ngx_cycle->hostname;
}


/* $fairgate_usage_json */

ngx_int_t
ngx_http_fairgate_usage_json(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    u_char                          *p;
    size_t                           len;
    int64_t                          ttft;
    uint32_t                         in, out, cached;
    ngx_tm_t                         tm;
    ngx_str_t                       *v;
    ngx_int_t                        priced;
    ngx_uint_t                       billed, status;
    ngx_time_t                      *tp;
    ngx_http_fairgate_usage_strs_t   strs;

    /* settled as the counters are, also when the log comes first */
    priced = (ngx_http_fairgate_price_settle(ctx) == NGX_OK);
    billed = ngx_http_fairgate_billed(ctx);

    in = 0;
    out = 0;
    cached = 0;

    if (billed) {
        ngx_http_fairgate_tokens(ctx, &in, &cached, &out);
    }

    if (ngx_http_fairgate_usage_strs(r, ctx, &strs) != NGX_OK) {
        return NGX_ERROR;
    }

    len = NGX_HTTP_FAIRGATE_USAGE_FIXED;

    for (v = &strs.request_id; v <= &strs.outcome; v++) {
        len += v->len;
    }

    p = ngx_pnalloc(r->pool, len);
    if (p == NULL) {
        return NGX_ERROR;
    }

    s->data = p;

    tp = ngx_timeofday();
    ngx_gmtime(tp->sec, &tm);

    status = r->err_status ? r->err_status : r->headers_out.status;
    ttft = ngx_http_fairgate_ttft_ms(r, ctx);

    p = ngx_sprintf(p, "{\"time\":\"%4d-%02d-%02dT%02d:%02d:%02d.%03MZ\","
                    "\"request_id\":%V,\"gateway\":%V,\"key_id\":%V,"
                    "\"user\":%V,\"app\":%V,\"model\":%V,",
                    tm.ngx_tm_year, tm.ngx_tm_mon, tm.ngx_tm_mday,
                    tm.ngx_tm_hour, tm.ngx_tm_min, tm.ngx_tm_sec, tp->msec,
                    &strs.request_id, &strs.gateway, &strs.key_id,
                    &strs.user, &strs.app, &strs.model);

    p = ngx_sprintf(p, "\"billed\":%s,\"input_tokens\":%uD,"
                    "\"cached_tokens\":%uD,\"output_tokens\":%uD,"
                    "\"usage\":%V,\"cost\":",
                    billed ? "true" : "false", in, cached, out, &strs.usage);

    if (priced) {
        p += fg_price_format((char *) p, ctx->cost);
        p = ngx_sprintf(p, ",\"cost_nano\":%uL", ctx->cost);

    } else {
        p = ngx_cpymem(p, "null,\"cost_nano\":null", 21);
    }

    p = ngx_sprintf(p, ",\"status\":%ui,\"outcome\":%V,\"latency_ms\":%uL,"
                    "\"ttft_ms\":", status, &strs.outcome,
                    ngx_http_fairgate_latency_ms(r));

    if (ttft >= 0) {
        p = ngx_sprintf(p, "%L", ttft);

    } else {
        p = ngx_cpymem(p, "null", 4);
    }

    p = ngx_sprintf(p, ",\"queue_ms\":%M,\"stream\":%s,\"engine\":%V}",
                    ctx->queue_ms, ctx->stream ? "true" : "false",
                    &strs.engine);

    s->len = p - s->data;

    return NGX_OK;
}


/* the line's strings, escaped; an empty one is null */

static ngx_int_t
ngx_http_fairgate_usage_strs(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_usage_strs_t *s)
{
    ngx_str_t  id, outcome, usage;

    if (ngx_http_fairgate_variable_str(r, &ngx_http_fairgate_request_id, &id)
        != NGX_OK
        || ngx_http_fairgate_variable_str(r, &ngx_http_fairgate_outcome,
                                          &outcome)
           != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (ctx->usage_capped) {
        ngx_str_set(&usage, "capped");

    } else if (ctx->usage) {
        ngx_str_set(&usage, "reported");

    } else {
        ngx_str_set(&usage, "estimated");
    }

    if (ngx_http_fairgate_json_str(r, &id, &s->request_id) != NGX_OK
        || ngx_http_fairgate_json_str(r, ngx_http_fairgate_gateway(r),
                                      &s->gateway)
           != NGX_OK
        || ngx_http_fairgate_json_str(r, &ctx->key_id, &s->key_id) != NGX_OK
        || ngx_http_fairgate_json_str(r, &ctx->user, &s->user) != NGX_OK
        || ngx_http_fairgate_json_str(r, &ctx->app, &s->app) != NGX_OK
        || ngx_http_fairgate_json_str(r, &ctx->model, &s->model) != NGX_OK
        || ngx_http_fairgate_json_str(r, &ctx->engine, &s->engine) != NGX_OK
        || ngx_http_fairgate_json_str(r, &usage, &s->usage) != NGX_OK
        || ngx_http_fairgate_json_str(r, &outcome, &s->outcome) != NGX_OK)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* a variable's value by its name; empty when not found */

static ngx_int_t
ngx_http_fairgate_variable_str(ngx_http_request_t *r, ngx_str_t *name,
    ngx_str_t *s)
{
    ngx_http_variable_value_t  *vv;

    ngx_str_null(s);

    vv = ngx_http_get_variable(r, name, ngx_hash_key(name->data, name->len));

    if (vv == NULL) {
        return NGX_ERROR;
    }

    if (!vv->not_found) {
        s->data = vv->data;
        s->len = vv->len;
    }

    return NGX_OK;
}


/* a JSON string of any bytes: valid UTF-8, escaped, quoted; or null */

static ngx_int_t
ngx_http_fairgate_json_str(ngx_http_request_t *r, ngx_str_t *src,
    ngx_str_t *dst)
{
    u_char     *safe, *end, *p;
    uintptr_t   n;

    if (src->len == 0) {
        ngx_str_set(dst, "null");
        return NGX_OK;
    }

    safe = ngx_pnalloc(r->pool, 3 * src->len);
    if (safe == NULL) {
        return NGX_ERROR;
    }

    end = ngx_http_fairgate_utf8_safe(safe, src->data, src->len);

    n = ngx_escape_json(NULL, safe, end - safe);

    p = ngx_pnalloc(r->pool, (end - safe) + n + 2);
    if (p == NULL) {
        return NGX_ERROR;
    }

    dst->data = p;

    *p++ = '"';
    p = (u_char *) ngx_escape_json(p, safe, end - safe);
    *p++ = '"';

    dst->len = p - dst->data;

    return NGX_OK;
}
