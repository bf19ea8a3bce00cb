
/*
 * fairgate: a key's own quotas and budgets read from the admin API's JSON
 * (fg_quota_json.h has the shape).  Every value is checked as the
 * fairgate_quota directive checks its parameters, so that a key's set is
 * what a directive for that key would be.
 */


#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "fg_quota_json.h"


static int fg_quota_json_quota(json_t *v, fg_quota_rule_t *r,
    const char **key, const char **expected);
static int fg_quota_json_budget(json_t *v, fg_quota_rule_t *r,
    const char **key, const char **expected);
static int fg_quota_json_common(const char *k, json_t *v,
    fg_quota_rule_t *r);


int
fg_quota_json(fg_quota_set_t *set, const char *text, size_t len,
    int budget, char *field, const char **expected)
{
    int               rc;
    json_t           *root, *v;
    const char       *what, *name, *key;
    fg_quota_rule_t   r;

    what = budget ? "budget" : "quota";

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);

    if (root == NULL || !json_is_object(root)) {
        snprintf(field, FG_QUOTA_FIELD_LEN, "%s", what);
        *expected = "an object of windows, or null";
        json_decref(root);
        return -1;
    }

    if (json_object_size(root) > FG_QUOTA_WINDOWS_MAX) {
        snprintf(field, FG_QUOTA_FIELD_LEN, "%s", what);
        *expected = "an object of at most 8 windows";
        json_decref(root);
        return -1;
    }

    rc = 0;

    json_object_foreach(root, name, v) {
        memset(&r, 0, sizeof(fg_quota_rule_t));
        key = NULL;

        if (fg_quota_window(name, strlen(name), &r.per) != 0) {
            *expected = "a window: hour, day, week, month, or a time "
                        "such as 90m, 12h, 30d or 2w";
            rc = -1;

        } else {
            rc = budget ? fg_quota_json_budget(v, &r, &key, expected)
                        : fg_quota_json_quota(v, &r, &key, expected);
        }

        if (rc == 0) {
            rc = fg_quota_set_add(set, &r, budget, expected);
        }

        if (rc != 0) {
            snprintf(field, FG_QUOTA_FIELD_LEN, "%s.%s%s%s", what, name,
                     key ? "." : "", key ? key : "");
            break;
        }
    }

    json_decref(root);

    return rc;
}


/* hour, day, week, month; or N and m, h, d or w */

int
fg_quota_window(const char *name, size_t n, fg_quota_per_t *per)
{
    size_t   i;
    int64_t  v;

    static const struct {
        const char  *name;
        uint32_t     unit;
        int64_t      length;
    } units[] = {
        { "hour", FG_QUOTA_HOUR, 3600 },
        { "day", FG_QUOTA_DAY, 86400 },
        { "week", FG_QUOTA_WEEK, 7 * 86400 },
        { "month", FG_QUOTA_MONTH, 30 * 86400 }
    };

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strlen(units[i].name) == n
            && memcmp(name, units[i].name, n) == 0)
        {
            per->unit = units[i].unit;
            per->length = units[i].length;
            return 0;
        }
    }

    if (n < 2 || n > 8) {
        return -1;
    }

    for (v = 0, i = 0; i + 1 < n; i++) {
        if (name[i] < '0' || name[i] > '9') {
            return -1;
        }

        v = v * 10 + (name[i] - '0');
    }

    switch (name[n - 1]) {
    case 'm': v *= 60; break;
    case 'h': v *= 3600; break;
    case 'd': v *= 86400; break;
    case 'w': v *= 7 * 86400; break;
    default: return -1;
    }

    per->unit = FG_QUOTA_SPAN;
    per->length = v;

    return (v > 0) ? 0 : -1;
}


/* {"requests": N, "tokens": N, "soft": P, "rolling": B} */

static int
fg_quota_json_quota(json_t *v, fg_quota_rule_t *r, const char **key,
    const char **expected)
{
    json_int_t   n;
    json_t      *e;
    const char  *k;

    if (!json_is_object(v)) {
        *expected = "an object with requests or tokens";
        return -1;
    }

    json_object_foreach(v, k, e) {
        *key = k;

        if (strcmp(k, "requests") == 0 || strcmp(k, "tokens") == 0) {
            n = json_is_integer(e) ? json_integer_value(e) : 0;

            if (n < 1) {
                *expected = "an integer of 1 or more";
                return -1;
            }

            *(k[0] == 'r' ? &r->limit.requests : &r->limit.tokens) =
                (uint64_t) n;
            continue;
        }

        switch (fg_quota_json_common(k, e, r)) {
        case 0:
            continue;
        case 1:
            *expected = "requests, tokens, soft or rolling";
            return -1;
        default:
            *expected = (k[0] == 's') ? "an integer from 1 to 100"
                                      : "true or false";
            return -1;
        }
    }

    *key = NULL;

    if (r->limit.requests == 0 && r->limit.tokens == 0) {
        *expected = "an object with requests or tokens";
        return -1;
    }

    return 0;
}


