
/*
 * fairgate: several models on one simulated GPU (--models, --mux;
 * docs/multi-model.md).  The policy core hands every request to its
 * model's queue at once (FIFO, as the paper's per-model queues); a request
 * starts when its model's merge takes it and engine/mux/fg_mux.c says its head
 * blocks fit (its quota and the pool); each model keeps a batch as the
 * single-model engine does (fg_sim_engine.c).  Time, by mode:
 *
 *   temporal   one model's step at a time at full speed, round-robin
 *              among the models with work: its merge's prefill when it
 *              may merge (an empty batch, or merge_every decode steps)
 *              and one fits, else a decode step of its batch;
 *   spatial    each model its fixed quota and a fixed share f of the GPU,
 *              its quota's share of the pool; its steps, chosen as
 *              temporal's, take t / f; the models run side by side;
 *   muxserve   rounds: ADBS's prefill pick (one model's merge) beside one
 *              decode step of each model of fg_mux_decode_order(), the
 *              merging one's running requests too (its prefill and decode
 *              are two jobs, as the paper's).  A round takes
 *
 *                  max(prefill, sum of the decode steps)
 *
 *              after the paper's estimator (section 3.3, Figures 3 and
 *              12): prefill jobs are compute-bound and run one after
 *              another, decode jobs are memory-bound and share the GPU's
 *              bandwidth (each at full speed would take its own step, so
 *              together about the sum), and a prefill overlaps them.  The
 *              quotas adapt at every round (fg_mux_adapt(): every 8 s).
 *              When the GPU would idle with requests waiting, none
 *              fitting its quota and no model holding blocks, the quotas
 *              adapt at once; if the next request still does not fit, its
 *              model's quota grows to it (only blocks nobody holds move).
 */


#include <stdlib.h>
#include <string.h>

#include "fg_sim_models.h"
#include "fg_sim_run_int.h"


/* one model's queue and batch */
typedef struct {
    fg_sim_request_t   **queue;       /* not started: [head, tail) */
    size_t               head;
    size_t               tail;
    fg_sim_request_t   **running;     /* in admission order */
    size_t               nrunning;
    size_t               first;       /* a merge's: its new ones */
    uint32_t             steps;       /* decode steps since a merge */
    double               end;         /* spatial: of its step */
    double               share;       /* spatial: of the GPU */
    unsigned             busy:1;      /* in a step, or in the round */
    unsigned             merging:1;
    unsigned             decoded:1;   /* muxserve: and the earlier ones
                                         decode beside the merge */
} fg_sim_mux_batch_t;


struct fg_sim_mux_s {
    fg_mux_t                 mx;
    fg_sim_mux_batch_t       b[FG_MUX_MAX_MODELS];
    const fg_sim_models_t   *models;
    uint32_t                *model_of;    /* each request's */
    double                   end;         /* temporal, muxserve: a step */
    unsigned                 busy:1;
    uint32_t                 rr;          /* temporal: the next to look at */
    uint32_t                 adaptations;
    uint64_t                 qmin[FG_MUX_MAX_MODELS];
    uint64_t                 qmax[FG_MUX_MAX_MODELS];
    uint64_t                 q0[FG_MUX_MAX_MODELS];
};


typedef struct fg_sim_mux_s  fg_sim_mux_t;


/* each model's rate, requests/s over the trace (at least one request) */
static void
fg_sim_mux_rates(fg_sim_t *sim, fg_mux_t *mx)
{
    double   span;
    size_t   id, n;
    uint32_t i;

    n = sim->trace->n;
    span = n > 1 ? sim->trace->reqs[n - 1].t - sim->trace->reqs[0].t : 0.0;
    span = span > 1.0 ? span : 1.0;

    for (i = 0; i < mx->n; i++) {
        mx->m[i].rate = 1.0 / span;
    }

    for (id = 0; id < n; id++) {
        mx->m[sim->mux->model_of[id]].rate += 1.0 / span;
    }
}


