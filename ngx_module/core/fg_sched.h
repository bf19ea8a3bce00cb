
/*
 * fairgate: the policy core.  Decides whose request is served next.
 *
 * Pure C, no nginx types, so that the nginx module (state in a shared zone)
 * and the simulator and tests (state on the heap) run the same code.
 *
 * Memory: the caller owns clients (fg_client_t) and requests (fg_request_t)
 * and may embed them in its own structures; the core allocates only at
 * fg_sched_create(), through the allocator it is given, and keeps no
 * function pointers, so a scheduler in shared memory stays valid across
 * nginx reloads.  Times are seconds on the caller's clock (real or virtual).
 *
 * Life of a request:
 *
 *     fg_request_init()
 *     fg_sched_enqueue()          FG_OK, or FG_REJECTED by the rpm policy
 *     fg_sched_dispatch()         or fg_sched_peek() + fg_sched_admit();
 *                                 charges the admission cost
 *     fg_sched_charge()           per generated token(s)
 *     fg_sched_finish()           or fg_sched_cancel() at any time
 *
 * The rules (selection, blocked head, counter lift, charging) follow the VTC
 * paper's Algorithm 2; lpm and dlpm (the DLPM paper's Algorithm 1) choose
 * by the prefix each request has cached on an engine, and with several
 * engines fg_sched_dispatch_to() also picks the engine (a route);
 * docs/policy-core.md describes them.
 */

#ifndef _FG_SCHED_H_INCLUDED_
#define _FG_SCHED_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_cost.h"
#include "fg_heap.h"
#include "fg_window.h"


#define FG_OK         0
#define FG_ERROR     -1
#define FG_REJECTED  -2
#define FG_BUSY      -3


typedef struct fg_sched_s    fg_sched_t;
typedef struct fg_client_s   fg_client_t;
typedef struct fg_request_s  fg_request_t;
typedef struct fg_link_s     fg_link_t;
typedef struct fg_app_s      fg_app_t;


struct fg_link_s {
    fg_link_t  *prev;
    fg_link_t  *next;
};


typedef struct {
    void     *(*alloc)(void *ctx, size_t size);
    void      (*free)(void *ctx, void *p);
    void       *ctx;
} fg_allocator_t;


/* malloc and free: for callers that keep the scheduler on the heap (the
 * simulator, tests, benchmarks); nginx passes its slab pool's */
extern const fg_allocator_t  fg_sched_heap;


typedef enum {
    FG_POLICY_FCFS = 0,        /* global arrival order */
    FG_POLICY_RPM,             /* fcfs, rejecting over rpm_limit per 60 s */
    FG_POLICY_LCF,             /* least counter first, no lift */
    FG_POLICY_VTC,             /* virtual token counter (weighted) */
    FG_POLICY_VTC_PREDICT,     /* vtc charging predicted output up front */
    FG_POLICY_VTC_ORACLE,      /* vtc charging the true output up front */
    FG_POLICY_WSC,             /* fairserve's weighted service counter */
    FG_POLICY_LPM,             /* longest cached prefix first: not fair */
    FG_POLICY_DLPM             /* deficit longest prefix match */
} fg_policy_e;


/* several engines: which of those a request fits it goes to */
typedef enum {
    FG_ROUTE_PREFIX = 0,       /* longest cached prefix, ties least load */
    FG_ROUTE_LEAST_LOAD,
    FG_ROUTE_ROUND_ROBIN
} fg_route_e;


/* which of a client's waiting requests goes first (fg_sched_qoe.c) */
typedef enum {
    FG_ORDER_ARRIVAL = 0,      /* the oldest */
    FG_ORDER_QOE               /* Andes's: the most QoE gained per token */
} fg_order_e;


#define FG_SCHED_MAX_ENGINES  64
#define FG_SCHED_MAX_WINDOW   4096


#define FG_APP_STAGES  16


/*
 * wsc: an app's expected lengths at one stage of its interactions, set by
 * the caller or learnt (an exponential moving average of finished ones).
 */
