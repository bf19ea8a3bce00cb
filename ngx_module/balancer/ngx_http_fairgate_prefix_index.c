
/*
 * fairgate: fairgate_prefix's shared index of the block hashes each peer
 * was sent.
 *
 * One zone an upstream, under the slab pool's mutex: a slot a peer, each
 * an rbtree of hashes and an LRU list (the most recent first) of at most
 * entries= of them.  A request's blocks are touched in its peer's slot
 * from the last to the first, so that the first blocks, which more
 * prompts share, are the last to go.  When the zone is full the largest
 * slot gives up its least recent hash.
 *
 * On reload the zone is taken over when its name and size stay: each peer
 * of the new configuration finds its slot by name, and keeps what it was
 * sent; a slot whose peer left is emptied and given to a new peer; a
 * change of block= empties them all, since the hashes no longer compare.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_prefix.h"


static ngx_int_t ngx_http_fairgate_prefix_create(ngx_shm_zone_t *shm_zone,
    ngx_slab_pool_t *shpool);
static ngx_int_t ngx_http_fairgate_prefix_claim(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_prefix_conf_t *pcf);
static ngx_uint_t ngx_http_fairgate_prefix_occurrence(
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_uint_t i);
static ngx_http_fairgate_prefix_slot_t *ngx_http_fairgate_prefix_find(
    ngx_http_fairgate_prefix_sh_t *sh, ngx_str_t *name, ngx_uint_t occurrence);
static ngx_http_fairgate_prefix_slot_t *ngx_http_fairgate_prefix_new_slot(
    ngx_slab_pool_t *shpool, ngx_http_fairgate_prefix_sh_t *sh);
static void ngx_http_fairgate_prefix_name_slot(
    ngx_http_fairgate_prefix_slot_t *slot, ngx_str_t *name,
    ngx_uint_t occurrence);
static void ngx_http_fairgate_prefix_empty(ngx_slab_pool_t *shpool,
    ngx_http_fairgate_prefix_slot_t *slot);
static ngx_http_fairgate_prefix_entry_t *ngx_http_fairgate_prefix_lookup(
    ngx_http_fairgate_prefix_slot_t *slot, uint64_t hash);
static ngx_http_fairgate_prefix_entry_t *ngx_http_fairgate_prefix_alloc(
    ngx_http_fairgate_prefix_conf_t *pcf);
static void ngx_http_fairgate_prefix_evict(ngx_slab_pool_t *shpool,
    ngx_http_fairgate_prefix_sh_t *sh, ngx_http_fairgate_prefix_slot_t *slot);


/* the zone of an upstream's index, named by zone= or after the upstream */

ngx_int_t
ngx_http_fairgate_prefix_add_zone(ngx_conf_t *cf,
    ngx_http_fairgate_prefix_conf_t *pcf, ngx_str_t *name, ssize_t size)
{
    ngx_shm_zone_t                   *shm_zone;
    ngx_http_fairgate_prefix_conf_t  *other;

    shm_zone = ngx_shared_memory_add(cf, name, size,
                                     &ngx_http_fairgate_prefix_module);
    if (shm_zone == NULL) {
        return NGX_ERROR;
    }

    other = shm_zone->data;

    if (other) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "fairgate_prefix zone \"%V\" is already the "
                           "index of upstream \"%V\"",
                           name, &other->upstream->host);
        return NGX_ERROR;
    }

    shm_zone->init = ngx_http_fairgate_prefix_init_zone;
    shm_zone->data = pcf;

    pcf->shm_zone = shm_zone;

    return NGX_OK;
}


/*
 * In the master, once the configuration is read: the index made or taken
 * over, and each peer's slot found; the workers inherit pcf->slots.
 */