static int
fg_sim_mux_setup(fg_sim_t *sim, fg_sim_mux_t *mux)
{
    uint32_t                i;
    fg_mux_t               *mx;
    const char             *problem;
    const fg_sim_conf_t    *conf;
    const fg_sim_models_t  *ms;

    conf = sim->conf;
    ms = conf->models;
    mx = &mux->mx;

    mx->mode = (fg_mux_mode_e) conf->mux;
    mx->n = ms->n;
    mx->adapt_s = FG_MUX_ADAPT_S;
    mx->pool = conf->kv_head_blocks
               ? conf->kv_head_blocks
               : conf->kv_tokens / FG_SIM_MUX_BLOCK
                 * fg_sim_models_max_unit(ms);

    for (i = 0; i < ms->n; i++) {
        mx->m[i].unit = ms->m[i].unit;
    }

    fg_sim_mux_rates(sim, mx);

    problem = fg_mux_conf_error(mx);
    if (problem != NULL) {
        fg_sim_error(sim->err, sim->size, "several models: %s", problem);
        return -1;
    }

    fg_mux_init(mx, 0.0);

    for (i = 0; i < ms->n; i++) {
        mux->b[i].share = (double) mx->m[i].quota / mx->pool;
        mux->q0[i] = mx->m[i].quota;
        mux->qmin[i] = mx->m[i].quota;
        mux->qmax[i] = mx->m[i].quota;
    }

    return 0;
}


int
fg_sim_mux_init(fg_sim_t *sim)
{
    size_t         n;
    uint32_t       i;
    fg_sim_mux_t  *mux;

    mux = calloc(1, sizeof(fg_sim_mux_t));
    if (mux == NULL) {
        return -1;
    }

    sim->mux = mux;
    mux->models = sim->conf->models;
    n = sim->trace->n ? sim->trace->n : 1;

    mux->model_of = calloc(n, sizeof(uint32_t));
    if (mux->model_of == NULL) {
        return -1;
    }

    for (i = 0; i < mux->models->n; i++) {
        mux->b[i].queue = calloc(n, sizeof(fg_sim_request_t *));
        mux->b[i].running = calloc(n, sizeof(fg_sim_request_t *));

        if (mux->b[i].queue == NULL || mux->b[i].running == NULL) {
            return -1;
        }
    }

    if (fg_sim_models_map(mux->models, sim->trace, mux->model_of, sim->err,
                          sim->size)
        != 0)
    {
        return -1;
    }

    return fg_sim_mux_setup(sim, mux);
}


void
fg_sim_mux_free(fg_sim_t *sim)
{
    uint32_t             i;
    fg_sim_mux_t        *mux;
    fg_sim_mux_stats_t  *st;

    mux = sim->mux;
    if (mux == NULL) {
        return;
    }

    st = sim->conf->mux_stats;

    if (st != NULL) {
        memset(st, 0, sizeof(fg_sim_mux_stats_t));
        st->adaptations = mux->adaptations;
        st->pool = mux->mx.pool;

        for (i = 0; i < mux->mx.n; i++) {
            st->quota0[i] = mux->q0[i];
            st->quota_min[i] = mux->qmin[i];
            st->quota_max[i] = mux->qmax[i];
            st->quota[i] = mux->mx.m[i].quota;
        }
    }

    for (i = 0; i < FG_MUX_MAX_MODELS; i++) {
        free(mux->b[i].queue);
        free(mux->b[i].running);
    }

    free(mux->model_of);
    free(mux);

    sim->mux = NULL;
}


static const fg_sim_model_t *
fg_sim_mux_model(fg_sim_t *sim, size_t id)
{
    return &sim->mux->models->m[sim->mux->model_of[id]];
}


int
fg_sim_mux_never(fg_sim_t *sim, size_t id)
{
    uint64_t      need;
    fg_sim_mux_t  *mux;

    mux = sim->mux;
    need = fg_sim_models_need(fg_sim_mux_model(sim, id),
                              &sim->trace->reqs[id]);

    /* spatial's slices never change: a request over its slice never runs */
    return need > mux->mx.pool
           || (mux->mx.mode == FG_MUX_SPATIAL
               && need > mux->mx.m[mux->model_of[id]].quota);
}


