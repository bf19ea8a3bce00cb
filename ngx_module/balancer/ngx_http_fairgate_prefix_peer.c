
/*
 * fairgate: fairgate_prefix's choice of a request's peer.
 *
 * At the request's start its prompt's blocks are hashed, once.  Each try
 * (proxy_next_upstream may make several) takes the peers as round robin
 * keeps them, and those a try may use as least_conn does (not down, not
 * failed max_fails times within fail_timeout, under max_conns, not tried
 * yet by this request): the least load among them, load being active
 * requests over weight; of the peers within imbalance of it, the one whose
 * index holds the longest run of the request's blocks; ties go to the less
 * loaded, then by smooth weighted round robin.  No usable primary peer:
 * the backup peers, the same way.  The chosen peer's slot is then told the
 * request's blocks.  The zone's mutex is held across the choice, so that
 * two workers do not both see a peer as the one that matches and is free.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "fg_hash.h"
#include "ngx_http_fairgate_ctx.h"
#include "ngx_http_fairgate_prefix.h"


#define NGX_HTTP_FAIRGATE_PREFIX_SKIP  ((ngx_uint_t) -1)


/* whether a's load (active requests over weight) is below b's */
#define ngx_http_fairgate_prefix_less(a, b)                                   \
    ((a)->conns * (b)->weight < (b)->conns * (a)->weight)

#define ngx_http_fairgate_prefix_same(a, b)                                   \
    ((a)->conns * (b)->weight == (b)->conns * (a)->weight)


static void ngx_http_fairgate_prefix_hash(ngx_http_request_t *r,
    ngx_http_fairgate_prefix_peer_data_t *pd);
static ngx_int_t ngx_http_fairgate_prefix_get_peer(ngx_peer_connection_t *pc,
    void *data);
static ngx_int_t ngx_http_fairgate_prefix_backup(ngx_peer_connection_t *pc,
    ngx_http_fairgate_prefix_peer_data_t *pd);
static ngx_http_upstream_rr_peer_t *ngx_http_fairgate_prefix_choose(
    ngx_http_fairgate_prefix_peer_data_t *pd, ngx_uint_t base, ngx_uint_t *p);
static ngx_http_upstream_rr_peer_t *ngx_http_fairgate_prefix_least(
    ngx_http_upstream_rr_peer_data_t *rrp, time_t now);
static ngx_http_upstream_rr_peer_t *ngx_http_fairgate_prefix_tie(
    ngx_http_fairgate_prefix_peer_data_t *pd, ngx_http_upstream_rr_peer_t *best,
    ngx_uint_t *p);
static ngx_uint_t ngx_http_fairgate_prefix_usable(
    ngx_http_upstream_rr_peer_data_t *rrp, ngx_http_upstream_rr_peer_t *peer,
    ngx_uint_t i, time_t now);


ngx_int_t
ngx_http_fairgate_prefix_init_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_uint_t                             n;
    ngx_http_upstream_rr_peers_t          *peers;
    ngx_http_fairgate_prefix_peer_data_t  *pd;

    pd = ngx_pcalloc(r->pool, sizeof(ngx_http_fairgate_prefix_peer_data_t));
    if (pd == NULL) {
        return NGX_ERROR;
    }

    /* round robin fills its part of ours */
    r->upstream->peer.data = &pd->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    r->upstream->peer.get = ngx_http_fairgate_prefix_get_peer;

    pd->conf = ngx_http_conf_upstream_srv_conf(us,
                                               ngx_http_fairgate_prefix_module);
    pd->primary = pd->rrp.peers;

    peers = pd->primary;
    n = ngx_max(peers->number, (peers->next ? peers->next->number : 0));

    pd->match = ngx_palloc(r->pool, n * sizeof(ngx_uint_t));
    if (pd->match == NULL) {
        return NGX_ERROR;
    }

    ngx_http_fairgate_prefix_hash(r, pd);

    ngx_http_set_ctx(r, pd, ngx_http_fairgate_prefix_module);

    return NGX_OK;
}


/*
 * The chained hashes of the prompt's full blocks, at most blocks= of them:
 * a block's hash is seeded with the one before it.  None without a prompt
 * (no fairgate in the location, not a POST, too short).
 */

