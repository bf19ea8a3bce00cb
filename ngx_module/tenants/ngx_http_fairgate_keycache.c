
/*
 * fairgate: the keys a gateway knows of those kept in Redis, in a shared
 * memory zone of their own ("fairgate_keys redis cache=SIZE"), so that
 * every worker finds a key another one looked up.
 *
 * A red-black tree by digest and a queue in the order of use: a key found
 * moves to the queue's head; when the zone is full the least recently
 * used keys leave it (they are looked up again in Redis if they come
 * back).  Only the keys in use are held, however many Redis keeps.  A
 * revoked key is held as such, so that its requests are refused without
 * asking Redis again (a key once revoked is never valid again).  The zone
 * also keeps where this gateway stands in the stream of key changes
 * (ngx_http_fairgate_keystore.c): until that is known nothing is held, so
 * that no change can be missed between a lookup and the first poll.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_tenants.h"


/* a key's strings, as a node keeps them: user, app, models, quota, budget */
#define NGX_HTTP_FAIRGATE_KEYCACHE_STRS  5


typedef struct {
    ngx_rbtree_node_t            node;       /* key: the digest's start */
    ngx_queue_t                  queue;
    u_char                       digest[32];
    double                       weight;
    double                       priority;
    ngx_uint_t                   rpm;
    ngx_uint_t                   tpm;
    u_short                      len[NGX_HTTP_FAIRGATE_KEYCACHE_STRS];
    u_char                       revoked;
    u_char                       nrules;     /* the quota and budget read */
    u_char                       data[1];    /* the rules (fg_quota_rule_t),
                                                then the strings in turn */
} ngx_http_fairgate_keycache_node_t;


static void ngx_http_fairgate_keycache_strs(ngx_http_fairgate_key_t *key,
    ngx_str_t **str);
static ngx_int_t ngx_http_fairgate_keycache_init(ngx_shm_zone_t *shm_zone,
    void *data);
static void ngx_http_fairgate_keycache_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel);
static ngx_http_fairgate_keycache_node_t *ngx_http_fairgate_keycache_lookup(
    ngx_http_fairgate_keycache_t *kc, u_char *digest);
static void ngx_http_fairgate_keycache_free(ngx_http_fairgate_keycache_t *kc,
    ngx_http_fairgate_keycache_node_t *kn);


#define ngx_http_fairgate_keycache_hash(d)                                    \
    ((ngx_rbtree_key_t) ((uint32_t) (d)[0] << 24 | (uint32_t) (d)[1] << 16    \
                         | (uint32_t) (d)[2] << 8 | (d)[3]))


ngx_int_t
ngx_http_fairgate_keycache_add(ngx_conf_t *cf, ngx_http_fairgate_keys_t *keys,
    size_t size)
{
    ngx_str_t                      name;
    ngx_http_fairgate_keycache_t  *kc;

    kc = ngx_pcalloc(cf->pool, sizeof(ngx_http_fairgate_keycache_t));
    if (kc == NULL) {
        return NGX_ERROR;
    }

    ngx_str_set(&name, "fairgate_keys");

    keys->shm_zone = ngx_shared_memory_add(cf, &name, size,
                                           &ngx_http_fairgate_module);
    if (keys->shm_zone == NULL) {
        return NGX_ERROR;
    }

    if (keys->shm_zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"fairgate_keys redis\" is given a cache twice");
        return NGX_ERROR;
    }

    keys->shm_zone->init = ngx_http_fairgate_keycache_init;
    keys->shm_zone->data = kc;

    return NGX_OK;
}


