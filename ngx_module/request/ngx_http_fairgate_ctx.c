
/*
 * fairgate: a request's context, made once by the handler that first
 * takes the request (ngx_http_fairgate_handler.c, or local mode's content
 * handler where no zone is) and handed to every step.  Its pool cleanup
 * is the request's end (ngx_http_fairgate_release()), which is also how it
 * is found again after an internal redirect.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"


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
        if (cln->handler == ngx_http_fairgate_release) {
            ctx = cln->data;
            ngx_http_set_ctx(r->main, ctx, ngx_http_fairgate_module);
            return ctx;
        }
    }

    return NULL;
}
