
/*
 * fairgate: the simulation loop.
 */


#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_sim_run.h"
#include "fg_sim_run_int.h"


/* a request of an interaction failed: OIT counts its tokens wasted */
static void
fg_sim_oit_abort(fg_sim_t *sim, size_t id)
{
    uint32_t  interaction;

    interaction = sim->trace->reqs[id].interaction;

    if (sim->conf->oit && interaction != 0) {
        fg_oit_abort(&sim->oit, interaction);
    }
}


/* request id failed at time t */
static void
fg_sim_fail(fg_sim_t *sim, size_t id, fg_sim_status_e status, double t)
{
    double  ttft, speed;

    sim->results[id].status = status;
    sim->results[id].first_token = -1.0;
    sim->results[id].finish = -1.0;
    sim->decided++;

    /* sent and no answer: Andes's QoE of a request that gets no token */
    if (status != FG_SIM_SKIPPED
        && fg_sim_req_expect(&sim->trace->reqs[id], &ttft, &speed))
    {
        sim->results[id].qoe = 0.0;
        sim->results[id].has_qoe = 1;
    }

    fg_sim_stages_done(&sim->deps, id, t, 0);
}


static void
fg_sim_reject(fg_sim_t *sim, size_t id)
{
    fg_sim_oit_abort(sim, id);
    fg_sim_fail(sim, id, FG_SIM_REJECTED, sim->arrival[id]);

    fg_sim_emit(sim, FG_SIM_EV_REJECT, sim->arrival[id], id);
}


/* the trace's app, interaction, stage and system tokens, for wsc */
static void
fg_sim_map(fg_sim_t *sim, const fg_sim_req_t *tr, fg_request_t *r)
{
    fg_app_t  *app;

    if (tr->app != 0) {
        app = &sim->apps[tr->app];

        if (app->id == 0) {
            /* no expected lengths configured: learnt from finished ones */
            fg_app_init(app, tr->app, 1);
        }

        r->app = app;
    }

    r->interaction = tr->interaction;
    r->stage = tr->stage < 0 ? 0 : (uint32_t) tr->stage;

    if (sim->conf->policy == FG_POLICY_WSC) {
        /* wsc weighs system tokens apart: they leave input_tokens */
        r->system_tokens = tr->system_tokens;
        r->input_tokens = tr->input_tokens - tr->system_tokens;
    }
}


/* OIT's verdict at time t; -1 when throttled */
static int
fg_sim_oit_admit(fg_sim_t *sim, const fg_sim_req_t *tr, fg_request_t *r,
    double t)
{
    int                   overloaded;
    uint64_t              used;
    fg_oit_limit_t       *user, *app;
    fg_oit_verdict_e      v;
    const fg_sim_conf_t  *conf;

    conf = sim->conf;

    if (t - sim->oit_expired >= 1.0) {
        fg_oit_expire(&sim->oit, t);
        sim->oit_expired = t;
    }

    /* the gateway's rule: a queue, or reservations at the threshold */
    used = fg_sim_engines_used(sim);
    overloaded = sim->waiting > 0
                 || (double) used >= conf->oit_threshold * conf->kv_tokens
                                     * sim->nengines;

    user = tr->user != 0 ? &sim->user_limits[tr->user]
           : &sim->user_limits[sim->trace->nstrs + 1 + tr->client];
    app = tr->app != 0 ? &sim->app_limits[tr->app] : NULL;

    v = fg_oit_admit(&sim->oit, user, app, tr->interaction, r->stage,
                     sim->stages[tr->interaction], overloaded, t);

    if (v == FG_OIT_THROTTLE_USER || v == FG_OIT_THROTTLE_APP) {
        return -1;
    }

    /* what is let in counts, continuations too: they use the capacity */
    fg_window_add(user->recent, t, 1);

    if (app != NULL) {
        fg_window_add(app->recent, t, 1);
    }

    r->continues = (v == FG_OIT_CONTINUE);

    return 0;
}