static ngx_int_t
ngx_http_fairgate_keycache_init(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_fairgate_keycache_t  *okc = data;

    ngx_http_fairgate_keycache_t  *kc;

    kc = shm_zone->data;

    if (okc) {
        /* a reload: the keys known stay known */
        kc->sh = okc->sh;
        kc->shpool = okc->shpool;
        return NGX_OK;
    }

    kc->shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (shm_zone->shm.exists) {
        kc->sh = kc->shpool->data;
        return NGX_OK;
    }

    kc->sh = ngx_slab_calloc(kc->shpool,
                             sizeof(ngx_http_fairgate_keycache_sh_t));
    if (kc->sh == NULL) {
        return NGX_ERROR;
    }

    kc->shpool->data = kc->sh;

    ngx_rbtree_init(&kc->sh->rbtree, &kc->sh->sentinel,
                    ngx_http_fairgate_keycache_insert);
    ngx_queue_init(&kc->sh->lru);

    kc->shpool->log_nomem = 0;

    return NGX_OK;
}


static void
ngx_http_fairgate_keycache_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t                  **p;
    ngx_http_fairgate_keycache_node_t   *kn, *kt;

    for ( ;; ) {

        if (node->key != temp->key) {
            p = (node->key < temp->key) ? &temp->left : &temp->right;

        } else {
            kn = (ngx_http_fairgate_keycache_node_t *) node;
            kt = (ngx_http_fairgate_keycache_node_t *) temp;

            p = (ngx_memcmp(kn->digest, kt->digest, 32) < 0)
                ? &temp->left : &temp->right;
        }

        if (*p == sentinel) {
            break;
        }

        temp = *p;
    }

    *p = node;
    node->parent = temp;
    node->left = sentinel;
    node->right = sentinel;
    ngx_rbt_red(node);
}


/*
 * A key held: copied into the pool (the zone's copy may leave it any
 * time), moved to the head of the queue.  NGX_DECLINED: not held (*changes:
 * the changes applied so far, for ngx_http_fairgate_keycache_put());
 * NGX_ABORT: held as revoked.
 */

ngx_int_t
ngx_http_fairgate_keycache_get(ngx_http_fairgate_keycache_t *kc,
    u_char *digest, ngx_pool_t *pool, ngx_http_fairgate_key_lookup_t *lk,
    ngx_uint_t *changes)
{
    u_char                             *p;
    size_t                              n, r;
    ngx_int_t                           rc;
    ngx_str_t                          *str[NGX_HTTP_FAIRGATE_KEYCACHE_STRS];
    ngx_uint_t                          i;
    ngx_http_fairgate_key_t            *key;
    ngx_http_fairgate_keycache_node_t  *kn;

    key = &lk->key;

    ngx_shmtx_lock(&kc->shpool->mutex);

    kn = ngx_http_fairgate_keycache_lookup(kc, digest);
    *changes = kc->sh->changes;

    if (kn == NULL || kn->revoked) {
        ngx_shmtx_unlock(&kc->shpool->mutex);
        return kn ? NGX_ABORT : NGX_DECLINED;
    }

    ngx_queue_remove(&kn->queue);
    ngx_queue_insert_head(&kc->sh->lru, &kn->queue);

    r = kn->nrules * sizeof(fg_quota_rule_t);

    for (n = r, i = 0; i < NGX_HTTP_FAIRGATE_KEYCACHE_STRS; i++) {
        n += kn->len[i];
    }

    rc = NGX_ERROR;

    /* aligned: the rules first */
    p = ngx_palloc(pool, n + 1);

    if (p) {
        lk->nrules = kn->nrules;
        lk->rules = kn->nrules ? (fg_quota_rule_t *) p : NULL;

        ngx_memcpy(key->digest, kn->digest, 32);
        key->weight = kn->weight;
        key->priority = kn->priority;
        key->limit.rpm = kn->rpm;
        key->limit.tpm = kn->tpm;

        ngx_memcpy(p, kn->data, n);
        ngx_http_fairgate_keycache_strs(key, str);
        p += r;

        for (i = 0; i < NGX_HTTP_FAIRGATE_KEYCACHE_STRS; i++) {
            str[i]->data = p;
            str[i]->len = kn->len[i];
            p += kn->len[i];
        }

        rc = NGX_OK;
    }

    ngx_shmtx_unlock(&kc->shpool->mutex);

    return rc;
}


/*
 * A key (or, revoked, its refusal) held, the least used ones making room;
 * not if any change was applied since it was looked up (changes: as
 * ngx_http_fairgate_keycache_get() said then), since Redis may have read
 * it before a change this cache has already applied, and the change would
 * then never reach it.
 */

