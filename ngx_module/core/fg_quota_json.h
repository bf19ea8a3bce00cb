
/*
 * fairgate: a key's own quotas and budgets, as the admin API keeps them
 * (its "quota" and "budget" objects, JSON), read into the windows and
 * limits a fairgate_quota directive gives (fg_quota.h).  Pure C (jansson).
 *
 *   "quota":  {"day": {"requests": 1000, "tokens": 2000000, "soft": 80},
 *              "7d": {"tokens": 9000000, "rolling": true}}
 *   "budget": {"month": 50, "day": {"amount": 2.5, "soft": 90}}
 *
 * A window is "hour", "day", "week" or "month" (calendar ones; rolling:
 * the last 1, 24, 168 or 720 hours), or a time of whole minutes, hours,
 * days or weeks ("90m", "12h", "30d", "2w": fixed spans from the epoch,
 * or rolling).  A quota and a budget of the same window are one set of
 * limits, as one directive's; its soft threshold is the quota's, else the
 * budget's.
 */

#ifndef _FG_QUOTA_JSON_H_INCLUDED_
#define _FG_QUOTA_JSON_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_quota.h"


/* the windows of a quota object, or of a budget one; and of both */
#define FG_QUOTA_WINDOWS_MAX  8
#define FG_QUOTA_RULES_MAX    (2 * FG_QUOTA_WINDOWS_MAX)

/* a budget's largest amount, as the directive's: its billionths fit */
#define FG_QUOTA_AMOUNT_MAX  1000000000

/* the longest field name said of a bad value */
#define FG_QUOTA_FIELD_LEN  80


/* one window's limits: a directive's per= and limits */
typedef struct {
    fg_quota_per_t    per;
    fg_quota_limit_t  limit;
} fg_quota_rule_t;

typedef struct {
    uint32_t          n;
    fg_quota_rule_t   rule[FG_QUOTA_RULES_MAX];
} fg_quota_set_t;


/*
 * A "quota" object's text (budget 0) or a "budget" object's (budget 1)
 * added to set, whose windows it shares.  0, or -1: field (a buffer of
 * FG_QUOTA_FIELD_LEN) names what does not read, as "quota.month.tokens",
 * and *expected says what it should be.
 */
int fg_quota_json(fg_quota_set_t *set, const char *text, size_t len,
    int budget, char *field, const char **expected);

/*
 * The same set from a keys file's column's value (fg_quota_text.c): a
 * quota's, budget 0, "day:requests=1000,tokens=2000000,soft=80;7d:
 * tokens=9000000,rolling", or a budget's, budget 1, "month:50;day:2.5,
 * soft=90".  Windows are separated by ';', a window's name by ':' from its
 * fields, the fields by ','; each field at most once.  0, or -1 with field
 * and *expected as fg_quota_json()'s.
 */
int fg_quota_text(fg_quota_set_t *set, const char *text, size_t len,
    int budget, char *field, const char **expected);

/*
 * What both read alike: a window's name, len bytes ("day", "30d"), 0 or
 * -1; and a window's limits checked (its per) and joined to the set's of
 * the same window, 0 or -1 and *expected.
 */
int fg_quota_window(const char *name, size_t len, fg_quota_per_t *per);
int fg_quota_set_add(fg_quota_set_t *set, fg_quota_rule_t *r, int budget,
    const char **expected);

/* a window's name as the headers and logs say it: "day", "30d rolling";
 * buf of 32 bytes at least; its length */
size_t fg_quota_per_name(const fg_quota_per_t *per, char *buf, size_t size);


#endif /* _FG_QUOTA_JSON_H_INCLUDED_ */
