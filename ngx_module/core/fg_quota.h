
/*
 * fairgate: quotas and budgets over long windows (fairgate_quota), their
 * windows' maths and counters.  Pure C, no nginx type, no pointer in the
 * counters: a window is valid in shared memory and may be copied.
 *
 * A window is either a calendar one (an hour, a day, a week from Monday, a
 * month from the 1st, in a time zone, its daylight saving changes taken
 * into account: a day may last 23 or 25 hours) or a fixed span of seconds
 * from the epoch, or a rolling one (the last N seconds, at any moment).
 * A window's id is its start, in seconds since the epoch (UTC): every
 * gateway with the same configuration gives a moment the same id.
 *
 * The counters' layout (fg_quota_win_t), as the Redis sync shares them:
 *
 *   local[]   what THIS gateway counted.  A calendar or fixed window has
 *             one bucket, local[0], whose "start" is the window's id; a
 *             rolling window has FG_QUOTA_BUCKETS buckets of length / n
 *             seconds each, aligned on the epoch (a bucket's start is a
 *             multiple of its width), in a ring: bucket b of start s is at
 *             local[(s / width) % n].  A bucket whose start is no longer
 *             in the window counts nothing (it is zeroed when reused).
 *             Only this gateway writes local[]: a sync reads it and sends
 *             each bucket's counts as this gateway's snapshot, keyed by
 *             the window's (or the bucket's) start.
 *
 *   remote    what the OTHER gateways counted in the same window, summed,
 *             as the last sync round found it; only the sync writes it.
 *             It holds while remote.start is the window's current id (a
 *             calendar window's start, a rolling window's newest bucket's
 *             start); any other start is stale and counts nothing, so that
 *             a window that turned over starts from this gateway's counts
 *             until the next round.
 *
 * A quota is checked against local + remote (fg_quota_win_used).  Every
 * count is a uint64_t: requests, tokens (input + output), and cost in
 * billionths of the price unit (a request's ctx->cost).
 */

#ifndef _FG_QUOTA_H_INCLUDED_
#define _FG_QUOTA_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>


/* a rolling window's buckets */
#define FG_QUOTA_BUCKETS     12

/* the time zone's offset changes a table holds (about 2 a year) */
#define FG_QUOTA_TZ_MAX      512

/* the longest window, in seconds: a year and a day */
#define FG_QUOTA_MAX_LENGTH  (366 * 86400)


typedef enum {
    FG_QUOTA_SPAN = 0,                /* fixed: length seconds from epoch */
    FG_QUOTA_HOUR,
    FG_QUOTA_DAY,
    FG_QUOTA_WEEK,                    /* from Monday 00:00 */
    FG_QUOTA_MONTH                    /* from the 1st, 00:00 */
} fg_quota_unit_e;


/* a window's definition, as configured */
typedef struct {
    uint32_t          unit;           /* fg_quota_unit_e */
    uint32_t          rolling;        /* 1: the last "length" seconds */
    int64_t           length;         /* seconds: SPAN's and rolling's */
} fg_quota_per_t;


/* counts of a window, or of a rolling window's bucket: 32 bytes */
typedef struct {
    int64_t           start;          /* window's or bucket's start, epoch
                                         seconds; INT64_MIN: never used */
    uint64_t          requests;
    uint64_t          tokens;         /* input + output */
    uint64_t          cost;           /* billionths of the price unit */
} fg_quota_count_t;


/*
 * A window's counters (see above).  Its size depends on its buckets:
 * fg_quota_win_size(); local[] is the last member.
 */
typedef struct {
    fg_quota_per_t    per;
    int64_t           warned;         /* window id the soft threshold was
                                         said for (INT64_MIN: none) */
    fg_quota_count_t  remote;         /* other gateways', summed */
    uint32_t          n;              /* buckets: 1, or FG_QUOTA_BUCKETS */
    uint32_t          refused;        /* requests it refused, this
                                         gateway, since the window was
                                         made */
    fg_quota_count_t  local[1];       /* this gateway's, n of them */
} fg_quota_win_t;


