
/*
 * fairgate: variables for access logs and configuration.
 *
 *     $fairgate_user, $fairgate_app, $fairgate_weight   the tenant
 *     $fairgate_queue_time   seconds waited in the queue, ms resolution
 *     $fairgate_tokens_in    input tokens: the upstream's usage, else the
 *     $fairgate_tokens_out   estimate; output: usage, else counted
 *     $fairgate_usage        "reported" (by the upstream), "capped" (its
 *                            usage was more than the request could use)
 *                            or "estimated"
 *     $fairgate_outcome      what happened to the request
 *     $fairgate_interaction  the X-Fairgate-Interaction it named
 *     $fairgate_stage        its stage (X-Fairgate-Stage, 0 by default)
 *     $fairgate_oit          OIT's verdict: open, continue, untracked,
 *                            throttled_user, throttled_app; "" if none
 *     $fairgate_engine       local mode: the fairgate_engine serving it
 *     $fairgate_cached_tokens  prompt tokens the engine found cached
 *     $fairgate_qoe_ttft     the TTFT expected, seconds; "" if none
 *     $fairgate_qoe_speed    the reading speed expected, tokens a second
 *     $fairgate_qoe          a stream's Andes QoE as delivered, 0..1
 *     $fairgate_cost         the request's cost at its model's price, a
 *                            decimal of the price's unit; "" if no price
 *     $fairgate_latency      seconds from its start to now, ms resolution
 *     $fairgate_ttft         seconds to its first output token; "" if none
 *     $fairgate_gateway      fairgate_redis's id=, else the host's name
 *     $fairgate_usage_json   the usage log's line (_usage_log.c)
 *     $fairgate_quota        the quota that refused the request ("user
 *                            requests day exceeded") or whose soft
 *                            threshold it passed ("key budget month 82%")
 *
 * Each is a field of the request's context (a string's offset) or a
 * getter of it, in a table; none is found in a request the module does not
 * handle.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_price.h"
#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_quota.h"


/* a variable's value from the request's context; NGX_ERROR: no memory */
typedef ngx_int_t (*ngx_http_fairgate_var_get_pt)(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);


typedef struct {
    ngx_str_t                      name;
    ngx_http_fairgate_var_get_pt   get;     /* NULL: the string at offset */
    size_t                         offset;  /* in ngx_http_fairgate_ctx_t */
} ngx_http_fairgate_var_t;


#define NGX_HTTP_FAIRGATE_CTX_STR(name, field)                               \
    { ngx_string(name), NULL, offsetof(ngx_http_fairgate_ctx_t, field) }
#define NGX_HTTP_FAIRGATE_CTX_GET(name, get)                                 \
    { ngx_string(name), get, 0 }


static ngx_int_t ngx_http_fairgate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_fairgate_var_printf(ngx_http_request_t *r,
    ngx_str_t *s, const char *fmt, ...);
static ngx_int_t ngx_http_fairgate_var_seconds(ngx_http_request_t *r,
    ngx_str_t *s, ngx_msec_t ms);
