
/*
 * fairgate: overload-aware interaction throttling.
 *
 * Open interactions sit in a linear-probing hash table keyed by id;
 * deletion shifts the following run back instead of leaving tombstones,
 * so lookups stay short however long the table lives.  Every call but
 * fg_oit_expire() is O(1) expected; fg_oit_expire_some() is O(n).
 */


#include <string.h>

#include "fg_oit.h"


static fg_oit_verdict_e fg_oit_check(fg_oit_t *oit, fg_oit_limit_t *user,
    fg_oit_limit_t *app, double now);


static uint32_t
fg_oit_home(fg_oit_t *oit, uint64_t id)
{
    /* a 64-bit mix: callers' ids may be sequential or hashes alike */
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdULL;
    id ^= id >> 33;

    return (uint32_t) (id % oit->capacity);
}


/* the slot holding id, or the free slot ending its probe; -1 if full */
static int64_t
fg_oit_slot(fg_oit_t *oit, uint64_t id)
{
    uint32_t  i, n;

    i = fg_oit_home(oit, id);

    for (n = 0; n < oit->capacity; n++) {
        if (oit->table[i].id == id || oit->table[i].id == 0) {
            return i;
        }

        i = (i + 1 == oit->capacity) ? 0 : i + 1;
    }

    return -1;
}


static void
fg_oit_remove(fg_oit_t *oit, uint32_t i)
{
    uint32_t  j, home;

    oit->open--;

    /* backward shift: move up entries whose probe crossed the hole */
    for (j = i; ; ) {
        j = (j + 1 == oit->capacity) ? 0 : j + 1;

        if (oit->table[j].id == 0 || j == i) {
            break;
        }

        home = fg_oit_home(oit, oit->table[j].id);

        /* stays if its home lies cyclically in (i, j] */
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j)) {
            continue;
        }

        oit->table[i] = oit->table[j];
        i = j;
    }

    memset(&oit->table[i], 0, sizeof(fg_oit_interaction_t));
}


/* cut: the tokens spent on it bought no answer */
static void
fg_oit_lost(fg_oit_t *oit, uint32_t i)
{
    oit->aborted++;
    oit->tokens_wasted += oit->table[i].tokens;

    fg_oit_remove(oit, i);
}


/*
 * Idle past the timeout: cut if it had declared more stages than it made,
 * else it may simply have ended, and nothing can be said of its tokens.
 */
static void
fg_oit_idle(fg_oit_t *oit, uint32_t i)
{
    if (oit->table[i].stages != 0) {
        fg_oit_lost(oit, i);
        return;
    }

    oit->expired++;
    fg_oit_remove(oit, i);
}


void
fg_oit_init(fg_oit_t *oit, fg_oit_interaction_t *table, uint32_t capacity,
    double idle_timeout)
{
    memset(oit, 0, sizeof(fg_oit_t));
    memset(table, 0, capacity * sizeof(fg_oit_interaction_t));

    oit->table = table;
    oit->capacity = capacity;
    oit->idle_timeout = idle_timeout;
}


fg_oit_interaction_t *
fg_oit_find(fg_oit_t *oit, uint64_t interaction)
{
    int64_t  i;

    if (interaction == 0 || oit->capacity == 0) {
        return NULL;
    }

    i = fg_oit_slot(oit, interaction);

    return (i >= 0 && oit->table[i].id == interaction) ? &oit->table[i]
                                                        : NULL;
}


static int
fg_oit_over(fg_oit_limit_t *l, double now)
{
    return l != NULL && l->limit != 0 && l->recent != NULL
           && fg_window_sum(l->recent, now) + l->remote >= l->limit;
}