ngx_int_t
ngx_http_fairgate_prefix_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_int_t                         rc;
    ngx_queue_t                      *q;
    ngx_slab_pool_t                  *shpool;
    ngx_http_fairgate_prefix_sh_t    *sh;
    ngx_http_fairgate_prefix_conf_t  *pcf;

    pcf = shm_zone->data;
    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (data == NULL && !shm_zone->shm.exists) {
        if (ngx_http_fairgate_prefix_create(shm_zone, shpool) != NGX_OK) {
            return NGX_ERROR;
        }
    }

    sh = shpool->data;

    pcf->shpool = shpool;
    pcf->sh = sh;

    ngx_shmtx_lock(&shpool->mutex);

    if (sh->block != pcf->block) {
        if (sh->block) {
            ngx_log_error(NGX_LOG_NOTICE, shm_zone->shm.log, 0,
                          "fairgate_prefix zone \"%V\" emptied: block "
                          "changed from %ui to %ui",
                          &shm_zone->shm.name, sh->block, pcf->block);
        }

        for (q = ngx_queue_head(&sh->slots);
             q != ngx_queue_sentinel(&sh->slots);
             q = ngx_queue_next(q))
        {
            ngx_http_fairgate_prefix_empty(shpool,
                ngx_queue_data(q, ngx_http_fairgate_prefix_slot_t, queue));
        }

        sh->block = pcf->block;
    }

    sh->entries = pcf->entries;

    rc = ngx_http_fairgate_prefix_claim(shm_zone, pcf);

    ngx_shmtx_unlock(&shpool->mutex);

    return rc;
}


static ngx_int_t
ngx_http_fairgate_prefix_create(ngx_shm_zone_t *shm_zone,
    ngx_slab_pool_t *shpool)
{
    size_t                          len;
    ngx_http_fairgate_prefix_sh_t  *sh;

    sh = ngx_slab_calloc(shpool, sizeof(ngx_http_fairgate_prefix_sh_t));
    if (sh == NULL) {
        return NGX_ERROR;
    }

    ngx_queue_init(&sh->slots);
    shpool->data = sh;

    /* the index makes room by itself: running out is no news */
    shpool->log_nomem = 0;

    len = sizeof(" in fairgate_prefix zone \"\"") + shm_zone->shm.name.len;

    shpool->log_ctx = ngx_slab_alloc(shpool, len);
    if (shpool->log_ctx == NULL) {
        return NGX_ERROR;
    }

    ngx_sprintf(shpool->log_ctx, " in fairgate_prefix zone \"%V\"%Z",
                &shm_zone->shm.name);

    return NGX_OK;
}


/*
 * Each peer's slot: the one of its name (the n-th of that name, when
 * several peers share one), else one whose peer is in this configuration
 * no more, emptied, else a new one.
 */

static ngx_int_t
ngx_http_fairgate_prefix_claim(ngx_shm_zone_t *shm_zone,
    ngx_http_fairgate_prefix_conf_t *pcf)
{
    ngx_uint_t                        i, occurrence, generation;
    ngx_queue_t                      *q;
    ngx_http_fairgate_prefix_sh_t    *sh;
    ngx_http_fairgate_prefix_slot_t  *slot;

    sh = pcf->sh;
    generation = ++sh->generation;

    for (i = 0; i < pcf->npeers; i++) {
        occurrence = ngx_http_fairgate_prefix_occurrence(pcf, i);
        slot = ngx_http_fairgate_prefix_find(sh, &pcf->names[i], occurrence);

        if (slot) {
            slot->generation = generation;
            pcf->slots[i] = slot;
        }
    }

    q = ngx_queue_head(&sh->slots);

    for (i = 0; i < pcf->npeers; i++) {
        if (pcf->slots[i]) {
            continue;
        }

        /* a slot of an older configuration's peer, else a new one */

        slot = NULL;

        for ( /* void */ ; q != ngx_queue_sentinel(&sh->slots);
             q = ngx_queue_next(q))
        {
            slot = ngx_queue_data(q, ngx_http_fairgate_prefix_slot_t, queue);

            if (slot->generation != generation) {
                ngx_http_fairgate_prefix_empty(pcf->shpool, slot);
                break;
            }

            slot = NULL;
        }

        if (slot == NULL) {
            slot = ngx_http_fairgate_prefix_new_slot(pcf->shpool, sh);

            if (slot == NULL) {
                ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                              "fairgate_prefix zone \"%V\" is too small "
                              "for %ui peers", &shm_zone->shm.name,
                              pcf->npeers);
                return NGX_ERROR;
            }
        }

        occurrence = ngx_http_fairgate_prefix_occurrence(pcf, i);
        ngx_http_fairgate_prefix_name_slot(slot, &pcf->names[i], occurrence);
        slot->generation = generation;
        pcf->slots[i] = slot;
    }

    return NGX_OK;
}