/* request id arrives at time t */
static int
fg_sim_arrive(fg_sim_t *sim, size_t id, double t)
{
    int                   rc;
    double                hint, e;
    fg_qoe_expect_t       expect;
    fg_sim_client_t      *c;
    fg_sim_request_t     *sr;
    const fg_sim_req_t   *tr;
    const fg_sim_conf_t  *conf;

    conf = sim->conf;
    tr = &sim->trace->reqs[id];
    sr = &sim->reqs[id];
    c = &sim->clients[tr->client];

    sim->arrival[id] = t;

    /* the reader's clock starts when the request goes out */
    if (fg_sim_req_expect(tr, &expect.ttft, &expect.speed)) {
        fg_qoe_init(&sr->qoe, &expect, t);
    }

    /* the engine's scheduler reads every request, with defaults */
    sr->speed = tr->tokens_per_s > 0.0 ? tr->tokens_per_s : conf->qoe_speed;
    sr->dry = t + (tr->ttft_target > 0.0 ? tr->ttft_target : conf->qoe_ttft);
    sr->first = sr->dry;

    fg_request_init(&sr->core, tr->input_tokens, tr->max_output_tokens);
    sr->core.cookie = id;
    sr->core.due = sr->first;

    if (conf->policy == FG_POLICY_VTC_ORACLE) {
        sr->core.oracle_output = tr->output_tokens;
    }

    if (conf->policy == FG_POLICY_VTC_PREDICT && conf->predict_error >= 0.0)
    {
        /* drawn for every request, so a rejection shifts no other draw */
        e = conf->predict_error * (2.0 * fg_rand_double(&sim->rng) - 1.0);
        hint = round(tr->output_tokens * (1.0 + e));
        sr->core.hint_output = hint < 0.0 ? 0
                               : hint > INT32_MAX ? INT32_MAX
                               : (int32_t) hint;
    }

    fg_sim_map(sim, tr, &sr->core);

    if (conf->models != NULL ? fg_sim_mux_never(sim, id)
        : fg_sim_reservation(tr) > conf->kv_tokens)
    {
        /* it could never run, and would block every request behind it */
        fg_sim_reject(sim, id);
        return 0;
    }

    if (conf->oit) {
        if (fg_sim_oit_admit(sim, tr, &sr->core, t) != 0) {
            fg_sim_reject(sim, id);
            return 0;
        }

    } else if (tr->interaction != 0) {
        sr->core.continues = sim->seen[tr->interaction];
        sim->seen[tr->interaction] = 1;
    }

    rc = fg_sched_enqueue(sim->sched, &c->core, &sr->core, t);

    if (rc == FG_REJECTED) {
        fg_sim_reject(sim, id);
        return 0;
    }

    if (rc != FG_OK) {
        fg_sim_error(sim->err, sim->size, "request %zu: fg_sched_enqueue() "
                     "failed: %d", id, rc);
        return -1;
    }

    c->waiting++;
    sim->waiting++;
    sim->queue[sim->qtail++] = id;

    fg_sim_emit(sim, FG_SIM_EV_ARRIVE, t, id);

    return 0;
}


/* enqueues the arrivals up to time t; skips those an earlier stage lost */
static int
fg_sim_arrive_until(fg_sim_t *sim, double t)
{
    size_t  id;
    double  due;

    while (fg_sim_stages_peek(&sim->deps, &id, &due) && due <= t) {
        if (!fg_sim_stages_take(&sim->deps, &id, &due)) {
            sim->arrival[id] = due;
            fg_sim_fail(sim, id, FG_SIM_SKIPPED, due);
            fg_sim_emit(sim, FG_SIM_EV_SKIP, due, id);
            continue;
        }

        if (fg_sim_arrive(sim, id, due) != 0) {
            return -1;
        }
    }

    return 0;
}