typedef struct {
    double           in;
    double           sys;
    double           out;
    uint64_t         samples;          /* finished requests learnt from */
} fg_app_stage_t;


/*
 * wsc: an app profile, owned by the caller like a client.  A request's
 * stage beyond the last profiled one uses the last.
 */
struct fg_app_s {
    uint64_t         id;               /* the caller's, untouched */
    uint32_t         n_stages;         /* profiled stages, 0 to FG_APP_STAGES */
    unsigned         learn:1;          /* update the stages as requests end */
    fg_app_stage_t   stage[FG_APP_STAGES];
};


typedef struct {
    fg_policy_e   policy;
    fg_cost_t     cost;
    uint32_t      max_clients;         /* clients that may exist at once */
    uint32_t      rpm_limit;           /* rpm: requests per rpm_window */
    double        rpm_window;          /* rpm: seconds, 60 by default */

    /* wsc: token weights of input, system prompt and output (1, 2, 1) */
    double        wsc_alpha;
    double        wsc_beta;
    double        wsc_gamma;

    double        quantum;             /* dlpm: Q_u, cost units, 2048 */
    uint32_t      window;              /* lpm, dlpm: waiting requests
                                          examined in one decision, 128 */
    fg_route_e    route;               /* several engines: by prefix */

    fg_order_e    order;               /* within a client: arrival */
    double        qoe_horizon;         /* qoe order: s looked ahead, 5 */
} fg_sched_conf_t;


typedef enum {
    FG_REQ_NEW = 0,
    FG_REQ_QUEUED,
    FG_REQ_RUNNING,
    FG_REQ_DONE
} fg_req_state_e;


struct fg_request_s {
    fg_link_t        link;             /* in the client's waiting FIFO,
                                          or wsc's continuations FIFO */
    fg_client_t     *client;
    uint64_t         seq;              /* global arrival order */
    double           arrival;
    double           due;              /* qoe order: its first token is
                                          expected (arrival + TTFT target;
                                          0: at arrival) */

    uint32_t         input_tokens;
    uint32_t         max_output_tokens;

    /*
     * Output the caller knows or guesses before serving: oracle_output is
     * the true length (vtc-oracle; 0 if unknown), hint_output a per-request
     * prediction (vtc-predict; negative to use the client's history).
     */
    uint32_t         oracle_output;
    int32_t          hint_output;

    uint32_t         prepaid_output;   /* output charged at admission */
    uint32_t         output_tokens;    /* output charged so far */
    fg_req_state_e   state;

    uint64_t         cookie;           /* the caller's, untouched */

    /*
     * wsc: the request's app (NULL: weight 1), interaction (0: none),
     * stage and system-prompt tokens, counted apart from input_tokens.
     * "continues" is set by the caller when the request continues an
     * interaction already under way (fg_oit_admit() says so), before
     * fg_sched_enqueue(): wsc serves such requests first.  wsc_scale is
     * E / w_aj, fixed at admission.
     */
    fg_app_t        *app;
    uint64_t         interaction;
    uint32_t         stage;
    uint32_t         system_tokens;
    unsigned         continues:1;
    double           wsc_scale;

    /*
     * Of input_tokens, those cached on the engine the request was
     * admitted to, as the match said then or fg_sched_cached() since;
     * lpm and dlpm charge only the rest.
     */
    uint32_t         cached_tokens;
    uint32_t         engine;           /* the engine it was admitted to */
};


struct fg_client_s {
    fg_link_t        waiting;          /* FIFO of fg_request_t, oldest first */
    fg_heap_node_t   heap;             /* in the heap while waiting */
    fg_link_t        cont;             /* wsc: waiting continuations */
    fg_heap_node_t   cont_heap;        /* wsc: while continuations wait */
    uint32_t         n_cont;
    double           priority;         /* wsc: the factor E, 1 by default */

    uint64_t         id;               /* the caller's, untouched */
    double           counter;          /* virtual counter, weighted */
    double           weight;
    double           predicted_output; /* vtc-predict: running estimate */
    unsigned         has_prediction:1;

