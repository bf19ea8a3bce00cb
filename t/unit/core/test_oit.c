
/*
 * fairgate: tests of overload-aware interaction throttling.
 */


#include "fg_tap.h"
#include "fg_oit.h"


#define CAP  64


static fg_oit_t              oit;
static fg_oit_interaction_t  table[CAP];


/* a limit over its own window, as the gateway's rate windows are */
typedef struct {
    fg_oit_limit_t   l;
    fg_window_t      w;
    uint64_t         throttled;
} test_limit_t;


static void
limit_init(test_limit_t *t, uint64_t id, uint32_t limit)
{
    t->l.id = id;
    t->l.limit = limit;
    t->l.recent = &t->w;
    t->l.remote = 0;
    t->throttled = 0;
    fg_window_init(&t->w, 60);
}


/* fg_oit_admit(), counting what it lets in as the caller must */
static fg_oit_verdict_e
admit(test_limit_t *user, test_limit_t *app, uint64_t interaction,
    uint32_t stage, uint32_t stages, int overloaded, double now)
{
    fg_oit_verdict_e  v;

    v = fg_oit_admit(&oit, user ? &user->l : NULL, app ? &app->l : NULL,
                     interaction, stage, stages, overloaded, now);

    if (v == FG_OIT_THROTTLE_USER) {
        user->throttled++;

    } else if (v == FG_OIT_THROTTLE_APP) {
        app->throttled++;

    } else {
        if (user) {
            fg_window_add(&user->w, now, 1);
        }

        if (app) {
            fg_window_add(&app->w, now, 1);
        }
    }

    return v;
}