fg_oit_verdict_e
fg_oit_admit(fg_oit_t *oit, fg_oit_limit_t *user, fg_oit_limit_t *app,
    uint64_t interaction, uint32_t stage, uint32_t stages, int overloaded,
    double now)
{
    int64_t                i;
    fg_oit_verdict_e       v;
    fg_oit_interaction_t  *t;

    (void) stage;

    i = (interaction != 0 && oit->capacity != 0)
        ? fg_oit_slot(oit, interaction) : -1;

    if (i >= 0 && oit->table[i].id == interaction) {
        t = &oit->table[i];

        if (now - t->last_seen <= oit->idle_timeout) {

            if (oit->max_requests == 0 || t->requests < oit->max_requests
                || !overloaded)
            {
                /* never throttled: cutting it would waste its tokens */
                v = FG_OIT_CONTINUE;
                oit->continued++;
                goto admit;
            }

            /* past its bound: checked like a new one, and kept open */

            v = fg_oit_check(oit, user, app, now);
            if (v != FG_OIT_OPEN) {
                return v;
            }

            v = FG_OIT_CONTINUE;
            oit->continued++;
            goto admit;
        }

        /* idled out: this request starts it afresh */
        fg_oit_idle(oit, (uint32_t) i);
        i = fg_oit_slot(oit, interaction);
    }

    if (overloaded) {
        v = fg_oit_check(oit, user, app, now);
        if (v != FG_OIT_OPEN) {
            return v;
        }
    }

    if (i < 0) {
        v = FG_OIT_UNTRACKED;
        oit->untracked++;
        t = NULL;

    } else {
        t = &oit->table[i];
        memset(t, 0, sizeof(fg_oit_interaction_t));
        t->id = interaction;
        t->user = user ? user->id : 0;
        t->app = app ? app->id : 0;
        t->stages = stages;

        oit->open++;
        oit->opened++;
        v = FG_OIT_OPEN;
    }

admit:

    if (t != NULL) {
        t->requests++;
        t->last_seen = now;

        if (stages > t->stages) {
            t->stages = stages;
        }
    }

    oit->admitted++;

    return v;
}


/* the limits, the user's first: FG_OIT_OPEN when within both */
static fg_oit_verdict_e
fg_oit_check(fg_oit_t *oit, fg_oit_limit_t *user, fg_oit_limit_t *app,
    double now)
{
    if (fg_oit_over(user, now)) {
        oit->throttled++;
        return FG_OIT_THROTTLE_USER;
    }

    if (fg_oit_over(app, now)) {
        oit->throttled++;
        return FG_OIT_THROTTLE_APP;
    }

    return FG_OIT_OPEN;
}


/* the interaction, seen now; NULL if the table holds it no more */
static fg_oit_interaction_t *
fg_oit_touch(fg_oit_t *oit, uint64_t interaction, double now)
{
    fg_oit_interaction_t  *t;

    t = fg_oit_find(oit, interaction);
    if (t != NULL) {
        t->last_seen = now;
    }

    return t;
}


void
fg_oit_spend(fg_oit_t *oit, uint64_t interaction, uint64_t tokens,
    double now)
{
    fg_oit_interaction_t  *t;

    t = fg_oit_touch(oit, interaction, now);
    if (t != NULL) {
        t->tokens += tokens;
    }
}


void
fg_oit_done(fg_oit_t *oit, uint64_t interaction, uint32_t stage,
    double now)
{
    fg_oit_interaction_t  *t;

    t = fg_oit_touch(oit, interaction, now);
    if (t == NULL) {
        return;
    }

    /* an undeclared end is left to the idle timeout */
    if (t->stages != 0 && stage + 1 >= t->stages) {
        oit->completed++;
        fg_oit_remove(oit, (uint32_t) (t - oit->table));
    }
}


void
fg_oit_abort(fg_oit_t *oit, uint64_t interaction)
{
    fg_oit_interaction_t  *t;

    t = fg_oit_find(oit, interaction);
    if (t != NULL) {
        fg_oit_lost(oit, (uint32_t) (t - oit->table));
    }
}


void
fg_oit_expire(fg_oit_t *oit, double now)
{
    oit->cursor = 0;
    fg_oit_expire_some(oit, now, oit->capacity);
}


void
fg_oit_expire_some(fg_oit_t *oit, double now, uint32_t n)
{
    uint32_t  i;

    if (oit->capacity == 0) {
        return;
    }

    if (n > oit->capacity) {
        n = oit->capacity;
    }

    /*
     * A removal may shift a later entry into i: look at i again (each
     * removal empties a slot, so this ends).  One shifted back across the
     * cursor is looked at in the next round.
     */
    i = oit->cursor % oit->capacity;

    while (n != 0) {
        if (oit->table[i].id != 0
            && now - oit->table[i].last_seen > oit->idle_timeout)
        {
            fg_oit_idle(oit, i);
            continue;
        }

        i = (i + 1 == oit->capacity) ? 0 : i + 1;
        n--;
    }

    oit->cursor = i;
}
