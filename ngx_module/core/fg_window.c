
/*
 * fairgate: sliding-window event counter.
 */


#include <math.h>
#include <string.h>

#include "fg_window.h"


static void fg_window_advance(fg_window_t *w, int64_t slot);


/* the ring index of an absolute slot; slots may be negative */
#define fg_window_index(s)                                                    \
    ((((s) % FG_WINDOW_SLOTS) + FG_WINDOW_SLOTS) % FG_WINDOW_SLOTS)


void
fg_window_init(fg_window_t *w, double length)
{
    memset(w, 0, sizeof(fg_window_t));

    w->slot_width = length / FG_WINDOW_SLOTS;
    w->last_slot = INT64_MIN;
}


static int64_t
fg_window_slot(fg_window_t *w, double now)
{
    return (int64_t) floor(now / w->slot_width);
}


/* drops the slots that fall out of a window whose newest slot is "slot" */
static void
fg_window_advance(fg_window_t *w, int64_t slot)
{
    int64_t  s;

    if (w->last_slot == INT64_MIN || slot - w->last_slot >= FG_WINDOW_SLOTS) {
        memset(w->slot, 0, sizeof(w->slot));
        w->total = 0;
        w->last_slot = slot;
        return;
    }

    /* a clock that steps back counts into the newest slot: never lose */
    for (s = w->last_slot + 1; s <= slot; s++) {
        w->total -= w->slot[fg_window_index(s)];
        w->slot[fg_window_index(s)] = 0;
    }

    if (slot > w->last_slot) {
        w->last_slot = slot;
    }
}


void
fg_window_add(fg_window_t *w, double now, uint32_t n)
{
    int64_t  slot;

    slot = fg_window_slot(w, now);
    fg_window_advance(w, slot);

    w->slot[fg_window_index(w->last_slot)] += n;
    w->total += n;
}


void
fg_window_remove(fg_window_t *w, double now, double at, uint32_t n)
{
    int64_t    slot;
    uint32_t  *p;

    fg_window_advance(w, fg_window_slot(w, now));

    slot = fg_window_slot(w, at);

    /* no event lies in a slot newer than the newest */
    if (slot > w->last_slot) {
        slot = w->last_slot;
    }

    if (slot <= w->last_slot - FG_WINDOW_SLOTS) {
        return;
    }

    p = &w->slot[fg_window_index(slot)];

    if (n > *p) {
        n = *p;
    }

    *p -= n;
    w->total -= n;
}


uint64_t
fg_window_sum(fg_window_t *w, double now)
{
    fg_window_advance(w, fg_window_slot(w, now));

    return w->total;
}


double
fg_window_wait(fg_window_t *w, double now, uint64_t limit, uint64_t need)
{
    int64_t   slot, s;
    uint64_t  total;

    if (need > limit) {
        return w->slot_width * FG_WINDOW_SLOTS;
    }

    slot = fg_window_slot(w, now);
    fg_window_advance(w, slot);

    total = w->total;
    if (total + need <= limit) {
        return 0;
    }

    /* slot s leaves the window when the newest slot becomes s + SLOTS */
    for (s = slot - FG_WINDOW_SLOTS + 1; s <= slot; s++) {
        total -= w->slot[fg_window_index(s)];

        if (total + need <= limit) {
            return (double) (s + FG_WINDOW_SLOTS) * w->slot_width - now;
        }
    }

    return w->slot_width * FG_WINDOW_SLOTS;
}
