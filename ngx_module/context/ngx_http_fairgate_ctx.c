
/*
 * fairgate: a request's context kept, and found again.  The handler that
 * first takes the request (request/ngx_http_fairgate_handler.c, or local
 * mode's content handler where no zone is) makes it and keeps it here;
 * its pool cleanup runs the request's end that handler named, which is
 * also how the context is found again after an internal redirect.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_ctx.h"


static void ngx_http_fairgate_ctx_end(void *data);


ngx_int_t
ngx_http_fairgate_ctx_keep(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_pool_cleanup_pt end)
{
    ngx_pool_cleanup_t  *cln;

    if (end) {
        cln = ngx_pool_cleanup_add(r->pool, 0);
        if (cln == NULL) {
            return NGX_ERROR;
        }

        ctx->end = end;
        cln->handler = ngx_http_fairgate_ctx_end;
        cln->data = ctx;
    }

    ngx_http_set_ctx(r, ctx, ngx_http_fairgate_module);

    return NGX_OK;
}


static void
ngx_http_fairgate_ctx_end(void *data)
{
    ngx_http_fairgate_ctx_t  *ctx = data;

    ctx->end(ctx);
}


/*
 * The request's context; after an internal redirect (error_page, say),
 * which clears modules' contexts, it is found again by its pool cleanup.
 */

ngx_http_fairgate_ctx_t *
ngx_http_fairgate_get_ctx(ngx_http_request_t *r)
{
    ngx_pool_cleanup_t       *cln;
    ngx_http_fairgate_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r->main, ngx_http_fairgate_module);

    if (ctx || !(r->main->internal || r->main->filter_finalize)) {
        return ctx;
    }

    for (cln = r->main->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_fairgate_ctx_end) {
            ctx = cln->data;
            ngx_http_set_ctx(r->main, ctx, ngx_http_fairgate_module);
            return ctx;
        }
    }

    return NULL;
}