/* cancels requests that waited longer than the queue timeout */
static void
fg_sim_expire(fg_sim_t *sim)
{
    size_t             id;
    fg_sim_client_t   *c;
    fg_sim_request_t  *sr;

    if (sim->conf->queue_timeout <= 0.0) {
        return;
    }

    /* the queue is in arrival order: the first one still waiting is oldest */
    while (sim->qhead < sim->qtail) {
        id = sim->queue[sim->qhead];
        sr = &sim->reqs[id];

        if (sr->core.state == FG_REQ_QUEUED) {
            if (!(sim->now - sr->core.arrival > sim->conf->queue_timeout)) {
                return;
            }

            c = &sim->clients[sim->trace->reqs[id].client];

            fg_sched_cancel(sim->sched, &sr->core);

            c->waiting--;
            sim->waiting--;

            fg_sim_oit_abort(sim, id);
            fg_sim_fail(sim, id, FG_SIM_TIMEOUT, sim->now);

            fg_sim_emit(sim, FG_SIM_EV_TIMEOUT, sim->now, id);
        }

        sim->qhead++;
    }
}


static int
fg_sim_loop(fg_sim_t *sim)
{
    int     idle;
    size_t  id;
    double  t, due;

    for ( ;; ) {
        if (fg_sim_arrive_until(sim, sim->now) != 0) {
            return -1;
        }

        fg_sim_expire(sim);
        fg_sim_engines_start(sim);

        if (!fg_sim_engines_next(sim, &t, &idle)) {
            if (sim->waiting > 0) {
                /* every request fits an empty pool: those that do not
                 * are out */
                fg_sim_error(sim->err, sim->size, "at %.6f s: %llu "
                             "requests wait, none runs, and the scheduler "
                             "admits none", sim->now,
                             (unsigned long long) sim->waiting);
                return -1;
            }

            /* what waits for an earlier stage was released by its outcome */
            if (!fg_sim_stages_peek(&sim->deps, &id, &due)) {
                return 0;
            }

            /* idle: nothing happens until the next arrival */
            sim->now = due;
            continue;
        }

        /* an idle engine takes an arrival before the next step ends */
        if (idle && fg_sim_stages_peek(&sim->deps, &id, &due) && due < t) {
            sim->now = due;
            continue;
        }

        /* arrivals during the steps come before what ends them */
        if (fg_sim_arrive_until(sim, t) != 0) {
            return -1;
        }

        sim->now = t;
        fg_sim_engines_end(sim);
    }
}


static int
fg_sim_oit_setup(fg_sim_t *sim)
{
    size_t                i, nusers;
    uint32_t              capacity;
    const fg_sim_req_t   *r;
    const fg_sim_conf_t  *conf;

    conf = sim->conf;

    if (!(conf->oit_threshold > 0.0 && conf->oit_threshold <= 1.0)
        || !(conf->oit_window > 0.0) || !(conf->oit_idle_timeout > 0.0))
    {
        fg_sim_error(sim->err, sim->size, "oit: the threshold must be in "
                     "(0, 1], the window and idle timeout positive");
        return -1;
    }

    /* twice the requests, at most one interaction each, so never full */
    for (capacity = 16; capacity < 2 * sim->trace->n; capacity *= 2) {
        /* void */
    }

    /* users by string index, then clients without a user */
    nusers = sim->trace->nstrs + 1 + sim->trace->nclients;

    sim->oit_table = calloc(capacity, sizeof(fg_oit_interaction_t));
    sim->user_limits = calloc(nusers, sizeof(fg_oit_limit_t));
    sim->app_limits = calloc(sim->trace->nstrs + 1, sizeof(fg_oit_limit_t));
    sim->user_windows = calloc(nusers, sizeof(fg_window_t));
    sim->app_windows = calloc(sim->trace->nstrs + 1, sizeof(fg_window_t));
    sim->stages = calloc(sim->trace->nstrs + 1, sizeof(uint32_t));

    if (sim->oit_table == NULL || sim->user_limits == NULL
        || sim->app_limits == NULL || sim->user_windows == NULL
        || sim->app_windows == NULL || sim->stages == NULL)
    {
        fg_sim_error(sim->err, sim->size, "out of memory");
        return -1;
    }

    fg_oit_init(&sim->oit, sim->oit_table, capacity, conf->oit_idle_timeout);

    for (i = 0; i < nusers; i++) {
        fg_window_init(&sim->user_windows[i], conf->oit_window);
        sim->user_limits[i].id = i;
        sim->user_limits[i].limit = conf->oit_user_rpm;
        sim->user_limits[i].recent = &sim->user_windows[i];
    }

    for (i = 0; i <= sim->trace->nstrs; i++) {
        fg_window_init(&sim->app_windows[i], conf->oit_window);
        sim->app_limits[i].id = i;
        sim->app_limits[i].limit = conf->oit_app_rpm;
        sim->app_limits[i].recent = &sim->app_windows[i];
    }

    /* the trace knows each interaction's stages: clients declare them */
    for (i = 0; i < sim->trace->n; i++) {
        r = &sim->trace->reqs[i];

        if (r->interaction != 0 && r->stage >= 0
            && (uint32_t) r->stage + 1 > sim->stages[r->interaction])
        {
            sim->stages[r->interaction] = (uint32_t) r->stage + 1;
        }
    }

    sim->oit_expired = -1e300;

    return 0;
}


