
/*
 * fairgate: tests of overload-aware interaction throttling.
 */


#include "fg_tap.h"
#include "fg_oit.h"


#define CAP  64


static fg_oit_t              oit;
static fg_oit_interaction_t  table[CAP];


static void
test_no_overload(void)
{
    int             i, throttled;
    fg_oit_limit_t  user, app;

    fg_oit_init(&oit, table, CAP, 300);
    fg_oit_limit_init(&user, 1, 5, 60);
    fg_oit_limit_init(&app, 1, 5, 60);

    throttled = 0;

    /* 100x the limit in a minute, each opening an interaction */
    for (i = 0; i < 500; i++) {
        if (fg_oit_admit(&oit, &user, &app, 0, 0, 0, 0, i * 0.1)
            >= FG_OIT_THROTTLE_USER)
        {
            throttled++;
        }
    }

    is_int(throttled, 0, "without overload nobody is throttled");
    is_int(oit.admitted, 500, "all admitted");
}


static void
test_mid_interaction(void)
{
    int             i, v;
    fg_oit_limit_t  user, app;

    fg_oit_init(&oit, table, CAP, 300);
    fg_oit_limit_init(&user, 1, 3, 60);
    fg_oit_limit_init(&app, 7, 1000, 60);

    is_int(fg_oit_admit(&oit, &user, &app, 42, 0, 20, 1, 0), FG_OIT_OPEN,
           "a new interaction under the limit opens under overload");
    is_int(oit.open, 1, "one open");

    /* far over the user's limit now, overloaded: the stages still pass */
    for (i = 1; i < 20; i++) {
        v = fg_oit_admit(&oit, &user, &app, 42, i, 0, 1, i);
        if (v != FG_OIT_CONTINUE) {
            break;
        }

        fg_oit_spend(&oit, 42, 100, i);
        fg_oit_done(&oit, 42, i, i);
    }

    is_int(i, 20, "mid-interaction requests never throttled over limits");
    is_int(oit.continued, 19, "counted as continued");
    is_int(fg_oit_admit(&oit, &user, &app, 43, 0, 2, 1, 21),
           FG_OIT_THROTTLE_USER, "a new one is throttled at the user");
    is_int(fg_oit_admit(&oit, &user, &app, 42, 20, 0, 1, 21),
           FG_OIT_CONTINUE, "the open one goes on");
    fg_oit_done(&oit, 42, 20, 22);
    is_int(oit.completed, 1, "the declared last stage completes it");
    is_int(oit.open, 0, "and closes it");
    is_int(oit.tokens_wasted, 0, "nothing wasted");
    is_int(oit.aborted, 0, "nothing aborted");

    /* within the user's limit, over the app's: the app throttles */
    fg_oit_limit_init(&user, 2, 100, 60);
    fg_oit_limit_init(&app, 8, 2, 60);
    fg_oit_admit(&oit, &user, &app, 0, 0, 0, 1, 100);
    fg_oit_admit(&oit, &user, &app, 0, 0, 0, 1, 100);
    is_int(fg_oit_admit(&oit, &user, &app, 50, 0, 0, 1, 100),
           FG_OIT_THROTTLE_APP, "user's limit first, then the app's");
    is_int(app.throttled, 1, "counted at the app");
    is_int(fg_oit_admit(&oit, &user, NULL, 0, 0, 0, 1, 100),
           FG_OIT_UNTRACKED, "no interaction, no app: admitted untracked");
}


static void
test_abusive_user(void)
{
    int             u, k, t, v, ibase, stage;
    uint64_t        benign_thr, abuser_thr, abuser_sent;
    fg_oit_limit_t  users[5], app;

    fg_oit_init(&oit, table, CAP, 300);
    fg_oit_limit_init(&app, 1, 0, 60);

    for (u = 0; u < 5; u++) {
        fg_oit_limit_init(&users[u], u, 20, 60);
    }

    benign_thr = abuser_thr = abuser_sent = 0;
    ibase = 1;

    /*
     * Ten minutes overloaded.  Users 0-3 open one 3-stage interaction a
     * minute (3 requests/min); user 4 opens 50 a minute (50x).
     */
    for (t = 0; t < 600; t++) {
        for (u = 0; u < 4; u++) {
            if (t % 60 == u) {
                for (stage = 0; stage < 3; stage++) {
                    v = fg_oit_admit(&oit, &users[u], &app, ibase, stage, 2,
                                     1, t + stage * 0.1);
                    benign_thr += v >= FG_OIT_THROTTLE_USER;
                    fg_oit_done(&oit, ibase, stage, t + stage * 0.1);
                }

                ibase++;
            }
        }

        if (t % 6 == 0) {
            for (k = 0; k < 5; k++) {
                v = fg_oit_admit(&oit, &users[4], &app, 100000 + t * 10 + k,
                                 0, 0, 1, t + k * 0.01);
                abuser_sent++;
                abuser_thr += v >= FG_OIT_THROTTLE_USER;

                if (v == FG_OIT_OPEN) {
                    fg_oit_abort(&oit, 100000 + t * 10 + k);
                }
            }
        }
    }

    is_int(benign_thr, 0, "benign users are never throttled");
    ok(abuser_thr > abuser_sent / 2,
       "the abusive user is throttled: %llu of %llu",
       (unsigned long long) abuser_thr, (unsigned long long) abuser_sent);
    ok(abuser_sent - abuser_thr <= 10 * 20 + 20,
       "and gets about its limit: %llu",
       (unsigned long long) (abuser_sent - abuser_thr));
    is_int(oit.completed, 40, "every benign interaction completed");
}


static void
test_idle_and_table(void)
{
    uint32_t               i;
    fg_oit_interaction_t  *t;

    fg_oit_init(&oit, table, CAP, 10);

    fg_oit_admit(&oit, NULL, NULL, 7, 0, 3, 1, 0);
    fg_oit_spend(&oit, 7, 500, 1);
    is_int(fg_oit_admit(&oit, NULL, NULL, 7, 1, 0, 1, 20), FG_OIT_OPEN,
           "after the idle timeout it opens afresh");
    is_int(oit.aborted, 1, "the idled one counts as aborted");
    is_int(oit.tokens_wasted, 500, "its tokens as wasted");

    fg_oit_expire(&oit, 40);
    is_int(oit.open, 0, "expire closes the idle ones");
    is_int(oit.aborted, 2, "as aborted");

    /* fill the table, then churn: every lookup must stay right */
    for (i = 1; i <= CAP; i++) {
        fg_oit_admit(&oit, NULL, NULL, i * 7919, 0, 5, 0, 50);
    }

    is_int(oit.open, CAP, "table full");
    is_int(fg_oit_admit(&oit, NULL, NULL, 1, 0, 5, 0, 50), FG_OIT_UNTRACKED,
           "a full table admits untracked");

    for (i = 1; i <= CAP; i += 2) {
        fg_oit_done(&oit, i * 7919, 5, 51);
    }

    is_int(oit.open, CAP / 2, "half completed");

    for (i = 1; i <= CAP; i++) {
        t = fg_oit_find(&oit, i * 7919);
        if ((t != NULL) != (i % 2 == 0)) {
            break;
        }
    }

    is_int(i, CAP + 1, "lookups right after deletions");

    fg_oit_abort(&oit, 2 * 7919);
    ok(fg_oit_find(&oit, 2 * 7919) == NULL, "abort closes it");
    ok(fg_oit_find(&oit, 4 * 7919) != NULL, "others stay");
}


int
main(void)
{
    test_no_overload();
    test_mid_interaction();
    test_abusive_user();
    test_idle_and_table();

    return done_testing();
}
