
/*
 * fairgate: local mode's handlers, the glue between nginx and local
 * mode's API (local/).
 *
 * "fairgate_engine_pass [NAME]" makes this file's handler a location's
 * content handler: GET .../v1/models lists the engines' models; a POST to
 * .../completions or .../chat/completions is read, parsed by local mode
 * (ngx_http_fairgate_local_parse(), which the precontent handler calls
 * first when the location has a fairgate zone, so that the fair queue
 * sees the real token counts), routed to an engine (the one the zone
 * dispatched it to, or the worker's own pick) and streamed.
 *
 * The request's context is the one the precontent handler built, or one
 * made here when the location has no zone.  Local mode is handed what it
 * needs of it, and reports back through the request's report handler:
 * each token is charged to the tenant as it streams, the prompt tokens
 * the engine found cached are recorded with the first, and the request's
 * end says what it is settled with (ngx_http_fairgate_account.c).
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"


static ngx_int_t ngx_http_fairgate_content_handler(ngx_http_request_t *r);
static void ngx_http_fairgate_content_body(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_content_start(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_content_report(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_api_event_e event, uint32_t n);


char *
ngx_http_fairgate_engine_pass(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t *flcf = conf;

    ngx_str_t                      *value;
    ngx_http_core_loc_conf_t       *clcf;
    ngx_http_fairgate_main_conf_t  *fmcf;

    if (flcf->engine_pass) {
        return "is duplicate";
    }

    value = cf->args->elts;

    if (cf->args->nelts == 2) {
        fmcf = ngx_http_conf_get_module_main_conf(cf,
                                                  ngx_http_fairgate_module);

        flcf->engine = ngx_http_fairgate_engine_named(fmcf, &value[1], 0);

        if (flcf->engine == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "unknown fairgate_engine \"%V\" (it must be "
                               "defined in http before)", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    flcf->engine_pass = 1;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fairgate_content_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fairgate_content_handler(ngx_http_request_t *r)
{
    ngx_int_t       rc;
    ngx_str_t      *u;
    fg_oai_error_t  err;

    u = &r->uri;

    if (u->len >= 7 && ngx_strncmp(u->data + u->len - 7, "/models", 7) == 0)
    {
        if (!(r->method & (NGX_HTTP_GET|NGX_HTTP_HEAD))) {
            return NGX_HTTP_NOT_ALLOWED;
        }

        rc = ngx_http_discard_request_body(r);
        if (rc != NGX_OK) {
            return rc;
        }

        return ngx_http_fairgate_api_models(r);
    }

    if (ngx_http_fairgate_api_kind(r) == 0) {
        fg_oai_error_set(&err, NGX_HTTP_NOT_FOUND, "unknown_url", NULL,
                         "Invalid URL (%s /%.*s).",
                         r->method == NGX_HTTP_POST ? "POST" : "GET",
                         (int) ngx_min(u->len - (u->len ? 1 : 0), 200),
                         u->len ? (char *) u->data + 1 : "");
        return ngx_http_fairgate_send_oai_error(r, &err, 0);
    }

    if (r->method != NGX_HTTP_POST) {
        return NGX_HTTP_NOT_ALLOWED;
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_fairgate_content_body);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    return NGX_DONE;
}


/*
 * The body is in: the request's context (the precontent handler's, or
 * one of local mode alone), the request parsed unless the precontent
 * handler did, then submitted.
 */

static void
ngx_http_fairgate_content_body(ngx_http_request_t *r)
{
    ngx_int_t                 rc;
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL) {
        /* no fairgate zone here: a context of local mode alone */

        ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_ctx_t));
        if (ctx == NULL) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return;
        }

        ctx->request = r;
        ctx->phase = NGX_HTTP_FAIRGATE_PASSED;
        ctx->start = ngx_current_msec;

        /* nothing to settle at its end: no zone counted it */
        (void) ngx_http_fairgate_ctx_keep(r, ctx, NULL);

        rc = ngx_http_fairgate_qoe_read(r, ctx);

        if (rc != NGX_OK || ctx->phase == NGX_HTTP_FAIRGATE_REFUSED) {
            ngx_http_finalize_request(r, rc);
            return;
        }
    }

    if (ctx->api == NULL) {
        rc = ngx_http_fairgate_local_parse(r, ctx);

        if (rc != NGX_OK || ctx->api == NULL) {
            ngx_http_finalize_request(r, rc);
            return;
        }
    }

    rc = ngx_http_fairgate_content_start(r, ctx);

    if (rc == NGX_DONE) {
        /* open until the engine's last event, or the client leaves */
        return;
    }

    ngx_http_finalize_request(r, rc);
}


/*
 * Step 2 of a request of local mode: parsed, checked and tokenized by
 * local mode, which sets ctx->api, or refused (ctx->phase REFUSED: the
 * return value is what sending the error returned).  What the fair queue
 * charges and reserves is taken from it.
 */

