
/*
 * fairgate: error responses in OpenAI's shape, so that clients written for
 * OpenAI's API (and their retry logic) understand them:
 *
 *     {"error": {"message": "...", "type": "...", "param": null,
 *                "code": "..."}}
 *
 * with Retry-After where trying again later can help.  The body is written
 * by the OpenAI layer's one error writer (fg_oai_error_body), the same as
 * local mode's errors.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_openai_response.h"
#include "ngx_http_fairgate_request.h"


ngx_int_t
ngx_http_fairgate_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, const char *param, const char *code,
    const char *message, time_t retry_after)
{
    size_t      len;
    ngx_int_t   rc;
    ngx_buf_t  *b;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    len = fg_oai_error_body(type, param, code, message, NULL, 0);

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    b->last += fg_oai_error_body(type, param, code, message, (char *) b->pos,
                                 len);

    return ngx_http_fairgate_send_error_body(r, status, b, retry_after);
}


/*
 * Sends an error body (b, JSON) with its status, and Retry-After where
 * trying again later can help: shared by the gateway's own errors and
 * local mode's OpenAI-layer errors.
 */

ngx_int_t
ngx_http_fairgate_send_error_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_buf_t *b, time_t retry_after)
{
    u_char       *p;
    ngx_chain_t   out;

    if (retry_after > 0) {
        p = ngx_pnalloc(r->pool, NGX_TIME_T_LEN);
        if (p == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        if (ngx_http_fairgate_add_header(r, "Retry-After", p,
                                         ngx_sprintf(p, "%T", retry_after) - p)
            != NGX_OK)
        {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
    }

    if (status == NGX_HTTP_UNAUTHORIZED
        && ngx_http_fairgate_add_header(r, "WWW-Authenticate",
                                        (u_char *) "Bearer", 6)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_str_set(&r->headers_out.content_type, "application/json");

    out.buf = b;
    out.next = NULL;

    return ngx_http_fairgate_send_body(r, status, &out);
}


/*
 * A whole body the module writes itself (an error, the model list, the
 * status page), of the content type the caller set: its length is summed
 * over the chain and its last buffer marked.
 */

ngx_int_t
ngx_http_fairgate_send_body(ngx_http_request_t *r, ngx_uint_t status,
    ngx_chain_t *out)
{
    off_t         len;
    ngx_int_t     rc;
    ngx_chain_t  *cl;

    len = 0;

    for (cl = out; cl->next; cl = cl->next) {
        len += cl->buf->last - cl->buf->pos;
    }

    len += cl->buf->last - cl->buf->pos;

    r->headers_out.status = status;
    r->headers_out.content_length_n = len;
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    rc = ngx_http_send_header(r);

    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    cl->buf->last_buf = (r == r->main) ? 1 : 0;
    cl->buf->last_in_chain = 1;

    return ngx_http_output_filter(r, out);
}


/*
 * A step refuses the request: it is answered here, and its phase and
 * outcome say so (the handler finalizes it with what sending returned).
 */

ngx_int_t
ngx_http_fairgate_refuse(ngx_http_request_t *r, ngx_http_fairgate_ctx_t *ctx,
    ngx_http_fairgate_outcome_e outcome, ngx_uint_t status, const char *type,
    const char *param, const char *code, const char *message,
    time_t retry_after)
{
    ctx->phase = NGX_HTTP_FAIRGATE_REFUSED;
    ctx->outcome = outcome;

    return ngx_http_fairgate_send_error(r, status, type, param, code, message,
                                        retry_after);
}


/*
 * A request header the client may send once: the request's header of
 * that name in *h, or NULL; NGX_DECLINED when it comes twice (*h the
 * first), which would leave the gateway to guess.
 */

ngx_int_t
ngx_http_fairgate_header_once(ngx_http_request_t *r, const char *name,
    ngx_table_elt_t **h)
{
    size_t            len;
    ngx_uint_t        i;
    ngx_list_part_t  *part;
    ngx_table_elt_t  *e;

    *h = NULL;
    len = ngx_strlen(name);

    for (part = &r->headers_in.headers.part; part; part = part->next) {
        e = part->elts;

        for (i = 0; i < part->nelts; i++) {
            if (e[i].key.len != len
                || ngx_strncasecmp(e[i].key.data, (u_char *) name, len) != 0)
            {
                continue;
            }

            if (*h) {
                return NGX_DECLINED;
            }

            *h = &e[i];
        }
    }

    return NGX_OK;
}


/*
 * A request header's bad value: 400, as OpenAI names a bad field (param:
 * the header, or NULL), logged at info since the client is at fault.
 */

ngx_int_t
ngx_http_fairgate_refuse_header(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *code,
    const char *message)
{
    ngx_log_error(NGX_LOG_INFO, r->connection->log, 0,
                  "fairgate: %s", message);

    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_BAD_REQUEST,
                                    NGX_HTTP_BAD_REQUEST,
                                    "invalid_request_error", param, code,
                                    message, 0);
}


/* a header of the response; name and value must outlive the request */

ngx_int_t
ngx_http_fairgate_add_header(ngx_http_request_t *r, const char *name,
    u_char *value, size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = value;
    h->value.len = len;

    return NGX_OK;
}
