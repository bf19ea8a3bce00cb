
/*
 * fairgate: the nginx HTTP helpers every part of the glue shares, below
 * them all: a request's body in one piece, a request header the client
 * may send once, a response header added, a whole body sent, and error
 * responses in OpenAI's shape, so that clients written for OpenAI's API
 * (and their retry logic) understand them:
 *
 *     {"error": {"message": "...", "type": "...", "param": null,
 *                "code": "..."}}
 *
 * with Retry-After where trying again later can help.  The body is written
 * by the OpenAI layer's one error writer (fg_oai_error_body,
 * fg_oai_error_json), for the gateway's errors and local mode's alike; a
 * request to Anthropic's Messages API (drop-in) gets Anthropic's shape
 * instead (fg_anthropic_error_body), which its clients read:
 *
 *     {"type": "error", "error": {"type": "rate_limit_error",
 *                                 "message": "..."}}
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_anthropic.h"
#include "fg_openai_response.h"
#include "ngx_http_fairgate_http.h"
#include "fg_utf8.h"


ngx_int_t
ngx_http_fairgate_send_error(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, const char *param, const char *code,
    const char *message, time_t retry_after)
{
    ngx_int_t   rc;
    ngx_buf_t  *b;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    b = ngx_http_fairgate_error_buf(r, status, type, param, code, message);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    return ngx_http_fairgate_send_error_body(r, status, b, retry_after);
}


/*
 * An error's body in the shape the request's API has: Anthropic's for its
 * Messages API, whose clients read error.type; OpenAI's for the others.
 */

ngx_buf_t *
ngx_http_fairgate_error_buf(ngx_http_request_t *r, ngx_uint_t status,
    const char *type, const char *param, const char *code,
    const char *message)
{
    size_t      len;
    ngx_buf_t  *b;
    ngx_uint_t  anthropic;

    anthropic = ngx_http_fairgate_api_anthropic(ngx_http_fairgate_api_of(r));

    len = anthropic ? fg_anthropic_error_body(status, message, NULL, 0)
                    : fg_oai_error_body(type, param, code, message, NULL, 0);

    b = ngx_create_temp_buf(r->pool, len);
    if (b == NULL) {
        return NULL;
    }

    b->last += anthropic
               ? fg_anthropic_error_body(status, message, (char *) b->pos,
                                         len)
               : fg_oai_error_body(type, param, code, message,
                                   (char *) b->pos, len);

    return b;
}


/*
 * The API a request calls, by the end of its path, as clients write it
 * (an operator's prefix before /v1/ is kept: /anthropic/v1/messages).
 * Below /v1/messages/ are Anthropic's other endpoints (count_tokens,
 * batches), which generate nothing the gateway sees.
 */

ngx_http_fairgate_api_e
ngx_http_fairgate_api_of(ngx_http_request_t *r)
{
    ngx_uint_t  i;
    ngx_str_t  *uri;

    static struct {
        ngx_str_t                 suffix;
        ngx_http_fairgate_api_e   api;
    } apis[] = {
        { ngx_string("/v1/messages"), NGX_HTTP_FAIRGATE_API_MESSAGES },
        { ngx_string("/embeddings"), NGX_HTTP_FAIRGATE_API_EMBEDDINGS },
        { ngx_string("/responses"), NGX_HTTP_FAIRGATE_API_RESPONSES }
    };

    uri = &r->uri;

    for (i = 0; i < sizeof(apis) / sizeof(apis[0]); i++) {
        if (uri->len >= apis[i].suffix.len
            && ngx_strncmp(uri->data + uri->len - apis[i].suffix.len,
                           apis[i].suffix.data, apis[i].suffix.len)
               == 0)
        {
            return apis[i].api;
        }
    }

    if (ngx_strnstr(uri->data, "/v1/messages/", uri->len)) {
        return NGX_HTTP_FAIRGATE_API_MESSAGES_OTHER;
    }

    return NGX_HTTP_FAIRGATE_API_OPENAI;
}


/* an OpenAI error body with err's status */

ngx_int_t
ngx_http_fairgate_send_oai_error(ngx_http_request_t *r, fg_oai_error_t *err,
    time_t retry_after)
{
    ngx_int_t   rc;
    ngx_buf_t  *b;

    rc = ngx_http_discard_request_body(r);
    if (rc != NGX_OK) {
        return rc;
    }

    b = ngx_create_temp_buf(r->pool, FG_OAI_ERROR_MAX);
    if (b == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    /* the body ends with its newline */
    b->last += fg_oai_error_json(err, (char *) b->pos, FG_OAI_ERROR_MAX);

    return ngx_http_fairgate_send_error_body(r, err->status ? err->status
                                             : NGX_HTTP_INTERNAL_SERVER_ERROR,
                                             b, retry_after);
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


/* the request body in one piece: in place when it is one buffer */

ngx_int_t
ngx_http_fairgate_body(ngx_http_request_t *r, u_char **data, size_t *len)
{
    off_t         size;
    u_char       *p;
    ssize_t       n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    *len = 0;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        return NGX_OK;
    }

    cl = r->request_body->bufs;
    b = cl->buf;

    if (cl->next == NULL && !b->in_file) {
        *data = b->pos;
        *len = b->last - b->pos;
        return NGX_OK;
    }

    size = 0;

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        size += b->in_file ? b->file_last - b->file_pos : b->last - b->pos;
    }

    p = ngx_pnalloc(r->pool, (size_t) size);
    if (p == NULL) {
        return NGX_ERROR;
    }

    *data = p;

    /*
     * A body larger than client_body_buffer_size was written to a file:
     * read it back (a local file; keep the buffer large enough to avoid it)
     */

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;

        /* an empty buffer (a chunked body's last) may have no memory */
        if (!b->in_file) {
            if (b->last != b->pos) {
                p = ngx_cpymem(p, b->pos, b->last - b->pos);
            }

            continue;
        }

        n = ngx_read_file(b->file, p, (size_t) (b->file_last - b->file_pos),
                          b->file_pos);

        if (n != b->file_last - b->file_pos) {
            ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                          "fairgate: reading the request body back from "
                          "\"%V\" failed", &b->file->name);
            return NGX_ERROR;
        }

        p += n;
    }

    *len = p - *data;

    return NGX_OK;
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


/*
 * Names the zone keeps may predate the identity checks or come from a
 * peer gateway (Redis): whatever they hold, what is written of them is
 * valid UTF-8, so that JSON encoders and Prometheus parsers take it.
 */

u_char *
ngx_http_fairgate_utf8_safe(u_char *dst, u_char *src, size_t len)
{
    size_t     k;
    u_char    *last;
    uint32_t   cp;

    last = src + len;

    while (src < last) {
        k = fg_utf8_decode(src, last - src, &cp);

        if (k == 0) {
            dst += fg_utf8_encode(0xfffd, dst);
            src++;
            continue;
        }

        dst = ngx_cpymem(dst, src, k);
        src += k;
    }

    return dst;
}
