
/*
 * fairgate: tests of the quotas' windows (fg_quota.h): calendar windows in
 * a time zone with its changes of offset, weeks from Monday, months of
 * every length, rolling windows, and the counters checked against limits.
 * The moments are epoch seconds, worked out apart (Python's zoneinfo).
 */


#include "fg_tap.h"
#include "fg_quota.h"


#define H  3600
#define D  86400

/* 2026-01-01 00:00 UTC and 2036-01-01: the zone table's span */
#define FROM  1767225600
#define TO    2082758400


static fg_tz_t  paris, kolkata, utc;


static void
bounds_is(const fg_quota_per_t *per, const fg_tz_t *tz, int64_t t,
    int64_t start, int64_t end, const char *what)
{
    int64_t  s, e;

    fg_quota_bounds(per, tz, t, &s, &e);

    is_int(s, start, "%s: start", what);
    is_int(e, end, "%s: end", what);
}


static void
test_tz(void)
{
    ok(fg_tz_load(&paris, "Europe/Paris", FROM, TO) == 0,
       "Europe/Paris is read");
    ok(paris.n >= 18 && paris.n <= 22, "two changes a year (%u)", paris.n);
    is_int(paris.at[0], 1774746000, "the first: 2026-03-29 01:00 UTC");
    is_int(paris.at[1], 1792890000, "the second: 2026-10-25 01:00 UTC");
    is_int(fg_tz_offset(&paris, 1774746000 - 1), H, "CET before it");
    is_int(fg_tz_offset(&paris, 1774746000), 2 * H, "CEST from it");

    ok(fg_tz_load(&kolkata, "Asia/Kolkata", FROM, TO) == 0,
       "Asia/Kolkata is read");
    is_int(kolkata.n, 0, "no change there");
    is_int(fg_tz_offset(&kolkata, FROM), 5 * H + 1800, "+05:30");

    ok(fg_tz_load(&utc, "UTC", FROM, TO) == 0 && utc.n == 0, "UTC");
    ok(fg_tz_load(&utc, "Europe/Nowhere", FROM, TO) == -1,
       "a zone with no file is refused");
    ok(fg_tz_load(&utc, "../etc/passwd", FROM, TO) == -1,
       "a path out of the zone directory is refused");
    ok(fg_tz_load(&utc, "/etc/localtime", FROM, TO) == -1,
       "an absolute path is refused");

    fg_tz_utc(&utc);
}