ngx_int_t
ngx_http_fairgate_local_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    ngx_int_t                 rc;
    ngx_str_t                *target;
    fg_oai_error_t            err;
    ngx_http_fairgate_api_t  *api;

    ctx->local = 1;

    rc = ngx_http_fairgate_api_parse(r, ctx->zone != NULL, &api, &err);

    if (rc == NGX_DECLINED) {
        ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
        ctx->outcome = (err.status >= 500) ? NGX_HTTP_FAIRGATE_ERROR
                                           : NGX_HTTP_FAIRGATE_BAD_REQUEST;

        ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                       "fairgate refuse: tenant \"%V\" status %d %s: %s",
                       &ctx->user, err.status,
                       err.code ? err.code : err.type, err.message);

        return ngx_http_fairgate_send_oai_error(r, &err, 0);
    }

    if (rc != NGX_OK) {
        return rc;
    }

    ctx->api = api;
    ctx->model.data = (u_char *) api->oai->model.data;
    ctx->model.len = api->oai->model.len;

    /* the engine's model, where an alias named it (local/ chose by it) */
    target = ngx_http_fairgate_model_target(
                 ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module),
                 &ctx->model);

    if (target) {
        ctx->model_target = *target;
    }

    ctx->tokens_in = api->n_ids;
    ctx->max_tokens = api->need;
    ctx->stream = api->stream;
    ctx->system_tokens = api->system_tokens;

    return NGX_OK;
}


/*
 * The engine that serves it: the one the zone dispatched it to, else the
 * worker's pick; then it is submitted, with what local mode needs of the
 * request's context.
 */

static ngx_int_t
ngx_http_fairgate_content_start(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    ngx_http_fairgate_api_t       *api;
    ngx_http_fairgate_engine_t    *e;
    ngx_http_fairgate_loc_conf_t  *flcf;

    api = ctx->api;

    if (ctx->node) {
        e = ngx_http_fairgate_engines_chosen(ctx->zone, ctx->node);

        if (e) {
            api->engine = e;
        }

    } else {
        ngx_http_fairgate_route_pick(api);
    }

    ctx->engine = api->engine->name;

    ngx_log_debug6(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate hand-off: tenant \"%V\" to engine \"%V\" "
                   "(%s), %uD prompt tokens, %uD blocks hashed, up to %uD "
                   "out",
                   &ctx->user, &ctx->engine,
                   ctx->node ? "the zone's dispatch" : "this worker's pick",
                   api->n_ids, api->n_hashes, api->need);

    api->qoe_ttft = ctx->qoe_ttft;
    api->qoe_speed = ctx->qoe_speed;

    /* a busy submission ring delays it, as the queue may */
    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);
    api->submit_wait = ctx->zone ? flcf->timeout : 0;

    api->report = ngx_http_fairgate_content_report;
    api->data = ctx;

    return ngx_http_fairgate_stream_start(api);
}


/* what local mode reports of the request: the tenant's accounting */

static void
ngx_http_fairgate_content_report(ngx_http_fairgate_api_t *api,
    ngx_http_fairgate_api_event_e event, uint32_t n)
{
    ngx_http_fairgate_ctx_t *ctx = api->data;

    switch (event) {

    case NGX_HTTP_FAIRGATE_API_TOKEN:

        if (api->generated == 1) {
            ngx_log_debug4(NGX_LOG_DEBUG_HTTP, api->request->connection->log,
                           0, "fairgate first token: tenant \"%V\" %M ms "
                           "after admission, %M ms after the hand-off, "
                           "%uD prompt tokens cached",
                           &ctx->user, api->first_at - ctx->start,
                           api->first_at - api->submitted_at, n);

            /* the prefix the engine reused: dlpm's charge settles to it */
            ngx_http_fairgate_cached(ctx, n);
        }

        ctx->tokens_out++;
        ngx_http_fairgate_charge(ctx, 1);
        return;

    case NGX_HTTP_FAIRGATE_API_DONE:

        /* what the tenant is settled with when the request is released */
        ctx->usage = 1;
        ctx->usage_in = api->usage.prompt_tokens;
        ctx->usage_out = api->usage.completion_tokens;
        ctx->outcome = NGX_HTTP_FAIRGATE_SERVED;
        return;

    case NGX_HTTP_FAIRGATE_API_FAILED:
        ngx_log_debug3(NGX_LOG_DEBUG_HTTP, api->request->connection->log, 0,
                       "fairgate engine failed: tenant \"%V\" engine "
                       "\"%V\" after %uD tokens",
                       &ctx->user, &ctx->engine, api->generated);

        ctx->upstream_error = 1;
        ctx->outcome = NGX_HTTP_FAIRGATE_UPSTREAM_ERROR;
        return;

    default: /* NGX_HTTP_FAIRGATE_API_UNSENT */
        ctx->outcome = NGX_HTTP_FAIRGATE_UPSTREAM_ERROR;
        return;
    }
}
