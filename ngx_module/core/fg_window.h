
/*
 * fairgate: sliding-window event counter.
 *
 * Pure C, no nginx types, no pointers: the struct is valid in shared memory
 * and may be copied.  The window is split into FG_WINDOW_SLOTS slots; a count
 * covers the slots whose time lies in (now - length, now], so the window
 * slides with a granularity of length / FG_WINDOW_SLOTS (1 s for a minute):
 * an event leaves between length - granularity and length after it happened.
 * Unlike a fixed window it never lets a client send 2x its limit across a
 * window boundary.
 */

#ifndef _FG_WINDOW_H_INCLUDED_
#define _FG_WINDOW_H_INCLUDED_


#include <stdint.h>


#define FG_WINDOW_SLOTS  60


typedef struct {
    double    slot_width;
    int64_t   last_slot;               /* absolute index of newest slot */
    uint64_t  total;                   /* sum of every live slot */
    uint32_t  slot[FG_WINDOW_SLOTS];
} fg_window_t;


void fg_window_init(fg_window_t *w, double length);

void fg_window_add(fg_window_t *w, double now, uint32_t n);

/*
 * Takes back up to n events added at time "at" (an estimate that turned out
 * too high), from the slot "at" fell in, if that slot is still in the
 * window; never more than the slot holds.
 */
void fg_window_remove(fg_window_t *w, double now, double at, uint32_t n);

/* events in the window ending at now */
uint64_t fg_window_sum(fg_window_t *w, double now);

/*
 * Seconds from now until the window holds at most limit - need events, that
 * is, until need more events would fit under limit; 0 if they fit now, and
 * the window's length if they never can (need > limit).
 */
double fg_window_wait(fg_window_t *w, double now, uint64_t limit,
    uint64_t need);


#endif /* _FG_WINDOW_H_INCLUDED_ */
