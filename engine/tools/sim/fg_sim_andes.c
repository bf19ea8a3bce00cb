
/*
 * fairgate: the simulated engine's --engine-sched andes: its own waiting
 * list, Andes's decision (engine/batch/fg_sched_andes.c, the engine's one copy)
 * at its merge points under KV pressure, preemption by recomputation.
 *
 * The policy core dispatches a request to the engine while the engine's
 * waiting list holds less than a pool's worth of reservations (the
 * engine, not the core, must see who is about to stall).  At a merge
 * point, under pressure (the pool 90% reserved, or the first waiting does
 * not fit), running and waiting requests are candidates as in the
 * engine's batcher (fg_batch_andes.c); the losers running are preempted
 * (their reservation freed, their tokens kept, to the head of the waiting
 * list), the winners waiting go first; then the engine admits from the
 * head of its list while the next fits, and the merge prefills them: a
 * preempted one its input and generated tokens again, less what its
 * prefix finds cached.  The decision is taken only at merge points: the
 * engine model admits only there, so room freed between merges would
 * idle until the next one.
 */


#include <stdlib.h>
#include <string.h>

#include "fg_sched_andes.h"
#include "fg_sim_run_int.h"


int
fg_sim_andes_init(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    size_t  n;

    n = sim->trace->n ? sim->trace->n : 1;

    eng->waiting = calloc(n, sizeof(fg_sim_request_t *));
    eng->spare = calloc(n, sizeof(fg_sim_request_t *));
    eng->cand = calloc(n, sizeof(fg_andes_cand_t));
    eng->order = calloc(n, sizeof(fg_andes_cand_t *));

    if (eng->waiting == NULL || eng->spare == NULL || eng->cand == NULL
        || eng->order == NULL)
    {
        return -1;
    }

    return 0;
}


void
fg_sim_andes_free(fg_sim_engine_t *eng)
{
    free(eng->waiting);
    free(eng->spare);
    free(eng->cand);
    free(eng->order);
}


/*
 * The engine takes new requests while those it has not started hold less
 * than a pool: the preempted do not count, or readers far ahead would
 * keep the core from giving it those about to stall.
 */
int
fg_sim_andes_accepts(fg_sim_t *sim, fg_sim_engine_t *eng,
    const fg_sim_req_t *tr)
{
    return eng->wait_tokens + fg_sim_reservation(tr) <= sim->conf->kv_tokens;
}


void
fg_sim_andes_enqueue(fg_sim_t *sim, fg_sim_engine_t *eng,
    fg_sim_request_t *sr)
{
    const fg_sim_req_t  *tr;

    tr = &sim->trace->reqs[sr->core.cookie];

    eng->waiting[eng->nwaiting++] = sr;
    eng->wait_tokens += fg_sim_reservation(tr);
}


static uint32_t
fg_sim_andes_blocks(uint64_t tokens)
{
    uint64_t  b;

    b = (tokens + FG_SIM_KV_BLOCK - 1) / FG_SIM_KV_BLOCK;

    return b ? (uint32_t) b : 1;
}


/* the decode step of the batch running now: its tokens' pace */
static double
fg_sim_andes_step(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    double               t;
    size_t               i;
    const fg_sim_req_t  *tr;

    t = fg_step_model_step(sim->conf->model);

    for (i = 0; i < eng->nrunning; i++) {
        tr = &sim->trace->reqs[eng->running[i]->core.cookie];
        t += fg_step_model_decode(sim->conf->model, tr->input_tokens,
                                  tr->output_tokens);
    }

    return t;
}


/* the pool 90% reserved, or the first waiting cannot join */
static int
fg_sim_andes_pressure(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    const fg_sim_req_t  *tr;

    tr = &sim->trace->reqs[eng->waiting[0]->core.cookie];

    return eng->kv.reserved * 10 >= eng->kv.kv_tokens * 9
           || !fg_sim_kv_fits(&eng->kv, tr);
}


/* sr as Andes's candidate, as the engine's batcher builds them */
static void
fg_sim_andes_cand(fg_sim_t *sim, fg_sim_engine_t *eng, fg_sim_request_t *sr,
    double step, fg_andes_cand_t *c)
{
    double               prefill;
    uint32_t             m;
    const fg_sim_req_t  *tr;

    tr = &sim->trace->reqs[sr->core.cookie];

    c->seq = sr;
    c->dry = sr->dry;
    c->first = sr->first;
    c->speed = sr->speed;
    c->order = sr->core.cookie;
    c->pinned = fg_andes_pinned(sr->preemptions, FG_ANDES_MAX_PREEMPT,
                                c->running, sr->dry, sim->now);
    c->recompute = 0.0;

    if (c->running) {
        c->ready = sim->now + step;
        c->blocks = fg_sim_andes_blocks(sr->lease.held + (uint64_t)
                                        sr->lease.blocks * FG_SIM_KV_BLOCK);
        return;
    }

    /* its prefill, or its recompute: input and generated, less cached */
    m = fg_sim_kv_match(&eng->kv, tr);
    prefill = fg_step_model_prefill(sim->conf->model,
                                    tr->input_tokens + sr->generated - m);

    c->ready = sim->now + prefill + fg_step_model_step(sim->conf->model);
    c->blocks = fg_sim_andes_blocks(fg_sim_reservation(tr) - m);

    if (sr->generated) {
        c->recompute = prefill;
    }
}


