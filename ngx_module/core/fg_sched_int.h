
/*
 * fairgate: the policy core's inside, shared by its files, top down
 * (fg_sched_dispatch.c: the dispatch and the routes among several engines;
 * fg_sched.c: queues, charges and the policies that serve the heap's top;
 * fg_sched_prefix.c: lpm's and dlpm's candidates, dlpm's deficit;
 * fg_sched_qoe.c: the qoe order within a client).
 * Not for the core's callers: fg_sched.h is the interface.
 */

#ifndef _FG_SCHED_INT_H_INCLUDED_
#define _FG_SCHED_INT_H_INCLUDED_


#include <string.h>

#include "fg_sched.h"


#define FG_SCHED_NO_ENGINE  UINT32_MAX


struct fg_sched_s {
    fg_sched_conf_t    conf;
    fg_heap_t          heap;
    fg_heap_t          cont;           /* wsc: clients with continuations */

    uint32_t           clients;
    uint64_t           next_seq;
    double             now;            /* fg_sched_set_clock() */

    /* vtc's lift when no client waits: the last client that left */
    fg_client_t       *last_left;
    double             last_left_counter;

    /* the counters fg_sched_stats() reports (it fills in the two first) */
    fg_sched_stats_t   st;

    uint64_t           round;          /* dlpm: refill rounds so far */
    uint32_t           rr_next;        /* round-robin: where to look first */

    /*
     * One decision's scratch, in the same block (window entries each):
     * lpm's and dlpm's candidates, the clients they come from with a
     * cursor in each one's FIFO, and the queue of heap indices that walks
     * the heap's top (2 window + 1); the engines' loads.
     */
    fg_request_t     **cand;
    fg_client_t      **seen;
    fg_link_t        **cursor;
    uint32_t          *front;
    double             loads[FG_SCHED_MAX_ENGINES];

    fg_heap_entry_t    entries[];
};


#define fg_sched_client_of(n)                                                 \
    ((fg_client_t *) ((char *) (n) - offsetof(fg_client_t, heap)))

#define fg_sched_request_of(l)                                                \
    ((fg_request_t *) ((char *) (l) - offsetof(fg_request_t, link)))

#define fg_sched_is_wsc(s)   ((s)->conf.policy == FG_POLICY_WSC)
#define fg_sched_is_dlpm(s)  ((s)->conf.policy == FG_POLICY_DLPM)

/* lpm and dlpm: selection by cached prefix, charges on uncached input */
#define fg_sched_by_prefix(s)  ((s)->conf.policy >= FG_POLICY_LPM)


/* lcf, the vtc family and wsc: the heap's key is the counter */
static inline int
fg_sched_by_counter(fg_sched_t *s)
{
    return s->conf.policy >= FG_POLICY_LCF
           && s->conf.policy <= FG_POLICY_WSC;
}


/* the vtc family and wsc lift a returning client's counter */
static inline int
fg_sched_lifts(fg_sched_t *s)
{
    return s->conf.policy >= FG_POLICY_VTC
           && s->conf.policy <= FG_POLICY_WSC;
}


/*
 * A backlogged client's key in the heap: its counter (lcf, vtc, wsc), the
 * refill round from which its deficit is positive (dlpm), or nothing
 * (fcfs, rpm, lpm: arrival order alone, the tie).
 */
static inline double
fg_sched_key(fg_sched_t *s, fg_client_t *c)
{
    if (fg_sched_by_counter(s)) {
        return c->counter;
    }

    return fg_sched_is_dlpm(s) ? (double) c->eligible : 0.0;
}


/* the names of an enum's values (policies, routes), parsed and printed */
#define FG_SCHED_NAMES(names)  (sizeof(names) / sizeof(names[0]))

static inline int
fg_sched_name_index(const char *const *names, size_t n, const char *name)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (strcmp(name, names[i]) == 0) {
            return (int) i;
        }
    }

    return -1;
}


static inline const char *
fg_sched_name_of(const char *const *names, size_t n, unsigned value)
{
    return value < n ? names[value] : "unknown";
}


void fg_sched_place(fg_sched_t *s, fg_client_t *c);

/* fg_sched_qoe.c */
fg_request_t *fg_sched_qoe_first(fg_sched_t *s, fg_client_t *c);
fg_request_t *fg_sched_qoe_peek(fg_sched_t *s);

/* fg_sched_prefix.c */
void fg_sched_deficit_init(fg_sched_t *s, fg_client_t *c);
void fg_sched_deficit_charge(fg_sched_t *s, fg_client_t *c, double cost);
void fg_sched_refill(fg_sched_t *s);
size_t fg_sched_scratch_size(const fg_sched_conf_t *conf);
void fg_sched_scratch_init(fg_sched_t *s, void *scratch);
uint32_t fg_sched_gather(fg_sched_t *s, double limit);
fg_request_t *fg_sched_prefix_peek(fg_sched_t *s);


#endif /* _FG_SCHED_INT_H_INCLUDED_ */