static void
test_calendar(void)
{
    fg_quota_per_t  per = { FG_QUOTA_DAY, 0, 0 };

    /* the day the clocks go forward lasts 23 h, back 25 h */
    bounds_is(&per, &paris, 1774746000 + 11 * H, 1774738800, 1774821600,
              "Paris, 2026-03-29 (23 h)");
    bounds_is(&per, &paris, 1774738800, 1774738800, 1774821600,
              "... at its first second");
    bounds_is(&per, &paris, 1774821600 - 1, 1774738800, 1774821600,
              "... at its last");
    bounds_is(&per, &paris, 1792890000 + 12 * H, 1792879200, 1792969200,
              "Paris, 2026-10-25 (25 h)");
    bounds_is(&per, &paris, 1792890000 - 1, 1792879200, 1792969200,
              "... just before the change");

    per.unit = FG_QUOTA_HOUR;

    /* the repeated hour, 02:00 to 03:00, is two windows */
    bounds_is(&per, &paris, 1792890000 - 1800, 1792890000 - H, 1792890000,
              "Paris, 02:30 CEST");
    bounds_is(&per, &paris, 1792890000 + 1800, 1792890000, 1792890000 + H,
              "Paris, 02:30 CET, an hour later");
    bounds_is(&per, &paris, 1774746000 + 1800, 1774746000, 1774746000 + H,
              "Paris, 03:30 CEST, after the skipped hour");
    bounds_is(&per, &paris, 1774746000 - 1800, 1774746000 - H, 1774746000,
              "Paris, 01:30 CET, before it");
    bounds_is(&per, &kolkata, 1780310700, 1780309800, 1780309800 + H,
              "Kolkata's hours start at :30 UTC");

    per.unit = FG_QUOTA_WEEK;

    /* Sunday 2026-11-29 is in the week from Monday the 23rd */
    bounds_is(&per, &paris, 1795993200 - 12 * H, 1795388400, 1795993200,
              "Paris, a week from Monday");
    bounds_is(&per, &utc, 1795993200 - 12 * H, 1795388400 + H,
              1795993200 + H, "UTC, the same week an hour later");
    bounds_is(&per, &paris, 1774746000, 1774220400, 1774821600,
              "Paris, the week the clocks go forward: 167 h");

    per.unit = FG_QUOTA_MONTH;

    bounds_is(&per, &paris, 1772319600 + 20 * D, 1772319600, 1774994400,
              "Paris, March 2026: 31 days less an hour");
    bounds_is(&per, &paris, 1792890000, 1790805600, 1793487600,
              "Paris, October 2026: 31 days and an hour");
    bounds_is(&per, &utc, 1832976000 + 28 * D + 5, 1832976000, 1835481600,
              "February 2028: 29 days");
    is_int(1835481600 - 1832976000, 29 * D, "... which it is");
    bounds_is(&per, &utc, 1769904000 + 27 * D, 1769904000, 1772323200,
              "February 2026: 28 days");
    bounds_is(&per, &utc, 1798761600 - 1, 1796083200, 1798761600,
              "December 2026 ends with the year");
    bounds_is(&per, &utc, 1798761600, 1798761600, 1798761600 + 31 * D,
              "January 2027 starts it");

    per.unit = FG_QUOTA_SPAN;
    per.length = 30 * D;

    bounds_is(&per, &paris, 30 * D * 700 + 5, 30 * D * 700,
              30 * D * 701, "a fixed span, from the epoch, zone or not");
}


static void
test_rolling(void)
{
    int64_t           t0;
    uint64_t          buf[128];     /* a window's room, aligned */
    fg_quota_win_t   *w;
    fg_quota_per_t    per = { FG_QUOTA_SPAN, 1, H };
    fg_quota_count_t  u;
    fg_quota_limit_t  l = { 3, 0, 0, 0 };

    ok(fg_quota_per_check(&per) == 0, "an hour rolling is valid");
    ok(fg_quota_win_size(&per) <= sizeof(buf), "its size");

    w = (fg_quota_win_t *) buf;
    fg_quota_win_init(w, &per);

    t0 = 1800000000;            /* a multiple of 300 */

    fg_quota_win_add(w, &utc, t0 + 10, 1, 100, 5);
    fg_quota_win_add(w, &utc, t0 + 1000, 1, 50, 0);
    fg_quota_win_add(w, &utc, t0 + 2000, 1, 10, 0);

    fg_quota_win_used(w, &utc, t0 + 2000, &u);
    is_int(u.requests, 3, "three requests in the hour");
    is_int(u.tokens, 160, "their tokens");
    is_int(u.cost, 5, "their cost");
    is_int(fg_quota_over(&l, &u), FG_QUOTA_REQUESTS, "a fourth is over");

    /* the first bucket leaves at t0 + 3600: a request fits again then */
    is_int(fg_quota_reset(w, &utc, t0 + 2000, &l, FG_QUOTA_REQUESTS),
           t0 + H, "it fits again when the oldest bucket leaves");

    fg_quota_win_used(w, &utc, t0 + H - 1, &u);
    is_int(u.requests, 3, "all in at an hour less a second");
    fg_quota_win_used(w, &utc, t0 + H, &u);
    is_int(u.requests, 2, "the first gone at an hour");
    is_int(u.tokens, 60, "with its tokens");
    fg_quota_win_used(w, &utc, t0 + 2 * H + 300, &u);
    is_int(u.requests, 0, "all gone after two hours");

    /* taken back: from its own bucket while it is in the window */
    fg_quota_win_add(w, &utc, t0 + 3 * H, 1, 0, 0);
    fg_quota_win_take(w, &utc, t0 + 3 * H + 400, t0 + 3 * H, 1, 0, 0);
    fg_quota_win_used(w, &utc, t0 + 3 * H + 400, &u);
    is_int(u.requests, 0, "a request taken back");
    fg_quota_win_take(w, &utc, t0 + 3 * H + 400, t0 + 3 * H, 1, 0, 0);
    fg_quota_win_used(w, &utc, t0 + 3 * H + 400, &u);
    is_int(u.requests, 0, "never below zero");

    /* the others' counts hold for the newest bucket they were synced at */
    w->remote.start = fg_quota_id(&per, &utc, t0 + 3 * H + 400);
    w->remote.requests = 7;
    is_int(w->remote.start, t0 + 3 * H + 300, "a rolling id: its bucket");
    fg_quota_win_used(w, &utc, t0 + 3 * H + 599, &u);
    is_int(u.requests, 7, "the others' count in its bucket");
    fg_quota_win_used(w, &utc, t0 + 3 * H + 600, &u);
    is_int(u.requests, 0, "stale in the next, until synced again");

    per.length = 100;
    ok(fg_quota_per_check(&per) == -1,
       "a rolling length not of whole minutes is refused");
    per.length = 36;
    ok(fg_quota_per_check(&per) == -1, "under a minute is refused");
}


