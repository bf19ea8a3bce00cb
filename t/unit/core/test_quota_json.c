
/*
 * fairgate: tests of a key's own quotas and budgets read from the admin
 * API's JSON (fg_quota_json.h): the windows and limits a directive would
 * give, a quota and a budget of one window joined, and every bad shape
 * named by its field.
 */


#include <string.h>

#include "fg_tap.h"
#include "fg_quota_json.h"


static int
parse(fg_quota_set_t *set, const char *text, int budget, char *field,
    const char **expected)
{
    field[0] = '\0';

    return fg_quota_json(set, text, strlen(text), budget, field, expected);
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


static void
test_good(void)
{
    char             field[FG_QUOTA_FIELD_LEN], name[32];
    const char      *expected;
    fg_quota_set_t   set;
    fg_quota_rule_t *r;

    memset(&set, 0, sizeof(fg_quota_set_t));

    ok(parse(&set, "{\"day\":{\"requests\":2,\"tokens\":500,\"soft\":80},"
                   "\"7d\":{\"tokens\":9000000,\"rolling\":true}}", 0,
             field, &expected) == 0, "a quota of two windows reads");
    is_int(set.n, 2, "two windows");

    r = &set.rule[0];
    is_int(r->per.unit, FG_QUOTA_DAY, "a calendar day");
    is_int(r->per.rolling, 0, "not rolling");
    is_int(r->limit.requests, 2, "its requests");
    is_int(r->limit.tokens, 500, "its tokens");
    is_int(r->limit.soft, 80, "its soft threshold");
    is_int(r->limit.cost, 0, "no budget");

    r = &set.rule[1];
    is_int(r->per.unit, FG_QUOTA_SPAN, "7d is a span");
    is_int(r->per.rolling, 1, "rolling");
    is_int(r->per.length, 7 * 86400, "of 7 days");

    fg_quota_per_name(&r->per, name, sizeof(name));
    ok(strcmp(name, "7d rolling") == 0, "named 7d rolling (%s)", name);
    fg_quota_per_name(&set.rule[0].per, name, sizeof(name));
    ok(strcmp(name, "day") == 0, "named day (%s)", name);

    ok(parse(&set, "{\"day\":{\"amount\":2.5,\"soft\":90},\"month\":50}", 1,
             field, &expected) == 0, "a budget reads");
    is_int(set.n, 3, "its day joins the quota's, its month is new");
    is_int(set.rule[0].limit.cost, 2500000000ULL, "2.5 in billionths");
    is_int(set.rule[0].limit.soft, 80, "the quota's soft threshold stays");
    is_int(set.rule[0].limit.requests, 2, "and its requests");
    is_int(set.rule[2].per.unit, FG_QUOTA_MONTH, "a calendar month");
    is_int(set.rule[2].limit.cost, 50000000000ULL, "50 in billionths");

    memset(&set, 0, sizeof(fg_quota_set_t));
    ok(parse(&set, "{\"hour\":{\"requests\":5,\"rolling\":true},"
                   "\"90m\":{\"requests\":9},\"12h\":{\"tokens\":1}}", 0,
             field, &expected) == 0, "hour rolling, 90m, 12h read");
    is_int(set.rule[0].per.length, 3600, "an hour rolling: 3600 s");
    is_int(set.rule[1].per.length, 5400, "90m: 5400 s");
    fg_quota_per_name(&set.rule[1].per, name, sizeof(name));
    ok(strcmp(name, "90m") == 0, "named 90m (%s)", name);
    fg_quota_per_name(&set.rule[2].per, name, sizeof(name));
    ok(strcmp(name, "12h") == 0, "named 12h (%s)", name);

    memset(&set, 0, sizeof(fg_quota_set_t));
    ok(parse(&set, "{}", 0, field, &expected) == 0 && set.n == 0,
       "an empty object: no window");
}


static void
test_bad(void)
{
    char             field[FG_QUOTA_FIELD_LEN];
    const char      *expected;
    fg_quota_set_t   set;

    bad("[1]", 0, "quota");
    bad("{\"x\":", 0, "quota");
    bad("{\"fortnight\":{\"requests\":1}}", 0, "quota.fortnight");
    bad("{\"5s\":{\"requests\":1}}", 0, "quota.5s");
    bad("{\"0d\":{\"requests\":1}}", 0, "quota.0d");
    bad("{\"400d\":{\"requests\":1}}", 0, "quota.400d");
    bad("{\"month\":5}", 0, "quota.month");
    bad("{\"month\":{}}", 0, "quota.month");
    bad("{\"month\":{\"tokens\":\"many\"}}", 0, "quota.month.tokens");
    bad("{\"month\":{\"tokens\":0}}", 0, "quota.month.tokens");
    bad("{\"month\":{\"tokens\":1.5}}", 0, "quota.month.tokens");
    bad("{\"day\":{\"requests\":-1}}", 0, "quota.day.requests");
    bad("{\"day\":{\"requests\":1,\"soft\":101}}", 0, "quota.day.soft");
    bad("{\"day\":{\"requests\":1,\"rolling\":1}}", 0, "quota.day.rolling");
    bad("{\"day\":{\"requests\":1,\"budget\":1}}", 0, "quota.day.budget");
    bad("{\"1d\":{\"requests\":1},\"24h\":{\"tokens\":1}}", 0, "quota.24h");
    bad("{\"month\":0}", 1, "budget.month");
    bad("{\"month\":\"50\"}", 1, "budget.month");
    bad("{\"month\":2000000000}", 1, "budget.month");
    bad("{\"month\":{\"soft\":50}}", 1, "budget.month.amount");
    bad("{\"month\":{\"amount\":-2}}", 1, "budget.month.amount");
    bad("{\"month\":{\"amount\":2,\"tokens\":5}}", 1, "budget.month.tokens");
    bad("{\"month\":{\"amount\":0.0000000001}}", 1, "budget.month.amount");

    memset(&set, 0, sizeof(fg_quota_set_t));
    ok(parse(&set, "{\"1m\":{\"requests\":1},\"2m\":{\"requests\":1},"
                   "\"3m\":{\"requests\":1},\"4m\":{\"requests\":1},"
                   "\"5m\":{\"requests\":1},\"6m\":{\"requests\":1},"
                   "\"7m\":{\"requests\":1},\"8m\":{\"requests\":1}}", 0,
             field, &expected) == 0, "8 windows read");
    ok(parse(&set, "{\"9m\":10,\"10m\":10}", 1, field, &expected) == 0
       && set.n == 10, "a budget's windows join them, up to 16");

    bad("{\"1m\":1,\"2m\":1,\"3m\":1,\"4m\":1,\"5m\":1,\"6m\":1,"
        "\"7m\":1,\"8m\":1,\"9m\":1}", 1, "budget");
}


int
main(void)
{
    test_good();
    test_bad();

    return fg_tap_done();
}
