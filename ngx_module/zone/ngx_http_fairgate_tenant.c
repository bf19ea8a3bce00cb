
/*
 * fairgate: users and apps in the zone.
 *
 * Like limit_req's states: an rbtree keyed by a hash of the kind and name,
 * the name itself to tell collisions apart, and an LRU list.  A tenant idle
 * for NGX_HTTP_FAIRGATE_IDLE seconds (its rate windows are empty by then)
 * is freed when a new one arrives, unless a quota's window of it still
 * counts something (fairgate_quota: it stays until that window ends); when
 * the zone is full (max_tenants users, apps and keys together, or no room
 * left in its slab) the least recently used idle one goes even if younger,
 * its quotas' counts with it.  A tenant with requests waiting or in
 * flight is never freed: each request holds a reference.
 *
 * With fairgate_redis a tenant also holds what the other gateways counted
 * (redis/ngx_http_fairgate_sync.c): the rate limits and OIT add it to the
 * zone's own counts while it is fresh.
 *
 * Every function here runs with the zone's mutex held.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_zone.h"


/* a name of this length or less fits a tenant in a 1 KB slab chunk */
#define NGX_HTTP_FAIRGATE_TYPICAL_NAME  32

/*
 * LRU entries expire() looks at before giving up, stepping over tenants
 * that hold requests: bounds a lookup
 */
#define NGX_HTTP_FAIRGATE_EXPIRE_WALK   64

/* idle tenants freed to make a new one's room at the most */
#define NGX_HTTP_FAIRGATE_ALLOC_TRIES   4

/* idle tenants freed for one allocation at the most: bounds a request */
#define NGX_HTTP_FAIRGATE_ROOM_FREES    64

/* the least time between two "is full" lines, ms */
#define NGX_HTTP_FAIRGATE_FULL_LOG      60000



static ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_lookup(
    ngx_http_fairgate_shctx_t *sh, ngx_uint_t kind, ngx_str_t *name,
    uint32_t hash);
static ngx_http_fairgate_tenant_t *ngx_http_fairgate_tenant_alloc(
    ngx_http_fairgate_zone_t *zone, ngx_uint_t kind, size_t len,
    uint32_t hash, double weight);
static ngx_int_t ngx_http_fairgate_tenant_free(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t);
static ngx_uint_t ngx_http_fairgate_global_valid(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_tenant_t *t);
static ngx_uint_t ngx_http_fairgate_tenant_quota_live(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_tenant_t *t);
static void ngx_http_fairgate_tenant_quota_free(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_tenant_t *t);
static ngx_int_t ngx_http_fairgate_tenant_cmp(ngx_http_fairgate_tenant_t *t,
    ngx_uint_t kind, u_char *name, size_t len);


static uint32_t
ngx_http_fairgate_tenant_hash(ngx_uint_t kind, ngx_str_t *name)
{
    u_char    k;
    uint32_t  hash;

    k = (u_char) kind;

    ngx_crc32_init(hash);
    ngx_crc32_update(&hash, &k, 1);
    ngx_crc32_update(&hash, name->data, name->len);
    ngx_crc32_final(hash);

    return hash;
}


ngx_http_fairgate_tenant_t *
ngx_http_fairgate_tenant_get(ngx_http_fairgate_zone_t *zone, ngx_uint_t kind,
    ngx_str_t *name, double weight)
{
    uint32_t                     hash;
    ngx_http_fairgate_tenant_t  *t;
    ngx_http_fairgate_shctx_t   *sh;

    sh = zone->sh;

    if (name->len > NGX_HTTP_FAIRGATE_NAME_LEN) {
        return NULL;
    }

    hash = ngx_http_fairgate_tenant_hash(kind, name);

    t = ngx_http_fairgate_tenant_lookup(sh, kind, name, hash);

    if (t) {
        ngx_queue_remove(&t->lru);
        ngx_queue_insert_head(&sh->lru, &t->lru);
        t->last = ngx_current_msec;

        /* a reload may have changed the key's weight */
        if (kind == NGX_HTTP_FAIRGATE_USER && t->u.client.weight != weight) {
            (void) fg_client_set_weight(sh->sched, &t->u.client, weight);
        }

        return t;
    }

    ngx_http_fairgate_tenant_expire(zone, 0);

    t = ngx_http_fairgate_tenant_alloc(zone, kind, name->len, hash, weight);

    if (t == NULL) {
        return NULL;
    }

    ngx_memzero(&t->node, sizeof(ngx_rbtree_node_t));
    t->node.key = hash;

    if (kind == NGX_HTTP_FAIRGATE_APP) {
        fg_window_init(&t->u.app.requests, 60.0);
        t->u.app.profile = NULL;
        t->u.app.profile_crc = 0;
    }

    fg_window_init(&t->tokens, 60.0);

    t->last = ngx_current_msec;
    t->refs = 0;
    t->requests = 0;
    t->tokens_in = 0;
    t->tokens_out = 0;
    t->throttled = 0;
    t->queue_full = 0;
    t->timed_out = 0;
    ngx_memzero(&t->throttled_by, sizeof(ngx_http_fairgate_throttled_t));
    t->limit_rpm = 0;
    t->limit_tpm = 0;
    ngx_memzero(&t->qoe, sizeof(ngx_http_fairgate_qoe_stats_t));
    ngx_memzero(&t->global, sizeof(ngx_http_fairgate_global_t));
    t->quota = 0;
    t->kind = (u_char) kind;
    t->len = (u_char) name->len;
    ngx_memcpy(t->name, name->data, name->len);

    /* the insert function is this process's: code moves on reload */
    sh->rbtree.insert = ngx_http_fairgate_tenant_insert;
    ngx_rbtree_insert(&sh->rbtree, &t->node);

    ngx_queue_insert_head(&sh->lru, &t->lru);

    if (kind == NGX_HTTP_FAIRGATE_USER) {
        sh->users++;
        sh->users_seen++;

    } else if (kind == NGX_HTTP_FAIRGATE_APP) {
        sh->apps++;

    } else {
        sh->keys++;
    }

    return t;
}