/* which of the peers of its name peer i is: 0 for the first */

static ngx_uint_t
ngx_http_fairgate_prefix_occurrence(ngx_http_fairgate_prefix_conf_t *pcf,
    ngx_uint_t i)
{
    ngx_uint_t  j, n;

    n = 0;

    for (j = 0; j < i; j++) {
        n += (pcf->names[j].len == pcf->names[i].len
              && ngx_strncmp(pcf->names[j].data, pcf->names[i].data,
                             pcf->names[i].len) == 0);
    }

    return n;
}


static ngx_http_fairgate_prefix_slot_t *
ngx_http_fairgate_prefix_find(ngx_http_fairgate_prefix_sh_t *sh,
    ngx_str_t *name, ngx_uint_t occurrence)
{
    ngx_queue_t                      *q;
    ngx_http_fairgate_prefix_slot_t  *slot;

    for (q = ngx_queue_head(&sh->slots);
         q != ngx_queue_sentinel(&sh->slots);
         q = ngx_queue_next(q))
    {
        slot = ngx_queue_data(q, ngx_http_fairgate_prefix_slot_t, queue);

        if (slot->occurrence == occurrence
            && slot->name_len == ngx_min(name->len, NGX_SOCKADDR_STRLEN)
            && ngx_strncmp(slot->name, name->data, slot->name_len) == 0)
        {
            return slot;
        }
    }

    return NULL;
}


static ngx_http_fairgate_prefix_slot_t *
ngx_http_fairgate_prefix_new_slot(ngx_slab_pool_t *shpool,
    ngx_http_fairgate_prefix_sh_t *sh)
{
    ngx_http_fairgate_prefix_slot_t  *slot;

    slot = ngx_slab_calloc_locked(shpool,
                                  sizeof(ngx_http_fairgate_prefix_slot_t));
    if (slot == NULL) {
        return NULL;
    }

    ngx_rbtree_init(&slot->rbtree, &slot->sentinel,
                    ngx_rbtree_insert_value);
    ngx_queue_init(&slot->lru);
    ngx_queue_insert_tail(&sh->slots, &slot->queue);
    sh->nslots++;

    return slot;
}


static void
ngx_http_fairgate_prefix_name_slot(ngx_http_fairgate_prefix_slot_t *slot,
    ngx_str_t *name, ngx_uint_t occurrence)
{
    slot->name_len = ngx_min(name->len, NGX_SOCKADDR_STRLEN);
    ngx_memcpy(slot->name, name->data, slot->name_len);
    slot->occurrence = occurrence;
}


static void
ngx_http_fairgate_prefix_empty(ngx_slab_pool_t *shpool,
    ngx_http_fairgate_prefix_slot_t *slot)
{
    ngx_queue_t                       *q;
    ngx_http_fairgate_prefix_entry_t  *e;

    while (!ngx_queue_empty(&slot->lru)) {
        q = ngx_queue_last(&slot->lru);
        e = ngx_queue_data(q, ngx_http_fairgate_prefix_entry_t, lru);

        ngx_queue_remove(q);
        ngx_rbtree_delete(&slot->rbtree, &e->node);
        ngx_slab_free_locked(shpool, e);
    }

    slot->count = 0;
}


/*
 * How many of a request's blocks, from the first, the slot holds: the
 * prefix its peer was sent before.  What a slot holds of a chain of blocks
 * is always a prefix of it: a block's hash names its whole prefix, so every
 * request that touched a block touched the blocks before it too, and
 * later (the touch goes from the last block to the first), and the LRU
 * list gives up the later blocks first.  So the run is found by bisection,
 * in log2(n) lookups.  Under the zone's mutex.
 */

ngx_uint_t
ngx_http_fairgate_prefix_match(ngx_http_fairgate_prefix_slot_t *slot,
    uint64_t *hashes, ngx_uint_t n)
{
    ngx_uint_t  lo, hi, mid;

    lo = 0;
    hi = n;

    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;

        if (ngx_http_fairgate_prefix_lookup(slot, hashes[mid - 1])) {
            lo = mid;

        } else {
            hi = mid - 1;
        }
    }

    return lo;
}