static int
fg_sim_setup(fg_sim_t *sim)
{
    uint32_t                     i;
    fg_sched_conf_t              sconf;
    const char                  *problem;
    const fg_sim_conf_t         *conf;
    const fg_sim_trace_t        *trace;
    const fg_sim_client_info_t  *info;

    conf = sim->conf;
    trace = sim->trace;

    if (conf->model == NULL && conf->models == NULL) {
        fg_sim_error(sim->err, sim->size, "no engine model");
        return -1;
    }

    if (conf->models != NULL
        && (conf->engines != 1 || conf->prefix_cache
            || conf->engine_sched != FG_SIM_SCHED_FCFS))
    {
        fg_sim_error(sim->err, sim->size, "several models: one engine, "
                     "no prefix cache, the fcfs engine scheduler");
        return -1;
    }

    if (conf->kv_tokens == 0 || conf->merge_every == 0) {
        fg_sim_error(sim->err, sim->size, "the KV pool and merge interval "
                     "must be positive");
        return -1;
    }

    if (conf->engines == 0 || conf->engines > FG_SCHED_MAX_ENGINES) {
        fg_sim_error(sim->err, sim->size, "engines must be 1 to %d",
                     FG_SCHED_MAX_ENGINES);
        return -1;
    }

    if (trace->nclients == 0) {
        fg_sim_error(sim->err, sim->size, "the trace has no clients");
        return -1;
    }

    fg_sched_conf_init(&sconf, trace->nclients);
    sconf.policy = conf->policy;
    sconf.cost = conf->cost;
    sconf.rpm_limit = conf->rpm_limit;
    sconf.quantum = conf->quantum;
    sconf.window = conf->window;
    sconf.route = conf->route;
    sconf.order = conf->order;

    problem = fg_sched_conf_error(&sconf);
    if (problem != NULL) {
        fg_sim_error(sim->err, sim->size, "scheduler: %s", problem);
        return -1;
    }

    sim->sched = fg_sched_create(&sconf, &fg_sched_heap);
    sim->clients = calloc(trace->nclients, sizeof(fg_sim_client_t));
    sim->reqs = calloc(trace->n, sizeof(fg_sim_request_t));
    sim->queue = calloc(trace->n, sizeof(size_t));
    sim->arrival = calloc(trace->n ? trace->n : 1, sizeof(double));

    if (sim->sched == NULL || sim->clients == NULL || sim->reqs == NULL
        || sim->queue == NULL || sim->arrival == NULL
        || fg_sim_stages_init(&sim->deps, trace, conf->open_loop_stages)
           != 0)
    {
        fg_sim_error(sim->err, sim->size, "out of memory");
        return -1;
    }

    /* several models' set-up says what is wrong; the rest is memory */
    sim->err[0] = '\0';

    if (fg_sim_engines_init(sim) != 0) {
        if (sim->err[0] == '\0') {
            fg_sim_error(sim->err, sim->size, "out of memory");
        }

        return -1;
    }

    for (i = 0; i < trace->nclients; i++) {
        info = &trace->clients[i];

        if (fg_client_init(sim->sched, &sim->clients[i].core, i,
                           info->weight)
            != FG_OK)
        {
            fg_sim_error(sim->err, sim->size, "client \"%s\": "
                         "fg_client_init() failed (weight %g)", info->name,
                         info->weight);
            return -1;
        }
    }

    /* string indices run 1 to nstrs */
    sim->apps = calloc(trace->nstrs + 1, sizeof(fg_app_t));
    sim->seen = calloc(trace->nstrs + 1, 1);

    if (sim->apps == NULL || sim->seen == NULL) {
        fg_sim_error(sim->err, sim->size, "out of memory");
        return -1;
    }

    if (conf->oit && fg_sim_oit_setup(sim) != 0) {
        return -1;
    }

    fg_rand_stream(&sim->rng, conf->seed, 0);

    return 0;
}