/* the limits of a quota: 0, none of that kind */
typedef struct {
    uint64_t          requests;
    uint64_t          tokens;
    uint64_t          cost;           /* budget, billionths */
    uint32_t          soft;           /* percent, 0: no warning */
} fg_quota_limit_t;


/* what a limit's check found */
#define FG_QUOTA_REQUESTS    0x1
#define FG_QUOTA_TOKENS      0x2
#define FG_QUOTA_COST        0x4


/*
 * A time zone's offsets from UTC: off[i] holds before at[i], off[n] after
 * the last change (n == 0: a fixed offset, off[0]).
 */
typedef struct {
    uint32_t          n;
    int64_t           at[FG_QUOTA_TZ_MAX];
    int32_t           off[FG_QUOTA_TZ_MAX + 1];
} fg_tz_t;


/*
 * An IANA zone ("Europe/Paris") read through the C library, its changes
 * from "from" to "to" (epoch seconds) in the table; the process's TZ is
 * restored.  -1: no such zone (the file is not in the zone directory), or
 * more changes than the table holds.
 */
int fg_tz_load(fg_tz_t *tz, const char *name, int64_t from, int64_t to);
void fg_tz_utc(fg_tz_t *tz);
int32_t fg_tz_offset(const fg_tz_t *tz, int64_t t);

/* how many of the table's changes are at or before t: at[i - 1] is the
 * last of them (i > 0) */
uint32_t fg_tz_changes(const fg_tz_t *tz, int64_t t);

/* a window's definition checked: 0, or -1 (a length out of bounds, or a
 * rolling one not of whole minutes) */
int fg_quota_per_check(const fg_quota_per_t *per);

/* a window's own length in seconds (a calendar one's at its longest) */
int64_t fg_quota_per_length(const fg_quota_per_t *per);

/*
 * The window holding t, [*start, *end): a rolling window's end is t, and
 * its start t - length.
 */
void fg_quota_bounds(const fg_quota_per_t *per, const fg_tz_t *tz,
    int64_t t, int64_t *start, int64_t *end);

/* the window's id at t: a calendar or fixed one's start, a rolling one's
 * newest bucket's start */
int64_t fg_quota_id(const fg_quota_per_t *per, const fg_tz_t *tz,
    int64_t t);

size_t fg_quota_win_size(const fg_quota_per_t *per);
void fg_quota_win_init(fg_quota_win_t *w, const fg_quota_per_t *per);

/* counts added at t (a request at admission, tokens and cost as they are
 * settled) */
void fg_quota_win_add(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    uint64_t requests, uint64_t tokens, uint64_t cost);

/* counts taken back from the bucket they were added to at "at", if it is
 * still in the window at t; never below 0 */
void fg_quota_win_take(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    int64_t at, uint64_t requests, uint64_t tokens, uint64_t cost);

/* this gateway's counts in the window at t, and with the others' */
void fg_quota_win_local(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    fg_quota_count_t *sum);
void fg_quota_win_used(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    fg_quota_count_t *sum);

/* which limits a new request would go over (FG_QUOTA_* bits): requests
 * over when used + 1 > limit, tokens and cost once used reaches them */
uint32_t fg_quota_over(const fg_quota_limit_t *l, const fg_quota_count_t *u);

/* the highest share of a limit used, in percent (0: no limit) */
uint32_t fg_quota_percent(const fg_quota_limit_t *l,
    const fg_quota_count_t *u);

/*
 * When the limits "over" (FG_QUOTA_* bits) have room again for a request,
 * epoch seconds: a calendar or fixed window's end; for a rolling one, when
 * enough of its oldest buckets have left (its end + length if the others'
 * counts alone fill it).
 */
int64_t fg_quota_reset(fg_quota_win_t *w, const fg_tz_t *tz, int64_t t,
    const fg_quota_limit_t *l, uint32_t over);


#endif /* _FG_QUOTA_H_INCLUDED_ */