/*
 * The request went to the slot's peer: its blocks become the slot's most
 * recent, the first block most recent of all.  Under the zone's mutex.
 */

void
ngx_http_fairgate_prefix_touch(ngx_http_fairgate_prefix_conf_t *pcf,
    ngx_http_fairgate_prefix_slot_t *slot, uint64_t *hashes, ngx_uint_t n)
{
    ngx_http_fairgate_prefix_sh_t     *sh;
    ngx_http_fairgate_prefix_entry_t  *e;

    sh = pcf->sh;

    while (n--) {
        e = ngx_http_fairgate_prefix_lookup(slot, hashes[n]);

        if (e) {
            ngx_queue_remove(&e->lru);
            ngx_queue_insert_head(&slot->lru, &e->lru);
            continue;
        }

        /* "while": a reload may have lowered entries= */

        while (slot->count >= sh->entries) {
            ngx_http_fairgate_prefix_evict(pcf->shpool, sh, slot);
        }

        e = ngx_http_fairgate_prefix_alloc(pcf);
        if (e == NULL) {
            return;
        }

        e->node.key = (ngx_rbtree_key_t) hashes[n];
        ngx_rbtree_insert(&slot->rbtree, &e->node);
        ngx_queue_insert_head(&slot->lru, &e->lru);
        slot->count++;
    }
}


static ngx_http_fairgate_prefix_entry_t *
ngx_http_fairgate_prefix_lookup(ngx_http_fairgate_prefix_slot_t *slot,
    uint64_t hash)
{
    ngx_rbtree_key_t    key;
    ngx_rbtree_node_t  *node, *sentinel;

    key = (ngx_rbtree_key_t) hash;
    node = slot->rbtree.root;
    sentinel = slot->rbtree.sentinel;

    while (node != sentinel) {
        if (key == node->key) {
            return (ngx_http_fairgate_prefix_entry_t *) node;
        }

        node = (key < node->key) ? node->left : node->right;
    }

    return NULL;
}


/* an entry; when the zone is full, the largest slot's least recent goes */

static ngx_http_fairgate_prefix_entry_t *
ngx_http_fairgate_prefix_alloc(ngx_http_fairgate_prefix_conf_t *pcf)
{
    ngx_queue_t                       *q;
    ngx_http_fairgate_prefix_slot_t   *slot, *largest;
    ngx_http_fairgate_prefix_entry_t  *e;

    for ( ;; ) {
        e = ngx_slab_alloc_locked(pcf->shpool,
                                  sizeof(ngx_http_fairgate_prefix_entry_t));
        if (e) {
            return e;
        }

        largest = NULL;

        for (q = ngx_queue_head(&pcf->sh->slots);
             q != ngx_queue_sentinel(&pcf->sh->slots);
             q = ngx_queue_next(q))
        {
            slot = ngx_queue_data(q, ngx_http_fairgate_prefix_slot_t, queue);

            if (largest == NULL || slot->count > largest->count) {
                largest = slot;
            }
        }

        if (largest == NULL || largest->count == 0) {
            return NULL;
        }

        ngx_http_fairgate_prefix_evict(pcf->shpool, pcf->sh, largest);
    }
}


static void
ngx_http_fairgate_prefix_evict(ngx_slab_pool_t *shpool,
    ngx_http_fairgate_prefix_sh_t *sh, ngx_http_fairgate_prefix_slot_t *slot)
{
    ngx_queue_t                       *q;
    ngx_http_fairgate_prefix_entry_t  *e;

    if (ngx_queue_empty(&slot->lru)) {
        return;
    }

    q = ngx_queue_last(&slot->lru);
    e = ngx_queue_data(q, ngx_http_fairgate_prefix_entry_t, lru);

    ngx_queue_remove(q);
    ngx_rbtree_delete(&slot->rbtree, &e->node);
    ngx_slab_free_locked(shpool, e);

    slot->count--;
    sh->evicted++;
}
