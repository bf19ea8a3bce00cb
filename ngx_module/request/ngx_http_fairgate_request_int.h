
/*
 * fairgate: the steps of a request, as the handlers call them
 * (ngx_http_fairgate_request.h is the request's contract with the rest of
 * the module).
 */

#ifndef _NGX_HTTP_FAIRGATE_REQUEST_INT_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_REQUEST_INT_H_INCLUDED_


#include "ngx_http_fairgate_request.h"


/* _error.c: a bad request, 400 */
ngx_int_t ngx_http_fairgate_bad_request(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, const char *param, const char *code,
    const char *message);

/* 1. _identify.c */
ngx_int_t ngx_http_fairgate_identify(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);

/* 1. _qoe.c: the expectations, from the location and the headers */
ngx_int_t ngx_http_fairgate_qoe_read(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);

/* 2. _parse.c (drop-in mode), _content.c (local mode: local/ parses) */
ngx_int_t ngx_http_fairgate_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_http_fairgate_loc_conf_t *flcf);
ngx_int_t ngx_http_fairgate_local_parse(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);

/* 3. _admit.c */
ngx_int_t ngx_http_fairgate_admit(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);

/* 4. _queue.c: parked until dispatched (ctx->resume) or timed out */
void ngx_http_fairgate_park(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_resume(ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_resume_handler(ngx_event_t *ev);

/* 6. _account.c */
void ngx_http_fairgate_charge(ngx_http_fairgate_ctx_t *ctx, uint32_t n);
void ngx_http_fairgate_usage_check(ngx_http_fairgate_ctx_t *ctx);
void ngx_http_fairgate_cached(ngx_http_fairgate_ctx_t *ctx, uint32_t n);
void ngx_http_fairgate_release(void *data);
void ngx_http_fairgate_account_qoe(ngx_http_fairgate_ctx_t *ctx, double qoe);

/* 6. _price.c: tokens counted (the first's time, the cost so far); the
 * cost in a header, or asked for and sent in a trailer */
void ngx_http_fairgate_price_tokens(ngx_http_fairgate_ctx_t *ctx,
    uint32_t n);
ngx_int_t ngx_http_fairgate_price_header(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx);
ngx_int_t ngx_http_fairgate_price_trailer(ngx_http_request_t *r,
    ngx_http_fairgate_ctx_t *ctx, ngx_chain_t *in);


#endif /* _NGX_HTTP_FAIRGATE_REQUEST_INT_H_INCLUDED_ */
