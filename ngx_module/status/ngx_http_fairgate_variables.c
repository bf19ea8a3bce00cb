
/*
 * fairgate: variables for access logs and configuration.
 *
 *     $fairgate_user, $fairgate_app, $fairgate_weight   the tenant
 *     $fairgate_queue_time   seconds waited in the queue, ms resolution
 *     $fairgate_tokens_in    input tokens: the upstream's usage, else the
 *     $fairgate_tokens_out   estimate; output: usage, else counted
 *     $fairgate_usage        "reported" (by the upstream) or "estimated"
 *     $fairgate_outcome      what happened to the request
 *     $fairgate_interaction  the X-Fairgate-Interaction it named
 *     $fairgate_stage        its stage (X-Fairgate-Stage, 0 by default)
 *     $fairgate_oit          OIT's verdict: open, continue, untracked,
 *                            throttled_user, throttled_app; "" if none
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_local.h"


static ngx_int_t ngx_http_fairgate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);


typedef enum {
    NGX_HTTP_FAIRGATE_VAR_USER = 0,
    NGX_HTTP_FAIRGATE_VAR_APP,
    NGX_HTTP_FAIRGATE_VAR_WEIGHT,
    NGX_HTTP_FAIRGATE_VAR_QUEUE_TIME,
    NGX_HTTP_FAIRGATE_VAR_TOKENS_IN,
    NGX_HTTP_FAIRGATE_VAR_TOKENS_OUT,
    NGX_HTTP_FAIRGATE_VAR_USAGE,
    NGX_HTTP_FAIRGATE_VAR_INTERACTION,
    NGX_HTTP_FAIRGATE_VAR_STAGE,
    NGX_HTTP_FAIRGATE_VAR_OIT,
    NGX_HTTP_FAIRGATE_VAR_OUTCOME
} ngx_http_fairgate_var_e;


static ngx_http_variable_t  ngx_http_fairgate_vars[] = {

    { ngx_string("fairgate_user"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_USER, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_app"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_APP, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_weight"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_WEIGHT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_queue_time"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_QUEUE_TIME, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_tokens_in"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_TOKENS_IN, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_tokens_out"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_TOKENS_OUT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_usage"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_USAGE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_interaction"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_INTERACTION, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_stage"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_STAGE, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_oit"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_OIT, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("fairgate_outcome"), NULL, ngx_http_fairgate_variable,
      NGX_HTTP_FAIRGATE_VAR_OUTCOME, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


/* by fg_oit_verdict_e */
static ngx_str_t  ngx_http_fairgate_verdicts[] = {
    ngx_string("open"),
    ngx_string("continue"),
    ngx_string("untracked"),
    ngx_string("throttled_user"),
    ngx_string("throttled_app")
};


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
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_fairgate_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char                       *p;
    ngx_str_t                     s;
    ngx_http_fairgate_ctx_t      *ctx;
    ngx_http_fairgate_outcome_e   outcome;

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + 8);
    if (p == NULL) {
        return NGX_ERROR;
    }

    s.data = p;
    s.len = 0;

    switch (data) {

    case NGX_HTTP_FAIRGATE_VAR_USER:
        s = ctx->user;
        break;

    case NGX_HTTP_FAIRGATE_VAR_APP:
        s = ctx->app;
        break;

    case NGX_HTTP_FAIRGATE_VAR_WEIGHT:
        if (ctx->user.len) {
            s.len = ngx_sprintf(p, "%.3f", ctx->weight) - p;
        }

        break;

    case NGX_HTTP_FAIRGATE_VAR_QUEUE_TIME:
        s.len = ngx_sprintf(p, "%M.%03M", ctx->queue_ms / 1000,
                            ctx->queue_ms % 1000)
                - p;
        break;

    case NGX_HTTP_FAIRGATE_VAR_TOKENS_IN:
        s.len = ngx_sprintf(p, "%uD", ctx->usage ? ctx->usage_in
                                                 : ctx->tokens_in)
                - p;
        break;

    case NGX_HTTP_FAIRGATE_VAR_TOKENS_OUT:
        s.len = ngx_sprintf(p, "%uD", ctx->usage ? ctx->usage_out
                                                 : ctx->tokens_out)
                - p;
        break;

    case NGX_HTTP_FAIRGATE_VAR_USAGE:
        if (ctx->usage) {
            ngx_str_set(&s, "reported");

        } else {
            ngx_str_set(&s, "estimated");
        }

        break;

    case NGX_HTTP_FAIRGATE_VAR_INTERACTION:
        s = ctx->interaction_name;
        break;

    case NGX_HTTP_FAIRGATE_VAR_STAGE:
        if (ctx->interaction) {
            s.len = ngx_sprintf(p, "%uD", ctx->stage) - p;
        }

        break;

    case NGX_HTTP_FAIRGATE_VAR_OIT:
        if (ctx->oit_set) {
            s = ngx_http_fairgate_verdicts[ctx->oit];
        }

        break;

    default: /* NGX_HTTP_FAIRGATE_VAR_OUTCOME */

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
                ngx_str_set(&s, "passed");
                break;

            default:
                outcome = NGX_HTTP_FAIRGATE_ABORTED;
            }
        }

        if (outcome != NGX_HTTP_FAIRGATE_NONE) {
            s = ngx_http_fairgate_outcomes[outcome];
        }
    }

    v->data = s.data;
    v->len = s.len;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}
