
/*
 * fairgate: tests of a key's own quotas and budgets read from a keys
 * file's columns (fg_quota_text()): the same set as the admin API's JSON
 * gives, and every bad shape named by its field, as the JSON's are.
 */


#include <string.h>

#include "fg_tap.h"
#include "fg_quota_json.h"


static int
parse(fg_quota_set_t *set, const char *text, int budget, char *field,
    const char **expected)
{
    field[0] = '\0';

    return fg_quota_text(set, text, strlen(text), budget, field, expected);
}


static void
bad(const char *text, int budget, const char *want)
{
    char             field[FG_QUOTA_FIELD_LEN];
    const char      *expected;
    fg_quota_set_t   set;

    memset(&set, 0, sizeof(fg_quota_set_t));
    expected = NULL;

    ok(parse(&set, text, budget, field, &expected) == -1
       && strcmp(field, want) == 0 && expected != NULL,
       "%s refused, naming %s (%s: %s)", text, want, field,
       expected ? expected : "-");
}


/* the text and the JSON of the same limits give the same set */

static void
same(const char *quota, const char *budget, const char *jquota,
    const char *jbudget)
{
    char             field[FG_QUOTA_FIELD_LEN];
    const char      *expected;
    fg_quota_set_t   a, b;

    memset(&a, 0, sizeof(fg_quota_set_t));
    memset(&b, 0, sizeof(fg_quota_set_t));

    ok(parse(&a, quota, 0, field, &expected) == 0
       && parse(&a, budget, 1, field, &expected) == 0
       && fg_quota_json(&b, jquota, strlen(jquota), 0, field, &expected)
          == 0
       && fg_quota_json(&b, jbudget, strlen(jbudget), 1, field, &expected)
          == 0
       && a.n == b.n
       && memcmp(a.rule, b.rule, a.n * sizeof(fg_quota_rule_t)) == 0,
       "%s %s is the JSON's set (%u windows)", quota, budget,
       (unsigned) a.n);
}


static void
test_good(void)
{
    char              field[FG_QUOTA_FIELD_LEN];
    const char       *expected;
    fg_quota_set_t    set;
    fg_quota_rule_t  *r;

    memset(&set, 0, sizeof(fg_quota_set_t));

    ok(parse(&set, "day:requests=2,tokens=500,soft=80;"
                   "7d:tokens=9000000,rolling", 0, field, &expected) == 0,
       "a quota of two windows reads");
    is_int(set.n, 2, "two windows");

    r = &set.rule[0];
    is_int(r->per.unit, FG_QUOTA_DAY, "a calendar day");
    is_int(r->per.rolling, 0, "not rolling");
    is_int(r->limit.requests, 2, "its requests");
    is_int(r->limit.tokens, 500, "its tokens");
    is_int(r->limit.soft, 80, "its soft threshold");

    r = &set.rule[1];
    is_int(r->per.unit, FG_QUOTA_SPAN, "7d is a span");
    is_int(r->per.rolling, 1, "rolling");
    is_int(r->per.length, 7 * 86400, "of 7 days");

    ok(parse(&set, "day:2.5,soft=90;month:50", 1, field, &expected) == 0,
       "a budget reads");
    is_int(set.n, 3, "its day joins the quota's, its month is new");
    is_int(set.rule[0].limit.cost, 2500000000ULL, "2.5 in billionths");
    is_int(set.rule[0].limit.soft, 80, "the quota's soft threshold stays");
    is_int(set.rule[2].per.unit, FG_QUOTA_MONTH, "a calendar month");
    is_int(set.rule[2].limit.cost, 50000000000ULL, "50 in billionths");

    memset(&set, 0, sizeof(fg_quota_set_t));
    ok(parse(&set, "month:0.000000001", 1, field, &expected) == 0
       && set.rule[0].limit.cost == 1, "a billionth reads");
    ok(parse(&set, "hour:1000000000,rolling", 1, field, &expected) == 0
       && set.rule[1].limit.cost == 1000000000000000000ULL
       && set.rule[1].per.rolling, "the largest amount, rolling");

    same("day:requests=2,tokens=500,soft=80;7d:tokens=9,rolling",
         "day:2.5,soft=90;month:50",
         "{\"day\":{\"requests\":2,\"tokens\":500,\"soft\":80},"
         "\"7d\":{\"tokens\":9,\"rolling\":true}}",
         "{\"day\":{\"amount\":2.5,\"soft\":90},\"month\":50}");
    same("90m:requests=9;hour:requests=5,rolling", "12h:1,soft=5",
         "{\"90m\":{\"requests\":9},\"hour\":{\"requests\":5,"
         "\"rolling\":true}}", "{\"12h\":{\"amount\":1,\"soft\":5}}");
}


static void
test_bad(void)
{
    bad("", 0, "quota.");
    bad("day", 0, "quota.day");
    bad("day:", 0, "quota.day.");
    bad("fortnight:requests=1", 0, "quota.fortnight");
    bad("5s:requests=1", 0, "quota.5s");
    bad("0d:requests=1", 0, "quota.0d");
    bad("400d:requests=1", 0, "quota.400d");
    bad("month:5", 0, "quota.month.5");
    bad("month:soft=5", 0, "quota.month");
    bad("month:tokens=many", 0, "quota.month.tokens");
    bad("month:tokens=0", 0, "quota.month.tokens");
    bad("month:tokens=", 0, "quota.month.tokens");
    bad("month:tokens=1.5", 0, "quota.month.tokens");
    bad("month:tokens=99999999999999999999", 0, "quota.month.tokens");
    bad("day:requests=-1", 0, "quota.day.requests");
    bad("day:requests=1,requests=2", 0, "quota.day.requests");
    bad("day:requests=1,soft=101", 0, "quota.day.soft");
    bad("day:requests=1,soft=0", 0, "quota.day.soft");
    bad("day:requests=1,rolling=1", 0, "quota.day.rolling");
    bad("day:requests=1,rolling,rolling", 0, "quota.day.rolling");
    bad("day:requests=1,budget=1", 0, "quota.day.budget");
    bad("day:requests=1;", 0, "quota.");
    bad("1d:requests=1;24h:tokens=1", 0, "quota.24h");
    bad("1m:requests=1;2m:requests=1;3m:requests=1;4m:requests=1;"
        "5m:requests=1;6m:requests=1;7m:requests=1;8m:requests=1;"
        "9m:requests=1", 0, "quota");
    bad("month:0", 1, "budget.month.amount");
    bad("month:x", 1, "budget.month.amount");
    bad("month:2000000000", 1, "budget.month.amount");
    bad("month:1000000000.5", 1, "budget.month.amount");
    bad("month:soft=50", 1, "budget.month.amount");
    bad("month:-2", 1, "budget.month.amount");
    bad("month:2.", 1, "budget.month.amount");
    bad("month:0.0000000001", 1, "budget.month.amount");
    bad("month:2,tokens=5", 1, "budget.month.tokens");
    bad("month:2,3", 1, "budget.month.3");
    bad("month:2;month:3", 1, "budget.month");
}


int
main(void)
{
    test_good();
    test_bad();

    return fg_tap_done();
}
