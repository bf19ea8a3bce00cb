
/*
 * fairgate: a quota window's counters (fg_quota.h has their layout): this
 * gateway's counts added and taken back, summed with the other gateways',
 * checked against a quota's limits, and when they have room again.
 */


#include <string.h>

#include "fg_quota.h"


static fg_quota_count_t *fg_quota_bucket(fg_quota_win_t *w,
    const fg_tz_t *tz, int64_t t, int64_t *id);
static void fg_quota_count_add(fg_quota_count_t *c, uint64_t requests,
    uint64_t tokens, uint64_t cost);


size_t
fg_quota_win_size(const fg_quota_per_t *per)
{
    size_t  n;

    n = per->rolling ? FG_QUOTA_BUCKETS : 1;

    return offsetof(fg_quota_win_t, local) + n * sizeof(fg_quota_count_t);
}


void
fg_quota_win_init(fg_quota_win_t *w, const fg_quota_per_t *per)
{
    uint32_t  i;

    memset(w, 0, fg_quota_win_size(per));

    w->per = *per;
    w->warned = INT64_MIN;
    w->remote.start = INT64_MIN;
    w->n = per->rolling ? FG_QUOTA_BUCKETS : 1;

    for (i = 0; i < w->n; i++) {
        w->local[i].start = INT64_MIN;
    }
}


/* the bucket of start *id that t falls in: a calendar window's one, or a
 * rolling window's slot in the ring */

static fg_quota_count_t *
fg_quota_bucket(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t, int64_t *id)
{
    int64_t  width, slot;

    *id = fg_quota_id(&w->per, tz, t);

    if (w->n == 1) {
        return &w->local[0];
    }

    width = w->per.length / FG_QUOTA_BUCKETS;
    slot = (*id / width) % FG_QUOTA_BUCKETS;

    if (slot < 0) {
        slot += FG_QUOTA_BUCKETS;
    }

    return &w->local[slot];
}


static void
fg_quota_count_add(fg_quota_count_t *c, uint64_t requests, uint64_t tokens,
    uint64_t cost)
{
    c->requests += requests;
    c->tokens += tokens;
    c->cost += cost;
}


void
fg_quota_win_add(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    uint64_t requests, uint64_t tokens, uint64_t cost)
{
    int64_t            id;
    fg_quota_count_t  *c;

    c = fg_quota_bucket(w, tz, t, &id);

    /* a clock that steps back counts into the newest bucket: never lose */
    if (c->start < id) {
        c->start = id;
        c->requests = 0;
        c->tokens = 0;
        c->cost = 0;
    }

    fg_quota_count_add(c, requests, tokens, cost);
}


void
fg_quota_win_take(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    int64_t at, uint64_t requests, uint64_t tokens, uint64_t cost)
{
    int64_t            id, now;
    fg_quota_count_t  *c;

    c = fg_quota_bucket(w, tz, at, &id);
    now = fg_quota_id(&w->per, tz, t);

    /* gone from the window, or its bucket taken by a newer one */
    if (c->start != id
        || (w->n == 1 && id != now)
        || (w->n > 1 && id <= now - w->per.length))
    {
        return;
    }

    c->requests -= (requests < c->requests) ? requests : c->requests;
    c->tokens -= (tokens < c->tokens) ? tokens : c->tokens;
    c->cost -= (cost < c->cost) ? cost : c->cost;
}


void
fg_quota_win_local(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    fg_quota_count_t *sum)
{
    int64_t            id;
    uint32_t           i;
    fg_quota_count_t  *c;

    id = fg_quota_id(&w->per, tz, t);

    memset(sum, 0, sizeof(fg_quota_count_t));
    sum->start = id;

    for (i = 0; i < w->n; i++) {
        c = &w->local[i];

        /* a calendar window's own; a rolling one's last n buckets */
        if (w->n == 1 ? c->start == id
                      : c->start <= id && c->start > id - w->per.length)
        {
            fg_quota_count_add(sum, c->requests, c->tokens, c->cost);
        }
    }
}


void
fg_quota_win_used(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    fg_quota_count_t *sum)
{
    fg_quota_win_local(w, tz, t, sum);

    if (w->remote.start == sum->start) {
        fg_quota_count_add(sum, w->remote.requests, w->remote.tokens,
                           w->remote.cost);
    }
}


uint32_t
fg_quota_over(const fg_quota_limit_t *l, const fg_quota_count_t *u)
{
    uint32_t  over;

    over = 0;

    if (l->requests && u->requests + 1 > l->requests) {
        over |= FG_QUOTA_REQUESTS;
    }

    if (l->tokens && u->tokens >= l->tokens) {
        over |= FG_QUOTA_TOKENS;
    }

    if (l->cost && u->cost >= l->cost) {
        over |= FG_QUOTA_COST;
    }

    return over;
}


uint32_t
fg_quota_percent(const fg_quota_limit_t *l, const fg_quota_count_t *u)
{
    double  p, max;

    max = 0;

    if (l->requests) {
        p = (double) u->requests * 100 / (double) l->requests;
        max = (p > max) ? p : max;
    }

    if (l->tokens) {
        p = (double) u->tokens * 100 / (double) l->tokens;
        max = (p > max) ? p : max;
    }

    if (l->cost) {
        p = (double) u->cost * 100 / (double) l->cost;
        max = (p > max) ? p : max;
    }

    return (max > 1e6) ? 1000000 : (uint32_t) max;
}


int64_t
fg_quota_reset(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    const fg_quota_limit_t *l, uint32_t over)
{
    int64_t            start, end, id, width, b;
    uint32_t           i;
    fg_quota_count_t   used, *c;

    if (!w->per.rolling) {
        fg_quota_bounds(&w->per, tz, t, &start, &end);
        return end;
    }

    /* the oldest buckets leave first: bucket b leaves at b + length */
    fg_quota_win_used(w, tz, t, &used);

    id = used.start;
    width = w->per.length / FG_QUOTA_BUCKETS;

    for (b = id - (FG_QUOTA_BUCKETS - 1) * width; b <= id; b += width) {

        for (i = 0; i < w->n; i++) {
            c = &w->local[i];

            if (c->start == b) {
                used.requests -= c->requests;
                used.tokens -= c->tokens;
                used.cost -= c->cost;
            }
        }

        if ((fg_quota_over(l, &used) & over) == 0) {
            return b + FG_QUOTA_BUCKETS * width;
        }
    }

    /* the other gateways' counts alone fill it */
    return id + FG_QUOTA_BUCKETS * width;
}
