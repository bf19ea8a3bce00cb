
/*
 * fairgate: the errors nginx itself answers (413 client_max_body_size, 400
 * a malformed request, 414, a header too large, 404, 405, 500, 502 and 504
 * from an upstream), in OpenAI's shape in the API locations, as the
 * module's own errors are (ngx_http_fairgate_error.c; Anthropic's shape
 * for requests to its Messages API):
 *
 *     {"error": {"message": "...", "type": "...", "param": null,
 *                "code": "..."}}
 *
 * "fairgate_api_errors on|off" says where; unset, it is on where
 * "fairgate zone=" or "fairgate_engine_pass" applies.  Set at the server
 * level, it also covers what nginx answers before a location is chosen
 * (400, 414, a header too large).
 *
 * How: a header filter and a body filter that replace the page of nginx's
 * special response (ngx_http_special_response.c), not an error page of
 * the module's own.  nginx calls ngx_http_special_response_handler() for
 * every error it generates, before a location is chosen too, and nothing
 * but an error_page directive can route one elsewhere; an error page
 * would need a location of the module's making in every server, and
 * error_page entries added behind the operator's back.  The filters see
 * every such response, and only those: nginx's page is the one response
 * that reaches the header filter with r->err_status set and no error_page
 * followed, and an upstream's own error (an OpenAI-compatible API
 * answering 429 or 500 with its JSON) passes with r->err_status 0,
 * untouched, as does a body the operator wrote ("return 404 text").
 *
 * What nginx's special response already did stays: its status, its
 * headers (WWW-Authenticate of auth_basic, a Retry-After of add_header
 * ... always, which runs after), keepalive off after 400, 413, 414, 500
 * and 501 and on otherwise, no body for HEAD (the header carries the
 * JSON's Content-Length, the body filter is never called).  An
 * operator's error_page still wins: its target runs the phases with
 * r->err_status already set, which the phase handler below marks, and
 * its response passes untouched.
 *
 * An upstream that answers no HTTP at all is nginx's to refuse too, and is
 * not: its proxy takes bytes that are no status line for an HTTP/0.9
 * response (status 0, logged as 009) and passes them on as they are, and
 * it passes a status no server may answer finally (999, 000, 100).  The
 * header filter answers 502 upstream_unavailable instead, as nginx does
 * for an upstream that failed, with an error-log line naming the upstream.
 *
 * The request's state (the JSON to send, the error_page mark) hangs on a
 * pool cleanup, as the context does after a redirect: modules' contexts
 * are cleared by error_page's redirect and by a filter's finalization,
 * and the module's own context is the fairgate zone's.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_http.h"
#include "ngx_http_fairgate_module.h"


/* nginx answers a header too large with 400; the API says 431 (RFC 6585) */
#define NGX_HTTP_FAIRGATE_HEADER_TOO_LARGE  431

/* the most of the URI a message of 404 or 405 repeats */
#define NGX_HTTP_FAIRGATE_ERRORS_URI        200


typedef struct {
    ngx_buf_t                   *body;       /* the JSON: NULL, not ours */
    unsigned                     error_page:1;
    unsigned                     sent:1;
} ngx_http_fairgate_errors_t;


/* what a status means, as a client of the API reads it */
typedef struct {
    ngx_uint_t                   status;
    const char                  *type;
    const char                  *code;
    const char                  *message;    /* no final period */
    ngx_uint_t                   uri;        /* names the method and URI */
} ngx_http_fairgate_api_error_t;


