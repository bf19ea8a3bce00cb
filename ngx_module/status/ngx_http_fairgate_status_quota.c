
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
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "ngx_http_fairgate_status.h"
#include "ngx_http_fairgate_quota.h"


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
