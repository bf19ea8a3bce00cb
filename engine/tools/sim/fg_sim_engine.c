
/*
 * fairgate: the simulation's engines: each one's KV pool (fg_sim_kv.h),
 * batch and step in progress, the policy core choosing request and engine
 * for those that may merge (fg_sched_dispatch_to()), and the tokens each
 * step yields.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_sim_run_int.h"


int
fg_sim_engines_init(fg_sim_t *sim)
{
    size_t                n;
    uint32_t              e;
    fg_sim_engine_t      *eng;
    const fg_sim_conf_t  *conf;

    conf = sim->conf;

    if (conf->models != NULL) {
        return fg_sim_mux_init(sim);
    }

    if (conf->prefix_cache
        && fg_sim_kv_layout_init(&sim->layout, sim->trace) != 0)
    {
        return -1;
    }

    sim->engines = calloc(conf->engines, sizeof(fg_sim_engine_t));
    if (sim->engines == NULL) {
        return -1;
    }

    sim->nengines = conf->engines;

    /* a running request holds at least a token: no more run than that */
    n = sim->trace->n < conf->kv_tokens ? sim->trace->n
                                        : (size_t) conf->kv_tokens;

    for (e = 0; e < sim->nengines; e++) {
        eng = &sim->engines[e];

        eng->running = calloc(n ? n : 1, sizeof(fg_sim_request_t *));
        eng->pending = calloc(n ? n : 1, sizeof(fg_sim_request_t *));

        if (eng->running == NULL || eng->pending == NULL
            || fg_sim_kv_init(&eng->kv, conf->kv_tokens,
                              conf->prefix_cache ? &sim->layout : NULL)
               != 0)
        {
            return -1;
        }

        if (conf->engine_sched == FG_SIM_SCHED_ANDES
            && fg_sim_andes_init(sim, eng) != 0)
        {
            return -1;
        }
    }

    return 0;
}


void
fg_sim_engines_free(fg_sim_t *sim)
{
    uint32_t  e;

    fg_sim_mux_free(sim);

    for (e = 0; sim->engines != NULL && e < sim->nengines; e++) {
        free(sim->engines[e].running);
        free(sim->engines[e].pending);
        fg_sim_andes_free(&sim->engines[e]);
        fg_sim_kv_free(&sim->engines[e].kv);
    }

    free(sim->engines);
    fg_sim_kv_layout_free(&sim->layout);

    sim->engines = NULL;
}


uint64_t
fg_sim_engines_used(fg_sim_t *sim)
{
    uint32_t  e;
    uint64_t  used;

    if (sim->mux != NULL) {
        return fg_sim_mux_used(sim);
    }

    used = 0;

    for (e = 0; e < sim->nengines; e++) {
        used += sim->engines[e].kv.reserved;
    }

    return used;
}


/* the policy core's view of the engines */

static uint32_t
fg_sim_match(fg_request_t *r, uint32_t e, void *data)
{
    fg_sim_t  *sim = data;

    return fg_sim_kv_match(&sim->engines[e].kv, &sim->trace->reqs[r->cookie]);
}


/* room on it, whether it may merge now or later */
static int
fg_sim_fits(fg_request_t *r, uint32_t e, void *data)
{
    fg_sim_t  *sim = data;

    if (sim->conf->engine_sched == FG_SIM_SCHED_ANDES) {
        return fg_sim_andes_accepts(sim, &sim->engines[e],
                                    &sim->trace->reqs[r->cookie]);
    }

    /* the trace's input: wsc takes the system tokens out of the core's */
    return fg_sim_kv_fits(&sim->engines[e].kv, &sim->trace->reqs[r->cookie]);
}


/* the tokens its running requests hold */
static double
fg_sim_load(uint32_t e, void *data)
{
    fg_sim_t  *sim = data;

    return (double) sim->engines[e].kv.reserved;
}


/* r was admitted to r->engine: its pool, its batch, the tallies */
static void
fg_sim_admit(fg_sim_t *sim, fg_request_t *r)
{
    size_t               id;
    uint32_t             cached;
    fg_sim_client_t     *c;
    fg_sim_engine_t     *eng;
    fg_sim_request_t    *sr;
    fg_sim_result_t     *res;
    const fg_sim_req_t  *tr;
    const fg_sim_conf_t *conf;

    conf = sim->conf;
    sr = fg_sim_request_of(r);
    id = (size_t) r->cookie;
    tr = &sim->trace->reqs[id];
    c = &sim->clients[tr->client];
    eng = &sim->engines[r->engine];
    res = &sim->results[id];

    /* andes: the engine's own list first, its pool when it admits */
    cached = conf->engine_sched == FG_SIM_SCHED_ANDES
             ? fg_sim_kv_match(&eng->kv, tr)
             : fg_sim_kv_admit(&eng->kv, tr, &sr->lease);

    /* what the engine found is what counts, as the gateway is told */
    if (cached != r->cached_tokens) {
        fg_sched_cached(sim->sched, r, cached);
    }

    sr->engine = r->engine;
    res->cached_tokens = cached;
    res->has_cached = conf->prefix_cache;
    res->engine = conf->engine_names ? conf->engine_names[r->engine] : 0;

    sim->waiting--;
    c->waiting--;
    c->running++;
    c->service += fg_cost_input(&conf->cost, tr->input_tokens - cached);

    if (conf->engine_sched == FG_SIM_SCHED_ANDES) {
        fg_sim_andes_enqueue(sim, eng, sr);

    } else {
        eng->pending[eng->npending++] = sr;
    }

    fg_sim_emit(sim, FG_SIM_EV_ADMIT, sim->now, id);
}


