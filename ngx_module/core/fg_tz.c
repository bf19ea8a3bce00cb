
/*
 * fairgate: a time zone's offsets from UTC, as a table of changes.
 *
 * The C library knows the IANA zones (their rules, the POSIX rule past the
 * file's last change) but only for the process's one zone, TZ.  The table
 * is read from it once, at configuration: TZ set to the zone, the offsets
 * walked a day at a time and each change found to the second, TZ put back.
 * A window's maths then asks the table, never the C library.
 */


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fg_quota.h"


#define FG_TZ_STEP  86400


static int fg_tz_name_valid(const char *name);
static int fg_tz_walk(fg_tz_t *tz, int64_t from, int64_t to);


void
fg_tz_utc(fg_tz_t *tz)
{
    tz->n = 0;
    tz->off[0] = 0;
}


int
fg_tz_load(fg_tz_t *tz, const char *name, int64_t from, int64_t to)
{
    int          rc;
    char        *saved, path[512];
    const char  *dir, *old;

    if (strcmp(name, "UTC") == 0) {
        fg_tz_utc(tz);
        return 0;
    }

    if (!fg_tz_name_valid(name)) {
        return -1;
    }

    /* the C library takes a name it has no file for as UTC: say so */
    dir = getenv("TZDIR");
    if (dir == NULL || dir[0] == '\0') {
        dir = "/usr/share/zoneinfo";
    }

    if ((size_t) snprintf(path, sizeof(path), "%s/%s", dir, name)
        >= sizeof(path)
        || access(path, R_OK) != 0)
    {
        return -1;
    }

    old = getenv("TZ");
    saved = NULL;

    if (old) {
        saved = strdup(old);
        if (saved == NULL) {
            return -1;
        }
    }

    if (setenv("TZ", name, 1) != 0) {
        free(saved);
        return -1;
    }

    tzset();

    rc = fg_tz_walk(tz, from, to);

    if (saved) {
        (void) setenv("TZ", saved, 1);
        free(saved);

    } else {
        (void) unsetenv("TZ");
    }

    tzset();

    return rc;
}


/* a zone's name as the zone directory has it: no absolute path, no ".." */

static int
fg_tz_name_valid(const char *name)
{
    const char  *p;

    if (name[0] == '\0' || name[0] == '/' || strstr(name, "..") != NULL) {
        return 0;
    }

    for (p = name; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')
              || (*p >= '0' && *p <= '9')
              || *p == '/' || *p == '_' || *p == '-' || *p == '+'))
        {
            return 0;
        }
    }

    return 1;
}


static int32_t
fg_tz_local_offset(int64_t t)
{
    time_t     tt;
    struct tm  tm;

    tt = (time_t) t;

    if (localtime_r(&tt, &tm) == NULL) {
        return 0;
    }

    return (int32_t) tm.tm_gmtoff;
}


/* the changes from "from" to "to": a day apart at least, as every zone's */

static int
fg_tz_walk(fg_tz_t *tz, int64_t from, int64_t to)
{
    int32_t  o, o2;
    int64_t  t, lo, hi, mid;

    tz->n = 0;
    o = fg_tz_local_offset(from);
    tz->off[0] = o;

    for (t = from; t < to; t += FG_TZ_STEP) {
        o2 = fg_tz_local_offset(t + FG_TZ_STEP);

        if (o2 == o) {
            continue;
        }

        /* the first second of the new offset, in (t, t + step] */
        lo = t;
        hi = t + FG_TZ_STEP;

        while (hi - lo > 1) {
            mid = lo + (hi - lo) / 2;

            if (fg_tz_local_offset(mid) == o) {
                lo = mid;

            } else {
                hi = mid;
            }
        }

        if (tz->n == FG_QUOTA_TZ_MAX) {
            return -1;
        }

        tz->at[tz->n] = hi;
        tz->off[tz->n + 1] = o2;
        tz->n++;

        o = o2;
    }

    return 0;
}


/* how many of the table's changes are at or before t */

uint32_t
fg_tz_changes(const fg_tz_t *tz, int64_t t)
{
    uint32_t  lo, hi, mid;

    lo = 0;
    hi = tz->n;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;

        if (tz->at[mid] <= t) {
            lo = mid + 1;

        } else {
            hi = mid;
        }
    }

    return lo;
}


/* the offset at t: off[i] for the first change after t */

int32_t
fg_tz_offset(const fg_tz_t *tz, int64_t t)
{
    return tz->off[fg_tz_changes(tz, t)];
}