static ngx_int_t ngx_http_fairgate_errors_redirected(ngx_http_request_t *r);
static ngx_uint_t ngx_http_fairgate_errors_nonsense(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_errors_bad_gateway(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_errors_header_filter(ngx_http_request_t *r);
static ngx_int_t ngx_http_fairgate_errors_body_filter(ngx_http_request_t *r,
    ngx_chain_t *in);
static ngx_uint_t ngx_http_fairgate_errors_on(ngx_http_request_t *r);
static ngx_http_fairgate_errors_t *ngx_http_fairgate_errors_state(
    ngx_http_request_t *r, ngx_uint_t create);
static void ngx_http_fairgate_errors_cleanup(void *data);
static const ngx_http_fairgate_api_error_t *ngx_http_fairgate_errors_find(
    ngx_uint_t status);
static ngx_buf_t *ngx_http_fairgate_errors_body(ngx_http_request_t *r,
    const ngx_http_fairgate_api_error_t *e, ngx_uint_t status);


static const ngx_http_fairgate_api_error_t  ngx_http_fairgate_api_errors[] = {

    { NGX_HTTP_BAD_REQUEST, "invalid_request_error", "bad_request",
      "The request could not be understood: it is not valid HTTP "
      "(a malformed request line, header or body)", 0 },

    { NGX_HTTP_UNAUTHORIZED, "invalid_request_error", "unauthorized",
      "Authentication is required (this server's access control)", 0 },

    { NGX_HTTP_FORBIDDEN, "invalid_request_error", "forbidden",
      "Access is forbidden (this server's access control)", 0 },

    { NGX_HTTP_NOT_FOUND, "invalid_request_error", "not_found",
      "The requested URL was not found on this server", 1 },

    { NGX_HTTP_NOT_ALLOWED, "invalid_request_error", "method_not_allowed",
      "The method is not allowed for this URL", 1 },

    { NGX_HTTP_REQUEST_TIME_OUT, "invalid_request_error", "request_timeout",
      "The request was not received in time (client_body_timeout)", 0 },

    { NGX_HTTP_LENGTH_REQUIRED, "invalid_request_error", "length_required",
      "The request body needs a Content-Length", 0 },

    { NGX_HTTP_REQUEST_ENTITY_TOO_LARGE, "invalid_request_error",
      "request_too_large",
      "The request body is larger than this server accepts "
      "(client_max_body_size)", 0 },

    { NGX_HTTP_REQUEST_URI_TOO_LARGE, "invalid_request_error",
      "uri_too_long",
      "The request URI is longer than this server accepts "
      "(large_client_header_buffers)", 0 },

    { NGX_HTTP_UNSUPPORTED_MEDIA_TYPE, "invalid_request_error",
      "unsupported_media_type",
      "The request's media type is not supported", 0 },

    { NGX_HTTP_RANGE_NOT_SATISFIABLE, "invalid_request_error",
      "range_not_satisfiable",
      "The requested range cannot be satisfied", 0 },

    { NGX_HTTP_MISDIRECTED_REQUEST, "invalid_request_error",
      "misdirected_request",
      "The request was sent to a server that cannot answer it", 0 },

    /* limit_req and limit_conn with their status set to 429; "requests"
     * as the module's own rate limits say */
    { NGX_HTTP_TOO_MANY_REQUESTS, "requests", "rate_limit_exceeded",
      "Too many requests: a limit of this server was exceeded "
      "(limit_req, limit_conn)", 0 },

    { NGX_HTTP_FAIRGATE_HEADER_TOO_LARGE, "invalid_request_error",
      "request_header_too_large",
      "The request's headers are larger than this server accepts "
      "(large_client_header_buffers)", 0 },

    { NGX_HTTP_INTERNAL_SERVER_ERROR, "server_error", "internal_error",
      "The server had an error while processing the request", 0 },

    { NGX_HTTP_NOT_IMPLEMENTED, "server_error", "not_implemented",
      "The server does not support this request (its method or "
      "transfer encoding)", 0 },

    { NGX_HTTP_BAD_GATEWAY, "server_error", "upstream_unavailable",
      "The upstream server is unavailable or sent an invalid response", 0 },

    { NGX_HTTP_SERVICE_UNAVAILABLE, "server_error", "service_unavailable",
      "The service is temporarily unavailable", 0 },

    { NGX_HTTP_GATEWAY_TIME_OUT, "server_error", "upstream_timeout",
      "The upstream server did not answer in time", 0 },

    { NGX_HTTP_VERSION_NOT_SUPPORTED, "invalid_request_error",
      "http_version_not_supported",
      "The request's HTTP version is not supported", 0 },

    { NGX_HTTP_INSUFFICIENT_STORAGE, "server_error", "insufficient_storage",
      "The server has no room to store the request", 0 },

    { 0, NULL, NULL, NULL, 0 }
};


/* a status the table does not name: by its class */
static const ngx_http_fairgate_api_error_t  ngx_http_fairgate_api_4xx = {
    0, "invalid_request_error", "invalid_request",
    "The server refused the request", 0
};

static const ngx_http_fairgate_api_error_t  ngx_http_fairgate_api_5xx = {
    0, "server_error", "server_error",
    "The server could not complete the request", 0
};


static ngx_str_t  ngx_http_fairgate_431_line =
    ngx_string("431 Request Header Fields Too Large");


static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


/*
 * The filters, and the mark of an error_page's target: in the server's
 * rewrite phase (an internal redirect) and the location's (a named
 * location too), before anything of the target can answer.
 */

ngx_int_t
ngx_http_fairgate_errors_init(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_SERVER_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fairgate_errors_redirected;

    h = ngx_array_push(&cmcf->phases[NGX_HTTP_REWRITE_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }

    *h = ngx_http_fairgate_errors_redirected;

    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_fairgate_errors_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_fairgate_errors_body_filter;

    return NGX_OK;
}


/*
 * A request runs the phases with r->err_status set only after nginx's
 * special response followed an error_page (to a URI or a named location):
 * what answers now is the operator's page.
 */

static ngx_int_t
ngx_http_fairgate_errors_redirected(ngx_http_request_t *r)
{
    ngx_http_fairgate_errors_t  *st;

    if (r->err_status == 0 || r != r->main) {
        return NGX_DECLINED;
    }

    st = ngx_http_fairgate_errors_state(r, 1);
    if (st == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    st->error_page = 1;

    return NGX_DECLINED;
}


static ngx_int_t
ngx_http_fairgate_errors_header_filter(ngx_http_request_t *r)
{
    ngx_uint_t                            status;
    ngx_http_fairgate_errors_t           *st;
    const ngx_http_fairgate_api_error_t  *e;

    if (ngx_http_fairgate_errors_nonsense(r)) {
        return ngx_http_fairgate_errors_bad_gateway(r);
    }

    status = r->err_status;

    if (status < NGX_HTTP_BAD_REQUEST || status > 599 || r != r->main
        || !ngx_http_fairgate_errors_on(r))
    {
        return ngx_http_next_header_filter(r);
    }

    st = ngx_http_fairgate_errors_state(r, 1);
    if (st == NULL) {
        return NGX_ERROR;
    }

    if (st->error_page) {
        return ngx_http_next_header_filter(r);
    }

    /*
     * nginx's special response turns its 494 (a header line, or all of
     * them, larger than large_client_header_buffers) into 400, and leaves
     * r->lingering_close as the header reader set it: every other 400
     * clears it there.
     */

    if (status == NGX_HTTP_BAD_REQUEST && r->lingering_close) {
        status = NGX_HTTP_FAIRGATE_HEADER_TOO_LARGE;
        r->err_status = status;
        r->headers_out.status_line = ngx_http_fairgate_431_line;
    }

    e = ngx_http_fairgate_errors_find(status);

    st->body = ngx_http_fairgate_errors_body(r, e, status);
    if (st->body == NULL) {
        return NGX_ERROR;
    }

    st->sent = 0;

    r->headers_out.status = status;

    ngx_str_set(&r->headers_out.content_type, "application/json");
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;

    ngx_http_clear_content_length(r);
    r->headers_out.content_length_n = st->body->last - st->body->pos;

    return ngx_http_next_header_filter(r);
}


/*
 * A proxied upstream's answer that is no HTTP response: an HTTP/0.9 one
 * (nginx's proxy takes anything that is no status line for one), or a
 * status outside 200..599 but 101 (a 1xx is no final answer; 101 only
 * follows an Upgrade the configuration passed).
 */

static ngx_uint_t
ngx_http_fairgate_errors_nonsense(ngx_http_request_t *r)
{
    ngx_uint_t  status;

    if (r->upstream == NULL || r->err_status || r != r->main
        || r->header_sent)
    {
        return 0;
    }

    status = r->headers_out.status;

    if (status >= NGX_HTTP_OK && status <= 599
        && r->http_version != NGX_HTTP_VERSION_9)
    {
        return 0;
    }

    if (status == NGX_HTTP_SWITCHING_PROTOCOLS) {
        return 0;
    }

    return ngx_http_fairgate_errors_on(r);
}


/*
 * nginx's own 502 in the nonsense's place, from the filter, as nginx's
 * filters refuse a response (image_filter's 415): its special response
 * goes through the filters again (this one makes it the JSON) and the
 * upstream's bytes are dropped.  The proxy set the client's request to
 * HTTP/0.9, which would send no header: its version is the request line's
 * again.
 */

static ngx_int_t
ngx_http_fairgate_errors_bad_gateway(ngx_http_request_t *r)
{
    ngx_str_t   *peer;
    ngx_uint_t   status;

    static ngx_str_t  unknown = ngx_string("(unknown)");

    status = r->headers_out.status;
    peer = r->upstream->peer.name ? r->upstream->peer.name : &unknown;

    if (r->http_version == NGX_HTTP_VERSION_9) {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fairgate: the upstream %V answered no HTTP "
                      "(no status line): 502 upstream_unavailable", peer);

    } else {
        ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
                      "fairgate: the upstream %V answered status %ui, no "
                      "final HTTP status: 502 upstream_unavailable",
                      peer, status);
    }

    r->http_version = NGX_HTTP_VERSION_11;

    if (r->http_protocol.len == 0) {
        r->http_version = NGX_HTTP_VERSION_9;

    } else if (r->http_protocol.len == 8
               && ngx_strncmp(r->http_protocol.data, "HTTP/1.0", 8) == 0)
    {
        r->http_version = NGX_HTTP_VERSION_10;
    }

#if (NGX_HTTP_V2)
    if (r->stream) {
        r->http_version = NGX_HTTP_VERSION_20;
    }
#endif

    /* neither connection is reused: nothing more is read of them */
    r->keepalive = 0;
    r->upstream->keepalive = 0;

    return ngx_http_filter_finalize_request(r, &ngx_http_fairgate_module,
                                            NGX_HTTP_BAD_GATEWAY);
}


/*
 * nginx's page comes in one call, ending with the last buffer: it is
 * taken as sent, and the JSON goes on in its place.
 */

static ngx_int_t
ngx_http_fairgate_errors_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_chain_t                 *cl, out;
    ngx_http_fairgate_errors_t  *st;

    if (r->err_status == 0 || in == NULL || r != r->main) {
        return ngx_http_next_body_filter(r, in);
    }

    st = ngx_http_fairgate_errors_state(r, 0);

    if (st == NULL || st->body == NULL) {
        return ngx_http_next_body_filter(r, in);
    }

    for (cl = in; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }

    if (st->sent) {
        return NGX_OK;
    }

    st->sent = 1;

    out.buf = st->body;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


/* fairgate_api_errors, or unset: on where the location is the API's */

static ngx_uint_t
ngx_http_fairgate_errors_on(ngx_http_request_t *r)
{
    ngx_http_fairgate_loc_conf_t  *flcf;

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    if (flcf->api_errors != NGX_CONF_UNSET) {
        return flcf->api_errors;
    }

    return flcf->zone != NULL || flcf->engine_pass;
}


static ngx_http_fairgate_errors_t *
ngx_http_fairgate_errors_state(ngx_http_request_t *r, ngx_uint_t create)
{
    ngx_pool_cleanup_t          *cln;
    ngx_http_fairgate_errors_t  *st;

    for (cln = r->pool->cleanup; cln; cln = cln->next) {
        if (cln->handler == ngx_http_fairgate_errors_cleanup) {
            return cln->data;
        }
    }

    if (!create) {
        return NULL;
    }

    cln = ngx_pool_cleanup_add(r->pool, sizeof(ngx_http_fairgate_errors_t));
    if (cln == NULL) {
        return NULL;
    }

    st = cln->data;
    ngx_memzero(st, sizeof(ngx_http_fairgate_errors_t));

    cln->handler = ngx_http_fairgate_errors_cleanup;

    return st;
}


/* nothing to free: the handler names the state among the pool's cleanups */

static void
ngx_http_fairgate_errors_cleanup(void *data)
{
}


static const ngx_http_fairgate_api_error_t *
ngx_http_fairgate_errors_find(ngx_uint_t status)
{
    const ngx_http_fairgate_api_error_t  *e;

    for (e = ngx_http_fairgate_api_errors; e->status; e++) {
        if (e->status == status) {
            return e;
        }
    }

    return status >= NGX_HTTP_INTERNAL_SERVER_ERROR
           ? &ngx_http_fairgate_api_5xx : &ngx_http_fairgate_api_4xx;
}


/*
 * The body, written by the OpenAI layer's one writer (Anthropic's shape
 * for its Messages API: ngx_http_fairgate_error_buf): the message, with
 * the method and URI of a 404 or 405 as OpenAI's "Invalid URL (POST /x)"
 * has them (the writer escapes them, and replaces bytes that are not
 * UTF-8).
 */

static ngx_buf_t *
ngx_http_fairgate_errors_body(ngx_http_request_t *r,
    const ngx_http_fairgate_api_error_t *e, ngx_uint_t status)
{
    u_char     *msg, *p;
    size_t      n;
    ngx_buf_t  *b;

    n = ngx_min(r->uri.len, NGX_HTTP_FAIRGATE_ERRORS_URI);

    msg = ngx_pnalloc(r->pool, ngx_strlen(e->message) + r->method_name.len
                               + n + sizeof(" ( ).") );
    if (msg == NULL) {
        return NULL;
    }

    p = ngx_cpymem(msg, e->message, ngx_strlen(e->message));

    if (e->uri) {
        p = ngx_sprintf(p, " (%V %*s)", &r->method_name, n, r->uri.data);
    }

    *p++ = '.';
    *p = '\0';

    b = ngx_http_fairgate_error_buf(r, status, e->type, NULL, e->code,
                                    (char *) msg);
    if (b == NULL) {
        return NULL;
    }

    b->last_buf = 1;
    b->last_in_chain = 1;

    return b;
}