/* whether an engine between steps may merge */
static int
fg_sim_merge_point(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    return !eng->busy
           && (eng->nrunning == 0 || eng->steps >= sim->conf->merge_every);
}


/* the step an engine between steps starts: a merge's, a decode, or none */
static void
fg_sim_engine_step(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    double               t;
    size_t               i;
    fg_sim_request_t    *sr;
    const fg_sim_req_t  *tr;

    t = 0.0;

    if (eng->npending > 0 && fg_sim_merge_point(sim, eng)) {
        eng->first = eng->nrunning;

        for (i = 0; i < eng->npending; i++) {
            eng->running[eng->nrunning++] = eng->pending[i];
        }

        eng->npending = 0;

        /* the new requests' prefill, of what was not cached; a
         * preempted one's recompute, of its generated tokens too */
        for (i = eng->first; i < eng->nrunning; i++) {
            sr = eng->running[i];
            tr = &sim->trace->reqs[sr->core.cookie];
            t += fg_step_model_prefill(sim->conf->model, tr->input_tokens
                                       + sr->generated - sr->lease.cached);
        }

        eng->merging = 1;
        eng->steps = 0;

    } else if (eng->nrunning > 0) {
        /* nothing merged: decode on, try again after the next step */
        for (i = 0; i < eng->nrunning; i++) {
            tr = &sim->trace->reqs[eng->running[i]->core.cookie];
            t += fg_step_model_decode(sim->conf->model, tr->input_tokens,
                                      tr->output_tokens);
        }

        eng->merging = 0;
        eng->first = 0;

    } else {
        return;
    }

    /* the weights' read, once a step (gpu models) */
    t += fg_step_model_step(sim->conf->model);

    eng->busy = 1;
    eng->end = sim->now + t;
}


void
fg_sim_engines_start(fg_sim_t *sim)
{
    int                  any;
    uint32_t             e;
    fg_request_t        *r;
    fg_sim_engine_t     *eng;
    fg_sched_engines_t   engines;

    if (sim->mux != NULL) {
        fg_sim_mux_start(sim);
        return;
    }

    any = 0;

    /* a decision when an engine may merge: as the paper's engine does */
    for (e = 0; e < sim->nengines; e++) {
        any |= fg_sim_merge_point(sim, &sim->engines[e]);
    }

    if (any && sim->waiting > 0) {
        engines.n_engines = sim->nengines;
        engines.match = sim->conf->prefix_cache ? fg_sim_match : NULL;
        engines.fits = fg_sim_fits;
        engines.load = fg_sim_load;
        engines.data = sim;

        fg_sched_set_clock(sim->sched, sim->now);

        while ((r = fg_sched_dispatch_to(sim->sched, &engines)) != NULL) {
            fg_sim_admit(sim, r);
        }
    }

    for (e = 0; e < sim->nengines; e++) {
        eng = &sim->engines[e];

        if (sim->conf->engine_sched == FG_SIM_SCHED_ANDES
            && fg_sim_merge_point(sim, eng))
        {
            fg_sim_andes_merge(sim, eng);
        }

        if (!eng->busy) {
            fg_sim_engine_step(sim, eng);
        }
    }
}


int
fg_sim_engines_next(fg_sim_t *sim, double *t, int *idle)
{
    int       busy;
    uint32_t  e;

    if (sim->mux != NULL) {
        return fg_sim_mux_next(sim, t, idle);
    }

    busy = 0;
    *idle = 0;

    for (e = 0; e < sim->nengines; e++) {
        if (!sim->engines[e].busy) {
            *idle = 1;

        } else if (!busy || sim->engines[e].end < *t) {
            *t = sim->engines[e].end;
            busy = 1;
        }
    }

    return busy;
}


/* drops finished requests from the batch, keeping its order */
static void
fg_sim_reap(fg_sim_engine_t *eng)
{
    size_t  i, n;

    n = 0;

    for (i = 0; i < eng->nrunning; i++) {
        if (eng->running[i]->core.state == FG_REQ_RUNNING) {
            eng->running[n++] = eng->running[i];
        }
    }

    eng->nrunning = n;
}


void
fg_sim_engines_end(fg_sim_t *sim)
{
    size_t            i;
    uint32_t          e;
    fg_sim_engine_t  *eng;

    if (sim->mux != NULL) {
        fg_sim_mux_end(sim);
        return;
    }

    for (e = 0; e < sim->nengines; e++) {
        eng = &sim->engines[e];

        if (!eng->busy || eng->end != sim->now) {
            continue;
        }

        eng->busy = 0;

        /* a merge: its new requests' first tokens; a decode: one each */
        for (i = eng->first; i < eng->nrunning; i++) {
            /* a preempted one's recompute yields its next token */
            if (eng->merging && eng->running[i]->generated == 0) {
                sim->results[eng->running[i]->core.cookie].first_token =
                    sim->now;
            }

            fg_sim_token(sim, &eng->kv, eng->running[i]);
        }

        if (!eng->merging) {
            eng->steps++;
        }

        fg_sim_reap(eng);
    }
}
