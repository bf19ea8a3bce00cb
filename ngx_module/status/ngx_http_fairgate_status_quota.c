
/*
 * fairgate: a tenant's quota windows on the status page (fairgate_quota):
 * for each window, what it counts now, this gateway's counts and, with
 * fairgate_redis, the other gateways' as last synced, and its bounds.
 *
 *     "quotas": [{"window": "day", "rolling": false, "start": 1795...,
 *                 "end": 1795..., "requests": 12, "tokens": 3400,
 *                 "cost": 1.08, "refused": 0}]
 *
 * "cost" is in the prices' unit; a rolling window's "end" is now;
 * "refused", the requests its quotas refused here since it was made.  API
 * keys with quota windows are listed apart, by their id, in the zone's
 * "keys" (the users' and apps' list's "limit" and "tenant" prefix apply).
 *
 * In Prometheus's text, each window's counts and the limits a request was
 * last checked against, for the same tenants as the other per-tenant
 * series (the most recently used, "limit" of each kind):
 *
 *     fairgate_quota_used{zone="llm",user="bob",window="day",
 *                         what="requests"} 12
 *     fairgate_quota_limit{zone="llm",key="3ffe4b6db1a10c7b",
 *                          window="month",what="cost"} 50.000000
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_quota.h"


static u_char *ngx_http_fairgate_status_quota_window(u_char *p,
    fg_quota_per_t *per);
static ngx_int_t ngx_http_fairgate_status_quota_lines(
    ngx_http_fairgate_prom_t *w, ngx_str_t *name,
    ngx_http_fairgate_snap_t *sn, ngx_http_fairgate_snap_tenant_t *t,
    ngx_http_fairgate_snap_quota_t *q, ngx_uint_t limit);


void
ngx_http_fairgate_status_quota_copy(ngx_http_fairgate_zone_t *zone,
    ngx_http_fairgate_tenant_t *t, ngx_http_fairgate_snap_tenant_t *st)
{
    time_t                           now;
    fg_tz_t                         *tz;
    ngx_http_fairgate_qwin_t        *w;
    ngx_http_fairgate_snap_quota_t  *q;

    tz = ngx_http_fairgate_quota_tz();
    now = ngx_time();

    for (w = ngx_http_fairgate_tenant_quota(zone, t);
         w && st->nquota < NGX_HTTP_FAIRGATE_STATUS_QUOTAS;
         w = w->next)
    {
        q = &st->quota[st->nquota++];

        q->per = w->win.per;
        q->limit = w->limit;
        q->refused = w->win.refused;
        fg_quota_win_used(&w->win, tz, now, &q->used);
        fg_quota_bounds(&w->win.per, tz, now, &q->start, &q->end);
    }
}


/* a window's name: its calendar unit, or its length ("2h", "30d") */

static u_char *
ngx_http_fairgate_status_quota_window(u_char *p, fg_quota_per_t *per)
{
    int64_t  n;

    static const char  *units[] = { "", "hour", "day", "week", "month" };

    if (!per->rolling && per->unit != FG_QUOTA_SPAN) {
        return ngx_sprintf(p, "%s", units[per->unit]);
    }

    n = per->length;

    if (n % 86400 == 0) {
        return ngx_sprintf(p, "%Ld", n / 86400);
    }

    if (n % 3600 == 0) {
        return ngx_sprintf(p, "%Lh", n / 3600);
    }

    return (n % 60 == 0) ? ngx_sprintf(p, "%Lm", n / 60)
                         : ngx_sprintf(p, "%Ls", n);
}


json_t *
ngx_http_fairgate_status_quota_json(ngx_http_fairgate_snap_tenant_t *st)
{
    u_char                           name[NGX_INT64_LEN + 2], *p;
    json_t                          *a;
    ngx_uint_t                       i;
    ngx_http_fairgate_snap_quota_t  *q;

    a = json_array();

    for (i = 0; a && i < st->nquota; i++) {
        q = &st->quota[i];

        p = ngx_http_fairgate_status_quota_window(name, &q->per);

        json_array_append_new(a,
            json_pack("{s:s%, s:b, s:I, s:I, s:I, s:I, s:f, s:I}",
                      "window", (char *) name, (size_t) (p - name),
                      "rolling", (int) q->per.rolling,
                      "start", (json_int_t) q->start,
                      "end", (json_int_t) q->end,
                      "requests", (json_int_t) q->used.requests,
                      "tokens", (json_int_t) q->used.tokens,
                      "cost", (double) q->used.cost / 1e9,
                      "refused", (json_int_t) q->refused));
    }

    return a;
}