static ngx_int_t ngx_http_fairgate_var_weight(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_queue_time(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_tokens_in(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_tokens_out(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_usage(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_stage(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_oit(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_outcome(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_cached_tokens(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_qoe_ttft(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_qoe_speed(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_qoe(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_cost(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_latency(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_ttft(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);
static ngx_int_t ngx_http_fairgate_var_gateway(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s);


static ngx_http_fairgate_var_t  ngx_http_fairgate_vars[] = {
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_key_id", key_id),
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_user", user),
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_app", app),
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_model", model),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_weight",
                              ngx_http_fairgate_var_weight),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_queue_time",
                              ngx_http_fairgate_var_queue_time),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_tokens_in",
                              ngx_http_fairgate_var_tokens_in),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_tokens_out",
                              ngx_http_fairgate_var_tokens_out),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_usage", ngx_http_fairgate_var_usage),
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_interaction", interaction_name),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_stage", ngx_http_fairgate_var_stage),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_oit", ngx_http_fairgate_var_oit),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_outcome",
                              ngx_http_fairgate_var_outcome),
    /* empty until the request of local mode has its engine */
    NGX_HTTP_FAIRGATE_CTX_STR("fairgate_engine", engine),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_cached_tokens",
                              ngx_http_fairgate_var_cached_tokens),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_qoe_ttft",
                              ngx_http_fairgate_var_qoe_ttft),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_qoe_speed",
                              ngx_http_fairgate_var_qoe_speed),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_qoe", ngx_http_fairgate_var_qoe),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_cost", ngx_http_fairgate_var_cost),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_latency",
                              ngx_http_fairgate_var_latency),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_ttft", ngx_http_fairgate_var_ttft),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_gateway",
                              ngx_http_fairgate_var_gateway),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_usage_json",
                              ngx_http_fairgate_usage_json),
    NGX_HTTP_FAIRGATE_CTX_GET("fairgate_quota",
                              ngx_http_fairgate_quota_variable),
    { ngx_null_string, NULL, 0 }
};


/* by fg_oit_verdict_e */
static ngx_str_t  ngx_http_fairgate_verdicts[] = {
    ngx_string("open"),
    ngx_string("continue"),
    ngx_string("untracked"),
    ngx_string("throttled_user"),
    ngx_string("throttled_app")
};


/* by ngx_http_fairgate_outcome_e */
static ngx_str_t  ngx_http_fairgate_outcomes[] = {
    ngx_null_string,
    ngx_string("served"),
    ngx_string("upstream_error"),
    ngx_string("aborted"),
    ngx_string("throttled"),
    ngx_string("queue_full"),
    ngx_string("timeout"),
    ngx_string("unauthorized"),
    ngx_string("bad_request"),
    ngx_string("error")
};


ngx_int_t
ngx_http_fairgate_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t      *var;
    ngx_http_fairgate_var_t  *v;

    for (v = ngx_http_fairgate_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, NGX_HTTP_VAR_NOCACHEABLE);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = ngx_http_fairgate_variable;
        var->data = (uintptr_t) v;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_http_fairgate_var_t  *var = (ngx_http_fairgate_var_t *) data;

    ngx_str_t                 s;
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    ngx_str_null(&s);

    if (var->get == NULL) {
        s = *(ngx_str_t *) ((u_char *) ctx + var->offset);

    } else if (var->get(r, ctx, &s) != NGX_OK) {
        return NGX_ERROR;
    }

    v->data = s.data;
    v->len = s.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* a number, into the request's pool */

static ngx_int_t
ngx_http_fairgate_var_printf(ngx_http_request_t *r, ngx_str_t *s,
    const char *fmt, ...)
{
    u_char   *p;
    va_list   args;

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + 8);
    if (p == NULL) {
        return NGX_ERROR;
    }

    va_start(args, fmt);
    s->len = ngx_vslprintf(p, p + NGX_INT64_LEN + 8, fmt, args) - p;
    va_end(args);

    s->data = p;

    return NGX_OK;
}


/* ms as seconds, to the ms */

static ngx_int_t
ngx_http_fairgate_var_seconds(ngx_http_request_t *r, ngx_str_t *s,
    ngx_msec_t ms)
{
    return ngx_http_fairgate_var_printf(r, s, "%M.%03M", ms / 1000,
                                        ms % 1000);
}


/* empty until the user is known */

static ngx_int_t
ngx_http_fairgate_var_weight(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ctx->user.len == 0) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_printf(r, s, "%.3f", ctx->weight);
}


static ngx_int_t
ngx_http_fairgate_var_queue_time(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    return ngx_http_fairgate_var_seconds(r, s, ctx->queue_ms);
}


/* the upstream's usage once it told, else the module's counts */

static ngx_int_t
ngx_http_fairgate_var_tokens_in(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    return ngx_http_fairgate_var_printf(r, s, "%uD",
                                        ctx->usage ? ctx->usage_in
                                                   : ctx->tokens_in);
}


