
/*
 * fairgate: a zone's tenants for the status page, read in slices.  A zone
 * may hold 100,000 tenants; reading them all under its mutex would stall
 * every request of the zone, and copying them all would hold megabytes
 * per page.  So the rbtree is walked NGX_HTTP_FAIRGATE_STATUS_SLICE
 * tenants at a time under the mutex, which is released between slices; a
 * cursor, the last tenant's key (hash, kind, length, name), finds where
 * the next slice starts, whatever was added or freed meanwhile.  Of what
 * the walk sees, only the "limit" most recently used users and as many
 * apps and API keys (fairgate_quota's; whose name starts with "tenant",
 * if given) are kept, in a min-heap each: the memory a page holds is its
 * limit's, not the zone's.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_http.h"


/* tenants looked at per hold of the zone's mutex */
#define NGX_HTTP_FAIRGATE_STATUS_SLICE  256


typedef struct {
    uint32_t                          key;
    ngx_uint_t                        kind;
    size_t                            len;
    u_char                            name[NGX_HTTP_FAIRGATE_NAME_LEN];
} ngx_http_fairgate_status_cursor_t;


typedef struct {
    ngx_http_fairgate_snap_tenant_t  *elts;
    ngx_uint_t                        n;
    ngx_uint_t                        max;
} ngx_http_fairgate_status_heap_t;


static ngx_rbtree_node_t *ngx_http_fairgate_status_after(
    ngx_http_fairgate_shctx_t *sh, ngx_http_fairgate_status_cursor_t *c);
static ngx_int_t ngx_http_fairgate_status_cmp(ngx_rbtree_node_t *node,
    ngx_http_fairgate_status_cursor_t *c);
static void ngx_http_fairgate_status_keep(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_status_heap_t *h, ngx_http_fairgate_tenant_t *t,
    double now);
static void ngx_http_fairgate_status_copy(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_snap_tenant_t *st,
    double now);
static int ngx_libc_cdecl ngx_http_fairgate_status_recent(const void *a,
    const void *b);


ngx_int_t
ngx_http_fairgate_status_tenants(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_snap_t *snap, ngx_http_fairgate_status_args_t *args)
{
    double                              now;
    ngx_uint_t                          i, k, more;
    ngx_rbtree_node_t                  *node;
    ngx_http_fairgate_tenant_t         *t;
    ngx_http_fairgate_status_heap_t     heap[3];
    ngx_http_fairgate_status_cursor_t   c;

    /* room for the limit, or for what the zone held a moment ago */

    heap[0].max = ngx_min(args->limit, snap->sh.users);
    heap[1].max = ngx_min(args->limit, snap->sh.apps);
    heap[2].max = ngx_min(args->limit, snap->sh.keys);

    snap->tenants = ngx_alloc((heap[0].max + heap[1].max + heap[2].max + 1)
                              * sizeof(ngx_http_fairgate_snap_tenant_t),
                              ngx_cycle->log);
    if (snap->tenants == NULL) {
        return NGX_ERROR;
    }

    heap[0].elts = snap->tenants;
    heap[1].elts = snap->tenants + heap[0].max;
    heap[2].elts = heap[1].elts + heap[1].max;
    heap[0].n = 0;
    heap[1].n = 0;
    heap[2].n = 0;

    ngx_memzero(&c, sizeof(ngx_http_fairgate_status_cursor_t));
    more = 1;
    node = NULL;

    while (more) {
        now = ngx_http_fairgate_now();

        ngx_shmtx_lock(&zone->shpool->mutex);

        node = (node == NULL) ? ngx_http_fairgate_status_after(zone->sh, NULL)
                              : ngx_http_fairgate_status_after(zone->sh, &c);

        for (i = 0; node && i < NGX_HTTP_FAIRGATE_STATUS_SLICE; i++) {
            t = (ngx_http_fairgate_tenant_t *) node;

            if (t->len >= args->prefix.len
                && ngx_memcmp(t->name, args->prefix.data, args->prefix.len)
                   == 0)
            {
                /* a heap a kind: users, apps, keys */
                k = t->kind;
                ngx_http_fairgate_status_keep(zone, &heap[k], t, now);
            }

            snap->seen++;

            c.key = node->key;
            c.kind = t->kind;
            c.len = t->len;
            ngx_memcpy(c.name, t->name, t->len);

            node = ngx_rbtree_next(&zone->sh->rbtree, node);
        }

        more = (node != NULL);

        ngx_shmtx_unlock(&zone->shpool->mutex);

        /* the mutex is not fair: let a waiting worker take it first */

        if (more) {
            ngx_sched_yield();
        }
    }

    /* the apps after the users, the keys last, each most recently used
     * first */

    ngx_memmove(snap->tenants + heap[0].n, heap[1].elts,
                heap[1].n * sizeof(ngx_http_fairgate_snap_tenant_t));
    ngx_memmove(snap->tenants + heap[0].n + heap[1].n, heap[2].elts,
                heap[2].n * sizeof(ngx_http_fairgate_snap_tenant_t));
    snap->ntenants = heap[0].n + heap[1].n + heap[2].n;

    ngx_qsort(snap->tenants, snap->ntenants,
              sizeof(ngx_http_fairgate_snap_tenant_t),
              ngx_http_fairgate_status_recent);

    return NGX_OK;
}


