
/*
 * fairgate: the precontent-phase handler of "fairgate zone=NAME", which
 * takes each main request through its steps (ngx_http_fairgate_request.h):
 *
 *     identify -> read the body -> parse -> admit -> queue -> pass
 *
 * The handler runs again each time nginx runs the phases for the request
 * (after the body is read, after it is dispatched) and answers from the
 * request's context where the request stands.  Nothing here waits: the
 * body is read by nginx, which calls back, and a queued request returns
 * NGX_AGAIN until a dispatch resumes it.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"


static ngx_int_t ngx_http_fairgate_start(ngx_http_request_t *r,
    ngx_http_fairgate_loc_conf_t *flcf);
static ngx_int_t ngx_http_fairgate_identified(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
static ngx_int_t ngx_http_fairgate_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
static void ngx_http_fairgate_body_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_go_on(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);


ngx_int_t
ngx_http_fairgate_handler(ngx_http_request_t *r)
{
    ngx_http_fairgate_ctx_t       *ctx;
    ngx_http_fairgate_loc_conf_t  *flcf;

    if (r != r->main) {
        return NGX_DECLINED;
    }

    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL) {
        flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

        if (flcf->zone == NULL) {
            return NGX_DECLINED;
        }

        return ngx_http_fairgate_start(r, flcf);
    }

    switch (ctx->phase) {

    case NGX_HTTP_FAIRGATE_READING:
        return NGX_DONE;

    case NGX_HTTP_FAIRGATE_READ:
        return ngx_http_fairgate_go_on(r, ctx);

    case NGX_HTTP_FAIRGATE_QUEUED:
    case NGX_HTTP_FAIRGATE_IDENTIFYING:
        return NGX_AGAIN;

    case NGX_HTTP_FAIRGATE_IDENTIFIED:
        return ngx_http_fairgate_identified(r, ctx);

    default:
        /* admitted, answered, or not scheduled: once is enough */
        return NGX_DECLINED;
    }
}


/*
 * A request's first pass: its context, released by the pool's cleanup
 * however the request ends; step 1, identify; then its body is read.
 */

static ngx_int_t
ngx_http_fairgate_start(ngx_http_request_t *r,
    ngx_http_fairgate_loc_conf_t *flcf)
{
    ngx_int_t                 rc;
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_ctx_t));
    if (ctx == NULL) {
        return NGX_ERROR;
    }

    ctx->request = r;
    ctx->zone = flcf->zone->data;
    ctx->start = ngx_current_msec;

    if (ngx_http_fairgate_ctx_keep(r, ctx, ngx_http_fairgate_release)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    /* each step answers a request it refuses, and the phase says so */

    rc = ngx_http_fairgate_identify(r, ctx, flcf);

    if (rc == NGX_AGAIN) {
        /* its key is looked up in Redis: the handler runs again after */
        return NGX_AGAIN;
    }

    if (rc == NGX_OK && ctx->phase != NGX_HTTP_FAIRGATE_REFUSED) {
        return ngx_http_fairgate_identified(r, ctx);
    }

    if (ctx->phase == NGX_HTTP_FAIRGATE_REFUSED) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    return NGX_HTTP_INTERNAL_SERVER_ERROR;
}


/* the tenant is known: the rest of step 1, then the body is read */

static ngx_int_t
ngx_http_fairgate_identified(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    ngx_int_t    rc;
    const char  *bad;

    ctx->phase = NGX_HTTP_FAIRGATE_READING;

    rc = ngx_http_fairgate_interaction_read(r, ctx, &bad);

    if (rc == NGX_DECLINED) {
        rc = ngx_http_fairgate_refuse_header(r, ctx, NULL,
                                             "invalid_interaction", bad);
    }

    if (rc == NGX_OK && ctx->phase != NGX_HTTP_FAIRGATE_REFUSED) {
        rc = ngx_http_fairgate_qoe_read(r, ctx);
    }

    if (ctx->phase == NGX_HTTP_FAIRGATE_REFUSED) {
        ngx_http_finalize_request(r, rc);
        return NGX_DONE;
    }

    if (rc != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_fairgate_read(r, ctx);
}


/* only what carries a request body is scheduled: GET /v1/models is not */

static ngx_int_t
ngx_http_fairgate_read(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    ngx_int_t  rc;

    if (r->method != NGX_HTTP_POST) {
        ctx->phase = NGX_HTTP_FAIRGATE_PASSED;
        return NGX_DECLINED;
    }

    ctx->phase = NGX_HTTP_FAIRGATE_READING;

    rc = ngx_http_read_client_request_body(r, ngx_http_fairgate_body_handler);

    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }

    ngx_http_finalize_request(r, NGX_DONE);
    return NGX_DONE;
}


static void
ngx_http_fairgate_body_handler(ngx_http_request_t *r)
{
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_http_fairgate_get_ctx(r);

    ctx->phase = NGX_HTTP_FAIRGATE_READ;

    /* the body stays for proxy_pass to send */
    r->preserve_body = 1;

    r->write_event_handler = ngx_http_core_run_phases;
    ngx_http_core_run_phases(r);
}


/*
 * The body is in: step 2, parse (local mode parses the OpenAI request and
 * counts its tokens; drop-in mode estimates them); step 3, admit, which
 * also queues it.  Then the request goes on to the upstream (NGX_DECLINED:
 * the next phases run), waits (NGX_AGAIN), or was answered.
 */

static ngx_int_t
ngx_http_fairgate_go_on(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx)
{
    ngx_int_t                      rc;
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    rc = flcf->engine_pass ? ngx_http_fairgate_local_parse(r, ctx)
                           : ngx_http_fairgate_parse(r, ctx, flcf);

    if (rc == NGX_OK && ctx->phase == NGX_HTTP_FAIRGATE_READ) {
        rc = ngx_http_fairgate_model_check(r, ctx);
    }

    if (rc == NGX_OK && ctx->phase == NGX_HTTP_FAIRGATE_READ) {
        rc = ngx_http_fairgate_admit(r, ctx);

        if (ctx->phase == NGX_HTTP_FAIRGATE_ADMITTED) {
            return NGX_DECLINED;
        }

        if (ctx->phase == NGX_HTTP_FAIRGATE_QUEUED) {
            return NGX_AGAIN;
        }
    }

    if (rc == NGX_ERROR && ctx->phase != NGX_HTTP_FAIRGATE_REFUSED) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_http_finalize_request(r, rc);
    return NGX_DONE;
}
