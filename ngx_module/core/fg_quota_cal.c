
/*
 * fairgate: a quota's window at a moment: its start (the window's id) and
 * its end, the next window's start.
 *
 * A calendar window is an hour, a day, a week from Monday or a month from
 * the 1st of the zone's local time.  Local time is UTC plus the zone's
 * offset at that moment (fg_tz_t), so a window that holds a change of
 * offset is longer or shorter than its name (a day of 23 or 25 hours), and
 * an hour that the clock repeats at a change back is two windows.  A
 * window starts where the local clock first reads its local start, or at
 * the change of offset that skipped it; it ends where the next one starts.
 */


#include <time.h>

#include "fg_quota.h"


#define FG_QUOTA_DAY_S   86400
#define FG_QUOTA_WEEK_S  (7 * FG_QUOTA_DAY_S)


static int64_t fg_quota_local_floor(uint32_t unit, int64_t l);
static int64_t fg_quota_local_next(uint32_t unit, int64_t l);
static int64_t fg_quota_cal_start(const fg_quota_per_t *per,
    const fg_tz_t *tz, int64_t t);
static int64_t fg_quota_cal_end(const fg_quota_per_t *per,
    const fg_tz_t *tz, int64_t s);


/* floor division and modulo, for moments before the epoch too */

static int64_t
fg_quota_floor(int64_t a, int64_t b)
{
    int64_t  q;

    q = a / b;

    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}


int
fg_quota_per_check(const fg_quota_per_t *per)
{
    if (per->length < 0 || per->length > FG_QUOTA_MAX_LENGTH) {
        return -1;
    }

    /* whole minutes: a rolling window's buckets are whole seconds each */
    if (per->rolling) {
        return (per->length >= 60 && per->length % 60 == 0) ? 0 : -1;
    }

    if (per->unit == FG_QUOTA_SPAN) {
        return (per->length >= 60) ? 0 : -1;
    }

    return (per->unit >= FG_QUOTA_HOUR && per->unit <= FG_QUOTA_MONTH)
           ? 0 : -1;
}


int64_t
fg_quota_per_length(const fg_quota_per_t *per)
{
    if (per->rolling || per->unit == FG_QUOTA_SPAN) {
        return per->length;
    }

    /* at their longest: an hour added back at a change of offset */
    switch (per->unit) {

    case FG_QUOTA_HOUR:
        return 2 * 3600;

    case FG_QUOTA_DAY:
        return FG_QUOTA_DAY_S + 3600;

    case FG_QUOTA_WEEK:
        return FG_QUOTA_WEEK_S + 3600;

    default: /* FG_QUOTA_MONTH */
        return 31 * FG_QUOTA_DAY_S + 3600;
    }
}


/* a rolling window's bucket width: its length in FG_QUOTA_BUCKETS */

static int64_t
fg_quota_width(const fg_quota_per_t *per)
{
    return per->length / FG_QUOTA_BUCKETS;
}


void
fg_quota_bounds(const fg_quota_per_t *per, const fg_tz_t *tz, int64_t t,
    int64_t *start, int64_t *end)
{
    if (per->rolling) {
        *start = t - per->length;
        *end = t;
        return;
    }

    if (per->unit == FG_QUOTA_SPAN) {
        *start = fg_quota_floor(t, per->length) * per->length;
        *end = *start + per->length;
        return;
    }

    *start = fg_quota_cal_start(per, tz, t);
    *end = fg_quota_cal_end(per, tz, *start);
}


int64_t
fg_quota_id(const fg_quota_per_t *per, const fg_tz_t *tz, int64_t t)
{
    int64_t  w;

    if (per->rolling) {
        w = fg_quota_width(per);
        return fg_quota_floor(t, w) * w;
    }

    if (per->unit == FG_QUOTA_SPAN) {
        return fg_quota_floor(t, per->length) * per->length;
    }

    return fg_quota_cal_start(per, tz, t);
}