    uint32_t         n_waiting;
    uint32_t         n_running;

    /* read-out for status pages: unweighted cost and plain counts */
    double           service;
    uint64_t         enqueued;
    uint64_t         rejected;
    uint64_t         admitted;
    uint64_t         finished;
    uint64_t         cancelled;
    uint64_t         input_tokens;
    uint64_t         output_tokens;
    uint64_t         cached_tokens;    /* of input_tokens */

    /*
     * dlpm: the deficit q_i, weighted cost units, as of refill round
     * "round"; refills since are applied when it is next charged, so
     * fg_client_deficit() says what it is now.  "eligible" is the round
     * from which it is positive (a client admits only then).
     */
    double           deficit;
    uint64_t         round;
    uint64_t         eligible;

    /* last: the large, rarely used part stays out of the hot cache lines */
    fg_window_t      recent;           /* rpm: admitted-to-queue requests */
};


typedef struct {
    uint32_t         clients;
    uint32_t         backlogged;       /* clients with waiting requests */
    uint64_t         waiting;
    uint64_t         running;
    uint64_t         enqueued;
    uint64_t         rejected;
    uint64_t         admitted;
    uint64_t         finished;
    uint64_t         cancelled;
} fg_sched_stats_t;


typedef int (*fg_sched_fit_pt)(fg_request_t *r, void *data);


/* the caller's engines, for one decision: never stored */
typedef struct {
    uint32_t      n_engines;           /* 1 .. FG_SCHED_MAX_ENGINES */
    /* prompt tokens of r cached on engine e; NULL: none anywhere */
    uint32_t    (*match)(fg_request_t *r, uint32_t e, void *data);
    /* whether r may go to engine e now (room, and e serves r); NULL: yes */
    int         (*fits)(fg_request_t *r, uint32_t e, void *data);
    /* engine e's load, smaller is less loaded; NULL: all equal */
    double      (*load)(uint32_t e, void *data);
    void         *data;
} fg_sched_engines_t;


/* fills conf with the defaults: vtc, linear 1/2 cost, rpm 60 s */
void fg_sched_conf_init(fg_sched_conf_t *conf, uint32_t max_clients);

/* NULL when conf is usable, else what is wrong with it */
const char *fg_sched_conf_error(const fg_sched_conf_t *conf);

int fg_sched_policy_parse(fg_policy_e *policy, const char *name);
const char *fg_sched_policy_name(fg_policy_e policy);

/* "prefix" (alias "d2lpm"), "least-load", "round-robin"; 0 or -1 */
int fg_sched_route_parse(fg_route_e *route, const char *name);
const char *fg_sched_route_name(fg_route_e route);

/* NULL when conf is not usable or memory is short */
fg_sched_t *fg_sched_create(const fg_sched_conf_t *conf,
    const fg_allocator_t *allocator);
void fg_sched_destroy(fg_sched_t *s, const fg_allocator_t *allocator);

const fg_sched_conf_t *fg_sched_conf(fg_sched_t *s);

/* FG_ERROR when max_clients exist already or weight is not positive */
int fg_client_init(fg_sched_t *s, fg_client_t *c, uint64_t id, double weight);

/* FG_BUSY while the client has waiting or running requests */
int fg_client_release(fg_sched_t *s, fg_client_t *c);

/* takes effect for charges from now on; FG_ERROR if not positive */
int fg_client_set_weight(fg_sched_t *s, fg_client_t *c, double weight);

/* wsc: the factor E multiplying the client's charges; FG_ERROR if <= 0 */
int fg_client_set_priority(fg_sched_t *s, fg_client_t *c, double priority);

/* wsc: an app with no stage profiled (weight 1) that learns if asked */
void fg_app_init(fg_app_t *app, uint64_t id, unsigned learn);

/* wsc: sets the expected lengths of a stage; FG_ERROR if out of range */
int fg_app_set_stage(fg_app_t *app, uint32_t stage, double in, double sys,
    double out);

