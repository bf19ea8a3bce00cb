
/*
 * fairgate: dependent stages, when each request of a trace goes out; both
 * tools replay a trace through it.
 *
 * A request of an interaction at stage s (both given) waits until every
 * request of that interaction at a stage below s has an outcome, and goes
 * out at the later of its own t and the last of their outcomes: trace
 * timing while the system keeps up, the dependency when it does not.  If
 * any of them failed (anything but ok), it is not sent but skipped, which
 * counts as a failure for the stages above it.  Requests at the same
 * stage do not wait for each other; requests without an interaction or a
 * stage, and all of them when open_loop, go out at their t.
 *
 * Released requests come out by due time, ties in trace order: in open
 * loop exactly the trace's order.  Times are the trace's clock.
 */

#ifndef _FG_SIM_STAGES_H_INCLUDED_
#define _FG_SIM_STAGES_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_heap.h"
#include "fg_sim_trace.h"


typedef struct {
    const fg_sim_trace_t  *tr;
    double                *due;         /* when released, else its t */
    uint32_t              *wait;        /* lower stages without outcome */
    uint8_t               *failed;      /* a lower stage failed */
    size_t                *order;       /* by interaction, stage, id */
    size_t                *pos;         /* request i is order[pos[i]] */
    size_t                 norder;

    /* released, not yet taken: key due, tie the request's id */
    fg_heap_t              released;
    fg_heap_entry_t       *entries;
    fg_heap_node_t        *nodes;       /* request i's place in it */
} fg_sim_stages_t;


/* a trace's requests in order (sorted or not); 0, or -1 out of memory */
int fg_sim_stages_init(fg_sim_stages_t *st, const fg_sim_trace_t *tr,
    int open_loop);
void fg_sim_stages_free(fg_sim_stages_t *st);

/* the next released request and its due time: 1, or 0 when none is */
int fg_sim_stages_peek(fg_sim_stages_t *st, size_t *id, double *due);

/*
 * Takes the next released request: 1 to send it, 0 to skip it (a lower
 * stage failed: the caller records it skipped and calls
 * fg_sim_stages_done() with ok 0 at its due time).
 */
int fg_sim_stages_take(fg_sim_stages_t *st, size_t *id, double *due);

/* request id has its outcome at time t: releases what waited for it */
void fg_sim_stages_done(fg_sim_stages_t *st, size_t id, double t, int ok);


#endif /* _FG_SIM_STAGES_H_INCLUDED_ */
