
/*
 * fairgate: step 2 of a request, its model: the key may use it, and an
 * alias's target goes to the upstream (tenants/ngx_http_fairgate_models.c
 * holds the lists and the aliases).
 *
 * A key limited to some models gets OpenAI's 404 model_not_found for
 * another, before the request is admitted.  In drop-in mode a model with
 * a fairgate_model_alias is replaced in the body by its target: the body
 * is in memory once parsed, so a new buffer holds it with the name's
 * bytes replaced, and its Content-Length follows.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"
#include "ngx_http_fairgate_tenants.h"


ngx_int_t
ngx_http_fairgate_model_check(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx)
{
    u_char  *msg, *p;

    if (ngx_http_fairgate_model_allowed(&ctx->key_models, &ctx->model)) {
        return NGX_OK;
    }

    if (ctx->model.len == 0) {
        return ngx_http_fairgate_bad_request(r, ctx, "model", NULL,
                                             "you must provide a model "
                                             "parameter");
    }

    msg = ngx_pnalloc(r->pool, ctx->model.len + 80);
    if (msg == NULL) {
        return NGX_ERROR;
    }

    p = ngx_sprintf(msg, "The model `%V` does not exist or you do not have "
                    "access to it.", &ctx->model);
    *p = '\0';

    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_BAD_REQUEST,
                                    NGX_HTTP_NOT_FOUND,
                                    "invalid_request_error", NULL,
                                    "model_not_found", (char *) msg, 0);
}


/*
 * The body (data, len: as parsed, ctx->model within it) with the model's
 * alias target in place of its name; nothing to do without an alias.
 */

ngx_int_t
ngx_http_fairgate_model_alias_body(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf,
    u_char *data, size_t len)
{
    size_t        head, n;
    u_char       *p;
    ngx_buf_t    *b;
    ngx_str_t    *target;
    ngx_chain_t  *cl;

    target = ngx_http_fairgate_model_target(flcf, &ctx->model);

    if (target == NULL) {
        return NGX_OK;
    }

    ctx->model_target = *target;

    if (ctx->model.data < data || ctx->model.data + ctx->model.len > data + len
        || r->request_body == NULL)
    {
        return NGX_ERROR;
    }

    head = ctx->model.data - data;
    n = len - ctx->model.len + target->len;

    b = ngx_create_temp_buf(r->pool, n);
    cl = ngx_alloc_chain_link(r->pool);

    if (b == NULL || cl == NULL) {
        return NGX_ERROR;
    }

    p = ngx_cpymem(b->last, data, head);
    p = ngx_cpymem(p, target->data, target->len);
    b->last = ngx_cpymem(p, data + head + ctx->model.len,
                         len - head - ctx->model.len);
    b->last_buf = 1;

    cl->buf = b;
    cl->next = NULL;

    /* ctx->model keeps the public name, now in the new buffer's stead */

    r->request_body->bufs = cl;
    r->headers_in.content_length_n = (off_t) n;

    if (r->headers_in.content_length) {
        p = ngx_pnalloc(r->pool, NGX_OFF_T_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        r->headers_in.content_length->value.data = p;
        r->headers_in.content_length->value.len = ngx_sprintf(p, "%O",
                                                  (off_t) n) - p;
    }

    return NGX_OK;
}