static void
test_no_overload(void)
{
    int             i, throttled;
    test_limit_t    user, app;

    fg_oit_init(&oit, table, CAP, 300);
    limit_init(&user, 1, 5);
    limit_init(&app, 1, 5);

    throttled = 0;

    /* 100x the limit in a minute, each opening an interaction */
    for (i = 0; i < 500; i++) {
        if (admit(&user, &app, 0, 0, 0, 0, i * 0.1)
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
    test_limit_t    user, app;

    fg_oit_init(&oit, table, CAP, 300);
    limit_init(&user, 1, 3);
    limit_init(&app, 7, 1000);

    is_int(admit(&user, &app, 42, 0, 21, 1, 0), FG_OIT_OPEN,
           "a new interaction under the limit opens under overload");
    is_int(oit.open, 1, "one open");

    /* far over the user's limit now, overloaded: the stages still pass */
    for (i = 1; i < 20; i++) {
        v = admit(&user, &app, 42, i, 0, 1, i);
        if (v != FG_OIT_CONTINUE) {
            break;
        }

        fg_oit_spend(&oit, 42, 100, i);
        fg_oit_done(&oit, 42, i, i);
    }

    is_int(i, 20, "mid-interaction requests never throttled over limits");
    is_int(oit.continued, 19, "counted as continued");
    is_int(admit(&user, &app, 43, 0, 2, 1, 21),
           FG_OIT_THROTTLE_USER, "a new one is throttled at the user");
    is_int(admit(&user, &app, 42, 20, 0, 1, 21),
           FG_OIT_CONTINUE, "the open one goes on");
    fg_oit_done(&oit, 42, 20, 22);
    is_int(oit.completed, 1, "the declared last stage completes it");
    is_int(oit.open, 0, "and closes it");
    is_int(oit.tokens_wasted, 0, "nothing wasted");
    is_int(oit.aborted, 0, "nothing aborted");

    /* within the user's limit, over the app's: the app throttles */
    limit_init(&user, 2, 100);
    limit_init(&app, 8, 2);
    admit(&user, &app, 0, 0, 0, 1, 100);
    admit(&user, &app, 0, 0, 0, 1, 100);
    is_int(admit(&user, &app, 50, 0, 0, 1, 100),
           FG_OIT_THROTTLE_APP, "user's limit first, then the app's");
    is_int(app.throttled, 1, "counted at the app");
    is_int(admit(&user, NULL, 0, 0, 0, 1, 100),
           FG_OIT_UNTRACKED, "no interaction, no app: admitted untracked");
}


static void
test_abusive_user(void)
{
    int             u, k, t, v, ibase, stage;
    uint64_t        benign_thr, abuser_thr, abuser_sent;
    test_limit_t    users[5], app;

    fg_oit_init(&oit, table, CAP, 300);
    limit_init(&app, 1, 0);

    for (u = 0; u < 5; u++) {
        limit_init(&users[u], u, 20);
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
                    v = admit(&users[u], &app, ibase, stage, 3,
                                     1, t + stage * 0.1);
                    benign_thr += v >= FG_OIT_THROTTLE_USER;
                    fg_oit_done(&oit, ibase, stage, t + stage * 0.1);
                }

                ibase++;
            }
        }

        if (t % 6 == 0) {
            for (k = 0; k < 5; k++) {
                v = admit(&users[4], &app, 100000 + t * 10 + k,
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

    admit(NULL, NULL, 7, 0, 3, 1, 0);
    fg_oit_spend(&oit, 7, 500, 1);
    is_int(admit(NULL, NULL, 7, 1, 0, 1, 20), FG_OIT_OPEN,
           "after the idle timeout it opens afresh");
    is_int(oit.aborted, 1, "the idled one counts as aborted");
    is_int(oit.tokens_wasted, 500, "its tokens as wasted");

    fg_oit_expire(&oit, 40);
    is_int(oit.open, 0, "expire closes the idle ones");
    is_int(oit.aborted, 1, "one with no declared end is not aborted");
    is_int(oit.expired, 1, "but expired");
    is_int(oit.tokens_wasted, 500, "and wastes nothing more");

    /* fill the table, then churn: every lookup must stay right */
    for (i = 1; i <= CAP; i++) {
        admit(NULL, NULL, i * 7919, 0, 5, 0, 50);
    }

    is_int(oit.open, CAP, "table full");
    is_int(admit(NULL, NULL, 1, 0, 5, 0, 50), FG_OIT_UNTRACKED,
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


static void
test_max_requests(void)
{
    int           i, v;
    test_limit_t  user;

    fg_oit_init(&oit, table, CAP, 300);
    oit.max_requests = 8;
    limit_init(&user, 1, 4);

    is_int(admit(&user, NULL, 9, 0, 0, 1, 0), FG_OIT_OPEN, "opens");

    for (i = 1; i < 8; i++) {
        v = admit(&user, NULL, 9, i, 0, 1, i);
        if (v != FG_OIT_CONTINUE) {
            break;
        }
    }

    is_int(i, 8, "up to max_requests it continues over the limit");
    is_int(admit(&user, NULL, 9, 8, 0, 1, 9), FG_OIT_THROTTLE_USER,
           "past them it is checked like a new interaction");
    is_int(admit(&user, NULL, 9, 8, 0, 0, 9), FG_OIT_CONTINUE,
           "but never without overload");
    ok(fg_oit_find(&oit, 9) != NULL, "and stays open");
}


static void
test_expire_some(void)
{
    uint32_t  i, sweeps;

    fg_oit_init(&oit, table, CAP, 10);

    for (i = 1; i <= CAP / 2; i++) {
        admit(NULL, NULL, i * 104729, 0, 0, 0, 0);
    }

    admit(NULL, NULL, 5, 0, 0, 0, 15);

    fg_oit_expire_some(&oit, 20, 8);
    ok(oit.open < CAP / 2 + 1, "a slice closes some idle ones");
    ok(oit.open > 1, "but not all at once");

    for (sweeps = 0; sweeps < 2 * CAP / 8 && oit.open > 1; sweeps++) {
        fg_oit_expire_some(&oit, 20, 8);
    }

    is_int(oit.open, 1, "slices sweep the whole table");
    ok(fg_oit_find(&oit, 5) != NULL, "the recent one stays");
    is_int(oit.expired, CAP / 2, "the idle ones expired");
}


int
main(void)
{
    test_no_overload();
    test_mid_interaction();
    test_abusive_user();
    test_idle_and_table();
    test_max_requests();
    test_expire_some();

    return done_testing();
}