/* running sr loses its reservation; its tokens and reader stay */
static void
fg_sim_andes_preempt(fg_sim_t *sim, fg_sim_engine_t *eng,
    fg_sim_request_t *sr)
{
    const fg_sim_req_t  *tr;

    tr = &sim->trace->reqs[sr->core.cookie];

    fg_sim_kv_preempt(&eng->kv, tr, &sr->lease);

    sr->preemptions++;
    eng->preemptions++;

    fg_sim_emit(sim, FG_SIM_EV_PREEMPT, sim->now, sr->core.cookie);
}


/*
 * The decision applied: the waiting list becomes the winners waiting,
 * best first, then the preempted (at its head, as the engine puts them),
 * then the rest in their order; the running keep theirs.  Returns the
 * number of winners.
 */
static size_t
fg_sim_andes_apply(fg_sim_t *sim, fg_sim_engine_t *eng, fg_andes_cand_t *c,
    fg_andes_cand_t **order, size_t n)
{
    size_t             i, k, r, nr, won;
    fg_sim_request_t  *sr;

    nr = eng->nrunning;
    k = 0;

    for (i = 0; i < n; i++) {
        if (!order[i]->running && order[i]->keep) {
            eng->spare[k++] = order[i]->seq;
        }
    }

    won = k;
    r = 0;

    for (i = 0; i < nr; i++) {
        sr = c[i].seq;

        if (c[i].preempt) {
            fg_sim_andes_preempt(sim, eng, sr);
            eng->spare[k++] = sr;

        } else {
            eng->running[r++] = sr;
        }
    }

    eng->nrunning = r;

    for (i = nr; i < n; i++) {
        if (!c[i].keep) {
            eng->spare[k++] = c[i].seq;
        }
    }

    memcpy(eng->waiting, eng->spare, k * sizeof(fg_sim_request_t *));
    eng->nwaiting = k;

    return won;
}


/* Andes's decision; returns the number of winners waiting */
static size_t
fg_sim_andes_decide(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    size_t            i, n;
    double            step;
    fg_andes_conf_t   cf;
    fg_andes_cand_t  *c;

    c = eng->cand;
    step = fg_sim_andes_step(sim, eng);
    n = 0;

    for (i = 0; i < eng->nrunning; i++, n++) {
        c[n].running = 1;
        fg_sim_andes_cand(sim, eng, eng->running[i], step, &c[n]);
    }

    for (i = 0; i < eng->nwaiting; i++, n++) {
        c[n].running = 0;
        fg_sim_andes_cand(sim, eng, eng->waiting[i], step, &c[n]);
    }

    cf.now = sim->now;
    cf.horizon = FG_ANDES_HORIZON;
    cf.step_s = step;
    cf.cap = FG_ANDES_CAP;
    cf.pool = (uint32_t) (eng->kv.kv_tokens / FG_SIM_KV_BLOCK);
    cf.seats = (uint32_t) n;

    (void) fg_andes_decide(&cf, c, (uint32_t) n,
                           (fg_andes_cand_t **) eng->order);

    return fg_sim_andes_apply(sim, eng, c, (fg_andes_cand_t **) eng->order,
                              n);
}


/* the engine's admission: from the head of its list while the next fits,
 * at most most of them */
static void
fg_sim_andes_admit(fg_sim_t *sim, fg_sim_engine_t *eng, size_t most)
{
    size_t               k;
    fg_sim_request_t    *sr;
    fg_sim_result_t     *res;
    const fg_sim_req_t  *tr;

    for (k = 0; k < eng->nwaiting && k < most; k++) {
        sr = eng->waiting[k];
        tr = &sim->trace->reqs[sr->core.cookie];

        if (!fg_sim_kv_fits(&eng->kv, tr)) {
            break;
        }

        res = &sim->results[sr->core.cookie];
        res->cached_tokens = fg_sim_kv_admit(&eng->kv, tr, &sr->lease);

        if (sr->generated == 0) {
            eng->wait_tokens -= fg_sim_reservation(tr);
        }
        eng->pending[eng->npending++] = sr;
    }

    eng->nwaiting -= k;
    memmove(eng->waiting, eng->waiting + k,
            eng->nwaiting * sizeof(fg_sim_request_t *));
}


void
fg_sim_andes_merge(fg_sim_t *sim, fg_sim_engine_t *eng)
{
    if (eng->nwaiting == 0) {
        return;
    }

    /*
     * Under pressure only the winners join: a loser fcfs would let in
     * behind them (one just preempted, or one with nothing to gain) would
     * take the room the next decision gives, and cost a recompute.
     */
    fg_sim_andes_admit(sim, eng, fg_sim_andes_pressure(sim, eng)
                                 ? fg_sim_andes_decide(sim, eng)
                                 : eng->nwaiting);
}