/*
 * A new tenant's record: users and apps together are max_tenants at the
 * most (the room the zone was checked for at its start), the scheduler
 * takes max_tenants users, and the slab must have a chunk; the least
 * recently used idle tenants make room.  NULL: none of them is idle.
 */

static ngx_http_fairgate_tenant_t *
ngx_http_fairgate_tenant_alloc(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t kind, size_t len, uint32_t hash, double weight)
{
    size_t                       size;
    ngx_uint_t                   i;
    ngx_http_fairgate_tenant_t  *t;
    ngx_http_fairgate_shctx_t   *sh;

    sh = zone->sh;
    size = offsetof(ngx_http_fairgate_tenant_t, name) + len;

    for (i = 0; i < NGX_HTTP_FAIRGATE_ALLOC_TRIES; i++) {

        if (i > 0 && ngx_http_fairgate_tenant_expire(zone, 1) == 0) {
            break;
        }

        if (sh->users + sh->apps + sh->keys >= zone->conf.max_clients) {
            continue;
        }

        t = ngx_http_fairgate_room_alloc(zone, size);

        if (t == NULL) {
            return NULL;
        }

        if (kind != NGX_HTTP_FAIRGATE_USER
            || fg_client_init(sh->sched, &t->u.client, hash, weight) == FG_OK)
        {
            return t;
        }

        /* max_tenants users exist already */
        ngx_slab_free_locked(zone->shpool, t);
    }

    ngx_http_fairgate_room_full(zone, size);

    return NULL;
}


static ngx_http_fairgate_tenant_t *
ngx_http_fairgate_tenant_lookup(ngx_http_fairgate_shctx_t *sh,
    ngx_uint_t kind, ngx_str_t *name, uint32_t hash)
{
    ngx_int_t                    rc;
    ngx_rbtree_node_t           *node, *sentinel;
    ngx_http_fairgate_tenant_t  *t;

    node = sh->rbtree.root;
    sentinel = sh->rbtree.sentinel;

    while (node != sentinel) {

        if (hash < node->key) {
            node = node->left;
            continue;
        }

        if (hash > node->key) {
            node = node->right;
            continue;
        }

        /* hash == node->key */

        t = (ngx_http_fairgate_tenant_t *) node;

        rc = ngx_http_fairgate_tenant_cmp(t, kind, name->data, name->len);

        if (rc == 0) {
            return t;
        }

        node = (rc < 0) ? node->left : node->right;
    }

    return NULL;
}


/* the order of tenants of equal hash: kind, then length, then bytes */

static ngx_int_t
ngx_http_fairgate_tenant_cmp(ngx_http_fairgate_tenant_t *t, ngx_uint_t kind,
    u_char *name, size_t len)
{
    if (kind != t->kind) {
        return (kind < t->kind) ? -1 : 1;
    }

    if (len != t->len) {
        return (len < t->len) ? -1 : 1;
    }

    return ngx_memcmp(name, t->name, len);
}