static ngx_int_t
ngx_http_fairgate_var_tokens_out(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    return ngx_http_fairgate_var_printf(r, s, "%uD",
                                        ctx->usage ? ctx->usage_out
                                                   : ctx->tokens_out);
}


static ngx_int_t
ngx_http_fairgate_var_usage(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ctx->usage_capped) {
        ngx_str_set(s, "capped");

    } else if (ctx->usage) {
        ngx_str_set(s, "reported");

    } else {
        ngx_str_set(s, "estimated");
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_var_stage(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (!ctx->interaction) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_printf(r, s, "%uD", ctx->stage);
}


static ngx_int_t
ngx_http_fairgate_var_oit(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ctx->oit_set) {
        *s = ngx_http_fairgate_verdicts[ctx->oit];
    }

    return NGX_OK;
}


/*
 * What became of the request: as the module recorded it, else, while it
 * ends, as far as it got.
 */

static ngx_int_t
ngx_http_fairgate_var_outcome(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    ngx_http_fairgate_outcome_e  outcome;

    outcome = ctx->outcome;

    if (outcome == NGX_HTTP_FAIRGATE_NONE) {
        switch (ctx->phase) {

        case NGX_HTTP_FAIRGATE_ADMITTED:
            if (ctx->upstream_error
                || r->headers_out.status >= NGX_HTTP_INTERNAL_SERVER_ERROR)
            {
                outcome = NGX_HTTP_FAIRGATE_UPSTREAM_ERROR;

            } else if (ctx->complete) {
                outcome = NGX_HTTP_FAIRGATE_SERVED;

            } else {
                outcome = NGX_HTTP_FAIRGATE_ABORTED;
            }

            break;

        case NGX_HTTP_FAIRGATE_PASSED:
            ngx_str_set(s, "passed");
            return NGX_OK;

        default:
            outcome = NGX_HTTP_FAIRGATE_ABORTED;
        }
    }

    *s = ngx_http_fairgate_outcomes[outcome];

    return NGX_OK;
}


/* empty until the engine (or the upstream's usage) said */

static ngx_int_t
ngx_http_fairgate_var_cached_tokens(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (!ctx->cached_set) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_printf(r, s, "%uD", ctx->cached);
}


/* the expectations, as the headers take them; empty when none */

static ngx_int_t
ngx_http_fairgate_var_qoe_ttft(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ctx->qoe_ttft == 0) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_seconds(r, s, ctx->qoe_ttft);
}


static ngx_int_t
ngx_http_fairgate_var_qoe_speed(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ctx->qoe_speed == 0) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_printf(r, s, "%.3f", ctx->qoe_speed);
}


/* measured by the pacer's filter: streams with expectations only */

static ngx_int_t
ngx_http_fairgate_var_qoe(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    double  q;

    q = ngx_http_fairgate_pace_qoe(ctx->pace);

    if (q < 0) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_printf(r, s, "%.3f", q);
}


/* the cost so far, settled once the response is done; "" if no price */

static ngx_int_t
ngx_http_fairgate_var_cost(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    if (ngx_http_fairgate_price_settle(ctx) != NGX_OK) {
        return NGX_OK;
    }

    s->data = ngx_pnalloc(r->pool, FG_PRICE_LEN);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    s->len = fg_price_format((char *) s->data, ctx->cost);

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_var_latency(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    ngx_msec_t  ms;

    ms = (ngx_msec_t) ngx_http_fairgate_latency_ms(r);

    return ngx_http_fairgate_var_seconds(r, s, ms);
}


static ngx_int_t
ngx_http_fairgate_var_ttft(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    int64_t  ms;

    ms = ngx_http_fairgate_ttft_ms(r, ctx);

    if (ms < 0) {
        return NGX_OK;
    }

    return ngx_http_fairgate_var_seconds(r, s, (ngx_msec_t) ms);
}


static ngx_int_t
ngx_http_fairgate_var_gateway(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_str_t *s)
{
    *s = *ngx_http_fairgate_gateway(r);

    return NGX_OK;
}
