
/*
 * fairgate: "fairgate_dashboard [status_uri];", a live page of the zones
 * for people: the tenants' service over time, the queue, the limits, what
 * was refused and why, the interactions and the engines.  The page is one
 * HTML file with its script and style inline (dashboard.html beside this
 * file, embedded by the generated _dashboard_page.c), so the module serves
 * it however nginx was built and the browser fetches nothing but the
 * status JSON it polls.  Here: the directive, and the handler that sends
 * the page with the status location's URI put in.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request.h"
#include "ngx_http_fairgate_status.h"


static ngx_int_t ngx_http_fairgate_dashboard_handler(ngx_http_request_t *r);
static ngx_buf_t *ngx_http_fairgate_dashboard_buf(ngx_http_request_t *r,
    ngx_str_t *s);


char *
ngx_http_fairgate_dashboard(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_fairgate_loc_conf_t  *flcf = conf;

    u_char                    *p, *last, *slash;
    ngx_str_t                 *value, uri;
    ngx_http_core_loc_conf_t  *clcf;

    if (flcf->dashboard.data) {
        return "is duplicate";
    }

    if (flcf->status) {
        return "cannot be in a location of \"fairgate_status\"";
    }

    value = cf->args->elts;

    /* the default: the location "status" beside the page's */
    ngx_str_set(&uri, "status");

    if (cf->args->nelts == 2) {
        uri = value[1];
    }

    /*
     * A path on the page's own server, absolute or relative to the page,
     * with no scheme (a colon before the first slash) and no host ("//"):
     * the page's policy lets it fetch nothing else.  It goes into an HTML
     * attribute as it is, so none of what would need escaping there.
     */

    last = uri.data + uri.len;
    slash = ngx_strlchr(uri.data, last, '/');

    for (p = uri.data; p < last; p++) {
        if (*p <= 0x20 || *p >= 0x7f || *p == '"' || *p == '\''
            || *p == '<' || *p == '>' || *p == '&' || *p == '\\'
            || (*p == ':' && (slash == NULL || p < slash)))
        {
            break;
        }
    }

    if (uri.len == 0 || p < last
        || (uri.len > 1 && uri.data[0] == '/' && uri.data[1] == '/'))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid URI \"%V\" in \"fairgate_dashboard\": "
                           "expected the path of a \"fairgate_status\" "
                           "location on this server, such as "
                           "\"/fairgate/status\"", &uri);
        return NGX_CONF_ERROR;
    }

    flcf->dashboard = uri;

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_fairgate_dashboard_handler;

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_fairgate_dashboard_handler(ngx_http_request_t *r)
{
    ngx_int_t                      rc;
    ngx_chain_t                    out[3];
    ngx_uint_t                     i;
    ngx_str_t                     *parts[3];
    ngx_http_fairgate_loc_conf_t  *flcf;

    static ngx_str_t  no_cache = ngx_string("no-cache");
    static ngx_str_t  nosniff = ngx_string("nosniff");
    static ngx_str_t  no_referrer = ngx_string("no-referrer");

    rc = ngx_http_fairgate_status_request(r);
    if (rc != NGX_OK) {
        return rc;
    }

    flcf = ngx_http_get_module_loc_conf(r, ngx_http_fairgate_module);

    /* the page polls the status JSON: always the page of this build */

    if (ngx_http_fairgate_add_header(r, "Cache-Control", no_cache.data,
                                     no_cache.len)
           != NGX_OK
        || ngx_http_fairgate_add_header(r, "Content-Security-Policy",
                                        ngx_http_fairgate_dashboard_csp.data,
                                        ngx_http_fairgate_dashboard_csp.len)
           != NGX_OK
        || ngx_http_fairgate_add_header(r, "X-Content-Type-Options",
                                        nosniff.data, nosniff.len)
           != NGX_OK
        || ngx_http_fairgate_add_header(r, "Referrer-Policy",
                                        no_referrer.data, no_referrer.len)
           != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    ngx_str_set(&r->headers_out.content_type, "text/html");
    ngx_str_set(&r->headers_out.charset, "utf-8");

    /* the page, with the status URI between its two parts */

    parts[0] = &ngx_http_fairgate_dashboard_head;
    parts[1] = &flcf->dashboard;
    parts[2] = &ngx_http_fairgate_dashboard_tail;

    for (i = 0; i < 3; i++) {
        out[i].buf = ngx_http_fairgate_dashboard_buf(r, parts[i]);
        if (out[i].buf == NULL) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }

        out[i].next = (i < 2) ? &out[i + 1] : NULL;
    }

    return ngx_http_fairgate_send_body(r, NGX_HTTP_OK, out);
}


/* bytes of the module or of the configuration: sent, never copied */

static ngx_buf_t *
ngx_http_fairgate_dashboard_buf(ngx_http_request_t *r, ngx_str_t *s)
{
    ngx_buf_t  *b;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NULL;
    }

    b->pos = s->data;
    b->last = s->data + s->len;
    b->memory = 1;

    return b;
}