uint64_t
fg_sim_mux_used(fg_sim_t *sim)
{
    uint32_t   i;
    uint64_t   used;
    fg_mux_t  *mx;

    mx = &sim->mux->mx;
    used = 0;

    for (i = 0; i < mx->n; i++) {
        used += mx->m[i].used;
    }

    /* in tokens of the largest model, as kv_tokens counts (OIT) */
    return (uint64_t) ((double) used / mx->pool * sim->conf->kv_tokens);
}


/* the core admitted r: to its model's queue */
static void
fg_sim_mux_admit(fg_sim_t *sim, fg_request_t *r)
{
    size_t               id;
    fg_sim_client_t     *c;
    fg_sim_request_t    *sr;
    fg_sim_mux_batch_t  *b;
    const fg_sim_req_t  *tr;

    sr = fg_sim_request_of(r);
    id = (size_t) r->cookie;
    tr = &sim->trace->reqs[id];
    c = &sim->clients[tr->client];
    b = &sim->mux->b[sim->mux->model_of[id]];

    sim->waiting--;
    c->waiting--;
    c->running++;
    c->service += fg_cost_input(&sim->conf->cost, tr->input_tokens);

    b->queue[b->tail++] = sr;

    fg_sim_emit(sim, FG_SIM_EV_ADMIT, sim->now, id);
}


/* what fg_mux reads of each model: its queue and batch now */
static void
fg_sim_mux_sync(fg_sim_t *sim)
{
    uint32_t             i;
    fg_sim_mux_t        *mux;
    fg_sim_mux_batch_t  *b;

    mux = sim->mux;

    for (i = 0; i < mux->mx.n; i++) {
        b = &mux->b[i];
        mux->mx.m[i].waiting = (uint32_t) (b->tail - b->head);
        mux->mx.m[i].decoding = (uint32_t) b->nrunning;
        mux->mx.m[i].next_need = b->head == b->tail ? 0
            : fg_sim_models_need(&mux->models->m[i],
                  &sim->trace->reqs[b->queue[b->head]->core.cookie]);
    }
}


/* model i's merge: its queue's first requests while they fit; how many */
static size_t
fg_sim_mux_merge(fg_sim_t *sim, uint32_t i)
{
    uint64_t             need;
    fg_mux_model_t      *m;
    fg_sim_request_t    *sr;
    fg_sim_mux_batch_t  *b;

    b = &sim->mux->b[i];
    m = &sim->mux->mx.m[i];
    b->first = b->nrunning;

    while (b->head < b->tail) {
        sr = b->queue[b->head];
        need = fg_sim_models_need(&sim->mux->models->m[i],
                                  &sim->trace->reqs[sr->core.cookie]);

        if (!fg_mux_fits(&sim->mux->mx, i, need)) {
            break;
        }

        m->used += need;
        m->peak = m->used > m->peak ? m->used : m->peak;
        sr->blocks = need;
        b->running[b->nrunning++] = sr;
        b->head++;
    }

    return b->nrunning - b->first;
}


/*
 * Seconds of model i's step over its batch's requests [from, to): their
 * prefill (a merge's new ones), or a decode step of theirs.
 */
static double
fg_sim_mux_time(fg_sim_t *sim, uint32_t i, size_t from, size_t to,
    int prefill)
{
    double                   t;
    size_t                   k;
    const fg_sim_req_t      *tr;
    fg_sim_mux_batch_t      *b;
    const fg_step_model_t   *step;

    b = &sim->mux->b[i];
    step = sim->mux->models->m[i].step;
    t = fg_step_model_step(step);

    for (k = from; k < to; k++) {
        tr = &sim->trace->reqs[b->running[k]->core.cookie];
        t += prefill ? fg_step_model_prefill(step, tr->input_tokens)
                        : fg_step_model_decode(step, tr->input_tokens,
                                               tr->output_tokens);
    }

    return t;
}


