
/*
 * fairgate: a simulation's configuration, and the events and per-client
 * tallies its hook sees: what the loop (fg_sim_run.c) and its engines
 * (fg_sim_engine.c, fg_sim_andes.c, fg_sim_mux.c) read alike.
 */

#ifndef _FG_SIM_CONF_H_INCLUDED_
#define _FG_SIM_CONF_H_INCLUDED_


#include <stddef.h>
#include <stdint.h>

#include "fg_oit.h"
#include "fg_sched.h"
#include "fg_step_model.h"
#include "fg_sim_trace.h"


typedef enum {
    FG_SIM_EV_ARRIVE = 0,      /* queued */
    FG_SIM_EV_REJECT,          /* turned away on arrival */
    FG_SIM_EV_ADMIT,           /* admitted: input served, prefill starts */
    FG_SIM_EV_TOKEN,           /* one output token generated */
    FG_SIM_EV_FINISH,          /* its last token was the one before */
    FG_SIM_EV_TIMEOUT,         /* cancelled after waiting too long */
    FG_SIM_EV_SKIP,            /* not sent: an earlier stage failed */
    FG_SIM_EV_PREEMPT          /* --engine-sched andes preempted it */
} fg_sim_event_e;


typedef struct {
    fg_client_t   core;

    /*
     * Service as the paper counts it, whatever the policy prepays:
     * h(in, 0) at admission, h(in, k) - h(in, k - 1) for token k.
     */
    double        service;
    uint32_t      waiting;                /* queued, not yet admitted */
    uint32_t      running;
} fg_sim_client_t;


typedef struct {
    fg_sim_event_e          type;
    double                  time;
    size_t                  id;           /* the request, in trace order */
    uint32_t                client;
    const fg_sim_client_t  *clients;      /* after the event */
    uint32_t                nclients;
} fg_sim_event_t;


typedef void (*fg_sim_hook_pt)(const fg_sim_event_t *ev, void *data);


/* an engine's prefix cache over the run (fg_sim_kv.h) */
typedef struct {
    uint64_t           query_tokens;      /* input of admitted requests */
    uint64_t           hit_tokens;        /* of it, found cached */
    uint64_t           evictions;         /* blocks */
} fg_sim_cache_stats_t;


#define FG_SIM_SCHED_FCFS   0
#define FG_SIM_SCHED_ANDES  1


typedef struct {
    fg_policy_e        policy;
    fg_cost_t          cost;
    fg_step_model_t   *model;
    uint64_t           kv_tokens;
    uint32_t           merge_every;
    uint32_t           rpm_limit;
    double             queue_timeout;     /* seconds; 0: never */

    /* each request at its trace time, whatever its earlier stages did */
    unsigned           open_loop_stages:1;

    /*
     * vtc-predict: when >= 0, each request hints output x (1 + U(-e, e))
     * (the paper's "VTC (+-50%)" at 0.5); else the client's history.
     */
    double             predict_error;
    uint64_t           seed;

    /*
     * FairServe's OIT before enqueue: overloaded while a request waits in
     * the queue or the tokens reserved by those running reach
     * oit_threshold of the KV pool (the gateway's rule); new interactions
     * over their user's, then their app's requests per oit_window are
     * rejected; continuations are never.  Users are the trace's "user"
     * (else its client), apps its "app"; 0: no limit.
     */
    unsigned           oit:1;
    double             oit_threshold;     /* 0.9 */
    uint32_t           oit_user_rpm;
    uint32_t           oit_app_rpm;
    double             oit_window;        /* seconds, 60 */
    double             oit_idle_timeout;  /* seconds, 60 */

    /* the caller's, NULL or filled with OIT's read-out after the run */
    fg_oit_t          *oit_stats;

    /*
     * Locality: lpm and dlpm's quantum and window (fg_sched.h); engines
     * of kv_tokens each, the route among them; the prefix cache in each
     * (fg_sim_kv.h).  engine_names: NULL, or a string of the trace for
     * each engine, each served request's results' "engine".
     */
    double             quantum;
    uint32_t           window;
    fg_route_e         route;
    uint32_t           engines;           /* 1 */
    unsigned           prefix_cache:1;
    const uint32_t    *engine_names;

    /* the caller's, NULL or engines entries filled after the run */
    fg_sim_cache_stats_t  *cache_stats;

    /*
     * The engine's scheduler: FG_SIM_SCHED_FCFS (the VTC paper's engine)
     * or FG_SIM_SCHED_ANDES (fg_sim_andes.c: its own waiting list, Andes's
     * decision at merge points under KV pressure, preemption by
     * recomputation); a request without expectations is scheduled with
     * qoe_ttft (s) and qoe_speed (tokens/s), the engine's defaults (and
     * the qoe order's).
     */
    uint32_t           engine_sched;
    double             qoe_ttft;
    double             qoe_speed;

    /*
     * Several models on one GPU (fg_sim_mux.c, docs/multi-model.md):
     * NULL for the one model (the engines above); else the models, how
     * they share (mux), the pool in head blocks (0: kv_tokens / 16 token
     * blocks of the largest model), and the caller's read-out, NULL or
     * filled after the run.  Requests reserve head blocks of their model;
     * engines, the prefix cache and --engine-sched andes do not apply.
     */
    const struct fg_sim_models_s  *models;
    uint32_t           mux;               /* fg_mux_mode_e */
    uint64_t           kv_head_blocks;
    struct fg_sim_mux_stats_s     *mux_stats;

    /* the policy core's order within a client (fg_sched_qoe.c) */
    fg_order_e         order;

    /*
     * The caller's, NULL or trace->n entries: when each request arrived
     * (or was skipped), its t unless it waited for earlier stages.
     */
    double            *arrivals;

    fg_sim_hook_pt     hook;
    void              *hook_data;
} fg_sim_conf_t;


/* the paper's set-up: vtc, linear 1/2, 10000 tokens, merge every 10 */
void fg_sim_conf_init(fg_sim_conf_t *conf);


#endif /* _FG_SIM_CONF_H_INCLUDED_ */
