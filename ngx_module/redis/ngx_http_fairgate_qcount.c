
/*
 * fairgate: the quota windows' counts (fairgate_quota's, fg_quota.h has
 * their layout) as the durable store sees them: copied out of the zone a
 * bucket at a time, for the Redis sync (ngx_http_fairgate_qsync.c) and the
 * state file (ngx_http_fairgate_qstate.c); merged back into it, the
 * larger of each count, when the state file is read at start or Redis
 * holds more of this gateway's own counts than the zone does; and the
 * other gateways' sums put in a window's "remote".  Every function here
 * runs under the zone's mutex.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_redis.h"


static ngx_uint_t ngx_http_fairgate_qcount_changed(
    ngx_http_fairgate_tenant_t *t, ngx_msec_t recent);
static ngx_int_t ngx_http_fairgate_qcount_window(ngx_array_t *entries,
    ngx_http_fairgate_qentry_t *proto, fg_quota_win_t *w, time_t now,
    ngx_uint_t all);
static fg_quota_win_t *ngx_http_fairgate_qcount_find(
    ngx_http_fairgate_zone_t *zone, ngx_http_fairgate_qentry_t *e,
    ngx_uint_t make);
static fg_quota_count_t *ngx_http_fairgate_qcount_bucket(fg_quota_win_t *w,
    int64_t start);


/*
 * The tenants' windows' buckets: those this gateway counted in, or with
 * "all" each bucket of each window now (a rolling window's n, counted in
 * here or not: the sync sums the others' over all of them).  With
 * "recent" (ms), only the tenants whose counts may have changed since the
 * last round: a request let in within "recent", or in flight, or in
 * flight at the last round (settled since), or never synced.
 */

