
/*
 * fairgate: the nginx HTTP helpers the glue's parts share
 * (ngx_http_fairgate_http.c).  They know nginx's request and the OpenAI
 * layer's error writer, nothing of fairgate's own: every part of the glue
 * may call them, and they call no part.
 */

#ifndef _NGX_HTTP_FAIRGATE_HTTP_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_HTTP_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_openai_response.h"


/* the request body in one piece: in place when it is one buffer */
ngx_int_t ngx_http_fairgate_body(ngx_http_request_t *r, u_char **data,
    size_t *len);

/*
 * len bytes of a name copied to dst as valid UTF-8, each byte that is not
 * part of a valid character as U+FFFD: dst holds 3 * len; returns its end
 */
u_char *ngx_http_fairgate_utf8_safe(u_char *dst, u_char *src, size_t len);

/* a request header sent at most once: *h, or NULL; NGX_DECLINED: twice */
ngx_int_t ngx_http_fairgate_header_once(ngx_http_request_t *r,
    const char *name, ngx_table_elt_t **h);

/* a header of the response; name and value must outlive the request */
ngx_int_t ngx_http_fairgate_add_header(ngx_http_request_t *r,
    const char *name, u_char *value, size_t len);

/* a whole body, of the content type the caller set */
ngx_int_t ngx_http_fairgate_send_body(ngx_http_request_t *r,
    ngx_uint_t status, ngx_chain_t *out);

/* errors in OpenAI's shape (Anthropic's for its Messages API), with
 * Retry-After when retry_after > 0 */
ngx_int_t ngx_http_fairgate_send_error(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, const char *param, const char *code,
    const char *message, time_t retry_after);
ngx_int_t ngx_http_fairgate_send_oai_error(ngx_http_request_t *r,
    fg_oai_error_t *err, time_t retry_after);
ngx_int_t ngx_http_fairgate_send_error_body(ngx_http_request_t *r,
    ngx_uint_t status, ngx_buf_t *b, time_t retry_after);


/*
 * The API a drop-in request calls, by the end of its path: what its body
 * and its upstream's usage hold, and the shape of the gateway's errors
 * (Anthropic's for its Messages API, OpenAI's for the others).
 */
typedef enum {
    NGX_HTTP_FAIRGATE_API_OPENAI = 0,    /* chat, completions, others */
    NGX_HTTP_FAIRGATE_API_RESPONSES,
    NGX_HTTP_FAIRGATE_API_EMBEDDINGS,    /* no output */
    NGX_HTTP_FAIRGATE_API_MESSAGES,      /* Anthropic's */
    NGX_HTTP_FAIRGATE_API_MESSAGES_OTHER /* count_tokens, batches */
} ngx_http_fairgate_api_e;

#define ngx_http_fairgate_api_anthropic(api)                                 \
    ((api) >= NGX_HTTP_FAIRGATE_API_MESSAGES)

/* an API that generates nothing: its output is 0 tokens */
#define ngx_http_fairgate_api_no_output(api)                                 \
    ((api) == NGX_HTTP_FAIRGATE_API_EMBEDDINGS                               \
     || (api) == NGX_HTTP_FAIRGATE_API_MESSAGES_OTHER)

ngx_http_fairgate_api_e ngx_http_fairgate_api_of(ngx_http_request_t *r);

/* an error's body in the shape of the request's API */
ngx_buf_t *ngx_http_fairgate_error_buf(ngx_http_request_t *r,
    ngx_uint_t status, const char *type, const char *param,
    const char *code, const char *message);


#endif /* _NGX_HTTP_FAIRGATE_HTTP_H_INCLUDED_ */
