
/*
 * fairgate: a step of a request refuses it.  The answer is an error in
 * OpenAI's shape (http/ngx_http_fairgate_http.c sends it); the request's
 * context says it was refused, and why, for $fairgate_outcome and the
 * handler, which finalizes the request with what sending returned.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_request_int.h"


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

    ngx_log_debug4(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "fairgate refuse: tenant \"%V\" status %ui %s: %s",
                   &ctx->user, status, code ? code : type, message);

    return ngx_http_fairgate_send_error(r, status, type, param, code, message,
                                        retry_after);
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

    return ngx_http_fairgate_bad_request(r, ctx, param, code, message);
}


/* a bad request: 400, as OpenAI names a bad field (param, or NULL) */

ngx_int_t
ngx_http_fairgate_bad_request(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *code,
    const char *message)
{
    return ngx_http_fairgate_refuse(r, ctx, NGX_HTTP_FAIRGATE_BAD_REQUEST,
                                    NGX_HTTP_BAD_REQUEST,
                                    "invalid_request_error", param, code,
                                    message, 0);
}