ngx_int_t
ngx_http_fairgate_qcount_copy(ngx_http_fairgate_zone_t *zone,
    ngx_array_t *entries, ngx_uint_t all, ngx_msec_t recent)
{
    time_t                       now;
    ngx_queue_t                 *q;
    ngx_http_fairgate_qwin_t    *qw;
    ngx_http_fairgate_tenant_t  *t;
    ngx_http_fairgate_qentry_t   proto;

    now = ngx_time();

    for (q = ngx_queue_head(&zone->sh->lru);
         q != ngx_queue_sentinel(&zone->sh->lru);
         q = ngx_queue_next(q))
    {
        t = ngx_queue_data(q, ngx_http_fairgate_tenant_t, lru);

        qw = ngx_http_fairgate_tenant_quota(zone, t);

        if (qw == NULL
            || (recent && !ngx_http_fairgate_qcount_changed(t, recent)))
        {
            continue;
        }

        ngx_memzero(&proto, sizeof(ngx_http_fairgate_qentry_t));

        proto.kind = t->kind;
        proto.name.len = t->len;
        proto.name.data = ngx_pnalloc(entries->pool, t->len);
        if (proto.name.data == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(proto.name.data, t->name, t->len);

        /* a tenant record's tag in Redis, for as long as it lives */

        if (t->global.incarnation == 0) {
            t->global.incarnation = ++zone->sh->redis.incarnations;
        }

        proto.incarnation = t->global.incarnation;
        proto.add = !t->global.qloaded && !t->global.qsynced;

        for ( /* void */ ; qw; qw = qw->next) {
            if (ngx_http_fairgate_qcount_window(entries, &proto, &qw->win,
                                                now, all)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
        }
    }

    return NGX_OK;
}


static ngx_uint_t
ngx_http_fairgate_qcount_changed(ngx_http_fairgate_tenant_t *t,
    ngx_msec_t recent)
{
    ngx_uint_t  busy;

    busy = t->global.qbusy;
    t->global.qbusy = (t->refs > 0);

    return busy || t->refs > 0 || !t->global.qsynced
           || (ngx_msec_int_t) (ngx_current_msec - t->last)
              < (ngx_msec_int_t) recent;
}


static ngx_int_t
ngx_http_fairgate_qcount_window(ngx_array_t *entries,
    ngx_http_fairgate_qentry_t *proto, fg_quota_win_t *w, time_t now,
    ngx_uint_t all)
{
    int64_t                      id, width, start;
    uint32_t                     k;
    fg_quota_count_t            *c;
    ngx_http_fairgate_qentry_t  *e;

    /* a calendar window's id is its bucket's: the time zone's business */

    if (w->n == 1) {
        if (w->local[0].start == INT64_MIN) {
            return NGX_OK;
        }

        id = w->local[0].start;
        width = 0;

    } else {
        id = fg_quota_id(&w->per, NULL, now);
        width = w->per.length / w->n;
    }

    for (k = 0; k < w->n; k++) {
        start = id - k * width;
        c = ngx_http_fairgate_qcount_bucket(w, start);

        if (!all && (c == NULL || c->start != start)) {
            continue;
        }

        e = ngx_array_push(entries);
        if (e == NULL) {
            return NGX_ERROR;
        }

        *e = *proto;
        e->per = w->per;
        e->id = id;
        e->own = (c && c->start == start);

        if (e->own) {
            e->c = *c;

        } else {
            e->c.start = start;
        }
    }

    return NGX_OK;
}


/* the slot of a bucket's start: a calendar window's one, a rolling one's */

static fg_quota_count_t *
ngx_http_fairgate_qcount_bucket(fg_quota_win_t *w, int64_t start)
{
    int64_t  width, slot;

    if (w->n == 1) {
        return &w->local[0];
    }

    width = w->per.length / w->n;

    if (width <= 0) {
        return NULL;
    }

    slot = (start / width) % (int64_t) w->n;

    if (slot < 0) {
        slot += w->n;
    }

    return &w->local[slot];
}


/*
 * Counts of this gateway's (the state file's, or its own field in Redis
 * written by an earlier record) into the tenant's bucket: the larger of
 * each, a newer bucket replacing an older one.  make: the tenant and its
 * window are made if missing (the state file read at start); else the
 * tenant must be the record the entry was copied from.
 */

ngx_int_t
ngx_http_fairgate_qcount_merge(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_qentry_t *e, ngx_uint_t make)
{
    time_t                     until;
    fg_quota_win_t            *w;
    fg_quota_count_t          *c, *from;
    ngx_http_fairgate_qwin_t  *qw;

    w = ngx_http_fairgate_qcount_find(zone, e, make);
    if (w == NULL) {
        return NGX_DECLINED;
    }

    c = ngx_http_fairgate_qcount_bucket(w, e->c.start);
    from = make ? &e->c : &e->adopt;

    if (c == NULL || c->start > e->c.start) {
        return NGX_DECLINED;
    }

    if (c->start < e->c.start) {
        ngx_memzero(c, sizeof(fg_quota_count_t));
        c->start = e->c.start;
    }

    if (!make && e->add) {
        c->requests += from->requests;
        c->tokens += from->tokens;
        c->cost += from->cost;

    } else {
        c->requests = ngx_max(c->requests, from->requests);
        c->tokens = ngx_max(c->tokens, from->tokens);
        c->cost = ngx_max(c->cost, from->cost);
    }

    /* kept, not freed as idle, while the window may still count it */

    qw = (ngx_http_fairgate_qwin_t *)
             ((u_char *) w - offsetof(ngx_http_fairgate_qwin_t, win));
    until = (time_t) (e->c.start + fg_quota_per_length(&e->per));

    if (qw->until < until) {
        qw->until = until;
    }

    return NGX_OK;
}


/* the other gateways' sums of a window, as of this round */

void
ngx_http_fairgate_qcount_remote(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_qentry_t *e, fg_quota_count_t *sum)
{
    fg_quota_win_t              *w;
    ngx_http_fairgate_tenant_t  *t;

    w = ngx_http_fairgate_qcount_find(zone, e, 0);

    if (w == NULL) {
        return;
    }

    w->remote = *sum;
    w->remote.start = e->id;

    /* its record synced: an earlier one's counts are in it from now on */

    t = ngx_http_fairgate_tenant_find(zone, e->kind, e->name.data,
                                      e->name.len);
    if (t) {
        t->global.qsynced = 1;
    }
}


/* the window of the entry's definition in its tenant, or NULL */

static fg_quota_win_t *
ngx_http_fairgate_qcount_find(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_qentry_t *e, ngx_uint_t make)
{
    ngx_http_fairgate_qwin_t    *qw;
    ngx_http_fairgate_tenant_t  *t;

    if (make) {
        t = ngx_http_fairgate_tenant_get(zone, e->kind, &e->name, 1.0);

        if (t) {
            t->global.qloaded = 1;
        }

    } else {
        t = ngx_http_fairgate_tenant_find(zone, e->kind, e->name.data,
                                          e->name.len);
        if (t && t->global.incarnation != e->incarnation) {
            t = NULL;
        }
    }

    if (t == NULL) {
        return NULL;
    }

    for (qw = ngx_http_fairgate_tenant_quota(zone, t); qw; qw = qw->next) {
        if (qw->win.per.unit == e->per.unit
            && qw->win.per.rolling == e->per.rolling
            && qw->win.per.length == e->per.length)
        {
            return &qw->win;
        }
    }

    if (!make) {
        return NULL;
    }

    qw = ngx_http_fairgate_room_alloc(zone,
                                      offsetof(ngx_http_fairgate_qwin_t, win)
                                      + fg_quota_win_size(&e->per));
    if (qw == NULL) {
        return NULL;
    }

    fg_quota_win_init(&qw->win, &e->per);
    qw->until = 0;

    ngx_http_fairgate_tenant_quota_add(zone, t, qw);

    return &qw->win;
}


/* a window's definition in a key: "h", "d", "w", "m", "s3600", "r86400" */

u_char *
ngx_http_fairgate_qcount_tag(u_char *p, fg_quota_per_t *per)
{
    static const char  units[] = "shdwm";

    if (per->rolling) {
        return ngx_sprintf(p, "r%L", per->length);
    }

    if (per->unit == FG_QUOTA_SPAN || per->unit >= sizeof(units) - 1) {
        return ngx_sprintf(p, "s%L", per->length);
    }

    *p++ = units[per->unit];

    return p;
}