static void
test_counts(void)
{
    int64_t           t;
    uint64_t          buf[32];
    fg_quota_win_t   *w;
    fg_quota_per_t    per = { FG_QUOTA_DAY, 0, 0 };
    fg_quota_count_t  u;
    fg_quota_limit_t  l = { 0, 1000, 2000000000, 80 };

    ok(fg_quota_win_size(&per) <= 128, "a calendar window fits 128 bytes");

    w = (fg_quota_win_t *) buf;
    fg_quota_win_init(w, &per);

    t = 1774746000 + 11 * H;    /* 2026-03-29 in Paris */

    fg_quota_win_add(w, &paris, t, 1, 500, 1000000000);
    fg_quota_win_used(w, &paris, t, &u);
    is_int(u.start, 1774738800, "counted in the day's window");
    is_int(fg_quota_over(&l, &u), 0, "under both limits");
    is_int(fg_quota_percent(&l, &u), 50, "50 percent of each");

    /* what the other gateways counted, for this window and a stale one */
    w->remote.start = 1774738800;
    w->remote.tokens = 400;
    w->remote.cost = 700000000;
    fg_quota_win_used(w, &paris, t, &u);
    is_int(u.tokens, 900, "the others' tokens add");
    is_int(fg_quota_percent(&l, &u), 90, "90 percent of the tokens");
    ok(fg_quota_percent(&l, &u) >= l.soft, "past the soft threshold");
    is_int(fg_quota_over(&l, &u), 0, "not over yet");

    fg_quota_win_add(w, &paris, t + 60, 0, 100, 300000000);
    fg_quota_win_used(w, &paris, t + 60, &u);
    is_int(fg_quota_over(&l, &u), FG_QUOTA_TOKENS | FG_QUOTA_COST,
           "tokens and budget reached: over both");
    is_int(fg_quota_reset(w, &paris, t + 60, &l, FG_QUOTA_TOKENS),
           1774821600, "free again at midnight, Paris time");

    /* the next day: a new window, the others' stale counts out */
    fg_quota_win_used(w, &paris, 1774821600, &u);
    is_int(u.tokens, 0, "the next day starts empty");
    fg_quota_win_add(w, &paris, 1774821600, 1, 10, 0);
    fg_quota_win_local(w, &paris, 1774821600, &u);
    is_int(u.requests, 1, "and counts anew");

    /* a request admitted yesterday cannot be taken back from today */
    fg_quota_win_take(w, &paris, 1774821600 + 5, t, 1, 0, 0);
    fg_quota_win_local(w, &paris, 1774821600 + 5, &u);
    is_int(u.requests, 1, "yesterday's take-back leaves today alone");

    l.requests = 1;
    fg_quota_win_used(w, &paris, 1774821600 + 5, &u);
    is_int(fg_quota_over(&l, &u) & FG_QUOTA_REQUESTS, FG_QUOTA_REQUESTS,
           "requests over once the next would pass the limit");
}


int
main(void)
{
    test_tz();
    test_calendar();
    test_rolling();
    test_counts();

    return fg_tap_done();
}
