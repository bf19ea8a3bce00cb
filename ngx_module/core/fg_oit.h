
/*
 * fairgate: overload-aware interaction throttling (FairServe's OIT).
 *
 * An interaction is the chain of LLM calls that answers one user query.
 * Cutting one half-way wastes every token already spent on it, so OIT
 * never throttles a request that continues an open interaction; it
 * throttles only requests that would open a new one, only while the
 * system is overloaded, and only those over their user's limit, then
 * their app's.  Without overload everyone is admitted.
 *
 * Pure C, no nginx types, no function pointers and no allocation: the
 * caller owns the table (an array of fg_oit_interaction_t, open addressing
 * by id) and the users' and apps' limits (fg_oit_limit_t), and may put
 * them all in shared memory.  Times are seconds on the caller's clock.
 */

#ifndef _FG_OIT_H_INCLUDED_
#define _FG_OIT_H_INCLUDED_


#include <stdint.h>

#include "fg_window.h"


typedef enum {
    FG_OIT_OPEN = 0,           /* admitted, opening a new interaction */
    FG_OIT_CONTINUE,           /* admitted, continuing an open one */
    FG_OIT_UNTRACKED,          /* admitted, no interaction or no room */
    FG_OIT_THROTTLE_USER,      /* over the user's limit under overload */
    FG_OIT_THROTTLE_APP        /* over the app's limit under overload */
} fg_oit_verdict_e;


typedef struct {
    uint64_t         id;               /* 0: a free slot */
    uint64_t         user;
    uint64_t         app;
    uint64_t         tokens;           /* spent so far */
    double           last_seen;
    uint32_t         stages;           /* declared; 0: unknown */
    uint32_t         requests;
} fg_oit_interaction_t;


/*
 * A user's or an app's limit: requests admitted per window.  The window is
 * the caller's (the gateway's own rate windows): fg_oit_admit() only reads
 * it, and the caller counts in it what it lets in, continuations too, as
 * they use the capacity like any other request.
 */
typedef struct {
    uint64_t         id;               /* the caller's, untouched */
    uint32_t         limit;            /* 0: no limit */
    fg_window_t     *recent;
    uint64_t         remote;           /* let in elsewhere (other gateways
                                          sharing the limit), added */
} fg_oit_limit_t;


typedef struct {
    double           idle_timeout;     /* seconds an interaction may idle */

    /*
     * Requests one interaction may make before its next ones are checked
     * like new ones (0: no bound): interaction ids come from clients, and
     * an id kept open for ever must not become a way around the limits.
     */
    uint32_t         max_requests;

    uint32_t         capacity;         /* slots in table */
    uint32_t         open;
    uint32_t         cursor;           /* where fg_oit_expire_some() is */
    fg_oit_interaction_t  *table;      /* the caller's; see fg_oit_init() */

    /* read-out for status pages */
    uint64_t         opened;
    uint64_t         completed;
    uint64_t         aborted;          /* fg_oit_abort(), or idle before
                                          its declared last stage */
    uint64_t         expired;          /* idle with no declared end */
    uint64_t         admitted;
    uint64_t         continued;
    uint64_t         untracked;
    uint64_t         throttled;
    uint64_t         tokens_wasted;    /* spent on aborted interactions */
} fg_oit_t;


/*
 * table holds capacity slots; a power of two keeps probing cheap but any
 * capacity works.  Keep it well above the open interactions expected: a
 * full table admits new interactions untracked.
 */
void fg_oit_init(fg_oit_t *oit, fg_oit_interaction_t *table,
    uint32_t capacity, double idle_timeout);

/*
 * Decides on a request of interaction (0: none) at stage (0 the first),
 * for user and app (either NULL, or a NULL window: no limit), stages the
 * interaction's declared number of stages (0: unknown).  The caller counts
 * an admitted request in both windows.
 */
fg_oit_verdict_e fg_oit_admit(fg_oit_t *oit, fg_oit_limit_t *user,
    fg_oit_limit_t *app, uint64_t interaction, uint32_t stage,
    uint32_t stages, int overloaded, double now);

/* tokens spent on an open interaction (input and output as they come) */
void fg_oit_spend(fg_oit_t *oit, uint64_t interaction, uint64_t tokens,
    double now);

/* a request at stage ended; the declared last stage completes it */
void fg_oit_done(fg_oit_t *oit, uint64_t interaction, uint32_t stage,
    double now);

/* the caller cut the interaction (a failure upstream): its tokens wasted */
void fg_oit_abort(fg_oit_t *oit, uint64_t interaction);

/* ends interactions idle past the timeout; O(capacity), for a timer */
void fg_oit_expire(fg_oit_t *oit, double now);

/*
 * The same over the next n slots from where the last call stopped, so
 * that a caller under a lock sweeps the table a little at a time.
 */
void fg_oit_expire_some(fg_oit_t *oit, double now, uint32_t n);

/* the open interaction, or NULL */
fg_oit_interaction_t *fg_oit_find(fg_oit_t *oit, uint64_t interaction);


#endif /* _FG_OIT_H_INCLUDED_ */