/* the local start of the unit holding local time l */

static int64_t
fg_quota_local_floor(uint32_t unit, int64_t l)
{
    int64_t    d;
    time_t     tt;
    struct tm  tm;

    switch (unit) {

    case FG_QUOTA_HOUR:
        return fg_quota_floor(l, 3600) * 3600;

    case FG_QUOTA_DAY:
        return fg_quota_floor(l, FG_QUOTA_DAY_S) * FG_QUOTA_DAY_S;

    case FG_QUOTA_WEEK:
        /* the epoch's day was a Thursday: Monday is 3 days before */
        d = fg_quota_floor(l, FG_QUOTA_DAY_S);
        d -= (d + 3) - fg_quota_floor(d + 3, 7) * 7;
        return d * FG_QUOTA_DAY_S;

    default: /* FG_QUOTA_MONTH: local time read as UTC, to the 1st */
        tt = (time_t) l;
        gmtime_r(&tt, &tm);
        tm.tm_mday = 1;
        tm.tm_hour = 0;
        tm.tm_min = 0;
        tm.tm_sec = 0;
        return (int64_t) timegm(&tm);
    }
}


/* the local start of the unit after the one starting at local time l */

static int64_t
fg_quota_local_next(uint32_t unit, int64_t l)
{
    time_t     tt;
    struct tm  tm;

    switch (unit) {

    case FG_QUOTA_HOUR:
        return l + 3600;

    case FG_QUOTA_DAY:
        return l + FG_QUOTA_DAY_S;

    case FG_QUOTA_WEEK:
        return l + FG_QUOTA_WEEK_S;

    default: /* FG_QUOTA_MONTH: timegm() carries a 13th month over */
        tt = (time_t) l;
        gmtime_r(&tt, &tm);
        tm.tm_mon++;
        return (int64_t) timegm(&tm);
    }
}


/*
 * The start of the calendar window holding t: its local start at t's
 * offset, unless the offset changed since then; the change's offset
 * before it is then tried, as long as the local clock just before the
 * change was still in the same unit (else the window began at the
 * change).
 */

static int64_t
fg_quota_cal_start(const fg_quota_per_t *per, const fg_tz_t *tz, int64_t t)
{
    int64_t   s, lf, last, before;
    uint32_t  i, k;

    lf = fg_quota_local_floor(per->unit, t + fg_tz_offset(tz, t));
    s = t;

    for (i = 0; i <= tz->n; i++) {
        s = lf - fg_tz_offset(tz, t);

        k = fg_tz_changes(tz, t);

        if (k == 0 || tz->at[k - 1] <= s) {
            return s;
        }

        last = tz->at[k - 1];
        before = last - 1 + tz->off[k - 1];

        if (fg_quota_local_floor(per->unit, before) != lf) {
            return last;
        }

        t = last - 1;
    }

    return s;
}


/*
 * The end of the calendar window starting at s: where the local clock
 * first reads the next unit's start, unless a change of offset on the way
 * starts another window first (a repeated hour, a skipped unit).
 */

static int64_t
fg_quota_cal_end(const fg_quota_per_t *per, const fg_tz_t *tz, int64_t s)
{
    int64_t   u, lf, ln, cand, next;
    uint32_t  i, k;

    lf = fg_quota_local_floor(per->unit, s + fg_tz_offset(tz, s));
    ln = fg_quota_local_next(per->unit, lf);
    u = s;

    for (i = 0; i <= tz->n; i++) {
        k = fg_tz_changes(tz, u);
        cand = ln - tz->off[k];

        if (k == tz->n || cand < tz->at[k]) {
            return (cand > u) ? cand : u + 1;
        }

        next = tz->at[k];

        if (fg_quota_cal_start(per, tz, next) != s) {
            return next;
        }

        u = next;
    }

    return ln - fg_tz_offset(tz, u);
}