json_t *
ngx_http_fairgate_status_quota_keys(ngx_http_fairgate_snap_t *snap)
{
    json_t                           *keys;
    ngx_uint_t                        i;
    ngx_http_fairgate_snap_tenant_t  *s;

    keys = NULL;

    for (i = 0; i < snap->ntenants; i++) {
        s = &snap->tenants[i];

        if (s->kind != NGX_HTTP_FAIRGATE_KEY) {
            continue;
        }

        if (keys == NULL) {
            keys = json_array();
            if (keys == NULL) {
                return NULL;
            }
        }

        json_array_append_new(keys,
            json_pack("{s:s%, s:o}",
                      "id", (char *) s->name, s->len,
                      "quotas", ngx_http_fairgate_status_quota_json(s)));
    }

    return keys ? json_pack("{s:o}", "keys", keys) : json_object();
}


/* the two families, each of every zone's tenants' windows */

ngx_int_t
ngx_http_fairgate_status_quota_prom(ngx_http_fairgate_prom_t *w,
    ngx_http_fairgate_snap_t *snaps, ngx_uint_t n)
{
    ngx_uint_t                        i, j, k, limit;
    ngx_http_fairgate_snap_tenant_t  *t;

    static ngx_http_fairgate_prom_family_t  families[] = {
        { ngx_string("fairgate_quota_used"), ngx_string("gauge"),
          ngx_string("What a tenant counts in a quota window now: "
                     "requests, tokens, cost in the prices' unit."),
          0, ngx_string("what"), { { ngx_null_string, 0, 0 } } },
        { ngx_string("fairgate_quota_limit"), ngx_string("gauge"),
          ngx_string("The limits of a tenant's quota window, as a request "
                     "was last checked against them."),
          0, ngx_string("what"), { { ngx_null_string, 0, 0 } } }
    };

    for (limit = 0; limit < 2; limit++) {
        if (ngx_http_fairgate_prom_help(w, &families[limit]) != NGX_OK) {
            return NGX_ERROR;
        }

        for (i = 0; i < n; i++) {
            for (j = 0; j < snaps[i].ntenants; j++) {
                t = &snaps[i].tenants[j];

                for (k = 0; k < t->nquota; k++) {
                    if (ngx_http_fairgate_status_quota_lines(w,
                            &families[limit].name, &snaps[i], t,
                            &t->quota[k], limit)
                        != NGX_OK)
                    {
                        return NGX_ERROR;
                    }
                }
            }
        }
    }

    return NGX_OK;
}


/* a window's lines: what it counts, or its limits (those it has) */

static ngx_int_t
ngx_http_fairgate_status_quota_lines(ngx_http_fairgate_prom_t *w,
    ngx_str_t *name, ngx_http_fairgate_snap_t *sn,
    ngx_http_fairgate_snap_tenant_t *t, ngx_http_fairgate_snap_quota_t *q,
    ngx_uint_t limit)
{
    u_char                          win[NGX_INT64_LEN + 16], *p;
    double                          cost;
    uint64_t                        v[2];
    ngx_uint_t                      i;
    ngx_http_fairgate_prom_label_t  l[4];

    static const char  *kinds[] = { "user", "app", "key" };
    static const char  *whats[] = { "requests", "tokens" };

    p = ngx_http_fairgate_status_quota_window(win, &q->per);

    if (q->per.rolling) {
        p = ngx_cpymem(p, " rolling", sizeof(" rolling") - 1);
    }

    ngx_str_set(&l[0].name, "zone");
    l[0].value = sn->zone->name;
    l[1].name.data = (u_char *) kinds[t->kind];
    l[1].name.len = ngx_strlen(kinds[t->kind]);
    l[1].value.data = t->name;
    l[1].value.len = t->len;
    ngx_str_set(&l[2].name, "window");
    l[2].value.data = win;
    l[2].value.len = p - win;
    ngx_str_set(&l[3].name, "what");

    v[0] = limit ? q->limit.requests : q->used.requests;
    v[1] = limit ? q->limit.tokens : q->used.tokens;

    for (i = 0; i < 2; i++) {
        if (limit && v[i] == 0) {
            continue;
        }

        l[3].value.data = (u_char *) whats[i];
        l[3].value.len = ngx_strlen(whats[i]);

        if (ngx_http_fairgate_prom_line(w, name, l, 4,
                                        NGX_HTTP_FAIRGATE_PROM_U64, &v[i])
            != NGX_OK)
        {
            return NGX_ERROR;
        }
    }

    if (limit && q->limit.cost == 0) {
        return NGX_OK;
    }

    cost = (double) (limit ? q->limit.cost : q->used.cost) / 1e9;
    ngx_str_set(&l[3].value, "cost");

    return ngx_http_fairgate_prom_line(w, name, l, 4,
                                       NGX_HTTP_FAIRGATE_PROM_FIXED6, &cost);
}