void
ngx_http_fairgate_keycache_put(ngx_http_fairgate_keycache_t *kc,
    ngx_http_fairgate_key_lookup_t *lk, ngx_uint_t revoked,
    ngx_uint_t changes)
{
    u_char                             *p;
    size_t                              n;
    ngx_str_t                          *str[NGX_HTTP_FAIRGATE_KEYCACHE_STRS];
    ngx_uint_t                          i;
    ngx_queue_t                        *q;
    ngx_http_fairgate_key_t            *key;
    ngx_http_fairgate_keycache_node_t  *kn;

    key = &lk->key;

    ngx_http_fairgate_keycache_strs(key, str);

    if (lk->nrules > FG_QUOTA_RULES_MAX) {
        return;
    }

    for (n = lk->nrules * sizeof(fg_quota_rule_t), i = 0;
         i < NGX_HTTP_FAIRGATE_KEYCACHE_STRS;
         i++)
    {
        if (str[i]->len > 0xffff) {
            return;
        }

        n += str[i]->len;
    }

    ngx_shmtx_lock(&kc->shpool->mutex);

    if (!kc->sh->synced || kc->sh->changes != changes) {
        ngx_shmtx_unlock(&kc->shpool->mutex);
        return;
    }

    kn = ngx_http_fairgate_keycache_lookup(kc, key->digest);
    if (kn) {
        ngx_http_fairgate_keycache_free(kc, kn);
    }

    for (i = 0; i < 64; i++) {
        kn = ngx_slab_alloc_locked(kc->shpool,
                 offsetof(ngx_http_fairgate_keycache_node_t, data) + n);

        if (kn || ngx_queue_empty(&kc->sh->lru)) {
            break;
        }

        q = ngx_queue_last(&kc->sh->lru);
        ngx_http_fairgate_keycache_free(kc,
            ngx_queue_data(q, ngx_http_fairgate_keycache_node_t, queue));
        kc->sh->evicted++;
    }

    if (kn) {
        ngx_memcpy(kn->digest, key->digest, 32);
        kn->node.key = ngx_http_fairgate_keycache_hash(key->digest);
        kn->weight = key->weight;
        kn->priority = key->priority;
        kn->rpm = key->limit.rpm;
        kn->tpm = key->limit.tpm;
        kn->revoked = (u_char) revoked;
        kn->nrules = (u_char) lk->nrules;

        p = kn->data;

        if (lk->nrules) {
            p = ngx_cpymem(p, lk->rules,
                           lk->nrules * sizeof(fg_quota_rule_t));
        }

        for (i = 0; i < NGX_HTTP_FAIRGATE_KEYCACHE_STRS; i++) {
            kn->len[i] = (u_short) str[i]->len;

            if (str[i]->len) {
                p = ngx_cpymem(p, str[i]->data, str[i]->len);
            }
        }

        ngx_rbtree_insert(&kc->sh->rbtree, &kn->node);
        ngx_queue_insert_head(&kc->sh->lru, &kn->queue);
        kc->sh->count++;
    }

    ngx_shmtx_unlock(&kc->shpool->mutex);
}


static void
ngx_http_fairgate_keycache_strs(ngx_http_fairgate_key_t *key, ngx_str_t **str)
{
    str[0] = &key->user;
    str[1] = &key->app;
    str[2] = &key->models;
    str[3] = &key->quota;
    str[4] = &key->budget;
}


/* a key changed or revoked leaves the cache, to be looked up again */

void
ngx_http_fairgate_keycache_drop(ngx_http_fairgate_keycache_t *kc,
    u_char *digest)
{
    ngx_http_fairgate_keycache_node_t  *kn;

    ngx_shmtx_lock(&kc->shpool->mutex);

    kc->sh->changes++;

    kn = ngx_http_fairgate_keycache_lookup(kc, digest);
    if (kn) {
        ngx_http_fairgate_keycache_free(kc, kn);
    }

    ngx_shmtx_unlock(&kc->shpool->mutex);
}


