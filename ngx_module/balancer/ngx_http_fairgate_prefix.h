
/*
 * fairgate: fairgate_prefix, an upstream balancer that sends a request to
 * the peer that has most likely seen the start of its prompt, as hash and
 * least_conn are balancers.
 *
 * The prompt's text (the request's message contents, prompt and
 * instructions, as drop-in mode's scan reads them: ctx->prompt) is cut
 * into blocks of block= bytes, each hashed with XXH3 seeded by the hash of
 * the block before it, so a block's hash names the whole prefix that ends
 * with it.  Each peer has an index of the block hashes of the prompts sent
 * to it (an rbtree and an LRU list in a shared zone, every worker's one
 * index), which is an approximation of what the peer's prefix cache holds.
 * A request goes to the peer with the longest run of its blocks indexed,
 * among the peers whose load is within imbalance= of the least loaded;
 * without a match, to the least loaded (round robin among equals).
 *
 *     ngx_http_fairgate_prefix_module.c  the module, its directive and
 *                                        variables, the upstream's set-up
 *     ngx_http_fairgate_prefix_index.c   the shared index: its zone, each
 *                                        peer's part, lookups and updates
 *     ngx_http_fairgate_prefix_peer.c    a request's hashes and its peer
 *
 * It is a second nginx module of the same shared object,
 * ngx_http_fairgate_prefix_module: a balancer keeps its configuration in
 * the upstream block, as nginx's own do.
 */

#ifndef _NGX_HTTP_FAIRGATE_PREFIX_H_INCLUDED_
#define _NGX_HTTP_FAIRGATE_PREFIX_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>


#define NGX_HTTP_FAIRGATE_PREFIX_BLOCK      64
#define NGX_HTTP_FAIRGATE_PREFIX_BLOCKS     128
#define NGX_HTTP_FAIRGATE_PREFIX_ENTRIES    16384
#define NGX_HTTP_FAIRGATE_PREFIX_IMBALANCE  8


/* a block hash indexed for a peer: slab-allocated, one chunk of 64 bytes */
typedef struct {
    ngx_rbtree_node_t                  node;     /* key: the hash */
    ngx_queue_t                        lru;      /* most recent first */
} ngx_http_fairgate_prefix_entry_t;


/*
 * A peer's part of the index, known by the peer's name (its address) and
 * which of the peers of that name it is, so that it outlives a reload
 * that reorders, adds or removes peers.  Never freed: a worker of an older
 * configuration may hold it still; a slot whose peer left is given, empty,
 * to a new peer.
 */
typedef struct {
    ngx_queue_t                        queue;    /* in the index's slots */
    ngx_rbtree_t                       rbtree;
    ngx_rbtree_node_t                  sentinel;
    ngx_queue_t                        lru;
    ngx_uint_t                         count;
    ngx_uint_t                         generation; /* last claimed in */
    ngx_uint_t                         occurrence;
    size_t                             name_len;
    u_char                             name[NGX_SOCKADDR_STRLEN];
} ngx_http_fairgate_prefix_slot_t;


/* the index, at the zone's shpool->data */
typedef struct {
    ngx_queue_t                        slots;
    ngx_uint_t                         nslots;
    ngx_uint_t                         generation; /* configurations */
    ngx_uint_t                         block;    /* its hashes' block size */
    ngx_uint_t                         entries;  /* the most a slot holds */
    ngx_uint_t                         evicted;
} ngx_http_fairgate_prefix_sh_t;


/* fairgate_prefix's settings, the upstream's server configuration */
typedef struct {
    ngx_uint_t                         block;
    ngx_uint_t                         blocks;
    ngx_uint_t                         entries;
    ngx_uint_t                         imbalance;

    ngx_http_upstream_srv_conf_t      *upstream;
    ngx_shm_zone_t                    *shm_zone; /* NULL: not configured */
    ngx_uint_t                         auto_zone;  /* sized by the peers */

    /* the peers' names, primary then backup, and their slots, which the
     * zone's init finds (in the master: the workers inherit them) */
    ngx_uint_t                         npeers;
    ngx_str_t                         *names;
    ngx_http_fairgate_prefix_slot_t  **slots;

    ngx_slab_pool_t                   *shpool;
    ngx_http_fairgate_prefix_sh_t     *sh;
} ngx_http_fairgate_prefix_conf_t;


typedef struct {
    size_t                             text;     /* the most prompt text
                                                    an upstream hashes */
} ngx_http_fairgate_prefix_main_conf_t;


/* a request's balancing: round robin's data first, which it extends */
typedef struct {
    ngx_http_upstream_rr_peer_data_t   rrp;
    ngx_http_fairgate_prefix_conf_t   *conf;
    ngx_http_upstream_rr_peers_t      *primary;
    uint64_t                          *hashes;
    ngx_uint_t                         nhashes;
    ngx_uint_t                        *match;    /* of each peer in a set */
    ngx_uint_t                         matched;  /* on the peer chosen */
} ngx_http_fairgate_prefix_peer_data_t;


/* _module.c */
size_t ngx_http_fairgate_prefix_text(ngx_http_request_t *r);

/* _index.c */
ngx_int_t ngx_http_fairgate_prefix_add_zone(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_str_t *name, ssize_t size);
ngx_int_t ngx_http_fairgate_prefix_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
ngx_uint_t ngx_http_fairgate_prefix_match(
    ngx_http_fairgate_prefix_slot_t *slot, uint64_t *hashes, ngx_uint_t n);
void ngx_http_fairgate_prefix_touch(ngx_http_fairgate_prefix_conf_t *pcf,
    ngx_http_fairgate_prefix_slot_t *slot, uint64_t *hashes, ngx_uint_t n);

/* _peer.c */
ngx_int_t ngx_http_fairgate_prefix_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);


extern ngx_module_t  ngx_http_fairgate_prefix_module;


#endif /* _NGX_HTTP_FAIRGATE_PREFIX_H_INCLUDED_ */