void
ngx_http_fairgate_tenant_insert(ngx_rbtree_node_t *temp,
    ngx_rbtree_node_t *node, ngx_rbtree_node_t *sentinel)
{
    ngx_rbtree_node_t           **p;
    ngx_http_fairgate_tenant_t   *t, *tt;

    t = (ngx_http_fairgate_tenant_t *) node;

    for ( ;; ) {

        if (node->key < temp->key) {
            p = &temp->left;

        } else if (node->key > temp->key) {
            p = &temp->right;

        } else { /* node->key == temp->key */

            tt = (ngx_http_fairgate_tenant_t *) temp;

            p = (ngx_http_fairgate_tenant_cmp(tt, t->kind, t->name, t->len)
                 < 0) ? &temp->left : &temp->right;
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
 * Frees idle tenants from the LRU end: those idle long enough, and with
 * "force" the least recently used idle one whatever its age, so that a new
 * tenant or request finds room.  Tenants holding requests are stepped
 * over.  Returns how many it freed.
 */

ngx_uint_t
ngx_http_fairgate_tenant_expire(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t force)
{
    ngx_uint_t                   walked, freed;
    ngx_msec_int_t               idle;
    ngx_queue_t                 *q, *prev;
    ngx_http_fairgate_tenant_t  *t, *spare;
    ngx_http_fairgate_shctx_t   *sh;

    sh = zone->sh;
    freed = 0;
    spare = NULL;

    for (q = ngx_queue_last(&sh->lru), walked = 0;
         q != ngx_queue_sentinel(&sh->lru)
         && walked < NGX_HTTP_FAIRGATE_EXPIRE_WALK && freed < 2;
         q = prev, walked++)
    {
        prev = ngx_queue_prev(q);
        t = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);

        if (t->refs) {
            continue;
        }

        if (!force) {
            idle = (ngx_msec_int_t) (ngx_current_msec - t->last);

            if (idle < NGX_HTTP_FAIRGATE_IDLE * 1000) {
                return freed;
            }
        }

        /*
         * Its quotas' counts are kept while their window lasts: room is
         * made with it only if no other tenant of the walk can give it
         */
        if (ngx_http_fairgate_tenant_quota_live(zone, t)) {
            spare = spare ? spare : t;
            continue;
        }

        if (ngx_http_fairgate_tenant_free(zone, t) != NGX_OK) {
            continue;
        }

        if (force) {
            sh->expired++;
            force = 0;
        }

        freed++;
    }

    if (force && spare
        && ngx_http_fairgate_tenant_free(zone, spare) == NGX_OK)
    {
        sh->expired++;
        freed++;
    }

    return freed;
}


static ngx_int_t
ngx_http_fairgate_tenant_free(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;

    if (t->kind == NGX_HTTP_FAIRGATE_USER) {
        if (fg_client_release(sh->sched, &t->u.client) != FG_OK) {
            return NGX_DECLINED;
        }

        sh->users--;

    } else if (t->kind == NGX_HTTP_FAIRGATE_APP) {
        /* the app's learnt profile (tenants/) lives in the zone's slab */
        if (t->u.app.profile) {
            ngx_slab_free_locked(zone->shpool, t->u.app.profile);
        }

        sh->apps--;

    } else {
        sh->keys--;
    }

    ngx_http_fairgate_tenant_quota_free(zone, t);

    ngx_queue_remove(&t->lru);
    ngx_rbtree_delete(&sh->rbtree, &t->node);
    ngx_slab_free_locked(zone->shpool, t);

    return NGX_OK;
}


/*
 * fairgate_quota: a tenant's windows, its first one kept as an offset from
 * the zone's start (slab chunks are 8-byte aligned at least), and freed
 * with it
 */

ngx_http_fairgate_qwin_t *
ngx_http_fairgate_tenant_quota(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    if (t->quota == 0) {
        return NULL;
    }

    return (ngx_http_fairgate_qwin_t *) ((u_char *) zone->shpool
                                         + ((size_t) t->quota << 3));
}


void
ngx_http_fairgate_tenant_quota_add(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_qwin_t *w)
{
    w->next = ngx_http_fairgate_tenant_quota(zone, t);
    t->quota = (uint32_t) (((u_char *) w - (u_char *) zone->shpool) >> 3);
}


static ngx_uint_t
ngx_http_fairgate_tenant_quota_live(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    time_t                     now;
    ngx_http_fairgate_qwin_t  *q;

    now = ngx_time();

    for (q = ngx_http_fairgate_tenant_quota(zone, t); q; q = q->next) {
        if (q->until > now) {
            return 1;
        }
    }

    return 0;
}


static void
ngx_http_fairgate_tenant_quota_free(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    ngx_http_fairgate_qwin_t  *q, *next;

    for (q = ngx_http_fairgate_tenant_quota(zone, t); q; q = next) {
        next = q->next;
        ngx_slab_free_locked(zone->shpool, q);
    }

    t->quota = 0;
}


/*
 * Room in the zone's slab for what its requests need (a tenant's record, a
 * request's node, its prompt's hashes).  When the slab has no chunk left
 * of the size asked, the least recently used idle tenants are freed, one
 * at a time, until it has: a chunk freed is of its own size, and a page of
 * another size frees only once all its chunks have, so it may take a few.
 * A zone that still has no room (every tenant holds requests) refuses, and
 * says so in the error log once an interval, not once a request: nginx's
 * own "ngx_slab_alloc() failed" line is off for the zone (log_nomem).
 */

void *
ngx_http_fairgate_room_alloc(ngx_http_fairgate_zone_t *zone, size_t size)
{
    void        *p;
    ngx_uint_t   i;

    for (i = 0; /* void */ ; i++) {

        p = ngx_slab_alloc_locked(zone->shpool, size);

        if (p != NULL) {
            return p;
        }

        if (i == NGX_HTTP_FAIRGATE_ROOM_FREES
            || ngx_http_fairgate_tenant_expire(zone, 1) == 0)
        {
            break;
        }
    }

    ngx_http_fairgate_room_full(zone, size);

    return NULL;
}


/*
 * A refusal for want of room, counted; the first of an interval is
 * written with the zone's tenants, those of the interval before counted.
 */

void
ngx_http_fairgate_room_full(ngx_http_fairgate_zone_t *zone, size_t size)
{
    ngx_msec_t                  now;
    ngx_http_fairgate_shctx_t  *sh;

    sh = zone->sh;
    now = ngx_http_fairgate_wall_msec();

    sh->full++;

    if (sh->full_logged != 0
        && now - sh->full_logged < NGX_HTTP_FAIRGATE_FULL_LOG)
    {
        return;
    }

    ngx_log_error(NGX_LOG_WARN, ngx_cycle->log, 0,
                  "fairgate_zone \"%V\" is full: no room for %uz bytes "
                  "with %ui users and %ui apps, none of them idle; "
                  "%uL refused since the last such line",
                  &zone->name, size, sh->users, sh->apps, sh->full);

    sh->full = 0;
    sh->full_logged = now;
}


fg_window_t *
ngx_http_fairgate_tenant_requests(ngx_http_fairgate_tenant_t *t)
{
    /*
     * A user's requests window is its scheduler client's: the rpm policy
     * counts into it by itself, the module does for the other policies.
     */

    return (t->kind == NGX_HTTP_FAIRGATE_USER) ? &t->u.client.recent
                                               : &t->u.app.requests;
}


/*
 * Slab pages that n tenant records take: ngx_slab_alloc() rounds small
 * sizes up to a power of two and packs them into pages, keeping a bitmap in
 * the page itself for the smallest ones.
 */

ngx_uint_t
ngx_http_fairgate_tenant_pages(ngx_uint_t n)
{
    size_t      size, chunk;
    ngx_uint_t  per_page;

    size = offsetof(ngx_http_fairgate_tenant_t, name)
           + NGX_HTTP_FAIRGATE_TYPICAL_NAME;

    if (size > ngx_pagesize / 2) {
        return n * ((size + ngx_pagesize - 1) / ngx_pagesize);
    }

    for (chunk = 8; chunk < size; chunk <<= 1) { /* void */ }

    per_page = ngx_pagesize / chunk;

    if (chunk < ngx_pagesize / (8 * sizeof(uintptr_t))) {
        per_page -= (per_page / 8 + chunk - 1) / chunk;
    }

    return (n + per_page - 1) / per_page;
}


/* fairgate_redis: a tenant by name, if the zone has it; under the mutex */

ngx_http_fairgate_tenant_t *
ngx_http_fairgate_tenant_find(ngx_http_fairgate_zone_t *zone,
    ngx_uint_t kind, u_char *name, size_t len)
{
    uint32_t   hash;
    ngx_str_t  s;

    s.data = name;
    s.len = len;

    hash = ngx_http_fairgate_tenant_hash(kind, &s);

    return ngx_http_fairgate_tenant_lookup(zone->sh, kind, &s, hash);
}


/*
 * Under the zone's mutex: whether a tenant's part of the global picture
 * holds; not while the zone counts locally (no Redis, Redis down, no
 * worker syncing, or the tenant not refreshed since the last connection).
 */

static ngx_uint_t
ngx_http_fairgate_global_valid(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    ngx_msec_int_t                 age;
    ngx_http_fairgate_redis_sh_t  *rs;

    rs = &zone->sh->redis;

    if (rs->state != NGX_HTTP_FAIRGATE_REDIS_UP
        || rs->owner == 0
        || t->global.epoch != rs->epoch)
    {
        return 0;
    }

    age = (ngx_msec_int_t) (ngx_http_fairgate_wall_msec() - rs->heartbeat);

    return age <= (ngx_msec_int_t) rs->stale;
}


uint64_t
ngx_http_fairgate_global_requests(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    return ngx_http_fairgate_global_valid(zone, t) ? t->global.requests : 0;
}


uint64_t
ngx_http_fairgate_global_tokens(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t)
{
    return ngx_http_fairgate_global_valid(zone, t) ? t->global.tokens : 0;
}
