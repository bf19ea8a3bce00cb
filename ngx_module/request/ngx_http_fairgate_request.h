
/*
 * fairgate: a request's way through the module, and its context.
 *
 * The precontent handler (ngx_http_fairgate_handler.c) takes each request
 * of a "fairgate zone=..." location through these steps, in this order:
 *
 *   1. identify      who the tenant is: an API key, or variables
 *                    (ngx_http_fairgate_identify.c), and the interaction
 *                    its headers name (tenants/ngx_http_fairgate_interaction.c)
 *   2. parse         the body read and parsed: the token estimate of
 *                    drop-in mode (ngx_http_fairgate_parse.c), or local
 *                    mode's OpenAI request, tokenized (local/, through
 *                    ngx_http_fairgate_content.c)
 *   3. admit         the tenant's records, OIT and the rate limits, then
 *                    the scheduler (ngx_http_fairgate_admit.c)
 *   4. queue         dispatched at once by capacity, or parked until
 *                    another request's end makes room or it times out
 *                    (ngx_http_fairgate_queue.c, zone/)
 *   5. pass          on to the upstream (proxy_pass; its responses read by
 *                    ngx_http_fairgate_filter.c) or to the engine (local/)
 *   6. account       output tokens charged as they stream, and the request
 *                    settled and its capacity freed at its end, however it
 *                    ends (ngx_http_fairgate_account.c)
 *
 * A step that refuses the request answers it (ngx_http_fairgate_error.c)
 * and says so in ctx->phase.  Local mode's content handler
 * (ngx_http_fairgate_content.c) hands the request to local/ and hears
 * back from it through the request's report handler.
 *
 * This header is the contract of the request's steps for the module file
 * and status/; the context they hand down is context/'s, which is all that
 * tenants/ and balancer/ see of a request.  The steps' own entry points are
 * in ngx_http_fairgate_request_int.h.
 */

#ifndef _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_module.h"
#include "ngx_http_fairgate_http.h"
#include "ngx_http_fairgate_zone.h"
#include "ngx_http_fairgate_local.h"
#include "ngx_http_fairgate_ctx.h"


/* what the module registers: the precontent handler (_handler.c); local
 * mode's directive, whose content handler is _content.c's; fairgate_qoe
 * (_qoe.c); the response filters (_filter.c, _pace.c, _errors.c) */
ngx_int_t ngx_http_fairgate_handler(ngx_http_request_t *r);
char *ngx_http_fairgate_engine_pass(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_qoe(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
ngx_int_t ngx_http_fairgate_filter_init(ngx_conf_t *cf);
ngx_int_t ngx_http_fairgate_pace_init(ngx_conf_t *cf);
ngx_int_t ngx_http_fairgate_errors_init(ngx_conf_t *cf);

/* _pace.c: a stream's QoE as delivered, 0..1; -1: not measured */
double ngx_http_fairgate_pace_qoe(ngx_http_fairgate_pace_t *p);

/* _error.c: a step refuses the request (the parts that check it too) */
ngx_int_t ngx_http_fairgate_refuse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_outcome_e outcome,
    ngx_uint_t status, const char *type, const char *param,
    const char *code, const char *message, time_t retry_after);
ngx_int_t ngx_http_fairgate_refuse_header(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *code,
    const char *message);

/* _price.c: fairgate_price, fairgate_prices; a request's cost: the tokens
 * it is settled with, whether it is billed (served, its tokens counted),
 * its cost updated (NGX_DECLINED: no price applies); _account.c: settled,
 * with its usage checked */
char *ngx_http_fairgate_price(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_prices(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
char *ngx_http_fairgate_prices_merge(ngx_conf_t *cf,
    ngx_http_fairgate_loc_conf_t *prev, ngx_http_fairgate_loc_conf_t *conf);
void ngx_http_fairgate_tokens(ngx_http_fairgate_ctx_t *ctx, uint32_t *in,
    uint32_t *cached, uint32_t *out);
ngx_uint_t ngx_http_fairgate_billed(ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_price_update(ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_price_settle(ngx_http_fairgate_ctx_t *ctx);


#endif /* _NGX_HTTP_FAIRGATE_REQUEST_H_INCLUDED_ */