static void
ngx_http_fairgate_prefix_hash(ngx_http_request_t *r,
    ngx_http_fairgate_prefix_peer_data_t *pd)
{
    u_char                           *p;
    uint64_t                          h;
    ngx_uint_t                        i, n;
    ngx_http_fairgate_ctx_t          *ctx;
    ngx_http_fairgate_prefix_conf_t  *pcf;

    pcf = pd->conf;
    ctx = ngx_http_fairgate_get_ctx(r);

    if (ctx == NULL || ctx->prompt.len < pcf->block) {
        return;
    }

    n = ngx_min(ctx->prompt.len / pcf->block, pcf->blocks);

    pd->hashes = ngx_palloc(r->pool, n * sizeof(uint64_t));
    if (pd->hashes == NULL) {
        return;
    }

    p = ctx->prompt.data;
    h = 0;

    for (i = 0; i < n; i++) {
        h = XXH3_64bits_withSeed(p, pcf->block, h);
        pd->hashes[i] = h;
        p += pcf->block;
    }

    pd->nhashes = n;
}


static ngx_int_t
ngx_http_fairgate_prefix_get_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_fairgate_prefix_peer_data_t  *pd = data;

    uintptr_t                         m;
    ngx_uint_t                        p, base, index;
    ngx_http_upstream_rr_peer_t      *best;
    ngx_http_upstream_rr_peers_t     *peers;
    ngx_http_fairgate_prefix_conf_t  *pcf;

    if (pd->rrp.peers->single) {
        return ngx_http_upstream_get_round_robin_peer(pc, &pd->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    pcf = pd->conf;
    peers = pd->rrp.peers;
    p = 0;
    base = (peers == pd->primary) ? 0 : pd->primary->number;
    index = (pd->nhashes > 0);

    if (index) {
        ngx_shmtx_lock(&pcf->shpool->mutex);
    }

    ngx_http_upstream_rr_peers_wlock(peers);

    best = ngx_http_fairgate_prefix_choose(pd, base, &p);

    if (best == NULL) {
        ngx_http_upstream_rr_peers_unlock(peers);

        if (index) {
            ngx_shmtx_unlock(&pcf->shpool->mutex);
        }

        return ngx_http_fairgate_prefix_backup(pc, pd);
    }

    pc->sockaddr = best->sockaddr;
    pc->socklen = best->socklen;
    pc->name = &best->name;

    best->conns++;

    if (ngx_time() - best->checked > best->fail_timeout) {
        best->checked = ngx_time();
    }

    pd->rrp.current = best;

    m = (uintptr_t) 1 << p % (8 * sizeof(uintptr_t));
    pd->rrp.tried[p / (8 * sizeof(uintptr_t))] |= m;

    ngx_http_upstream_rr_peers_unlock(peers);

    if (index) {
        ngx_http_fairgate_prefix_touch(pcf, pcf->slots[base + p], pd->hashes,
                                       pd->nhashes);
        ngx_shmtx_unlock(&pcf->shpool->mutex);
    }

    return NGX_OK;
}


/* no primary peer may take the request: the backup peers, if any */

static ngx_int_t
ngx_http_fairgate_prefix_backup(ngx_peer_connection_t *pc,
    ngx_http_fairgate_prefix_peer_data_t *pd)
{
    ngx_int_t                      rc;
    ngx_uint_t                     i, n;
    ngx_http_upstream_rr_peer_t   *peer;
    ngx_http_upstream_rr_peers_t  *peers;

    peers = pd->rrp.peers;

    if (peers->next) {
        pd->rrp.peers = peers->next;

        n = (peers->next->number + (8 * sizeof(uintptr_t) - 1))
            / (8 * sizeof(uintptr_t));

        for (i = 0; i < n; i++) {
            pd->rrp.tried[i] = 0;
        }

        rc = ngx_http_fairgate_prefix_get_peer(pc, pd);

        if (rc != NGX_BUSY) {
            return rc;
        }
    }

    /* every peer failed: all are taken back at once, as round robin does */

    ngx_http_upstream_rr_peers_wlock(peers);

    for (peer = peers->peer; peer; peer = peer->next) {
        peer->fails = 0;
    }

    ngx_http_upstream_rr_peers_unlock(peers);

    pc->name = peers->name;

    return NGX_BUSY;
}


/*
 * The peer of the set (base: its first peer's place among all) that takes
 * the request, and its place in the set; NULL when none may.  Under the
 * peers' lock, and the zone's when the request has blocks.
 */

static ngx_http_upstream_rr_peer_t *
ngx_http_fairgate_prefix_choose(ngx_http_fairgate_prefix_peer_data_t *pd,
    ngx_uint_t base, ngx_uint_t *p)
{
    time_t                            now;
    ngx_uint_t                        i, m, many, bm;
    ngx_http_upstream_rr_peer_t      *peer, *least, *best;
    ngx_http_fairgate_prefix_conf_t  *pcf;

    pcf = pd->conf;
    now = ngx_time();

    least = ngx_http_fairgate_prefix_least(&pd->rrp, now);

    if (least == NULL) {
        return NULL;
    }

    best = NULL;
    bm = 0;
    many = 0;

    for (peer = pd->rrp.peers->peer, i = 0; peer; peer = peer->next, i++) {

        pd->match[i] = NGX_HTTP_FAIRGATE_PREFIX_SKIP;

        /* conns / weight - least's > imbalance, in integers */

        if (!ngx_http_fairgate_prefix_usable(&pd->rrp, peer, i, now)
            || peer->conns * least->weight
               > (least->conns + pcf->imbalance * least->weight)
                 * peer->weight)
        {
            continue;
        }

        m = pd->nhashes ? ngx_http_fairgate_prefix_match(pcf->slots[base + i],
                                                         pd->hashes,
                                                         pd->nhashes)
                        : 0;
        pd->match[i] = m;

        if (best == NULL || m > bm
            || (m == bm && ngx_http_fairgate_prefix_less(peer, best)))
        {
            best = peer;
            bm = m;
            *p = i;
            many = 0;

        } else if (m == bm && ngx_http_fairgate_prefix_same(peer, best)) {
            many = 1;
        }
    }

    if (many) {
        best = ngx_http_fairgate_prefix_tie(pd, best, p);
    }

    pd->matched = bm;

    return best;
}


/* the least loaded peer that may take the request, NULL when none may */

static ngx_http_upstream_rr_peer_t *
ngx_http_fairgate_prefix_least(ngx_http_upstream_rr_peer_data_t *rrp,
    time_t now)
{
    ngx_uint_t                    i;
    ngx_http_upstream_rr_peer_t  *peer, *least;

    least = NULL;

    for (peer = rrp->peers->peer, i = 0; peer; peer = peer->next, i++) {
        if (ngx_http_fairgate_prefix_usable(rrp, peer, i, now)
            && (least == NULL || ngx_http_fairgate_prefix_less(peer, least)))
        {
            least = peer;
        }
    }

    return least;
}


/*
 * Several peers match as long and are as loaded as best (the first of
 * them, at *p): smooth weighted round robin among them.
 */

static ngx_http_upstream_rr_peer_t *
ngx_http_fairgate_prefix_tie(ngx_http_fairgate_prefix_peer_data_t *pd,
    ngx_http_upstream_rr_peer_t *best, ngx_uint_t *p)
{
    ngx_int_t                     total;
    ngx_uint_t                    i, bm;
    ngx_http_upstream_rr_peer_t  *peer, *first;

    first = best;
    bm = pd->match[*p];
    total = 0;

    for (peer = first, i = *p; peer; peer = peer->next, i++) {

        if (pd->match[i] != bm || !ngx_http_fairgate_prefix_same(peer, first))
        {
            continue;
        }

        peer->current_weight += peer->effective_weight;
        total += peer->effective_weight;

        if (peer->effective_weight < peer->weight) {
            peer->effective_weight++;
        }

        if (peer->current_weight > best->current_weight) {
            best = peer;
            *p = i;
        }
    }

    best->current_weight -= total;

    return best;
}


static ngx_uint_t
ngx_http_fairgate_prefix_usable(ngx_http_upstream_rr_peer_data_t *rrp,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t i, time_t now)
{
    uintptr_t  m;

    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

    if (rrp->tried[i / (8 * sizeof(uintptr_t))] & m) {
        return 0;
    }

    if (peer->down) {
        return 0;
    }

    if (peer->max_fails
        && peer->fails >= peer->max_fails
        && now - peer->checked <= peer->fail_timeout)
    {
        return 0;
    }

    if (peer->max_conns && peer->conns >= peer->max_conns) {
        return 0;
    }

    return 1;
}
