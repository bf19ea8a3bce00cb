
/*
 * fairgate: what the simulation loop and its engines share (private to
 * the simulator).  The calls run one way: the loop (fg_sim_run.c) drives
 * the engines (fg_sim_engine.c), which hand --engine-sched andes to
 * fg_sim_andes.c and --models to fg_sim_mux.c; every one of them reports
 * a request's events and tokens through fg_sim_event.c, below them all.
 */

#ifndef _FG_SIM_RUN_INT_H_INCLUDED_
#define _FG_SIM_RUN_INT_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_qoe.h"
#include "fg_rand.h"
#include "fg_sim_conf.h"
#include "fg_sim_kv.h"
#include "fg_sim_stages.h"


typedef struct {
    fg_request_t        core;
    uint32_t            generated;       /* output tokens so far */
    uint32_t            engine;          /* admitted to, once running */
    fg_sim_kv_lease_t   lease;           /* what it holds of the pool */
    fg_qoe_t            qoe;             /* with expectations, from arrival */

    /* --engine-sched andes's view of the reader, defaults without */
    double              dry;             /* it has read all it was given */
    double              first;           /* its first token was expected */
    double              speed;           /* tokens a second */
    uint32_t            preemptions;

    uint64_t            blocks;          /* --models: head blocks held */
} fg_sim_request_t;


/*
 * One simulated engine: its pool, its batch, the requests dispatched to
 * it that its next merge takes, the step it is in.
 */
typedef struct {
    fg_sim_kv_t          kv;
    fg_sim_request_t   **running;        /* in admission order */
    size_t               nrunning;
    fg_sim_request_t   **pending;        /* dispatched, not yet merged */
    size_t               npending;
    size_t               first;          /* a merge's: its new ones */
    uint32_t             steps;          /* decode steps since a merge */
    double               end;            /* of the step it is in */
    unsigned             busy:1;         /* in a step */
    unsigned             merging:1;      /* ... a merge's prefill */

    /*
     * --engine-sched andes: the engine's own waiting list (dispatched or
     * preempted, holding nothing), its reservations' tokens, and room
     * for a decision (fg_sim_andes.c)
     */
    fg_sim_request_t   **waiting;
    size_t               nwaiting;
    uint64_t             wait_tokens;    /* of those not yet started */
    fg_sim_request_t   **spare;
    void                *cand;           /* fg_andes_cand_t */
    void               **order;
    uint64_t             preemptions;
    double               decided;
} fg_sim_engine_t;


typedef struct {
    const fg_sim_conf_t   *conf;
    const fg_sim_trace_t  *trace;
    fg_sim_result_t       *results;

    fg_sched_t            *sched;
    fg_sim_client_t       *clients;
    fg_sim_request_t      *reqs;

    fg_sim_engine_t       *engines;
    uint32_t               nengines;
    struct fg_sim_mux_s   *mux;         /* --models: the one GPU */
    fg_sim_kv_layout_t     layout;      /* with the prefix cache */

    /* queued ids in arrival order, for the timeout; stale ones skipped */
    size_t                *queue;
    size_t                 qhead;
    size_t                 qtail;

    uint64_t               waiting;
    fg_sim_stages_t        deps;        /* the arrivals to come */
    double                *arrival;     /* each request's, once arrived */
    size_t                 decided;     /* requests with an outcome */
    double                 now;
    fg_rand_t              rng;

    /* wsc and oit, indexed by the trace's string indices */
    fg_app_t              *apps;        /* apps[i].id != 0: in use */
    uint8_t               *seen;        /* interactions queued before */
    fg_oit_t               oit;
    fg_oit_interaction_t  *oit_table;
    fg_oit_limit_t        *user_limits; /* by user string, then client */
    fg_oit_limit_t        *app_limits;
    fg_window_t           *user_windows; /* requests admitted, for limits */
    fg_window_t           *app_windows;
    uint32_t              *stages;      /* an interaction's, by string */
    double                 oit_expired; /* the last fg_oit_expire() */

    char                  *err;
    size_t                 size;
} fg_sim_t;


#define fg_sim_request_of(r)                                                  \
    ((fg_sim_request_t *) ((char *) (r) - offsetof(fg_sim_request_t, core)))


/* a request's reservation: input + max output, whatever is shared */
static inline uint64_t
fg_sim_reservation(const fg_sim_req_t *tr)
{
    return (uint64_t) tr->input_tokens + tr->max_output_tokens;
}


/* fg_sim_event.c: the event to the caller's hook, if any */
void fg_sim_emit(fg_sim_t *sim, fg_sim_event_e type, double time,
    size_t id);

/*
 * Request sr made its next token at sim->now: the tallies, and its end
 * when it was its last; kv NULL (--models): the caller frees its blocks.
 */
void fg_sim_token(fg_sim_t *sim, fg_sim_kv_t *kv, fg_sim_request_t *sr);

/* fg_sim_engine.c */
int fg_sim_engines_init(fg_sim_t *sim);
void fg_sim_engines_free(fg_sim_t *sim);

/* tokens reserved by running requests, on every engine */
uint64_t fg_sim_engines_used(fg_sim_t *sim);

/*
 * Every engine between steps decides at sim->now.  When one may merge
 * (its batch is empty, or merge_every decode steps passed), the policy
 * core dispatches what waits, each request to an engine with room that
 * the route picks: the engines that may merge merge what they were given
 * (the prefill starts), those with requests running decode on.
 */
void fg_sim_engines_start(fg_sim_t *sim);

/* the earliest end of a step in progress: 1, or 0 when every engine idles */
int fg_sim_engines_next(fg_sim_t *sim, double *t, int *idle);

/* the steps that end at sim->now yield their tokens */
void fg_sim_engines_end(fg_sim_t *sim);

/* fg_sim_mux.c: --models, the engines' functions above for one GPU */
int fg_sim_mux_init(fg_sim_t *sim);
void fg_sim_mux_free(fg_sim_t *sim);
uint64_t fg_sim_mux_used(fg_sim_t *sim);
void fg_sim_mux_start(fg_sim_t *sim);
int fg_sim_mux_next(fg_sim_t *sim, double *t, int *idle);
void fg_sim_mux_end(fg_sim_t *sim);

/* whether request id could never run (more than its model may hold) */
int fg_sim_mux_never(fg_sim_t *sim, size_t id);

/* fg_sim_andes.c: --engine-sched andes */
int fg_sim_andes_init(fg_sim_t *sim, fg_sim_engine_t *eng);
void fg_sim_andes_free(fg_sim_engine_t *eng);

/* whether eng takes tr into its waiting list: a pool's worth waits */
int fg_sim_andes_accepts(fg_sim_t *sim, fg_sim_engine_t *eng,
    const fg_sim_req_t *tr);
void fg_sim_andes_enqueue(fg_sim_t *sim, fg_sim_engine_t *eng,
    fg_sim_request_t *sr);

/* at a merge point: Andes's decision under pressure, then admission */
void fg_sim_andes_merge(fg_sim_t *sim, fg_sim_engine_t *eng);


#endif /* _FG_SIM_RUN_INT_H_INCLUDED_ */