/* model i as the single-model engine: a merge's step, a decode, or 0 */
static double
fg_sim_mux_step(fg_sim_t *sim, uint32_t i)
{
    fg_sim_mux_batch_t  *b;

    b = &sim->mux->b[i];

    if (b->head < b->tail
        && (b->nrunning == 0 || b->steps >= sim->conf->merge_every)
        && fg_sim_mux_merge(sim, i) > 0)
    {
        b->merging = 1;
        b->steps = 0;
        return fg_sim_mux_time(sim, i, b->first, b->nrunning, 1);
    }

    if (b->nrunning == 0) {
        return 0.0;
    }

    b->merging = 0;
    b->first = 0;

    return fg_sim_mux_time(sim, i, 0, b->nrunning, 0);
}


/* model i's step ended at sim->now: its tokens, its finished ones out */
static void
fg_sim_mux_yield(fg_sim_t *sim, uint32_t i)
{
    size_t               k, n;
    fg_sim_request_t    *sr;
    fg_sim_mux_batch_t  *b;

    b = &sim->mux->b[i];
    b->busy = 0;

    for (k = b->merging && !b->decoded ? b->first : 0; k < b->nrunning; k++)
    {
        sr = b->running[k];

        if (b->merging && sr->generated == 0) {
            sim->results[sr->core.cookie].first_token = sim->now;
        }

        fg_sim_token(sim, NULL, sr);

        if (sr->core.state != FG_REQ_RUNNING) {
            sim->mux->mx.m[i].used -= sr->blocks;
            sr->blocks = 0;
        }
    }

    b->steps += !b->merging;
    b->decoded = 0;
    n = 0;

    for (k = 0; k < b->nrunning; k++) {
        if (b->running[k]->core.state == FG_REQ_RUNNING) {
            b->running[n++] = b->running[k];
        }
    }

    b->nrunning = n;
}


static void
fg_sim_mux_temporal(fg_sim_t *sim)
{
    double         t;
    uint32_t       k, i;
    fg_sim_mux_t  *mux;

    mux = sim->mux;

    for (k = 0; k < mux->mx.n && !mux->busy; k++) {
        i = (mux->rr + k) % mux->mx.n;
        t = fg_sim_mux_step(sim, i);

        if (t > 0.0) {
            mux->b[i].busy = 1;
            mux->busy = 1;
            mux->end = sim->now + t;
            mux->rr = (i + 1) % mux->mx.n;
        }
    }
}


static void
fg_sim_mux_spatial(fg_sim_t *sim)
{
    double               t;
    uint32_t             i;
    fg_sim_mux_batch_t  *b;

    for (i = 0; i < sim->mux->mx.n; i++) {
        b = &sim->mux->b[i];

        if (b->busy) {
            continue;
        }

        t = fg_sim_mux_step(sim, i);

        if (t > 0.0) {
            b->busy = 1;
            b->end = sim->now + t / b->share;
        }
    }
}


/*
 * ADBS's prefill pick; on a GPU about to idle (no model holds blocks) the
 * quotas adapt at once, and if that is not enough the first waiting
 * model's quota grows to its next request, which fits the pool.
 */
static int
fg_sim_mux_pick(fg_sim_t *sim)
{
    int        p;
    uint32_t   i, waiting;
    fg_mux_t  *mx;

    mx = &sim->mux->mx;
    p = fg_mux_next_prefill(mx);
    waiting = 0;

    for (i = 0; p < 0 && i < mx->n; i++) {
        if (mx->m[i].used || mx->m[i].decoding) {
            return -1;
        }

        waiting += mx->m[i].waiting;
    }

    if (p >= 0 || waiting == 0) {
        return p;
    }

    mx->adapted = sim->now - 2 * mx->adapt_s;
    sim->mux->adaptations += fg_mux_adapt(mx, sim->now);
    p = fg_mux_next_prefill(mx);

    for (i = 0; p < 0 && i < mx->n; i++) {
        if (mx->m[i].waiting) {
            mx->m[i].quota = mx->m[i].quota > mx->m[i].next_need
                             ? mx->m[i].quota : mx->m[i].next_need;
            p = fg_mux_next_prefill(mx);
        }
    }

    return p;
}