/*
 * Everything dropped, and where the stream stands set (len 0: not known,
 * nothing is held until it is): a gateway that could not follow the
 * changes for a while knows nothing it could have missed.
 */

void
ngx_http_fairgate_keycache_reset(ngx_http_fairgate_keycache_t *kc,
    ngx_str_t *position)
{
    ngx_queue_t  *q;

    ngx_shmtx_lock(&kc->shpool->mutex);

    kc->sh->changes++;

    while (!ngx_queue_empty(&kc->sh->lru)) {
        q = ngx_queue_head(&kc->sh->lru);
        ngx_http_fairgate_keycache_free(kc,
            ngx_queue_data(q, ngx_http_fairgate_keycache_node_t, queue));
    }

    kc->sh->position_len = ngx_min(position->len,
                                   NGX_HTTP_FAIRGATE_KEYCACHE_POS_LEN);
    ngx_memcpy(kc->sh->position, position->data, kc->sh->position_len);
    kc->sh->synced = (position->len != 0);

    ngx_shmtx_unlock(&kc->shpool->mutex);
}


/* where the stream of changes stands (buf: POS_LEN bytes); 0: not known */

size_t
ngx_http_fairgate_keycache_position(ngx_http_fairgate_keycache_t *kc,
    u_char *buf)
{
    size_t  n;

    ngx_shmtx_lock(&kc->shpool->mutex);

    n = kc->sh->synced ? kc->sh->position_len : 0;
    ngx_memcpy(buf, kc->sh->position, n);

    ngx_shmtx_unlock(&kc->shpool->mutex);

    return n;
}


void
ngx_http_fairgate_keycache_advance(ngx_http_fairgate_keycache_t *kc,
    ngx_str_t *position)
{
    if (position->len == 0
        || position->len > NGX_HTTP_FAIRGATE_KEYCACHE_POS_LEN)
    {
        return;
    }

    ngx_shmtx_lock(&kc->shpool->mutex);

    ngx_memcpy(kc->sh->position, position->data, position->len);
    kc->sh->position_len = position->len;

    ngx_shmtx_unlock(&kc->shpool->mutex);
}


static ngx_http_fairgate_keycache_node_t *
ngx_http_fairgate_keycache_lookup(ngx_http_fairgate_keycache_t *kc,
    u_char *digest)
{
    ngx_int_t                           rc;
    ngx_rbtree_key_t                    hash;
    ngx_rbtree_node_t                  *node, *sentinel;
    ngx_http_fairgate_keycache_node_t  *kn;

    hash = ngx_http_fairgate_keycache_hash(digest);
    node = kc->sh->rbtree.root;
    sentinel = kc->sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash != node->key) {
            node = (hash < node->key) ? node->left : node->right;
            continue;
        }

        kn = (ngx_http_fairgate_keycache_node_t *) node;
        rc = ngx_memcmp(digest, kn->digest, 32);

        if (rc == 0) {
            return kn;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


static void
ngx_http_fairgate_keycache_free(ngx_http_fairgate_keycache_t *kc,
    ngx_http_fairgate_keycache_node_t *kn)
{
    ngx_rbtree_delete(&kc->sh->rbtree, &kn->node);
    ngx_queue_remove(&kn->queue);
    ngx_slab_free_locked(kc->shpool, kn);
    kc->sh->count--;
}


/* a digest from its 64 hex digits (dst: 32 bytes) */

ngx_int_t
ngx_http_fairgate_key_unhex(u_char *dst, u_char *src, size_t len)
{
    ngx_int_t   hi, lo;
    ngx_uint_t  i;

    if (len != 64) {
        return NGX_ERROR;
    }

    for (i = 0; i < 32; i++) {
        hi = ngx_hextoi(src + 2 * i, 1);
        lo = ngx_hextoi(src + 2 * i + 1, 1);

        if (hi < 0 || lo < 0) {
            return NGX_ERROR;
        }

        dst[i] = (u_char) (hi * 16 + lo);
    }

    return NGX_OK;
}