/* AMOUNT, or {"amount": AMOUNT, "soft": P, "rolling": B} */

static int
fg_quota_json_budget(json_t *v, fg_quota_rule_t *r, const char **key,
    const char **expected)
{
    double       d;
    json_t      *a, *e;
    const char  *k;

    a = v;

    if (json_is_object(v)) {
        a = NULL;

        json_object_foreach(v, k, e) {
            *key = k;

            if (strcmp(k, "amount") == 0) {
                a = e;
                continue;
            }

            switch (fg_quota_json_common(k, e, r)) {
            case 0:
                continue;
            case 1:
                *expected = "amount, soft or rolling";
                return -1;
            default:
                *expected = (k[0] == 's') ? "an integer from 1 to 100"
                                          : "true or false";
                return -1;
            }
        }

        *key = "amount";
    }

    d = json_is_number(a) ? json_number_value(a) : 0;

    if (!(d > 0 && d <= FG_QUOTA_AMOUNT_MAX)) {
        *expected = "an amount above 0, at most 1000000000";
        return -1;
    }

    r->limit.cost = json_is_integer(a) ? (uint64_t) json_integer_value(a)
                                         * 1000000000
                                       : (uint64_t) (d * 1e9 + 0.5);

    if (r->limit.cost == 0) {
        *expected = "an amount above 0, at most 1000000000";
        return -1;
    }

    *key = NULL;

    return 0;
}


/* soft and rolling: 0, read; 1, not one of them; -1, a bad value */

static int
fg_quota_json_common(const char *k, json_t *v, fg_quota_rule_t *r)
{
    json_int_t  n;

    if (strcmp(k, "soft") == 0) {
        n = json_is_integer(v) ? json_integer_value(v) : 0;

        if (n < 1 || n > 100) {
            return -1;
        }

        r->limit.soft = (uint32_t) n;
        return 0;
    }

    if (strcmp(k, "rolling") == 0) {
        if (!json_is_boolean(v)) {
            return -1;
        }

        r->per.rolling = json_is_true(v);
        return 0;
    }

    return 1;
}


/* a window checked, its limits joined to the set's of the same window */

int
fg_quota_set_add(fg_quota_set_t *set, fg_quota_rule_t *r, int budget,
    const char **expected)
{
    uint32_t          i;
    fg_quota_rule_t  *o;

    if (fg_quota_per_check(&r->per) != 0) {
        *expected = r->per.rolling
                    ? "a rolling window of whole minutes, at most 366 days"
                    : "a window from a minute to 366 days";
        return -1;
    }

    for (i = 0; i < set->n; i++) {
        o = &set->rule[i];

        if (o->per.unit != r->per.unit || o->per.rolling != r->per.rolling
            || o->per.length != r->per.length)
        {
            continue;
        }

        if ((budget && o->limit.cost)
            || (!budget && (o->limit.requests || o->limit.tokens)))
        {
            *expected = "one entry a window (this one names the same "
                        "window as another)";
            return -1;
        }

        if (budget) {
            o->limit.cost = r->limit.cost;

        } else {
            o->limit.requests = r->limit.requests;
            o->limit.tokens = r->limit.tokens;
        }

        if (o->limit.soft == 0 || !budget) {
            o->limit.soft = r->limit.soft ? r->limit.soft : o->limit.soft;
        }

        return 0;
    }

    if (set->n == FG_QUOTA_RULES_MAX) {
        *expected = "at most 16 windows, quota and budget together";
        return -1;
    }

    set->rule[set->n++] = *r;

    return 0;
}


size_t
fg_quota_per_name(const fg_quota_per_t *per, char *buf, size_t size)
{
    int          n;
    int64_t      v;
    const char  *unit;

    static const char  *names[] = { NULL, "hour", "day", "week", "month" };

    if (per->unit != FG_QUOTA_SPAN && per->unit <= FG_QUOTA_MONTH) {
        n = snprintf(buf, size, "%s", names[per->unit]);

    } else {
        v = per->length;
        unit = (v % 86400 == 0) ? "d" : (v % 3600 == 0) ? "h" : "m";
        v /= (unit[0] == 'd') ? 86400 : (unit[0] == 'h') ? 3600 : 60;
        n = snprintf(buf, size, "%lld%s", (long long) v, unit);
    }

    if (per->rolling && n > 0 && (size_t) n < size) {
        n += snprintf(buf + n, size - n, " rolling");
    }

    return (n < 0) ? 0 : ((size_t) n < size ? (size_t) n : size - 1);
}