/* wsc: w_aj, the weight of a request of app at stage (1 if unknown) */
double fg_app_weight(fg_sched_t *s, fg_app_t *app, uint32_t stage);

void fg_request_init(fg_request_t *r, uint32_t input_tokens,
    uint32_t max_output_tokens);

/* FG_OK when queued; FG_REJECTED by the rpm policy's limit */
int fg_sched_enqueue(fg_sched_t *s, fg_client_t *c, fg_request_t *r,
    double now);

/*
 * The time, on the caller's clock, at which the next decisions are taken:
 * the qoe order ranks requests by how late they are then.  Enqueueing
 * sets it too.
 */
void fg_sched_set_clock(fg_sched_t *s, double now);

/*
 * The request the policy would serve next, or NULL if none waits; lpm and
 * dlpm: what fg_sched_dispatch() would admit were everything to fit.
 */
fg_request_t *fg_sched_peek(fg_sched_t *s);

/* starts serving a waiting request and charges its admission cost */
void fg_sched_admit(fg_sched_t *s, fg_request_t *r);

/*
 * Admits the next request if fit() says it fits, and returns it; returns
 * NULL when nothing waits or the next request does not fit.  A request that
 * does not fit stops admission: no other client is tried in its place, as
 * skipping would break VTC's fairness bound.  lpm and dlpm: one engine
 * that caches nothing, so the oldest candidate that fits (dlpm skips those
 * that do not, as its paper's CANADD does).
 */
fg_request_t *fg_sched_dispatch(fg_sched_t *s, fg_sched_fit_pt fit,
    void *data);

/*
 * Admits the policy's next request to an engine it fits, which the route
 * picks, and returns it with r->engine and r->cached_tokens set; NULL when
 * nothing waits or nothing can go now.  fcfs, rpm, lcf, the vtc family and
 * wsc: the policy's next request (blocked head: NULL if it fits no engine).
 * lpm, dlpm: the best of up to window candidates (docs/policy-core.md).
 */
fg_request_t *fg_sched_dispatch_to(fg_sched_t *s,
    const fg_sched_engines_t *engines);

/*
 * The engine said how many of r's prompt tokens it found cached: lpm and
 * dlpm settle the admission charge to it, up or down; other policies only
 * record it.
 */
void fg_sched_cached(fg_sched_t *s, fg_request_t *r, uint32_t cached_tokens);

/* a running request generated n more output tokens */
void fg_sched_charge(fg_sched_t *s, fg_request_t *r, uint32_t n);

/*
 * The true lengths of a running request became known (an upstream's usage
 * report): its charges so far are settled to what they would have been had
 * they been known from the start, up or down.  Output prepaid at admission
 * stays prepaid until the request ends.
 */
void fg_sched_correct(fg_sched_t *s, fg_request_t *r, uint32_t input_tokens,
    uint32_t output_tokens);

/* a running request ended; refunds output prepaid but not generated */
void fg_sched_finish(fg_sched_t *s, fg_request_t *r);

/* ends a waiting or running request without learning from its length */
void fg_sched_cancel(fg_sched_t *s, fg_request_t *r);

/* smallest counter among clients with waiting requests, or -1 if none */
double fg_sched_min_counter(fg_sched_t *s);

void fg_sched_stats(fg_sched_t *s, fg_sched_stats_t *stats);

/*
 * Service c received elsewhere (other gateways sharing the counters): its
 * virtual counter grows by cost / weight, as if charged here, so that the
 * selection and the lift see the whole picture (dlpm: its deficit falls by
 * as much); the read-out (service, token counts) stays this scheduler's
 * own.  cost <= 0 is ignored.
 */
void fg_client_add_remote(fg_sched_t *s, fg_client_t *c, double cost);

/* dlpm: c's deficit now, the refills it missed while not charged counted */
double fg_client_deficit(fg_sched_t *s, fg_client_t *c);


#endif /* _FG_SCHED_H_INCLUDED_ */