static void
fg_sim_mux_round(fg_sim_t *sim)
{
    int            p;
    double         pre, dec;
    uint32_t       k, n, i, order[FG_MUX_MAX_MODELS];
    fg_sim_mux_t  *mux;

    mux = sim->mux;

    if (mux->busy) {
        return;
    }

    fg_sim_mux_sync(sim);
    mux->adaptations += fg_mux_adapt(&mux->mx, sim->now);

    p = fg_sim_mux_pick(sim);
    pre = 0.0;
    dec = 0.0;

    if (p >= 0 && fg_sim_mux_merge(sim, (uint32_t) p) > 0) {
        mux->b[p].merging = 1;
        mux->b[p].busy = 1;
        pre = fg_sim_mux_time(sim, (uint32_t) p, mux->b[p].first,
                              mux->b[p].nrunning, 1);
    }

    n = fg_mux_decode_order(&mux->mx, order);

    for (k = 0; k < n; k++) {
        i = order[k];

        /* the merging one's earlier requests decode beside its prefill */
        if ((int) i == p && mux->b[i].merging) {
            mux->b[i].decoded = 1;
            dec += fg_sim_mux_time(sim, i, 0, mux->b[i].first, 0);
            continue;
        }

        mux->b[i].merging = 0;
        mux->b[i].first = 0;
        mux->b[i].busy = 1;
        dec += fg_sim_mux_time(sim, i, 0, mux->b[i].nrunning, 0);
    }

    for (i = 0; i < mux->mx.n; i++) {
        mux->qmin[i] = mux->mx.m[i].quota < mux->qmin[i]
                       ? mux->mx.m[i].quota : mux->qmin[i];
        mux->qmax[i] = mux->mx.m[i].quota > mux->qmax[i]
                       ? mux->mx.m[i].quota : mux->qmax[i];
    }

    if (pre > 0.0 || dec > 0.0) {
        mux->busy = 1;
        mux->end = sim->now + (pre > dec ? pre : dec);
    }
}


void
fg_sim_mux_start(fg_sim_t *sim)
{
    fg_request_t        *r;
    fg_sched_engines_t   engines;

    if (sim->waiting > 0) {
        memset(&engines, 0, sizeof(fg_sched_engines_t));
        engines.n_engines = 1;
        engines.data = sim;

        fg_sched_set_clock(sim->sched, sim->now);

        while ((r = fg_sched_dispatch_to(sim->sched, &engines)) != NULL) {
            fg_sim_mux_admit(sim, r);
        }
    }

    switch (sim->mux->mx.mode) {

    case FG_MUX_SPATIAL:
        fg_sim_mux_spatial(sim);
        break;

    case FG_MUX_TEMPORAL:
        if (!sim->mux->busy) {
            fg_sim_mux_temporal(sim);
        }
        break;

    default:
        fg_sim_mux_round(sim);
    }
}


int
fg_sim_mux_next(fg_sim_t *sim, double *t, int *idle)
{
    int            busy;
    uint32_t       i;
    fg_sim_mux_t  *mux;

    mux = sim->mux;

    if (mux->mx.mode != FG_MUX_SPATIAL) {
        *idle = !mux->busy;
        *t = mux->end;
        return mux->busy;
    }

    busy = 0;
    *idle = 0;

    for (i = 0; i < mux->mx.n; i++) {
        if (!mux->b[i].busy) {
            *idle = 1;

        } else if (!busy || mux->b[i].end < *t) {
            *t = mux->b[i].end;
            busy = 1;
        }
    }

    return busy;
}


void
fg_sim_mux_end(fg_sim_t *sim)
{
    uint32_t       i;
    fg_sim_mux_t  *mux;

    mux = sim->mux;

    if (mux->mx.mode != FG_MUX_SPATIAL) {
        if (!mux->busy || mux->end != sim->now) {
            return;
        }

        mux->busy = 0;
    }

    for (i = 0; i < mux->mx.n; i++) {
        if (mux->b[i].busy
            && (mux->mx.mode != FG_MUX_SPATIAL || mux->b[i].end == sim->now))
        {
            fg_sim_mux_yield(sim, i);
        }
    }
}
