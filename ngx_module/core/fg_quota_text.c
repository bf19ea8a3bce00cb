
/*
 * fairgate: a key's own quotas and budgets as a keys file's columns say
 * them (fg_quota_json.h has the shape), the JSON's twin: the same windows
 * (fg_quota_window()), the same checks and the same set
 * (fg_quota_set_add()), the same field named in an error.
 *
 *   quota=day:requests=1000,tokens=2000000,soft=80;7d:tokens=9000000,rolling
 *   budget=month:50;day:2.5,soft=90
 */


#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "fg_quota_json.h"


/* a field's name and what follows its '=' (NULL: no '=') */
typedef struct {
    const char  *name;
    size_t       len;
    const char  *value;
    const char  *end;
} fg_quota_field_t;


static int fg_quota_text_fields(const char *p, const char *last,
    int budget, fg_quota_rule_t *r, fg_quota_field_t *f,
    const char **expected);
static int fg_quota_text_field(fg_quota_field_t *f, int budget,
    fg_quota_rule_t *r, const char **expected);
static int fg_quota_text_is(fg_quota_field_t *f, const char *name);
static uint64_t fg_quota_text_count(const char *p, const char *last);
static int fg_quota_text_amount(const char *p, const char *last,
    uint64_t *amount);


int
fg_quota_text(fg_quota_set_t *set, const char *text, size_t len,
    int budget, char *field, const char **expected)
{
    int                rc;
    size_t             nwin;
    const char        *p, *last, *end, *colon, *what;
    fg_quota_rule_t    r;
    fg_quota_field_t   f;

    what = budget ? "budget" : "quota";
    last = text + len;

    for (p = text, nwin = 1; /* void */ ; p = end + 1, nwin++) {
        end = memchr(p, ';', last - p);
        end = end ? end : last;
        colon = memchr(p, ':', end - p);

        memset(&r, 0, sizeof(fg_quota_rule_t));
        f.name = NULL;

        if (nwin > FG_QUOTA_WINDOWS_MAX) {
            snprintf(field, FG_QUOTA_FIELD_LEN, "%s", what);
            *expected = "at most 8 windows";
            return -1;
        }

        if (colon == NULL || fg_quota_window(p, colon - p, &r.per) != 0) {
            *expected = "WINDOW:LIMITS, a window: hour, day, week, month, "
                        "or a time such as 90m, 12h, 30d or 2w";
            rc = -1;

        } else {
            rc = fg_quota_text_fields(colon + 1, end, budget, &r, &f,
                                      expected);
        }

        if (rc == 0) {
            rc = fg_quota_set_add(set, &r, budget, expected);
        }

        if (rc != 0) {
            colon = colon ? colon : end;
            snprintf(field, FG_QUOTA_FIELD_LEN, "%s.%.*s%s%.*s", what,
                     (int) (colon - p > 16 ? 16 : colon - p), p,
                     f.name ? "." : "",
                     (int) (f.name ? (f.len > 16 ? 16 : f.len) : 0),
                     f.name ? f.name : "");
            return -1;
        }

        if (end == last) {
            return 0;
        }
    }
}


/* a window's fields, separated by ','; f names the bad one */

static int
fg_quota_text_fields(const char *p, const char *last, int budget,
    fg_quota_rule_t *r, fg_quota_field_t *f, const char **expected)
{
    const char  *end;

    for ( ;; p = end + 1) {
        end = memchr(p, ',', last - p);
        end = end ? end : last;

        f->name = p;
        f->value = memchr(p, '=', end - p);
        f->end = end;
        f->len = (f->value ? f->value : end) - p;

        if (f->value) {
            f->value++;
        }

        /* a budget's first field is its amount */

        if (budget && r->limit.cost == 0) {
            f->name = "amount";
            f->len = 6;

            if (f->value != NULL
                || fg_quota_text_amount(p, end, &r->limit.cost) != 0)
            {
                *expected = "an amount above 0, at most 1000000000, "
                            "first";
                return -1;
            }

        } else if (fg_quota_text_field(f, budget, r, expected) != 0) {
            return -1;
        }

        if (end == last) {
            break;
        }
    }

    f->name = NULL;

    if (!budget && r->limit.requests == 0 && r->limit.tokens == 0) {
        *expected = "requests=N or tokens=N";
        return -1;
    }

    return 0;
}


/* requests=N, tokens=N (a quota's), soft=P, rolling: each once */

static int
fg_quota_text_field(fg_quota_field_t *f, int budget, fg_quota_rule_t *r,
    const char **expected)
{
    uint64_t  *v, n;

    if (fg_quota_text_is(f, "rolling") && f->value == NULL
        && !r->per.rolling)
    {
        r->per.rolling = 1;
        return 0;
    }

    if (fg_quota_text_is(f, "soft") && f->value && r->limit.soft == 0) {
        n = fg_quota_text_count(f->value, f->end);

        if (n < 1 || n > 100) {
            *expected = "an integer from 1 to 100";
            return -1;
        }

        r->limit.soft = (uint32_t) n;
        return 0;
    }

    v = NULL;

    if (!budget && fg_quota_text_is(f, "requests")) {
        v = &r->limit.requests;

    } else if (!budget && fg_quota_text_is(f, "tokens")) {
        v = &r->limit.tokens;
    }

    if (v != NULL && *v == 0 && f->value) {
        *v = fg_quota_text_count(f->value, f->end);

        if (*v == 0) {
            *expected = "an integer of 1 or more";
            return -1;
        }

        return 0;
    }

    *expected = budget ? "AMOUNT, then soft=P or rolling, each once"
                       : "requests=N, tokens=N, soft=P or rolling, "
                         "each once";
    return -1;
}


static int
fg_quota_text_is(fg_quota_field_t *f, const char *name)
{
    return f->len == strlen(name) && memcmp(f->name, name, f->len) == 0;
}


/* decimal digits only: 0 for none, other bytes, over INT64_MAX (JSON's) */

static uint64_t
fg_quota_text_count(const char *p, const char *last)
{
    uint64_t  v;

    if (p == last) {
        return 0;
    }

    for (v = 0; p < last; p++) {
        if (*p < '0' || *p > '9'
            || v > ((uint64_t) INT64_MAX - (uint64_t) (*p - '0')) / 10)
        {
            return 0;
        }

        v = v * 10 + (*p - '0');
    }

    return v;
}


/* "10" or "12.50", above 0, at most FG_QUOTA_AMOUNT_MAX: billionths */

static int
fg_quota_text_amount(const char *p, const char *last, uint64_t *amount)
{
    uint64_t  whole, frac, scale;

    whole = 0;
    frac = 0;
    scale = 1000000000;

    if (p == last || *p < '0' || *p > '9') {
        return -1;
    }

    for ( /* void */ ; p < last && *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (*p - '0');

        if (whole > FG_QUOTA_AMOUNT_MAX) {
            return -1;
        }
    }

    if (p < last && *p == '.') {
        if (++p == last) {
            return -1;
        }

        for ( /* void */ ; p < last && *p >= '0' && *p <= '9'; p++) {
            if (scale == 1) {
                return -1;          /* finer than a billionth */
            }

            scale /= 10;
            frac += (uint64_t) (*p - '0') * scale;
        }
    }

    *amount = whole * 1000000000 + frac;

    if (p != last || *amount == 0
        || *amount > (uint64_t) FG_QUOTA_AMOUNT_MAX * 1000000000)
    {
        return -1;
    }

    return 0;
}
