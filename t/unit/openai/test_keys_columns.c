
/*
 * fairgate: tests of a keys file's line's quota= and budget= columns
 * (fg_keys.c): their text handed on as written, with the other columns in
 * any order, and a column given twice, empty, or with a byte that is not
 * printable ASCII refused with its line.  Their windows and limits are
 * read by the policy core: t/unit/core/test_quota_text.c.
 */


#include <stdio.h>
#include <string.h>

#include "fg_tap.h"
#include "fg_keys.h"


#define H  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


static fg_keys_entry_t  last;
static char             quota[256], budget[256];


static int
keep(void *data, const fg_keys_entry_t *e)
{
    (void) data;

    last = *e;
    snprintf(quota, sizeof(quota), "%.*s", (int) e->quota_len,
             e->quota ? e->quota : "");
    snprintf(budget, sizeof(budget), "%.*s", (int) e->budget_len,
             e->budget ? e->budget : "");

    return 0;
}


static int
parse(const char *text, fg_keys_error_t *err)
{
    char  buf[1024];

    snprintf(buf, sizeof(buf), "%s", text);
    memset(&last, 0, sizeof(last));
    quota[0] = '\0';
    budget[0] = '\0';

    return fg_keys_parse(buf, strlen(buf), keep, NULL, err);
}


static void
bad(const char *text, const char *what)
{
    fg_keys_error_t  err;

    ok(parse(text, &err) == -1 && err.line == 2
       && strstr(err.what, what) != NULL,
       "refused at line 2: %s (%s)", what, err.what);
}


int
main(void)
{
    fg_keys_error_t  err;

    ok(parse(H " ann - 1 quota=day:requests=2,tokens=9;7d:tokens=1,rolling"
             " rpm=5 budget=month:50,soft=80 models=a,b priority=2\n", &err)
       == 0, "a line with every column reads");
    ok(strcmp(quota, "day:requests=2,tokens=9;7d:tokens=1,rolling") == 0,
       "the quota's text as written (%s)", quota);
    ok(strcmp(budget, "month:50,soft=80") == 0,
       "the budget's text as written (%s)", budget);
    is_int(last.rpm, 5, "the other columns still read: rpm");
    is_int(last.models_len, 3, "... models");

    ok(parse(H " ann - 1 rpm=5\n", &err) == 0 && last.quota == NULL
       && last.budget == NULL, "no column: none");

    ok(parse(H " ann - 1 budget=day:1\n", &err) == 0 && last.quota == NULL
       && strcmp(budget, "day:1") == 0, "a budget alone");

    bad("#\n" H " ann - 1 quota=day:requests=1 quota=hour:requests=1\n",
        "invalid limit \"quota=hour:requests=1\"");
    bad("#\n" H " ann - 1 budget=day:1 budget=hour:1\n",
        "invalid limit \"budget=hour:1\"");
    bad("#\n" H " ann - 1 quota=\n", "invalid limit \"quota=\"");
    bad("#\n" H " ann - 1 budget=\n", "invalid limit \"budget=\"");
    bad("#\n" H " ann - 1 quota=day:requests=\x01\n",
        "invalid limit \"quota=day:requests=\\x01\"");
    bad("#\n" H " ann - 1 quota=day:\"x\"\n", "invalid limit");
    bad("#\n" H " ann - 1 budget=day:\xc3\xa9\n", "invalid limit");
    bad("#\n" H " a - 1 w=1 rpm=1 tpm=1 priority=1 models=m quota=d:x=1 "
        "budget=d:1\n", "too many fields");

    return fg_tap_done();
}
