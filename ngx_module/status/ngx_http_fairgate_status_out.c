
/*
 * fairgate: a status page's body sent as it is written.  The text goes
 * into buffers of NGX_HTTP_FAIRGATE_STATUS_CHUNK bytes in the request's
 * pool; each one is handed to the output filters as soon as it is full,
 * and given back to the pool once nginx has written it, so that a page of
 * thousands of tenants never sits in memory whole, nor as a JSON tree:
 * the tenants are dumped one by one (json_dump_callback) into the buffers.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <jansson.h>

#include "ngx_http_fairgate_status.h"


#define NGX_HTTP_FAIRGATE_STATUS_CHUNK  16384


static ngx_int_t ngx_http_fairgate_status_out_send(
    ngx_http_fairgate_status_out_t *o, ngx_uint_t last);
static int ngx_http_fairgate_status_out_dump(const char *buffer, size_t size,
    void *data);


/* the header: 200, the type set by the caller, no length (chunked) */

ngx_int_t
ngx_http_fairgate_status_out_start(ngx_http_request_t *r,
    ngx_http_fairgate_status_out_t *o)
{
    ngx_memzero(o, sizeof(ngx_http_fairgate_status_out_t));

    o->r = r;
    o->last = &o->out;

    r->headers_out.status = NGX_HTTP_OK;
    r->headers_out.content_length_n = -1;
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    return ngx_http_send_header(r);
}


ngx_int_t
ngx_http_fairgate_status_out_write(ngx_http_fairgate_status_out_t *o,
    u_char *data, size_t len)
{
    size_t        n;
    ngx_buf_t    *b;
    ngx_chain_t  *cl;

    while (len) {
        b = o->buf;

        if (b == NULL || b->last == b->end) {

            if (b && ngx_http_fairgate_status_out_send(o, 0) != NGX_OK) {
                return NGX_ERROR;
            }

            b = ngx_create_temp_buf(o->r->pool,
                                    NGX_HTTP_FAIRGATE_STATUS_CHUNK);
            cl = ngx_alloc_chain_link(o->r->pool);

            if (b == NULL || cl == NULL) {
                return NGX_ERROR;
            }

            cl->buf = b;
            cl->next = NULL;
            *o->last = cl;
            o->last = &cl->next;
            o->buf = b;
        }

        n = ngx_min(len, (size_t) (b->end - b->last));
        b->last = ngx_cpymem(b->last, data, n);
        data += n;
        len -= n;
        o->bytes += n;
    }

    return NGX_OK;
}


/* a JSON value as its text on one line, with no copy of it made first */

ngx_int_t
ngx_http_fairgate_status_out_json(ngx_http_fairgate_status_out_t *o,
    json_t *json)
{
    if (json == NULL
        || json_dump_callback(json, ngx_http_fairgate_status_out_dump, o,
                              JSON_PRESERVE_ORDER|JSON_ENCODE_ANY)
           != 0)
    {
        return NGX_ERROR;
    }

    return NGX_OK;
}


static int
ngx_http_fairgate_status_out_dump(const char *buffer, size_t size,
    void *data)
{
    ngx_http_fairgate_status_out_t  *o = data;

    return ngx_http_fairgate_status_out_write(o, (u_char *) buffer, size)
           == NGX_OK ? 0 : -1;
}


/* the body's last line end, and its end: what the handler returns */

ngx_int_t
ngx_http_fairgate_status_out_end(ngx_http_fairgate_status_out_t *o)
{
    if (ngx_http_fairgate_status_out_write(o, (u_char *) "\n", 1)
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    return ngx_http_fairgate_status_out_send(o, 1);
}


/*
 * Buffers written elsewhere (the Prometheus writer's, of the request's
 * pool), sent; with last, the body's end: what the handler returns.
 */

ngx_int_t
ngx_http_fairgate_status_out_chain(ngx_http_fairgate_status_out_t *o,
    ngx_chain_t *cl, ngx_uint_t last)
{
    ngx_buf_t  *b;

    if (cl == NULL) {
        b = ngx_calloc_buf(o->r->pool);
        cl = ngx_alloc_chain_link(o->r->pool);

        if (b == NULL || cl == NULL) {
            return NGX_ERROR;
        }

        cl->buf = b;
        cl->next = NULL;
    }

    *o->last = cl;

    for ( /* void */ ; cl->next; cl = cl->next) {
        o->bytes += cl->buf->last - cl->buf->pos;
    }

    o->bytes += cl->buf->last - cl->buf->pos;
    o->last = &cl->next;
    o->buf = cl->buf;

    return ngx_http_fairgate_status_out_send(o, last);
}


/*
 * The buffers written so far to the filters; then those nginx has sent
 * (of these and of the earlier ones) are given back to the pool, the
 * others kept until a later call finds them sent, or the pool goes.
 */

static ngx_int_t
ngx_http_fairgate_status_out_send(ngx_http_fairgate_status_out_t *o,
    ngx_uint_t last)
{
    ngx_int_t     rc;
    ngx_chain_t  *cl, **ll, *sent;

    if (last) {
        o->buf->last_buf = (o->r == o->r->main) ? 1 : 0;
        o->buf->last_in_chain = 1;
    }

    rc = ngx_http_output_filter(o->r, o->out);

    if (rc == NGX_ERROR) {
        return NGX_ERROR;
    }

    sent = o->out;
    *o->last = o->busy;
    ll = &o->busy;

    for (cl = sent; cl; cl = cl->next) {

        if (cl->buf->pos == cl->buf->last) {
            if (cl->buf->start) {
                ngx_pfree(o->r->pool, cl->buf->start);
            }

            continue;
        }

        *ll = cl;
        ll = &cl->next;
    }

    *ll = NULL;
    o->out = NULL;
    o->last = &o->out;
    o->buf = NULL;

    return last ? rc : NGX_OK;
}