/* the first tenant after the cursor (NULL: from the start), or NULL */

static ngx_rbtree_node_t *
ngx_http_fairgate_status_after(ngx_http_fairgate_shctx_t *sh,
    ngx_http_fairgate_status_cursor_t *c)
{
    ngx_rbtree_node_t  *node, *sentinel, *best;

    node = sh->rbtree.root;
    sentinel = sh->rbtree.sentinel;

    if (node == sentinel) {
        return NULL;
    }

    if (c == NULL) {
        return ngx_rbtree_min(node, sentinel);
    }

    best = NULL;

    while (node != sentinel) {

        if (ngx_http_fairgate_status_cmp(node, c) > 0) {
            best = node;
            node = node->left;

        } else {
            node = node->right;
        }
    }

    return best;
}


/* the tree's own order (zone/ngx_http_fairgate_tenant.c): hash, kind,
 * length, bytes; > 0: the node comes after the cursor */

static ngx_int_t
ngx_http_fairgate_status_cmp(ngx_rbtree_node_t *node,
    ngx_http_fairgate_status_cursor_t *c)
{
    ngx_http_fairgate_tenant_t  *t;

    if (node->key != c->key) {
        return (node->key > c->key) ? 1 : -1;
    }

    t = (ngx_http_fairgate_tenant_t *) node;

    if (t->kind != c->kind) {
        return (t->kind > c->kind) ? 1 : -1;
    }

    if (t->len != c->len) {
        return (t->len > c->len) ? 1 : -1;
    }

    return ngx_memcmp(t->name, c->name, c->len);
}


/* into the heap of the most recently used, its least recent at the top */

static void
ngx_http_fairgate_status_keep(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_status_heap_t *h, ngx_http_fairgate_tenant_t *t,
    double now)
{
    ngx_uint_t                        i, l, m;
    ngx_http_fairgate_snap_tenant_t  *e, tmp;

    e = h->elts;

    if (h->max == 0) {
        return;
    }

    if (h->n < h->max) {
        i = h->n++;
        ngx_http_fairgate_status_copy(zone, t, &e[i], now);

        while (i > 0 && e[(i - 1) / 2].last > e[i].last) {
            tmp = e[i];
            e[i] = e[(i - 1) / 2];
            e[(i - 1) / 2] = tmp;
            i = (i - 1) / 2;
        }

        return;
    }

    if ((ngx_msec_int_t) (t->last - e[0].last) <= 0) {
        return;
    }

    ngx_http_fairgate_status_copy(zone, t, &e[0], now);

    for (i = 0; /* void */; i = m) {
        l = 2 * i + 1;
        m = i;

        if (l < h->n && e[l].last < e[m].last) {
            m = l;
        }

        if (l + 1 < h->n && e[l + 1].last < e[m].last) {
            m = l + 1;
        }

        if (m == i) {
            break;
        }

        tmp = e[i];
        e[i] = e[m];
        e[m] = tmp;
    }
}


static void
ngx_http_fairgate_status_copy(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_snap_tenant_t *st,
    double now)
{
    fg_client_t  *c;

    ngx_memzero(st, sizeof(ngx_http_fairgate_snap_tenant_t));

    st->len = ngx_http_fairgate_utf8_safe(st->name, t->name, t->len)
              - st->name;
    st->kind = t->kind;
    st->last = t->last;
    st->requests = t->requests;
    st->throttled = t->throttled;
    st->queue_full = t->queue_full;
    st->timed_out = t->timed_out;
    st->tokens_in = t->tokens_in;
    st->tokens_out = t->tokens_out;
    st->rpm = fg_window_sum(ngx_http_fairgate_tenant_requests(t), now);
    st->tpm = fg_window_sum(&t->tokens, now);
    st->limit_rpm = t->limit_rpm;
    st->limit_tpm = t->limit_tpm;
    st->throttled_by = t->throttled_by;
    st->qoe = t->qoe;

    ngx_http_fairgate_status_quota_copy(zone, t, st);

    if (t->kind != NGX_HTTP_FAIRGATE_USER) {
        return;
    }

    c = &t->u.client;
    st->weight = c->weight;
    st->counter = c->counter;
    st->service = c->service;
    st->deficit = fg_client_deficit(zone->sh->sched, c);
    st->cached_tokens = c->cached_tokens;
    st->waiting = c->n_waiting;
    st->running = c->n_running;
    st->enqueued = c->enqueued;
    st->admitted = c->admitted;
    st->finished = c->finished;
    st->cancelled = c->cancelled;
}


/* users, apps, keys, each most recently used first, then by name */

static int ngx_libc_cdecl
ngx_http_fairgate_status_recent(const void *a, const void *b)
{
    const ngx_http_fairgate_snap_tenant_t  *x = a, *y = b;

    if (x->kind != y->kind) {
        return (x->kind < y->kind) ? -1 : 1;
    }

    if (x->last != y->last) {
        return ((ngx_msec_int_t) (y->last - x->last) > 0) ? 1 : -1;
    }

    if (x->len != y->len) {
        return (x->len < y->len) ? -1 : 1;
    }

    return ngx_memcmp(x->name, y->name, x->len);
}