int
fg_sim_run(const fg_sim_conf_t *conf, const fg_sim_trace_t *trace,
    fg_sim_result_t *results, char *err, size_t size)
{
    int       rc;
    size_t    i;
    fg_sim_t  sim;

    memset(&sim, 0, sizeof(fg_sim_t));

    sim.conf = conf;
    sim.trace = trace;
    sim.results = results;
    sim.err = err;
    sim.size = size;

    for (i = 0; i < trace->n; i++) {
        results[i].qoe = 0.0;
        results[i].has_qoe = 0;
    }

    for (i = 1; i < trace->n; i++) {
        if (trace->reqs[i].t < trace->reqs[i - 1].t) {
            fg_sim_error(sim.err, sim.size, "the trace is not sorted by "
                         "arrival");
            return -1;
        }
    }

    rc = fg_sim_setup(&sim);

    if (rc == 0) {
        rc = fg_sim_loop(&sim);
    }

    if (rc == 0 && sim.decided != trace->n) {
        fg_sim_error(sim.err, sim.size, "%zu of %zu requests ended without "
                     "an outcome", trace->n - sim.decided, trace->n);
        rc = -1;
    }

    if (sim.sched != NULL) {
        fg_sched_destroy(sim.sched, &fg_sched_heap);
    }

    if (rc == 0 && conf->arrivals != NULL) {
        memcpy(conf->arrivals, sim.arrival, trace->n * sizeof(double));
    }

    for (i = 0; rc == 0 && conf->cache_stats != NULL && i < sim.nengines;
         i++)
    {
        conf->cache_stats[i].query_tokens = sim.engines[i].kv.query_tokens;
        conf->cache_stats[i].hit_tokens = sim.engines[i].kv.hit_tokens;
        conf->cache_stats[i].evictions = sim.engines[i].kv.evictions;
    }

    if (rc == 0 && conf->oit && conf->oit_stats != NULL) {
        *conf->oit_stats = sim.oit;
        conf->oit_stats->table = NULL;
    }

    free(sim.apps);
    free(sim.seen);
    free(sim.oit_table);
    free(sim.user_limits);
    free(sim.app_limits);
    free(sim.user_windows);
    free(sim.app_windows);
    free(sim.stages);
    free(sim.clients);
    free(sim.reqs);
    free(sim.queue);
    free(sim.arrival);
    fg_sim_stages_free(&sim.deps);
    fg_sim_engines_free(&sim);

    return rc;
}
