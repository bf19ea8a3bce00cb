
/*
 * fairgate: local mode's internals, shared by its files alone
 * (ngx_http_fairgate_local.h is its contract).
 */

#ifndef _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_


#include "ngx_http_fairgate_local.h"


/*
 * _engine.c: a request submitted (FG_SHM_OK, or why not), and forgotten:
 * nothing more of the engine's reaches it; cancel asks the engine to free
 * its sequence now
 */
ngx_int_t ngx_http_fairgate_engine_submit(ngx_http_fairgate_api_t *api);
void ngx_http_fairgate_engine_forget(ngx_http_fairgate_api_t *api,
    ngx_uint_t cancel);

/*
 * _logprobs.c: piece() keeps a piece of the next token's
 * log-probabilities (the engine sends them before the token); token()
 * gives them their bytes: for a stream, api->resp.lp set for the chunk
 * that goes next; for one body, kept; body() sets api->resp.lp to all of
 * them
 */
void ngx_http_fairgate_lp_piece(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
ngx_int_t ngx_http_fairgate_lp_token(ngx_http_fairgate_api_t *api,
    fg_shm_comp_t *ev);
ngx_int_t ngx_http_fairgate_lp_body(ngx_http_fairgate_api_t *api);

/* _route.c: the prompt's block hashes; when zoned, its candidates too */
ngx_int_t ngx_http_fairgate_route_prepare(ngx_http_fairgate_api_t *api,
    ngx_uint_t zoned);


#endif /* _NGX_HTTP_FAIRGATE_LOCAL_INT_H_INCLUDED_ */
