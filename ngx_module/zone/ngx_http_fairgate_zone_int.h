
/*
 * fairgate: the zone's internals, shared by its own files
 * (ngx_http_fairgate_zone.h is its contract).
 */

#ifndef _NGX_HTTP_FAIRGATE_ZONE_INT_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_ZONE_INT_H_INCLUDED_


#include "ngx_http_fairgate_zone.h"


/* a node's fg_request_t is its first member */
#define ngx_http_fairgate_node(req)                                           \
    ((ngx_http_fairgate_node_t *) (req))


/*
 * _engines.c: a request's engines bound to the zone's slots and its
 * hashes copied in (NGX_ERROR: no slot or memory left), and let go; the
 * policy core's questions for one dispatch; a dispatched request's seat
 * on its engine taken and given back
 */
ngx_int_t ngx_http_fairgate_engines_bind_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node, ngx_http_fairgate_candidate_t *cand,
    ngx_uint_t n, uint64_t *hashes, uint32_t n_hashes, uint32_t block_size);
void ngx_http_fairgate_engines_unbind_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);
void ngx_http_fairgate_engines_init(ngx_http_fairgate_zone_t *zone,
    fg_sched_engines_t *engines);
void ngx_http_fairgate_engines_start_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);
void ngx_http_fairgate_engines_end_locked(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_node_t *node);


#endif /* _NGX_HTTP_FAIRGATE_ZONE_INT_H_INCLUDED_ */
